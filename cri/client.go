package cri

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net"
	"os"
	"strings"
	"sync"
	"syscall"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"
	"google.golang.org/grpc/credentials/insecure"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// DefaultEndpoint is containerd's CRI socket on a stock installation.
const DefaultEndpoint = "unix:///run/containerd/containerd.sock"

// EndpointEnv names the environment variable that overrides DefaultEndpoint,
// the same variable crictl reads.
const EndpointEnv = "CONTAINER_RUNTIME_ENDPOINT"

const (
	// defaultTimeout bounds every ordinary CRI call.
	defaultTimeout = 30 * time.Second
	// defaultPullTimeout bounds PullImage, which downloads layers.
	defaultPullTimeout = 10 * time.Minute
	// maxMsgSize matches containerd's limit; ListContainers on a busy node
	// exceeds grpc-go's 4 MiB default.
	maxMsgSize = 16 << 20
)

// EndpointFromEnv returns $CONTAINER_RUNTIME_ENDPOINT, or DefaultEndpoint when
// it is unset or empty.
func EndpointFromEnv() string {
	if ep := os.Getenv(EndpointEnv); ep != "" {
		return ep
	}
	return DefaultEndpoint
}

// Options tunes a Client. Zero values select the defaults.
type Options struct {
	// Timeout bounds each ordinary call and the handshake in Dial
	// (default 30s). It is applied on top of the caller's context.
	Timeout time.Duration
	// PullTimeout bounds PullImage (default 10m).
	PullTimeout time.Duration
}

func (o Options) withDefaults() Options {
	if o.Timeout <= 0 {
		o.Timeout = defaultTimeout
	}
	if o.PullTimeout <= 0 {
		o.PullTimeout = defaultPullTimeout
	}
	return o
}

// Client is a CRI v1 client over a unix socket. It implements Runtime and
// Images and is safe for concurrent use.
//
// Methods return the runtime's gRPC errors unwrapped (the caller adds the
// context it knows: pod, container), except where the client adds meaning:
// its own per-call deadline, ExecSync timeouts and exit codes, and responses
// missing a required value. Classify errors with IsNotFound and friends.
type Client struct {
	// endpoint is the address as the user gave it, for messages.
	endpoint string
	// opts holds the effective timeouts.
	opts Options
	conn *grpc.ClientConn
	rt   runtimeapi.RuntimeServiceClient
	img  runtimeapi.ImageServiceClient
	// version is the handshake's answer; immutable after Dial.
	version *runtimeapi.VersionResponse
}

var (
	_ Runtime = (*Client)(nil)
	_ Images  = (*Client)(nil)
)

// socketPath turns a CRI endpoint into a unix socket path. Accepted forms are
// unix:///abs/path and /abs/path.
func socketPath(endpoint string) (string, error) {
	switch {
	case strings.HasPrefix(endpoint, "unix://"):
		p := strings.TrimPrefix(endpoint, "unix://")
		if !strings.HasPrefix(p, "/") {
			return "", fmt.Errorf("unsupported runtime endpoint %q: want unix:///absolute/path", endpoint)
		}
		return p, nil
	case strings.HasPrefix(endpoint, "/"):
		return endpoint, nil
	case strings.HasPrefix(endpoint, "npipe:"):
		return "", fmt.Errorf("unsupported runtime endpoint %q: named pipes are Windows-only; use unix:///path", endpoint)
	default:
		return "", fmt.Errorf("unsupported runtime endpoint %q: only unix sockets are supported (unix:///path or /path)", endpoint)
	}
}

