package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/minikubelet/minikubelet/agent/api"
	"github.com/minikubelet/minikubelet/agent/api/apitest"
)

// startDaemon serves a fake backend with the real API server on a unix
// socket and returns the backend and the socket path.
func startDaemon(t *testing.T) (*apitest.Backend, string) {
	t.Helper()
	dir, err := os.MkdirTemp("", "mkl")
	require.NoError(t, err)
	t.Cleanup(func() { os.RemoveAll(dir) })
	sock := filepath.Join(dir, "mk.sock")
	b := apitest.New()
	s := api.NewServer(b, slog.New(slog.NewTextHandler(io.Discard, nil)), api.Options{LogPollInterval: 5 * time.Millisecond})
	l, err := api.ListenUnix(sock)
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = s.Serve(ctx, l) }()
	t.Cleanup(func() { cancel(); <-done })

	web := basePod()
	// Ages whose printed form holds for a minute ("30m", "4h"): one of a
	// few seconds ("2m" then "2m1s") changed while a loaded test ran.
	web.CreationTimestamp = metav1.NewTime(time.Now().Add(-30 * time.Minute))
	b.SetPod(web)
	other := basePod()
	other.Name, other.Namespace = "db", "prod"
	other.CreationTimestamp = metav1.NewTime(time.Now().Add(-4 * time.Hour))
	b.SetPod(other)
	return b, sock
}

// cli runs a client command and returns its stdout, stderr and error.
func cli(t *testing.T, ctx context.Context, sock string, args ...string) (string, string, error) {
	t.Helper()
	var out, errOut bytes.Buffer
	handled, err := apiCommands(ctx, args[0], append([]string{"--socket", sock}, args[1:]...), &out, &errOut)
	require.True(t, handled, "command %q not handled", args[0])
	return out.String(), errOut.String(), err
}

func exitCode(err error) int {
	var ee *exitError
	if errors.As(err, &ee) {
		return ee.code
	}
	if err != nil {
		return 1
	}
	return 0
}

func TestAPICommands_NotHandled(t *testing.T) {
	handled, err := apiCommands(context.Background(), "run", nil, io.Discard, io.Discard)
	assert.False(t, handled)
	assert.NoError(t, err)
}

func TestGetCommand(t *testing.T) {
	_, sock := startDaemon(t)
	ctx := context.Background()

	out, _, err := cli(t, ctx, sock, "get", "pods")
	require.NoError(t, err)
	assert.Equal(t, "NAME   READY   STATUS    RESTARTS   AGE\nweb    2/2     Running   0          30m\n", out)

	out, _, err = cli(t, ctx, sock, "get", "pods", "-A", "-o", "wide")
	require.NoError(t, err)
	assert.Equal(t, "NAMESPACE   NAME   READY   STATUS    RESTARTS   AGE   IP          NODE\n"+
		"default     web    2/2     Running   0          30m   10.88.0.5   node1\n"+
		"prod        db     2/2     Running   0          4h    10.88.0.5   node1\n", out)

	// Flags after the name, as kubectl allows.
	out, _, err = cli(t, ctx, sock, "get", "pod", "db", "-n", "prod", "-o", "name")
	require.NoError(t, err)
	assert.Equal(t, "pod/db\n", out)

	out, _, err = cli(t, ctx, sock, "get", "pods", "-o", "json")
	require.NoError(t, err)
	var list v1.PodList
	require.NoError(t, json.Unmarshal([]byte(out), &list))
	assert.Equal(t, "PodList", list.Kind)
	assert.Equal(t, "v1", list.APIVersion)
	require.Len(t, list.Items, 1)

	out, _, err = cli(t, ctx, sock, "get", "pods/web", "-o", "yaml")
	require.NoError(t, err)
	var pod v1.Pod
	require.NoError(t, yaml.UnmarshalStrict([]byte(out), &pod))
	assert.Equal(t, "Pod", pod.Kind)
	assert.Equal(t, "web", pod.Name)

	_, errOut, err := cli(t, ctx, sock, "get", "pods", "-n", "empty")
	require.NoError(t, err)
	assert.Equal(t, "No resources found in empty namespace.\n", errOut)

	out, _, err = cli(t, ctx, sock, "get", "pods", "-n", "empty", "-o", "json")
	require.NoError(t, err)
	assert.Contains(t, out, `"items": []`)

	_, _, err = cli(t, ctx, sock, "get", "pods", "nope")
	assert.EqualError(t, err, `pods "nope" not found`)

	_, _, err = cli(t, ctx, sock, "get", "deployments")
	assert.Equal(t, 2, exitCode(err))
	_, _, err = cli(t, ctx, sock, "get", "pods", "-o", "table")
	assert.Equal(t, 2, exitCode(err))
	_, _, err = cli(t, ctx, sock, "get", "pods", "-h")
	assert.NoError(t, err)
}

