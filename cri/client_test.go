package cri

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/minikubelet/minikubelet/test/testutil"
)

// runtimeServer is an in-process CRI runtime service. Unset hooks answer
// with an empty success (or Unimplemented, for methods not overridden).
type runtimeServer struct {
	runtimeapi.UnimplementedRuntimeServiceServer
	listPodSandbox  func(context.Context, *runtimeapi.ListPodSandboxRequest) (*runtimeapi.ListPodSandboxResponse, error)
	containerStatus func(context.Context, *runtimeapi.ContainerStatusRequest) (*runtimeapi.ContainerStatusResponse, error)
	execSync        func(context.Context, *runtimeapi.ExecSyncRequest) (*runtimeapi.ExecSyncResponse, error)
}

func (s *runtimeServer) Version(context.Context, *runtimeapi.VersionRequest) (*runtimeapi.VersionResponse, error) {
	return &runtimeapi.VersionResponse{
		Version:           "0.1.0",
		RuntimeName:       "containerd",
		RuntimeVersion:    "v2.1.0",
		RuntimeApiVersion: "v1",
	}, nil
}

func (s *runtimeServer) ListPodSandbox(ctx context.Context, req *runtimeapi.ListPodSandboxRequest) (*runtimeapi.ListPodSandboxResponse, error) {
	if s.listPodSandbox != nil {
		return s.listPodSandbox(ctx, req)
	}
	return &runtimeapi.ListPodSandboxResponse{}, nil
}

func (s *runtimeServer) ContainerStatus(ctx context.Context, req *runtimeapi.ContainerStatusRequest) (*runtimeapi.ContainerStatusResponse, error) {
	if s.containerStatus != nil {
		return s.containerStatus(ctx, req)
	}
	return &runtimeapi.ContainerStatusResponse{}, nil
}

func (s *runtimeServer) ExecSync(ctx context.Context, req *runtimeapi.ExecSyncRequest) (*runtimeapi.ExecSyncResponse, error) {
	if s.execSync != nil {
		return s.execSync(ctx, req)
	}
	return &runtimeapi.ExecSyncResponse{}, nil
}

// imageServer is an in-process CRI image service.
type imageServer struct {
	runtimeapi.UnimplementedImageServiceServer
	pullImage func(context.Context, *runtimeapi.PullImageRequest) (*runtimeapi.PullImageResponse, error)
}

func (s *imageServer) PullImage(ctx context.Context, req *runtimeapi.PullImageRequest) (*runtimeapi.PullImageResponse, error) {
	if s.pullImage != nil {
		return s.pullImage(ctx, req)
	}
	return &runtimeapi.PullImageResponse{ImageRef: "sha256:abc"}, nil
}

// serve starts a gRPC server on a unix socket in a temp dir and returns the
// socket path. Nil services are not registered.
func serve(t *testing.T, rt runtimeapi.RuntimeServiceServer, img runtimeapi.ImageServiceServer) string {
	t.Helper()
	return serveAt(t, filepath.Join(t.TempDir(), "cri.sock"), rt, img)
}

// serveAt is serve on the socket path.
func serveAt(t *testing.T, path string, rt runtimeapi.RuntimeServiceServer, img runtimeapi.ImageServiceServer) string {
	t.Helper()
	l, err := net.Listen("unix", path)
	require.NoError(t, err)
	srv := grpc.NewServer()
	if rt != nil {
		runtimeapi.RegisterRuntimeServiceServer(srv, rt)
	}
	if img != nil {
		runtimeapi.RegisterImageServiceServer(srv, img)
	}
	go func() { _ = srv.Serve(l) }()
	t.Cleanup(srv.Stop)
	return path
}

// dial connects to a test server and closes the client at cleanup.
func dial(t *testing.T, path string, opts Options) *Client {
	t.Helper()
	c, err := Dial(context.Background(), "unix://"+path, opts)
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	return c
}