// Dial connects to the CRI runtime at endpoint and performs a Version("v1")
// handshake, so a missing, unreachable or non-CRI runtime is reported here,
// with what to do about it, rather than on the first real call.
func Dial(ctx context.Context, endpoint string, opts Options) (*Client, error) {
	path, err := socketPath(endpoint)
	if err != nil {
		return nil, err
	}
	opts = opts.withDefaults()

	// grpc-go hides why a connection attempt failed behind a generic
	// Unavailable status, so the dialer keeps the last typed error for
	// handshake diagnostics.
	var dialMu sync.Mutex
	var lastDialErr error
	dialer := func(ctx context.Context, _ string) (net.Conn, error) {
		var d net.Dialer
		conn, err := d.DialContext(ctx, "unix", path)
		dialMu.Lock()
		lastDialErr = err
		dialMu.Unlock()
		return conn, err
	}

	conn, err := grpc.NewClient("passthrough:///"+path,
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithContextDialer(dialer),
		// With passthrough the socket path would become :authority;
		// send what grpc-go's unix resolver sends instead.
		grpc.WithAuthority("localhost"),
		// containerd restarts (upgrades, crashes) must not leave the agent
		// waiting minutes for grpc's default reconnect back-off (up to
		// 120 s): retry at least every second (a dial of a local socket;
		// at 2 s, a reconnect plus the 1 s relist came to 2.2 s at load
		// 30 against TestChaosContainerdKill's 5 s from containerd
		// answering to the status showing what died meanwhile).
		grpc.WithConnectParams(grpc.ConnectParams{
			Backoff:           backoff.Config{BaseDelay: 100 * time.Millisecond, Multiplier: 1.6, Jitter: 0.2, MaxDelay: time.Second},
			MinConnectTimeout: 5 * time.Second,
		}),
		grpc.WithDefaultCallOptions(
			grpc.MaxCallRecvMsgSize(maxMsgSize),
			grpc.MaxCallSendMsgSize(maxMsgSize),
		),
	)
	if err != nil {
		return nil, fmt.Errorf("create grpc client for %s: %w", endpoint, err)
	}
	c := &Client{
		endpoint: endpoint,
		opts:     opts,
		conn:     conn,
		rt:       runtimeapi.NewRuntimeServiceClient(conn),
		img:      runtimeapi.NewImageServiceClient(conn),
	}

	// Not c.Version: its deadline wrapping would repeat what
	// handshakeError says.
	hctx, cancel := context.WithTimeout(ctx, opts.Timeout)
	defer cancel()
	v, err := c.rt.Version(hctx, &runtimeapi.VersionRequest{Version: "v1"})
	if err != nil {
		_ = conn.Close()
		dialMu.Lock()
		de := lastDialErr
		dialMu.Unlock()
		return nil, handshakeError(endpoint, path, opts.Timeout, err, de)
	}
	c.version = v
	return c, nil
}

// dialError is a handshake failure explained for the user. Its text ends in
// what to do, without grpc-go's transport noise; the gRPC error stays in the
// chain for IsUnavailable and friends.
type dialError struct {
	msg string
	err error
}

// Error implements error.
func (e *dialError) Error() string { return e.msg }

// Unwrap exposes the gRPC error.
func (e *dialError) Unwrap() error { return e.err }

// handshakeError explains a failed Version handshake: what went wrong and
// what the user should do.
func handshakeError(endpoint, path string, timeout time.Duration, err, dialErr error) error {
	explain := func(format string, args ...any) error {
		return &dialError{msg: fmt.Sprintf("connect to runtime at %s: ", endpoint) + fmt.Sprintf(format, args...), err: err}
	}
	if isUnimplemented(err) {
		return explain("runtime does not implement CRI v1 (runtime.v1.RuntimeService); " +
			"is the CRI plugin disabled in containerd's config? disabled_plugins must not list \"cri\" (or \"io.containerd.grpc.v1.cri\"); " +
			"fix the config and restart containerd")
	}
	if dialErr == nil {
		// The dialer may not have run (e.g. the caller's context was
		// already done); look at the socket directly.
		if _, statErr := os.Stat(path); statErr != nil {
			dialErr = statErr
		}
	}
	const startHint = "is containerd running? start it with hack/setup-containerd.sh or " +
		"\"systemctl start containerd\", or point --runtime-endpoint or " + EndpointEnv + " at its socket"
	switch {
	case errors.Is(dialErr, syscall.ENOENT):
		return explain("socket %s does not exist; %s", path, startHint)
	case errors.Is(dialErr, syscall.EACCES), errors.Is(dialErr, syscall.EPERM):
		return explain("permission denied on socket %s; run minikubelet as root", path)
	case errors.Is(dialErr, syscall.ECONNREFUSED):
		return explain("connection refused: socket %s exists but nothing listens on it "+
			"(left behind by a stopped containerd?); %s", path, startHint)
	case IsDeadlineExceeded(err):
		return explain("no answer to the CRI version handshake within %s; "+
			"is the runtime hung? check its logs (journalctl -u containerd)", timeout)
	default:
		return fmt.Errorf("connect to runtime at %s: CRI version handshake failed: %w", endpoint, err)
	}
}

