package api_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/minikubelet/minikubelet/agent/api"
	"github.com/minikubelet/minikubelet/agent/api/apitest"
	"github.com/minikubelet/minikubelet/test/testutil"
)

// shortTempDir returns a temp dir short enough for a unix socket path
// (108 bytes), which t.TempDir under a long test name may exceed.
func shortTempDir(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "mkl")
	require.NoError(t, err)
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

// serveUnix serves a fake backend on a unix socket until the test ends.
func serveUnix(t *testing.T, path string) (*apitest.Backend, func()) {
	t.Helper()
	b := apitest.New()
	s := api.NewServer(b, slog.New(slog.NewTextHandler(io.Discard, nil)), api.Options{LogPollInterval: 5 * time.Millisecond})
	l, err := api.ListenUnix(path)
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Serve(ctx, l) }()
	stop := func() {
		cancel()
		select {
		case err := <-done:
			assert.NoError(t, err)
		case <-time.After(10 * time.Second):
			t.Error("Serve did not return after its context ended")
		}
	}
	t.Cleanup(func() {
		if ctx.Err() == nil {
			stop()
		}
	})
	return b, stop
}

func TestListenUnix_ModeAndParentDir(t *testing.T) {
	path := filepath.Join(shortTempDir(t), "run", "mk.sock")
	_, stop := serveUnix(t, path)
	fi, err := os.Lstat(path)
	require.NoError(t, err)
	assert.Equal(t, os.ModeSocket, fi.Mode().Type())
	assert.Equal(t, os.FileMode(0o600), fi.Mode().Perm())
	di, err := os.Stat(filepath.Dir(path))
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o755), di.Mode().Perm())

	stop()
	_, err = os.Lstat(path)
	assert.ErrorIs(t, err, os.ErrNotExist, "Serve's shutdown removes the socket")
}

func TestListenUnix_StaleSocketReplaced(t *testing.T) {
	path := filepath.Join(shortTempDir(t), "mk.sock")
	// A daemon that died left its socket behind.
	l, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	require.NoError(t, err)
	l.SetUnlinkOnClose(false)
	require.NoError(t, l.Close())
	_, err = os.Lstat(path)
	require.NoError(t, err)

	serveUnix(t, path)
	_, err = api.NewClient(path).Version(context.Background())
	require.NoError(t, err)
}

func TestListenUnix_AnotherDaemonServes(t *testing.T) {
	path := filepath.Join(shortTempDir(t), "mk.sock")
	serveUnix(t, path)
	_, err := api.ListenUnix(path)
	require.ErrorContains(t, err, "another minikubelet serves on "+path)
	// The first daemon still answers.
	_, err = api.NewClient(path).Version(context.Background())
	require.NoError(t, err)
}

// A daemon closing its listener removes the socket file only if it is
// still the one it placed (issue #29 finding 5): another daemon's socket
// at the path stays, even one that does not answer at that moment (bound,
// not listening yet, or stopped).
func TestListenUnix_CloseLeavesAnotherDaemonsSocket(t *testing.T) {
	path := filepath.Join(shortTempDir(t), "mk.sock")
	old, err := api.ListenUnix(path)
	require.NoError(t, err)
	// A new daemon takes the path over: its socket file replaces ours.
	require.NoError(t, os.Remove(path))
	fd, err := syscall.Socket(syscall.AF_UNIX, syscall.SOCK_STREAM, 0)
	require.NoError(t, err)
	defer syscall.Close(fd)
	require.NoError(t, syscall.Bind(fd, &syscall.SockaddrUnix{Name: path}))
	theirs, err := os.Lstat(path)
	require.NoError(t, err)

	require.NoError(t, old.Close())
	fi, err := os.Lstat(path)
	require.NoError(t, err, "the old daemon's exit removed the new daemon's socket")
	assert.True(t, os.SameFile(theirs, fi))

	// Its own socket, a listener removes.
	require.NoError(t, os.Remove(path))
	own, err := api.ListenUnix(path)
	require.NoError(t, err)
	require.NoError(t, own.Close())
	_, err = os.Lstat(path)
	assert.ErrorIs(t, err, os.ErrNotExist)
}