func TestDial_Handshake(t *testing.T) {
	path := serve(t, &runtimeServer{}, &imageServer{})
	for _, ep := range []string{"unix://" + path, path} {
		t.Run(ep, func(t *testing.T) {
			c, err := Dial(context.Background(), ep, Options{})
			require.NoError(t, err)
			defer c.Close()
			assert.Equal(t, "containerd", c.RuntimeName())
			assert.Equal(t, "v2.1.0", c.RuntimeVersion())
			assert.Equal(t, "v1", c.RuntimeAPIVersion())
			assert.Equal(t, ep, c.Endpoint())
		})
	}
}

func TestDial_Errors(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "nope.sock")

	// A socket file nobody listens on, as a crashed containerd leaves.
	stale := filepath.Join(t.TempDir(), "stale.sock")
	l, err := net.Listen("unix", stale)
	require.NoError(t, err)
	l.(*net.UnixListener).SetUnlinkOnClose(false)
	require.NoError(t, l.Close())

	noCRI := serve(t, nil, &imageServer{})

	tests := []struct {
		name        string
		endpoint    string
		want        []string
		unavailable bool
	}{
		{
			name:        "missing socket",
			endpoint:    "unix://" + missing,
			want:        []string{"unix://" + missing, "does not exist", "is containerd running?", "hack/setup-containerd.sh", "systemctl start containerd"},
			unavailable: true,
		},
		{
			name:        "connection refused",
			endpoint:    stale,
			want:        []string{stale, "connection refused", "nothing listens"},
			unavailable: true,
		},
		{
			name:     "no CRI service",
			endpoint: "unix://" + noCRI,
			want:     []string{"unix://" + noCRI, "does not implement CRI v1", `disabled_plugins must not list "cri"`},
		},
		{
			name:     "tcp endpoint",
			endpoint: "tcp://127.0.0.1:1234",
			want:     []string{`"tcp://127.0.0.1:1234"`, "only unix sockets"},
		},
		{
			name:     "npipe endpoint",
			endpoint: "npipe:////./pipe/containerd",
			want:     []string{"Windows-only"},
		},
		{
			name:     "relative unix path",
			endpoint: "unix://run/containerd.sock",
			want:     []string{"absolute"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			c, err := Dial(ctx, tt.endpoint, Options{Timeout: 5 * time.Second})
			require.Error(t, err)
			require.Nil(t, c)
			for _, w := range tt.want {
				assert.Contains(t, err.Error(), w)
			}
			assert.Equal(t, tt.unavailable, IsUnavailable(err))
		})
	}
}

// deniedSocketEnv names the socket a copy of this test binary dials as
// nobody (TestDial_PermissionDenied as root).
const deniedSocketEnv = "CRI_TEST_DENIED_SOCKET"

// A socket the user may not connect to: the error says to run as root.
// Root connects to any socket, so under root (make test) the dial runs in
// a copy of this test binary started as nobody (uid and gid 65534) rather
// than being skipped there.
func TestDial_PermissionDenied(t *testing.T) {
	if path := os.Getenv(deniedSocketEnv); path != "" {
		dialDenied(t, path) // the copy, as nobody
		return
	}
	if os.Geteuid() != 0 {
		path := serve(t, &runtimeServer{}, nil)
		require.NoError(t, os.Chmod(path, 0))
		dialDenied(t, path)
		return
	}
	// A directory nobody may enter (AsNobody opens it), holding the socket
	// (mode 0, owned by root) and the copy of the binary.
	dir, err := os.MkdirTemp("", "cri-denied-")
	require.NoError(t, err)
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	path := serveAt(t, filepath.Join(dir, "cri.sock"), &runtimeServer{}, nil)
	require.NoError(t, os.Chmod(path, 0))
	testutil.AsNobody(t, dir, deniedSocketEnv+"="+path)
}

func dialDenied(t *testing.T, path string) {
	t.Helper()
	_, err := Dial(context.Background(), path, Options{Timeout: 5 * time.Second})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "permission denied")
	assert.Contains(t, err.Error(), "run minikubelet as root")
}