// Close releases the connection. Calls after Close fail.
func (c *Client) Close() error {
	return c.conn.Close()
}

// Endpoint returns the endpoint the client was dialled with.
func (c *Client) Endpoint() string { return c.endpoint }

// RuntimeName returns the runtime's name from the handshake, e.g.
// "containerd"; container IDs are shown as "<RuntimeName>://<id>".
func (c *Client) RuntimeName() string { return c.version.GetRuntimeName() }

// RuntimeVersion returns the runtime's own version from the handshake.
func (c *Client) RuntimeVersion() string { return c.version.GetRuntimeVersion() }

// RuntimeAPIVersion returns the CRI API version the runtime speaks, e.g. "v1".
func (c *Client) RuntimeAPIVersion() string { return c.version.GetRuntimeApiVersion() }

// call runs fn under ctx bounded by timeout, and explains a deadline that the
// client itself imposed.
func call(ctx context.Context, verb string, timeout time.Duration, fn func(ctx context.Context) error) error {
	cctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	err := fn(cctx)
	if err != nil && ctx.Err() == nil && IsDeadlineExceeded(err) && ownDeadline(ctx, cctx, timeout) {
		return fmt.Errorf("%s: no answer from runtime within %s: %w", verb, timeout, err)
	}
	return err
}

// ownDeadline reports whether a DeadlineExceeded came from call's own
// timeout rather than the caller's deadline or the runtime's internals. The
// server learns the deadline from the grpc-timeout header and may give up a
// moment before the client's timer fires, so a deadline within a tenth of
// the timeout counts as reached.
func ownDeadline(parent, cctx context.Context, timeout time.Duration) bool {
	cd, _ := cctx.Deadline()
	if pd, ok := parent.Deadline(); ok && !cd.Before(pd) {
		return false // the caller's deadline governs
	}
	return cctx.Err() != nil || time.Until(cd) < timeout/10
}

// Version implements Runtime.
func (c *Client) Version(ctx context.Context, apiVersion string) (*runtimeapi.VersionResponse, error) {
	var resp *runtimeapi.VersionResponse
	err := call(ctx, "Version", c.opts.Timeout, func(ctx context.Context) (err error) {
		resp, err = c.rt.Version(ctx, &runtimeapi.VersionRequest{Version: apiVersion})
		return err
	})
	if err != nil {
		return nil, err
	}
	return resp, nil
}

// Status implements Runtime.
func (c *Client) Status(ctx context.Context, verbose bool) (*runtimeapi.StatusResponse, error) {
	var resp *runtimeapi.StatusResponse
	err := call(ctx, "Status", c.opts.Timeout, func(ctx context.Context) (err error) {
		resp, err = c.rt.Status(ctx, &runtimeapi.StatusRequest{Verbose: verbose})
		return err
	})
	if err != nil {
		return nil, err
	}
	if resp.GetStatus() == nil {
		return nil, errors.New("runtime returned no status")
	}
	return resp, nil
}

// RunPodSandbox implements Runtime.
func (c *Client) RunPodSandbox(ctx context.Context, config *runtimeapi.PodSandboxConfig, runtimeHandler string) (string, error) {
	var resp *runtimeapi.RunPodSandboxResponse
	err := call(ctx, "RunPodSandbox", c.opts.Timeout, func(ctx context.Context) (err error) {
		resp, err = c.rt.RunPodSandbox(ctx, &runtimeapi.RunPodSandboxRequest{Config: config, RuntimeHandler: runtimeHandler})
		return err
	})
	if err != nil {
		return "", err
	}
	if resp.GetPodSandboxId() == "" {
		return "", errors.New("runtime returned an empty sandbox id")
	}
	return resp.PodSandboxId, nil
}