func TestListenUnix_RefusesNonSocket(t *testing.T) {
	path := filepath.Join(shortTempDir(t), "mk.sock")
	require.NoError(t, os.WriteFile(path, []byte("data"), 0o644))
	_, err := api.ListenUnix(path)
	require.ErrorContains(t, err, "is not a socket")
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	assert.Equal(t, "data", string(b))
}

func TestClient_OverUnixSocket(t *testing.T) {
	path := filepath.Join(shortTempDir(t), "mk.sock")
	b, _ := serveUnix(t, path)
	b.SetPod(testPod("default", "a", "c"))
	c := api.NewClient(path)
	ctx := context.Background()

	l, err := c.ListPods(ctx, "")
	require.NoError(t, err)
	require.Len(t, l.Items, 1)

	created, err := c.CreatePod(ctx, &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "b"}, Spec: v1.PodSpec{Containers: []v1.Container{{Name: "c", Image: "x"}}}})
	require.NoError(t, err)
	assert.Equal(t, "default", created.Namespace)

	_, err = c.CreatePod(ctx, &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "b"}, Spec: v1.PodSpec{Containers: []v1.Container{{Name: "c", Image: "x"}}}})
	assert.True(t, apierrors.IsAlreadyExists(err), "%v", err)

	_, err = c.GetPod(ctx, "default", "nope")
	assert.True(t, apierrors.IsNotFound(err), "%v", err)
	assert.Equal(t, `pods "nope" not found`, err.Error())

	res, err := c.Exec(ctx, "default", "a", "", []string{"echo", "hi"}, time.Second)
	require.NoError(t, err)
	assert.Equal(t, "echo hi\n", string(res.Stdout))

	grace := int64(0)
	p, err := c.DeletePod(ctx, "default", "b", &grace)
	require.NoError(t, err)
	assert.NotNil(t, p.DeletionTimestamp)

	require.NoError(t, c.Ready(ctx))
	b.ReadyErr = errors.New("runtime not ready: NetworkPluginNotReady")
	assert.EqualError(t, c.Ready(ctx), "runtime not ready: NetworkPluginNotReady")
}

func TestClient_DaemonNotRunning(t *testing.T) {
	dir := shortTempDir(t)
	_, err := api.NewClient(filepath.Join(dir, "missing.sock")).ListPods(context.Background(), "")
	require.ErrorIs(t, err, api.ErrDaemonNotRunning)
	assert.Contains(t, err.Error(), "minikubelet serve")

	// A stale socket nobody listens on.
	path := filepath.Join(dir, "stale.sock")
	l, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	require.NoError(t, err)
	l.SetUnlinkOnClose(false)
	l.Close()
	_, err = api.NewClient(path).ListPods(context.Background(), "")
	require.ErrorIs(t, err, api.ErrDaemonNotRunning)
}

// A socket the user may not connect to: the error says to run as root.
// Root connects to a 0600 socket of any owner, so under root (make test)
// the request runs in a copy of this test binary started as nobody (uid
// and gid 65534) rather than being skipped there (as cri's
// TestDial_PermissionDenied).
func TestClient_PermissionDenied(t *testing.T) {
	if path := os.Getenv(deniedSocketEnv); path != "" {
		requestDenied(t, path) // the copy, as nobody
		return
	}
	dir := shortTempDir(t)
	path := filepath.Join(dir, "mk.sock")
	serveUnix(t, path)
	require.NoError(t, os.Chmod(path, 0o000))
	if os.Geteuid() != 0 {
		requestDenied(t, path)
		return
	}
	testutil.AsNobody(t, dir, deniedSocketEnv+"="+path)
}

// deniedSocketEnv tells the copy of the test binary run as nobody which
// socket to try.
const deniedSocketEnv = "MINIKUBELET_TEST_DENIED_SOCKET"

func requestDenied(t *testing.T, path string) {
	t.Helper()
	_, err := api.NewClient(path).ListPods(context.Background(), "")
	require.ErrorIs(t, err, api.ErrSocketPermission)
	assert.Contains(t, err.Error(), "run as root")
}
