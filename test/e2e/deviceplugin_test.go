package e2e

import (
	"context"
	"net"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	pluginapi "k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"
)

// e2ePlugin is a device plugin with two healthy devices whose Allocate
// answer is an environment variable naming them.
type e2ePlugin struct {
	pluginapi.UnimplementedDevicePluginServer
}

func (e2ePlugin) GetDevicePluginOptions(context.Context, *pluginapi.Empty) (*pluginapi.DevicePluginOptions, error) {
	return &pluginapi.DevicePluginOptions{}, nil
}

func (e2ePlugin) ListAndWatch(_ *pluginapi.Empty, s pluginapi.DevicePlugin_ListAndWatchServer) error {
	err := s.Send(&pluginapi.ListAndWatchResponse{Devices: []*pluginapi.Device{
		{ID: "dev-0", Health: pluginapi.Healthy}, {ID: "dev-1", Health: pluginapi.Healthy},
	}})
	if err != nil {
		return err
	}
	<-s.Context().Done()
	return nil
}

func (e2ePlugin) Allocate(_ context.Context, req *pluginapi.AllocateRequest) (*pluginapi.AllocateResponse, error) {
	out := &pluginapi.AllocateResponse{}
	for _, r := range req.ContainerRequests {
		out.ContainerResponses = append(out.ContainerResponses, &pluginapi.ContainerAllocateResponse{
			Envs: map[string]string{"E2E_DEVICES": strings.Join(r.DevicesIds, ",")},
		})
	}
	return out, nil
}

// TestDevicePlugin_PodGetsThePluginsEnv: a device plugin registers with
// a real daemon (serve) on <root-dir>/device-plugins/kubelet.sock; a pod
// asking for one of its devices runs with the variable its Allocate
// answer names; a pod asking for more than is left is rejected as the
// kubelet rejects it (issue #26).
func TestDevicePlugin_PodGetsThePluginsEnv(t *testing.T) {
	const pod, tooMany = "e2e-devplug", "e2e-devplug-toomany"
	const res = "example.com/e2e-dev"
	d := newDaemon(t, []string{pod, tooMany})
	d.start(t)

	dir := filepath.Join(d.root, "device-plugins")
	l, err := net.Listen("unix", filepath.Join(dir, "e2e.sock"))
	require.NoError(t, err)
	srv := grpc.NewServer()
	pluginapi.RegisterDevicePluginServer(srv, e2ePlugin{})
	go func() { _ = srv.Serve(l) }()
	t.Cleanup(srv.Stop)

	conn, err := grpc.NewClient("unix://"+filepath.Join(dir, "kubelet.sock"), grpc.WithTransportCredentials(insecure.NewCredentials()))
	require.NoError(t, err)
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, err = pluginapi.NewRegistrationClient(conn).Register(ctx, &pluginapi.RegisterRequest{
		Version: pluginapi.Version, Endpoint: "e2e.sock", ResourceName: res,
	})
	require.NoError(t, err, "registration with the daemon")

	withDevices := func(name string, n int64) *v1.Pod {
		p := chaosPod(name)
		rl := v1.ResourceList{res: *resource.NewQuantity(n, resource.DecimalSI)}
		p.Spec.Containers[0].Resources = v1.ResourceRequirements{Limits: rl, Requests: rl}
		p.Spec.Containers[0].Command = []string{"sh", "-c", "echo E2E_DEVICES=$E2E_DEVICES; trap 'exit 0' TERM; sleep 3600 & wait"}
		return p
	}
	// The devices arrive through ListAndWatch right after registration
	// (the daemon's log says so); a pod admitted before would find none.
	time.Sleep(time.Second)
	_, err = d.api().CreatePod(ctx, withDevices(pod, 1))
	require.NoError(t, err)
	d.waitPod(t, pod, "Running", scaled(90*time.Second), isRunning)
	require.Eventually(t, func() bool {
		return strings.Contains(d.cli(t, "logs", pod).stdout, "E2E_DEVICES=dev-0")
	}, scaled(30*time.Second), 500*time.Millisecond, "the container's output names the plugin's device")

	_, err = d.api().CreatePod(ctx, withDevices(tooMany, 2))
	require.NoError(t, err)
	got := d.waitPod(t, tooMany, "rejected", scaled(30*time.Second), func(p *v1.Pod) bool {
		return p != nil && p.Status.Phase == v1.PodFailed
	})
	assert.Equal(t, "UnexpectedAdmissionError", got.Status.Reason)
	assert.Contains(t, got.Status.Message, "requested number of devices unavailable for example.com/e2e-dev. Requested: 2, Available: 1")
}