// StopPodSandbox implements Runtime.
func (c *Client) StopPodSandbox(ctx context.Context, podSandboxID string) error {
	return call(ctx, "StopPodSandbox", c.opts.Timeout, func(ctx context.Context) error {
		_, err := c.rt.StopPodSandbox(ctx, &runtimeapi.StopPodSandboxRequest{PodSandboxId: podSandboxID})
		return err
	})
}

// RemovePodSandbox implements Runtime.
func (c *Client) RemovePodSandbox(ctx context.Context, podSandboxID string) error {
	return call(ctx, "RemovePodSandbox", c.opts.Timeout, func(ctx context.Context) error {
		_, err := c.rt.RemovePodSandbox(ctx, &runtimeapi.RemovePodSandboxRequest{PodSandboxId: podSandboxID})
		return err
	})
}

// PodSandboxStatus implements Runtime.
func (c *Client) PodSandboxStatus(ctx context.Context, podSandboxID string, verbose bool) (*runtimeapi.PodSandboxStatusResponse, error) {
	var resp *runtimeapi.PodSandboxStatusResponse
	err := call(ctx, "PodSandboxStatus", c.opts.Timeout, func(ctx context.Context) (err error) {
		resp, err = c.rt.PodSandboxStatus(ctx, &runtimeapi.PodSandboxStatusRequest{PodSandboxId: podSandboxID, Verbose: verbose})
		return err
	})
	if err != nil {
		return nil, err
	}
	if resp.GetStatus() == nil {
		return nil, fmt.Errorf("runtime returned no status for sandbox %s", podSandboxID)
	}
	return resp, nil
}

// ListPodSandbox implements Runtime.
func (c *Client) ListPodSandbox(ctx context.Context, filter *runtimeapi.PodSandboxFilter) ([]*runtimeapi.PodSandbox, error) {
	var resp *runtimeapi.ListPodSandboxResponse
	err := call(ctx, "ListPodSandbox", c.opts.Timeout, func(ctx context.Context) (err error) {
		resp, err = c.rt.ListPodSandbox(ctx, &runtimeapi.ListPodSandboxRequest{Filter: filter})
		return err
	})
	if err != nil {
		return nil, err
	}
	return resp.GetItems(), nil
}

// CreateContainer implements Runtime.
func (c *Client) CreateContainer(ctx context.Context, podSandboxID string, config *runtimeapi.ContainerConfig, sandboxConfig *runtimeapi.PodSandboxConfig) (string, error) {
	var resp *runtimeapi.CreateContainerResponse
	err := call(ctx, "CreateContainer", c.opts.Timeout, func(ctx context.Context) (err error) {
		resp, err = c.rt.CreateContainer(ctx, &runtimeapi.CreateContainerRequest{
			PodSandboxId:  podSandboxID,
			Config:        config,
			SandboxConfig: sandboxConfig,
		})
		return err
	})
	if err != nil {
		return "", err
	}
	if resp.GetContainerId() == "" {
		return "", errors.New("runtime returned an empty container id")
	}
	return resp.ContainerId, nil
}

// StartContainer implements Runtime.
func (c *Client) StartContainer(ctx context.Context, containerID string) error {
	return call(ctx, "StartContainer", c.opts.Timeout, func(ctx context.Context) error {
		_, err := c.rt.StartContainer(ctx, &runtimeapi.StartContainerRequest{ContainerId: containerID})
		return err
	})
}

// StopContainer implements Runtime. timeout is the grace period in seconds
// before the runtime kills the container, so the gRPC deadline is that plus
// Options.Timeout.
func (c *Client) StopContainer(ctx context.Context, containerID string, timeout int64) error {
	budget := c.opts.Timeout
	if timeout > 0 {
		budget += time.Duration(timeout) * time.Second
	}
	return call(ctx, "StopContainer", budget, func(ctx context.Context) error {
		_, err := c.rt.StopContainer(ctx, &runtimeapi.StopContainerRequest{ContainerId: containerID, Timeout: timeout})
		return err
	})
}

// RemoveContainer implements Runtime.
func (c *Client) RemoveContainer(ctx context.Context, containerID string) error {
	return call(ctx, "RemoveContainer", c.opts.Timeout, func(ctx context.Context) error {
		_, err := c.rt.RemoveContainer(ctx, &runtimeapi.RemoveContainerRequest{ContainerId: containerID})
		return err
	})
}