func TestDescribeCommand(t *testing.T) {
	b, sock := startDaemon(t)
	b.SetDetails("default", "web", &api.PodDetails{Source: "file:/etc/minikubelet/manifests/web.yaml", Stuck: &api.Stuck{Step: "image", Cause: "pull failed"}})
	b.SetEvents("default", "web", []v1.Event{{Type: "Normal", Reason: "Scheduled", Message: "hi", LastTimestamp: metav1.Now()}})
	out, _, err := cli(t, context.Background(), sock, "describe", "pod", "web")
	require.NoError(t, err)
	assert.Contains(t, out, "Name:         web\n")
	assert.Contains(t, out, "Source:       file:/etc/minikubelet/manifests/web.yaml\n")
	assert.Contains(t, out, "Stuck at:")
	assert.Contains(t, out, "image: pull failed")
	assert.Contains(t, out, "Scheduled")
}

func TestLogsCommand(t *testing.T) {
	b, sock := startDaemon(t)
	b.SetPod(&v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "one", Namespace: "default"}, Spec: v1.PodSpec{Containers: []v1.Container{{Name: "c"}}},
		Status: v1.PodStatus{ContainerStatuses: []v1.ContainerStatus{{Name: "c", ContainerID: "x", State: v1.ContainerState{Running: &v1.ContainerStateRunning{}}}}}})
	path := filepath.Join(t.TempDir(), "0.log")
	line := func(s int, c string) string {
		return time.Date(2024, 1, 1, 0, 0, s, 0, time.UTC).Format(time.RFC3339Nano) + " stdout F " + c + "\n"
	}
	require.NoError(t, os.WriteFile(path, []byte(line(1, "a")+line(2, "b")+line(3, "c")), 0o644))
	b.SetLog("default", "one", "c", false, path)
	ctx := context.Background()

	out, _, err := cli(t, ctx, sock, "logs", "one", "--tail", "2")
	require.NoError(t, err)
	assert.Equal(t, "b\nc\n", out)

	out, _, err = cli(t, ctx, sock, "logs", "pod/one", "--timestamps", "-c", "c", "--tail=1")
	require.NoError(t, err)
	assert.Equal(t, "2024-01-01T00:00:03.000000000Z c\n", out)

	out, _, err = cli(t, ctx, sock, "logs", "one", "--since-time", "2024-01-01T00:00:02Z")
	require.NoError(t, err)
	assert.Equal(t, "b\nc\n", out)

	out, _, err = cli(t, ctx, sock, "logs", "one", "--limit-bytes", "3")
	require.NoError(t, err)
	assert.Equal(t, "a\nb", out)

	_, _, err = cli(t, ctx, sock, "logs", "one", "--since", "1m", "--since-time", "2024-01-01T00:00:02Z")
	assert.ErrorContains(t, err, "at most one of --since and --since-time")

	_, _, err = cli(t, ctx, sock, "logs", "one", "-p")
	assert.ErrorContains(t, err, "previous terminated container")

	_, _, err = cli(t, ctx, sock, "logs", "web")
	assert.ErrorContains(t, err, "a container name must be specified for pod web, choose one of: [init app side]")

	// -f returns the cancellation when Ctrl-C ends it (main exits 130,
	// silently: interruptedExit). Ctrl-C comes once the lines are
	// out: a fixed 300 ms cut a loaded run short before it printed them.
	fctx, cancel := context.WithCancel(ctx)
	defer cancel()
	fout := &syncBuffer{}
	done := make(chan error, 1)
	go func() {
		_, err := apiCommands(fctx, "logs", []string{"--socket", sock, "one", "-f"}, fout, io.Discard)
		done <- err
	}()
	require.Eventually(t, func() bool { return fout.String() == "a\nb\nc\n" }, 10*time.Second, 5*time.Millisecond, "got %q", fout)
	select {
	case err := <-done:
		t.Fatalf("logs -f returned before Ctrl-C: %v", err)
	default:
	}
	cancel()
	select {
	case err = <-done:
		require.ErrorIs(t, err, context.Canceled)
		code, ok := interruptedExit(fctx, err)
		assert.True(t, ok)
		assert.Equal(t, 130, code)
	case <-time.After(10 * time.Second):
		t.Fatal("logs -f did not return after Ctrl-C")
	}
	assert.Equal(t, "a\nb\nc\n", fout.String())
}

