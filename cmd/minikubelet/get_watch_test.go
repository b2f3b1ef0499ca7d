package main

import (
	"bytes"
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
)

// syncBuffer is a bytes.Buffer safe for a writer and a reader goroutine.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// runWatch runs `get` with args in the background until the test stops it.
func runWatch(t *testing.T, sock string, args ...string) (out *syncBuffer, stop func() error) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	out = &syncBuffer{}
	done := make(chan error, 1)
	go func() {
		_, err := apiCommands(ctx, "get", append([]string{"--socket", sock}, args...), out, out)
		done <- err
	}()
	stopped := false
	stop = func() error {
		stopped = true
		cancel()
		select {
		case err := <-done:
			return err
		case <-time.After(5 * time.Second):
			t.Fatal("get --watch did not return after its context ended")
			return nil
		}
	}
	t.Cleanup(func() {
		if !stopped {
			_ = stop()
		}
	})
	return out, stop
}

// waitOutput waits until the output has n lines.
func waitOutput(t *testing.T, out *syncBuffer, n int) []string {
	t.Helper()
	var lines []string
	require.Eventually(t, func() bool {
		lines = strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
		return out.String() != "" && len(lines) >= n
	}, 5*time.Second, 5*time.Millisecond, "waiting for %d lines", n)
	return lines
}

// get -w prints the table, then a row per change with the header's
// column widths, until interrupted.
func TestGetCommand_Watch(t *testing.T) {
	b, sock := startDaemon(t)
	out, stop := runWatch(t, sock, "pods", "-w")
	lines := waitOutput(t, out, 2)
	assert.Equal(t, []string{
		"NAME   READY   STATUS    RESTARTS   AGE",
		"web    2/2     Running   0          30m",
	}, lines)

	web := basePod()
	web.CreationTimestamp = mustPod(t, b, "web").CreationTimestamp
	web.Status.ContainerStatuses[1].Ready = false
	web.Status.ContainerStatuses[1].State = v1.ContainerState{Waiting: &v1.ContainerStateWaiting{Reason: "CrashLoopBackOff"}}
	web.Status.ContainerStatuses[1].RestartCount = 3
	b.SetPod(web)
	other := basePod()
	other.Name, other.Namespace = "elsewhere", "prod"
	b.SetPod(other) // another namespace: not printed
	_, err := apiCommands(context.Background(), "delete", []string{"--socket", sock, "pod", "web"}, &bytes.Buffer{}, &bytes.Buffer{})
	require.NoError(t, err)

	lines = waitOutput(t, out, 5)
	assert.Equal(t, []string{
		"web    1/2     CrashLoopBackOff   3          30m",
		"web    1/2     Terminating   3          30m", // deletion mark
		"web    1/2     Terminating   3          30m", // gone
	}, lines[2:])
	require.NoError(t, stop())
	assert.Len(t, strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n"), 5)
}

// get NAME -w -o name prints the one pod at each change; an empty list
// prints nothing until the first event, whose row comes with a header.
func TestGetCommand_WatchOne(t *testing.T) {
	b, sock := startDaemon(t)
	out, stop := runWatch(t, sock, "pod", "db", "-n", "prod", "-o", "name", "--watch")
	waitOutput(t, out, 1)
	b.SetPod(basePod()) // default/web: not db
	db := mustPod(t, b, "db", "prod")
	db.Status.Phase = v1.PodFailed
	b.SetPod(db)
	lines := waitOutput(t, out, 2)
	require.NoError(t, stop())
	assert.Equal(t, []string{"pod/db", "pod/db"}, lines)

	out, stop = runWatch(t, sock, "pods", "-n", "empty", "-w")
	p := basePod()
	p.Namespace = "empty"
	b.SetPod(p)
	lines = waitOutput(t, out, 2)
	require.NoError(t, stop())
	assert.Equal(t, "NAME   READY   STATUS    RESTARTS   AGE", lines[0])
	assert.True(t, strings.HasPrefix(lines[1], "web    2/2     Running   0          "), lines[1])

	_, _, err := cli(t, context.Background(), sock, "get", "pods", "a", "b", "-w")
	assert.Equal(t, 2, exitCode(err))
}

func mustPod(t *testing.T, b interface {
	GetPod(ns, name string) (*v1.Pod, error)
}, name string, ns ...string) *v1.Pod {
	t.Helper()
	n := "default"
	if len(ns) > 0 {
		n = ns[0]
	}
	p, err := b.GetPod(n, name)
	require.NoError(t, err)
	return p
}