func TestClient_CallTimeout(t *testing.T) {
	path := serve(t, &runtimeServer{
		listPodSandbox: func(ctx context.Context, _ *runtimeapi.ListPodSandboxRequest) (*runtimeapi.ListPodSandboxResponse, error) {
			<-ctx.Done() // hang until the client gives up
			return nil, ctx.Err()
		},
	}, nil)
	c := dial(t, path, Options{Timeout: 200 * time.Millisecond})

	start := time.Now()
	items, err := c.ListPodSandbox(context.Background(), nil)
	elapsed := time.Since(start)

	require.Error(t, err)
	assert.Nil(t, items)
	assert.True(t, IsDeadlineExceeded(err), "got %v", err)
	assert.Contains(t, err.Error(), "ListPodSandbox: no answer from runtime within 200ms")
	assert.Less(t, elapsed, 5*time.Second)
}

func TestClient_CallerCancel(t *testing.T) {
	path := serve(t, &runtimeServer{
		listPodSandbox: func(ctx context.Context, _ *runtimeapi.ListPodSandboxRequest) (*runtimeapi.ListPodSandboxResponse, error) {
			<-ctx.Done()
			return nil, ctx.Err()
		},
	}, nil)
	c := dial(t, path, Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	_, err := c.ListPodSandbox(ctx, nil)
	require.Error(t, err)
	// The caller's own deadline is not blamed on the runtime.
	assert.NotContains(t, err.Error(), "no answer from runtime")
	assert.True(t, IsDeadlineExceeded(err))
}

func TestClient_NotFound(t *testing.T) {
	path := serve(t, &runtimeServer{
		containerStatus: func(_ context.Context, req *runtimeapi.ContainerStatusRequest) (*runtimeapi.ContainerStatusResponse, error) {
			return nil, status.Errorf(codes.NotFound, "an error occurred when try to find container %q: not found", req.ContainerId)
		},
	}, nil)
	c := dial(t, path, Options{})

	resp, err := c.ContainerStatus(context.Background(), "abc", false)
	require.Error(t, err)
	assert.Nil(t, resp)
	wrapped := fmt.Errorf("status of container %q: %w", "web", err)
	assert.True(t, IsNotFound(wrapped))
	assert.False(t, IsUnavailable(wrapped))
	assert.Equal(t, `an error occurred when try to find container "abc": not found`, Message(wrapped))
}

func TestClient_NilStatusIsError(t *testing.T) {
	c := dial(t, serve(t, &runtimeServer{}, nil), Options{})
	resp, err := c.ContainerStatus(context.Background(), "abc", false)
	require.Error(t, err)
	assert.Nil(t, resp)
	assert.Contains(t, err.Error(), "no status for container abc")
}

func TestClient_ExecSync(t *testing.T) {
	tests := []struct {
		name    string
		timeout time.Duration
		// callTimeout is the client's Options.Timeout (0: 10 s). Only the
		// case that waits for the deadline needs a short one: with 100 ms,
		// an answer that returns at once still missed its 1.1 s deadline
		// when a loaded machine stalled the test for a second.
		callTimeout time.Duration
		handler     func(context.Context, *runtimeapi.ExecSyncRequest) (*runtimeapi.ExecSyncResponse, error)
		wantSeconds int64
		wantTimeout bool
		wantExit    int32
		wantStdout  string
	}{
		{
			name:        "runtime reports timeout",
			timeout:     1500 * time.Millisecond,
			wantSeconds: 2,
			handler: func(context.Context, *runtimeapi.ExecSyncRequest) (*runtimeapi.ExecSyncResponse, error) {
				return nil, status.Error(codes.DeadlineExceeded, "timeout 2s exceeded: context deadline exceeded")
			},
			wantTimeout: true,
		},
		{
			name:        "runtime hangs past timeout plus call timeout",
			timeout:     100 * time.Millisecond,
			callTimeout: 100 * time.Millisecond,
			wantSeconds: 1,
			handler: func(ctx context.Context, _ *runtimeapi.ExecSyncRequest) (*runtimeapi.ExecSyncResponse, error) {
				<-ctx.Done()
				return nil, ctx.Err()
			},
			wantTimeout: true,
		},
		{
			name:        "non-zero exit",
			timeout:     time.Second,
			wantSeconds: 1,
			handler: func(context.Context, *runtimeapi.ExecSyncRequest) (*runtimeapi.ExecSyncResponse, error) {
				return &runtimeapi.ExecSyncResponse{Stdout: []byte("out"), ExitCode: 3}, nil
			},
			wantExit:   3,
			wantStdout: "out",
		},
		{
			name:        "no timeout means no deadline",
			timeout:     0,
			wantSeconds: 0,
			handler: func(ctx context.Context, _ *runtimeapi.ExecSyncRequest) (*runtimeapi.ExecSyncResponse, error) {
				if _, ok := ctx.Deadline(); ok {
					return nil, status.Error(codes.InvalidArgument, "unexpected deadline")
				}
				return &runtimeapi.ExecSyncResponse{Stdout: []byte("ok")}, nil
			},
			wantStdout: "ok",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var gotSeconds atomic.Int64 // written by the server goroutine
			gotSeconds.Store(-1)
			path := serve(t, &runtimeServer{
				execSync: func(ctx context.Context, req *runtimeapi.ExecSyncRequest) (*runtimeapi.ExecSyncResponse, error) {
					gotSeconds.Store(req.Timeout)
					return tt.handler(ctx, req)
				},
			}, nil)
			callTimeout := tt.callTimeout
			if callTimeout == 0 {
				callTimeout = 10 * time.Second
			}
			c := dial(t, path, Options{Timeout: callTimeout})

			stdout, _, err := c.ExecSync(context.Background(), "cid", []string{"true"}, tt.timeout)
			assert.Equal(t, tt.wantSeconds, gotSeconds.Load())
			assert.Equal(t, tt.wantStdout, string(stdout))
			switch {
			case tt.wantTimeout:
				require.ErrorIs(t, err, ErrExecTimeout)
				assert.True(t, IsDeadlineExceeded(err))
			case tt.wantExit != 0:
				var exitErr *ExitError
				require.ErrorAs(t, err, &exitErr)
				assert.Equal(t, tt.wantExit, exitErr.ExitCode)
			default:
				require.NoError(t, err)
			}
		})
	}
}

