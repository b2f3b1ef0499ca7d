package deviceplugin

import (
	"context"
	"fmt"
	"net"
	"os"
	"strings"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	pluginapi "k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"
)

// The plugin's RPC bounds. Allocate and GetPreferredAllocation have none
// in the kubelet; a worker must not wait forever on a plugin.
const (
	allocateTimeout  = 30 * time.Second
	preferredTimeout = 10 * time.Second
	preStartTimeout  = pluginapi.KubeletPreStartContainerRPCTimeoutInSecs * time.Second
)

// endpoint is a registered plugin's connection.
type endpoint struct {
	resource string
	path     string
	client   pluginapi.DevicePluginClient
	opts     *pluginapi.DevicePluginOptions

	closeOnce sync.Once
	conn      *grpc.ClientConn
}

// checkEndpoint refuses an endpoint that is not a plain file name in the
// plugin directory.
func checkEndpoint(name string) error {
	if name == "" || name == "." || name == ".." || strings.ContainsAny(name, "/\x00") || name == SocketName {
		return fmt.Errorf("invalid endpoint %q: give the file name of the plugin's socket in the device plugin directory, without a path", name)
	}
	return nil
}

// dial connects to the plugin's socket lazily; every connection attempt
// checks that path is a socket and not a symlink, so that a name in the
// directory cannot point the node agent elsewhere.
func dial(path, resourceName string) (*endpoint, error) {
	dialer := func(ctx context.Context, _ string) (net.Conn, error) {
		fi, err := os.Lstat(path)
		if err != nil {
			return nil, err
		}
		if fi.Mode()&os.ModeSocket == 0 {
			return nil, fmt.Errorf("%s is not a socket (a symlink is refused)", path)
		}
		return (&net.Dialer{}).DialContext(ctx, "unix", path)
	}
	conn, err := grpc.NewClient("passthrough:///"+path,
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithAuthority("localhost"),
		grpc.WithContextDialer(dialer))
	if err != nil {
		return nil, fmt.Errorf("failed to dial device plugin: %w", err)
	}
	return &endpoint{resource: resourceName, path: path, client: pluginapi.NewDevicePluginClient(conn), conn: conn}, nil
}

func (e *endpoint) close() {
	e.closeOnce.Do(func() { _ = e.conn.Close() })
}

// preferred asks the plugin which size devices of available it prefers.
func (e *endpoint) preferred(ctx context.Context, available []string, size int) ([]string, error) {
	ctx, cancel := context.WithTimeout(ctx, preferredTimeout)
	defer cancel()
	resp, err := e.client.GetPreferredAllocation(ctx, &pluginapi.PreferredAllocationRequest{
		ContainerRequests: []*pluginapi.ContainerPreferredAllocationRequest{{AvailableDeviceIDs: available, AllocationSize: int32(size)}},
	})
	if err != nil {
		return nil, err
	}
	if rs := resp.GetContainerResponses(); len(rs) == 1 {
		return rs[0].GetDeviceIDs(), nil
	}
	return nil, nil
}

// allocate asks the plugin for the container's devices.
func (e *endpoint) allocate(ctx context.Context, ids []string) (*pluginapi.ContainerAllocateResponse, error) {
	ctx, cancel := context.WithTimeout(ctx, allocateTimeout)
	defer cancel()
	resp, err := e.client.Allocate(ctx, &pluginapi.AllocateRequest{
		ContainerRequests: []*pluginapi.ContainerAllocateRequest{{DevicesIds: ids}},
	})
	if err != nil {
		return nil, err
	}
	if n := len(resp.GetContainerResponses()); n != 1 {
		return nil, fmt.Errorf("the plugin answered for %d containers, asked for 1", n)
	}
	return resp.GetContainerResponses()[0], nil
}

// preStart tells the plugin the container is about to start.
func (e *endpoint) preStart(ctx context.Context, ids []string) error {
	ctx, cancel := context.WithTimeout(ctx, preStartTimeout)
	defer cancel()
	_, err := e.client.PreStartContainer(ctx, &pluginapi.PreStartContainerRequest{DevicesIds: ids})
	return err
}

// isExtendedResourceName is the API's rule for an extended resource (the
// kubelet's v1helper.IsExtendedResourceName): a domain-prefixed name
// outside kubernetes.io, not a quota's "requests." name, and a qualified
// name once prefixed with "requests.".
func isExtendedResourceName(name string) bool {
	if !strings.Contains(name, "/") || strings.Contains(name, v1.ResourceDefaultNamespacePrefix) ||
		strings.HasPrefix(name, v1.DefaultResourceRequestsPrefix) {
		return false
	}
	return len(validation.IsQualifiedName(v1.DefaultResourceRequestsPrefix+name)) == 0
}