// ListContainers implements Runtime.
func (c *Client) ListContainers(ctx context.Context, filter *runtimeapi.ContainerFilter) ([]*runtimeapi.Container, error) {
	var resp *runtimeapi.ListContainersResponse
	err := call(ctx, "ListContainers", c.opts.Timeout, func(ctx context.Context) (err error) {
		resp, err = c.rt.ListContainers(ctx, &runtimeapi.ListContainersRequest{Filter: filter})
		return err
	})
	if err != nil {
		return nil, err
	}
	return resp.GetContainers(), nil
}

// ContainerStatus implements Runtime.
func (c *Client) ContainerStatus(ctx context.Context, containerID string, verbose bool) (*runtimeapi.ContainerStatusResponse, error) {
	var resp *runtimeapi.ContainerStatusResponse
	err := call(ctx, "ContainerStatus", c.opts.Timeout, func(ctx context.Context) (err error) {
		resp, err = c.rt.ContainerStatus(ctx, &runtimeapi.ContainerStatusRequest{ContainerId: containerID, Verbose: verbose})
		return err
	})
	if err != nil {
		return nil, err
	}
	if resp.GetStatus() == nil {
		return nil, fmt.Errorf("runtime returned no status for container %s", containerID)
	}
	return resp, nil
}

// ExecSync implements Runtime. The runtime is given timeout rounded up to
// whole seconds; the gRPC deadline is timeout + Options.Timeout. A timeout of
// 0 means no limit other than ctx. A command that outlives its timeout yields
// an error wrapping ErrExecTimeout; one that exits non-zero yields an
// *ExitError together with its output.
func (c *Client) ExecSync(ctx context.Context, containerID string, cmd []string, timeout time.Duration) ([]byte, []byte, error) {
	req := &runtimeapi.ExecSyncRequest{ContainerId: containerID, Cmd: cmd}
	cctx := ctx
	if timeout > 0 {
		req.Timeout = int64(math.Ceil(timeout.Seconds()))
		var cancel context.CancelFunc
		cctx, cancel = context.WithTimeout(ctx, timeout+c.opts.Timeout)
		defer cancel()
	}
	resp, err := c.rt.ExecSync(cctx, req)
	if err != nil {
		if ctx.Err() == nil && IsDeadlineExceeded(err) {
			return nil, nil, fmt.Errorf("command %q did not finish within %s: %w: %w", cmd, timeout, ErrExecTimeout, err)
		}
		return nil, nil, err
	}
	if resp.GetExitCode() != 0 {
		return resp.GetStdout(), resp.GetStderr(), &ExitError{ExitCode: resp.GetExitCode()}
	}
	return resp.GetStdout(), resp.GetStderr(), nil
}

// PullImage implements Images, bounded by Options.PullTimeout. It returns
// the image reference (digest or id) to use in ContainerConfig.
func (c *Client) PullImage(ctx context.Context, image *runtimeapi.ImageSpec, auth *runtimeapi.AuthConfig, podSandboxConfig *runtimeapi.PodSandboxConfig) (string, error) {
	var resp *runtimeapi.PullImageResponse
	err := call(ctx, "PullImage", c.opts.PullTimeout, func(ctx context.Context) (err error) {
		resp, err = c.img.PullImage(ctx, &runtimeapi.PullImageRequest{Image: image, Auth: auth, SandboxConfig: podSandboxConfig})
		return err
	})
	if err != nil {
		return "", err
	}
	if resp.GetImageRef() == "" {
		return "", fmt.Errorf("runtime returned an empty reference for image %s", image.GetImage())
	}
	return resp.ImageRef, nil
}

// ImageStatus implements Images. A missing image is not an error: the
// response's Image is nil.
func (c *Client) ImageStatus(ctx context.Context, image *runtimeapi.ImageSpec, verbose bool) (*runtimeapi.ImageStatusResponse, error) {
	var resp *runtimeapi.ImageStatusResponse
	err := call(ctx, "ImageStatus", c.opts.Timeout, func(ctx context.Context) (err error) {
		resp, err = c.img.ImageStatus(ctx, &runtimeapi.ImageStatusRequest{Image: image, Verbose: verbose})
		return err
	})
	if err != nil {
		return nil, err
	}
	return resp, nil
}

