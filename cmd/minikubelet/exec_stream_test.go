package main

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/client-go/tools/remotecommand"

	"github.com/minikubelet/minikubelet/agent/api"
)

// pipeStdin makes the command whose stdin is *stdin (execStdin,
// attachStdin) read a pipe (not a terminal) for the test.
func pipeStdin(t *testing.T, stdin **os.File) {
	t.Helper()
	r, w, err := os.Pipe()
	require.NoError(t, err)
	old := *stdin
	*stdin = r
	t.Cleanup(func() { *stdin = old; r.Close(); w.Close() })
}

func TestExecInteractive_Errors(t *testing.T) {
	_, sock := startDaemon(t)
	ctx := context.Background()
	pipeStdin(t, &execStdin)

	t.Run("DaemonNotRunning", func(t *testing.T) {
		_, _, err := cli(t, ctx, filepath.Join(t.TempDir(), "none.sock"), "exec", "-i", "web", "-c", "app", "--", "sh")
		assert.ErrorIs(t, err, api.ErrDaemonNotRunning)
		assert.ErrorContains(t, err, "minikubelet serve")
	})
	t.Run("PodNotFound", func(t *testing.T) {
		_, _, err := cli(t, ctx, sock, "exec", "-it", "nope", "--", "sh")
		assert.ErrorContains(t, err, `"nope" not found`)
		assert.ErrorContains(t, err, "minikubelet get pods -n default")
	})
	t.Run("PodNotFoundWithoutStdin", func(t *testing.T) {
		_, _, err := cli(t, ctx, sock, "exec", "-n", "prod", "nope", "--", "true")
		assert.ErrorContains(t, err, `"nope" not found`)
		assert.ErrorContains(t, err, "minikubelet get pods -n prod")
	})
	t.Run("ContainerNotRunning", func(t *testing.T) {
		_, _, err := cli(t, ctx, sock, "exec", "-i", "web", "-c", "init", "--", "sh")
		assert.EqualError(t, err, "container init of pod default/web is not running (terminated: Completed): see why with `minikubelet describe pod web -n default`")
	})
	t.Run("TimeoutNeedsNonInteractive", func(t *testing.T) {
		_, _, err := cli(t, ctx, sock, "exec", "-i", "--timeout", "5s", "web", "-c", "app", "--", "sh")
		assert.Equal(t, 2, exitCode(err))
		assert.ErrorContains(t, err, "--timeout applies only without -i")
	})
	// The fake daemon serves no runtime streaming: the SPDY upgrade reaches
	// its exec endpoint over the unix socket and gets its 503 back. The -t
	// on a pipe is dropped with kubectl's warning, before any raw mode.
	for _, flag := range []string{"-it", "-ti", "--stdin --tty"} {
		t.Run("Upgrade"+flag, func(t *testing.T) {
			args := append([]string{"exec"}, splitFlags(flag)...)
			_, stderr, err := cli(t, ctx, sock, append(args, "web", "-c", "app", "--", "sh")...)
			require.Error(t, err)
			assert.ErrorContains(t, err, "exec sessions are not served by this API")
			assert.Equal(t, ttyWarning+"\n", stderr)
		})
	}
	t.Run("StdinWithoutTTYNoWarning", func(t *testing.T) {
		_, stderr, err := cli(t, ctx, sock, "exec", "-i", "web", "-c", "app", "--", "sh")
		assert.ErrorContains(t, err, "exec sessions are not served by this API")
		assert.Empty(t, stderr)
	})
}

func splitFlags(s string) []string {
	var out []string
	for f := range bytes.FieldsSeq([]byte(s)) {
		out = append(out, string(f))
	}
	return out
}

func TestUseTTY(t *testing.T) {
	var buf bytes.Buffer
	assert.True(t, useTTY(true, &buf))
	assert.Empty(t, buf.String())
	assert.False(t, useTTY(false, &buf))
	assert.Equal(t, "Unable to use a TTY - input is not a terminal or the right kind of file\n", buf.String())
}

func TestStreamURL(t *testing.T) {
	u := streamURL("prod", "web", "exec", "app", []string{"sh", "-c", "echo a b"}, true, true)
	assert.Equal(t, "/api/v1/namespaces/prod/pods/web/exec", u.Path)
	q := u.Query()
	assert.Equal(t, []string{"sh", "-c", "echo a b"}, q["command"])
	assert.Equal(t, "true", q.Get("stdin"))
	assert.Equal(t, "true", q.Get("stdout"))
	assert.Equal(t, "true", q.Get("tty"))
	assert.Empty(t, q.Get("stderr"), "a terminal merges stderr")
	assert.Equal(t, "app", q.Get("container"))

	q = streamURL("default", "web", "exec", "", []string{"wc", "-l"}, true, false).Query()
	assert.Equal(t, "true", q.Get("stderr"))
	assert.Empty(t, q.Get("tty"))
	assert.False(t, q.Has("container"))

	// attach: no command; stdin only when asked.
	u = streamURL("default", "web", "attach", "app", nil, false, false)
	assert.Equal(t, "/api/v1/namespaces/default/pods/web/attach", u.Path)
	q = u.Query()
	assert.False(t, q.Has("command"))
	assert.False(t, q.Has("stdin"))
	assert.Equal(t, "true", q.Get("stdout"))
	assert.Equal(t, "true", q.Get("stderr"))
}

func TestSizeQueue(t *testing.T) {
	var mu sync.Mutex
	w, h := 120, 40
	set := func(nw, nh int) { mu.Lock(); w, h = nw, nh; mu.Unlock() }
	size := func() (int, int, error) {
		mu.Lock()
		defer mu.Unlock()
		if w == 0 {
			return 0, 0, errors.New("no terminal")
		}
		return w, h, nil
	}
	resized := make(chan os.Signal, 1)
	q := newSizeQueue(size, resized)
	next := func() *remotecommand.TerminalSize {
		t.Helper()
		ch := make(chan *remotecommand.TerminalSize, 1)
		go func() { ch <- q.Next() }()
		select {
		case s := <-ch:
			return s
		case <-time.After(5 * time.Second):
			t.Fatal("no size within 5s")
			return nil
		}
	}
	assert.Equal(t, &remotecommand.TerminalSize{Width: 120, Height: 40}, next(), "the size at the start")
	// A signal without a change sends nothing; unreadable sizes are
	// skipped; the next change is sent.
	resized <- os.Interrupt
	set(0, 0)
	resized <- os.Interrupt
	set(132, 50)
	resized <- os.Interrupt
	assert.Equal(t, &remotecommand.TerminalSize{Width: 132, Height: 50}, next(), "the size after a resize")
	q.stop()
	assert.Nil(t, next(), "a stopped queue ends the stream's resize loop")
}