func TestExecCommand(t *testing.T) {
	b, sock := startDaemon(t)
	var got []string
	b.ExecFunc = func(ctx context.Context, ns, name, container string, cmd []string, timeout time.Duration) (*api.ExecResult, error) {
		got = append([]string{container}, cmd...)
		return &api.ExecResult{Stdout: []byte("out\n"), Stderr: []byte("err\n"), ExitCode: 3}, nil
	}
	ctx := context.Background()
	var out, errOut bytes.Buffer
	handled, err := apiCommands(ctx, "exec", []string{"web", "-c", "app", "--socket", sock, "--", "sh", "-c", "exit 3"}, &out, &errOut)
	require.True(t, handled)
	assert.Equal(t, 3, exitCode(err))
	assert.EqualError(t, err, "command terminated with exit code 3")
	assert.Equal(t, "out\n", out.String())
	assert.Equal(t, "err\n", errOut.String())
	assert.Equal(t, []string{"app", "sh", "-c", "exit 3"}, got)

	b.ExecFunc = nil
	stdout, _, err := cli(t, ctx, sock, "exec", "web", "-c", "app", "-n", "default", "--", "echo", "hi")
	require.NoError(t, err)
	assert.Equal(t, "echo hi\n", stdout)

	// -t without -i is ignored, as by kubectl: the ExecSync path runs.
	stdout, _, err = cli(t, ctx, sock, "exec", "-t", "web", "-c", "app", "--", "echo", "hi")
	require.NoError(t, err)
	assert.Equal(t, "echo hi\n", stdout)
	_, _, err = cli(t, ctx, sock, "exec", "web")
	assert.Equal(t, 2, exitCode(err))
}

func TestDeleteCommand(t *testing.T) {
	b, sock := startDaemon(t)
	ctx := context.Background()
	b.DeleteDelay = 600 * time.Millisecond

	start := time.Now()
	out, _, err := cli(t, ctx, sock, "delete", "pod", "web", "--grace-period", "0", "--wait")
	require.NoError(t, err)
	assert.Equal(t, "pod \"web\" deleted\n", out)
	assert.GreaterOrEqual(t, time.Since(start), 500*time.Millisecond, "--wait waits until the pod is gone")
	assert.Contains(t, b.Calls(), "DeletePod default/web")

	_, _, err = cli(t, ctx, sock, "delete", "pod", "web")
	assert.EqualError(t, err, `pods "web" not found`)

	b.SetStatic("prod", "db", "/etc/minikubelet/manifests/db.yaml")
	_, _, err = cli(t, ctx, sock, "delete", "pod", "db", "-n", "prod")
	assert.ErrorContains(t, err, "remove /etc/minikubelet/manifests/db.yaml")
}

func TestDeleteCommand_File(t *testing.T) {
	b, sock := startDaemon(t)
	b.SetPod(&v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "prod"}})
	manifest := filepath.Join(t.TempDir(), "pods.yaml")
	require.NoError(t, os.WriteFile(manifest, []byte(`apiVersion: v1
kind: Pod
metadata:
  name: web
spec:
  containers: [{name: c, image: x, unknownField: kept-for-delete}]
---
---
apiVersion: v1
kind: Pod
metadata: {name: web, namespace: prod}
`), 0o644))
	out, _, err := cli(t, context.Background(), sock, "delete", "-f", manifest)
	require.NoError(t, err)
	assert.Equal(t, "pod \"web\" deleted\npod \"web\" deleted\n", out)
	assert.Empty(t, b.ListPods("default"))
	_, err = b.GetPod("prod", "web")
	assert.Error(t, err)

	_, _, err = cli(t, context.Background(), sock, "delete", "-f", manifest, "web")
	assert.Equal(t, 2, exitCode(err))
}