// ListImages implements Images.
func (c *Client) ListImages(ctx context.Context, filter *runtimeapi.ImageFilter) ([]*runtimeapi.Image, error) {
	var resp *runtimeapi.ListImagesResponse
	err := call(ctx, "ListImages", c.opts.Timeout, func(ctx context.Context) (err error) {
		resp, err = c.img.ListImages(ctx, &runtimeapi.ListImagesRequest{Filter: filter})
		return err
	})
	if err != nil {
		return nil, err
	}
	return resp.GetImages(), nil
}

// RemoveImage implements Images.
func (c *Client) RemoveImage(ctx context.Context, image *runtimeapi.ImageSpec) error {
	return call(ctx, "RemoveImage", c.opts.Timeout, func(ctx context.Context) error {
		_, err := c.img.RemoveImage(ctx, &runtimeapi.RemoveImageRequest{Image: image})
		return err
	})
}

// ImageFsInfo implements Images: the filesystems holding the runtime's
// images (containerd: its snapshotter's root) and their usage.
func (c *Client) ImageFsInfo(ctx context.Context) (*runtimeapi.ImageFsInfoResponse, error) {
	var resp *runtimeapi.ImageFsInfoResponse
	err := call(ctx, "ImageFsInfo", c.opts.Timeout, func(ctx context.Context) (err error) {
		resp, err = c.img.ImageFsInfo(ctx, &runtimeapi.ImageFsInfoRequest{})
		return err
	})
	if err != nil {
		return nil, err
	}
	return resp, nil
}

// GetContainerEvents implements Runtime: it streams the runtime's container
// events into ch until ctx ends or the stream breaks, and returns why. A
// runtime without the API (containerd 1.6) returns an Unimplemented error,
// which IsUnimplemented reports.
func (c *Client) GetContainerEvents(ctx context.Context, ch chan *runtimeapi.ContainerEventResponse, connected func(runtimeapi.RuntimeService_GetContainerEventsClient)) error {
	stream, err := c.rt.GetContainerEvents(ctx, &runtimeapi.GetEventsRequest{})
	if err != nil {
		return err
	}
	if connected != nil {
		connected(stream)
	}
	for {
		ev, err := stream.Recv()
		if err != nil {
			return err
		}
		select {
		case ch <- ev:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// RuntimeConfig implements Runtime: the runtime's own configuration, such as
// its cgroup driver (containerd ≥ 2.0; 1.6 answers Unimplemented).
func (c *Client) RuntimeConfig(ctx context.Context) (*runtimeapi.RuntimeConfigResponse, error) {
	var resp *runtimeapi.RuntimeConfigResponse
	err := call(ctx, "RuntimeConfig", c.opts.Timeout, func(ctx context.Context) (err error) {
		resp, err = c.rt.RuntimeConfig(ctx, &runtimeapi.RuntimeConfigRequest{})
		return err
	})
	return resp, err
}

// ReopenContainerLog implements Runtime: the runtime reopens the
// container's log file after the agent rotated it.
func (c *Client) ReopenContainerLog(ctx context.Context, containerID string) error {
	return call(ctx, "ReopenContainerLog", c.opts.Timeout, func(ctx context.Context) error {
		_, err := c.rt.ReopenContainerLog(ctx, &runtimeapi.ReopenContainerLogRequest{ContainerId: containerID})
		return err
	})
}

// UpdateContainerResources implements Runtime: the runtime applies new
// resources to a running container's cgroup (an in-place resize).
func (c *Client) UpdateContainerResources(ctx context.Context, containerID string, resources *runtimeapi.ContainerResources) error {
	return call(ctx, "UpdateContainerResources", c.opts.Timeout, func(ctx context.Context) error {
		_, err := c.rt.UpdateContainerResources(ctx, &runtimeapi.UpdateContainerResourcesRequest{
			ContainerId: containerID, Linux: resources.GetLinux(),
		})
		return err
	})
}