func TestClient_PullImage(t *testing.T) {
	const regMsg = `failed to pull and unpack image "127.0.0.1:5000/nope:1": failed to resolve reference "127.0.0.1:5000/nope:1": 127.0.0.1:5000/nope:1: not found`
	var remaining atomic.Int64 // nanoseconds; written by the server goroutine
	path := serve(t, &runtimeServer{}, &imageServer{
		pullImage: func(ctx context.Context, req *runtimeapi.PullImageRequest) (*runtimeapi.PullImageResponse, error) {
			if dl, ok := ctx.Deadline(); ok {
				remaining.Store(int64(time.Until(dl)))
			}
			if req.Image.GetImage() == "127.0.0.1:5000/nope:1" {
				return nil, status.Error(codes.Unknown, regMsg)
			}
			return &runtimeapi.PullImageResponse{ImageRef: "sha256:abc"}, nil
		},
	})
	c := dial(t, path, Options{Timeout: time.Second, PullTimeout: time.Minute})

	ref, err := c.PullImage(context.Background(), &runtimeapi.ImageSpec{Image: "127.0.0.1:5000/web:1"}, nil, nil)
	require.NoError(t, err)
	assert.Equal(t, "sha256:abc", ref)
	assert.Greater(t, time.Duration(remaining.Load()), 30*time.Second, "PullImage must use PullTimeout, not Timeout")

	_, err = c.PullImage(context.Background(), &runtimeapi.ImageSpec{Image: "127.0.0.1:5000/nope:1"}, nil, nil)
	require.Error(t, err)
	assert.Equal(t, regMsg, Message(fmt.Errorf("pull %s: %w", "x", err)))
}