func TestReadManifestRefs(t *testing.T) {
	tests := []struct {
		name    string
		data    string
		want    []manifestRef
		wantErr string
	}{
		{name: "json", data: `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"a"}}`, want: []manifestRef{{"Pod", "def", "a"}}},
		{name: "list", data: "apiVersion: v1\nkind: List\nitems:\n- {kind: Pod, metadata: {name: a}}\n- {kind: Pod, metadata: {name: b, namespace: x}}\n",
			want: []manifestRef{{"Pod", "def", "a"}, {"Pod", "x", "b"}}},
		{name: "config data", data: "kind: ConfigMap\nmetadata: {name: c}\n---\nkind: Secret\nmetadata: {name: s, namespace: x}\n---\nkind: Pod\nmetadata: {name: p}\n",
			want: []manifestRef{{"ConfigMap", "def", "c"}, {"Secret", "x", "s"}, {"Pod", "def", "p"}}},
		{name: "not a pod", data: "kind: Deployment\nmetadata: {name: d}\n", wantErr: `Deployment "d" is not a Pod`},
		{name: "no name", data: "kind: Pod\nmetadata: {}\n", wantErr: "without metadata.name"},
		{name: "empty", data: "---\n", wantErr: "names no pod"},
		{name: "broken", data: "kind: [\n", wantErr: "document 1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := filepath.Join(t.TempDir(), "m.yaml")
			require.NoError(t, os.WriteFile(f, []byte(tt.data), 0o644))
			got, err := readManifestRefs(f, "def")
			if tt.wantErr != "" {
				require.ErrorContains(t, err, tt.wantErr)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
		})
	}
}

func TestClientErrors_DaemonNotRunning(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "none.sock")
	for _, args := range [][]string{{"get", "pods"}, {"describe", "pod", "x"}, {"logs", "x"}, {"exec", "x", "--", "true"}, {"attach", "x"}, {"delete", "pod", "x"}} {
		_, _, err := cli(t, context.Background(), sock, args...)
		require.ErrorIs(t, err, api.ErrDaemonNotRunning, args)
		assert.Contains(t, err.Error(), "start it with `minikubelet serve` (or hack/start-minikubelet.sh)", args)
	}

	// MINIKUBELET_SOCKET sets the default socket.
	t.Setenv(socketEnv, sock)
	var errOut bytes.Buffer
	_, err := apiCommands(context.Background(), "get", []string{"pods"}, io.Discard, &errOut)
	require.ErrorIs(t, err, api.ErrDaemonNotRunning)
	assert.Contains(t, err.Error(), sock)
}

// A user's Ctrl-C (or SIGTERM) is a normal end: exit 130 (143) with no
// message, not "minikubelet: context canceled" and exit 1 (issue #28).
func TestInterruptedExit(t *testing.T) {
	signalled := func(cause string) context.Context {
		ctx, cancel := context.WithCancelCause(context.Background())
		cancel(errors.New(cause))
		return ctx
	}
	code, ok := interruptedExit(signalled("interrupt signal received"), fmt.Errorf("attach: %w", context.Canceled))
	assert.True(t, ok)
	assert.Equal(t, 130, code)
	code, ok = interruptedExit(signalled("terminated signal received"), context.Canceled)
	assert.True(t, ok)
	assert.Equal(t, 143, code)
	_, ok = interruptedExit(context.Background(), context.Canceled)
	assert.False(t, ok, "no signal: a cancellation from elsewhere is an error")
	_, ok = interruptedExit(signalled("interrupt signal received"), errors.New("pod web not found"))
	assert.False(t, ok, "an error of its own is printed even after Ctrl-C")
}