func TestMessage(t *testing.T) {
	st := status.Error(codes.Unknown, "registry said no")
	tests := []struct {
		name string
		err  error
		want string
	}{
		{name: "nil", err: nil, want: ""},
		{name: "plain", err: errors.New("boom"), want: "boom"},
		{name: "status", err: st, want: "registry said no"},
		{name: "wrapped status", err: fmt.Errorf("pull web: %w", st), want: "registry said no"},
		{name: "empty desc", err: status.Error(codes.Internal, ""), want: "rpc error: code = Internal desc = "},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, Message(tt.err))
		})
	}
}

func TestClassify(t *testing.T) {
	tests := []struct {
		name                            string
		err                             error
		notFound, unavailable, deadline bool
	}{
		{name: "nil", err: nil},
		{name: "plain not found text", err: errors.New(`container "x" not found`)},
		{name: "not found", err: status.Error(codes.NotFound, "x"), notFound: true},
		{name: "wrapped twice", err: fmt.Errorf("a: %w", fmt.Errorf("b: %w", status.Error(codes.NotFound, "x"))), notFound: true},
		{name: "unavailable", err: status.Error(codes.Unavailable, "connection refused"), unavailable: true},
		{name: "grpc deadline", err: status.Error(codes.DeadlineExceeded, "x"), deadline: true},
		{name: "context deadline", err: fmt.Errorf("x: %w", context.DeadlineExceeded), deadline: true},
		{name: "exec timeout", err: fmt.Errorf("x: %w: %w", ErrExecTimeout, status.Error(codes.DeadlineExceeded, "x")), deadline: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.notFound, IsNotFound(tt.err), "IsNotFound")
			assert.Equal(t, tt.unavailable, IsUnavailable(tt.err), "IsUnavailable")
			assert.Equal(t, tt.deadline, IsDeadlineExceeded(tt.err), "IsDeadlineExceeded")
		})
	}
}

// The prober's reading of ExecSync errors: an exit code, a timeout, or
// neither (the exec itself failed).
func TestClassifyExecError(t *testing.T) {
	code, isExit, isTimeout := ClassifyExecError(fmt.Errorf("probe: %w", &ExitError{ExitCode: 3}))
	assert.Equal(t, []any{3, true, false}, []any{code, isExit, isTimeout}, "a non-zero exit")
	code, isExit, isTimeout = ClassifyExecError(fmt.Errorf("x: %w: %w", ErrExecTimeout, status.Error(codes.DeadlineExceeded, "x")))
	assert.Equal(t, []any{0, false, true}, []any{code, isExit, isTimeout}, "a timeout")
	code, isExit, isTimeout = ClassifyExecError(status.Error(codes.NotFound, "container not found"))
	assert.Equal(t, []any{0, false, false}, []any{code, isExit, isTimeout}, "an exec that failed")
}

func TestEndpointFromEnv(t *testing.T) {
	t.Setenv(EndpointEnv, "")
	assert.Equal(t, DefaultEndpoint, EndpointFromEnv())
	t.Setenv(EndpointEnv, "unix:///tmp/x.sock")
	assert.Equal(t, "unix:///tmp/x.sock", EndpointFromEnv())
}

func TestClient_Close(t *testing.T) {
	c := dial(t, serve(t, &runtimeServer{}, nil), Options{})
	require.NoError(t, c.Close())
	_, err := c.ListPodSandbox(context.Background(), nil)
	require.Error(t, err)
	assert.True(t, strings.Contains(err.Error(), "closing") || IsUnavailable(err) || codeOf(err) == codes.Canceled, "got %v", err)
}

func TestEventsReachEverySubscriber(t *testing.T) {
	for _, tc := range []struct {
		name, version string
		want          bool
	}{
		{"containerd", "v2.4.2", true},
		{"containerd", "2.4.2+unknown", true},
		{"containerd", "v2.0.0-rc.1", true},
		{"containerd", "v3.0.0", true},
		{"containerd", "1.7.27", false},
		{"containerd", "v1.7.0", false},
		{"containerd", "1.6.20~ds1", false},
		{"containerd", "", false},
		{"containerd", "devel", false},
		{"cri-o", "1.34.0", false},
	} {
		assert.Equal(t, tc.want, EventsReachEverySubscriber(tc.name, tc.version), "%s %s", tc.name, tc.version)
	}
}
