package main

// This file is interactive exec (exec -i, -it) and the streaming session
// it shares with attach (attach.go): the kubectl way, a session on the
// daemon's /pods/{name}/exec or /attach endpoint, which proxies it to the
// runtime's CRI streaming server (agent/streaming).

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"syscall"
	"time"

	"golang.org/x/term"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/httpstream/spdy"
	"k8s.io/client-go/tools/remotecommand"
	utilexec "k8s.io/client-go/util/exec"

	"github.com/minikubelet/minikubelet/agent/api"
)

// ttyWarning is what kubectl prints when -t meets a stdin that is not a
// terminal (kubectl's StreamOptions.SetupTTY), word for word.
const ttyWarning = "Unable to use a TTY - input is not a terminal or the right kind of file"

// interactiveExec is one exec -i session.
type interactiveExec struct {
	socket, namespace, pod, container string
	command                           []string
	tty                               bool
	stdin                             *os.File
	stdout, stderr                    io.Writer
}

// run checks the pod, then streams the session until the command exits; the
// command's exit code becomes minikubelet's.
func (s *interactiveExec) run(ctx context.Context, c *api.Client) error {
	// The pod first: its errors (daemon not running, no such pod, container
	// not running) are clearer from a plain GET than from a failed upgrade.
	pod, err := c.GetPod(ctx, s.namespace, s.pod)
	if err != nil {
		return execError(err, s.namespace, s.pod)
	}
	if err := containerRunning(pod, s.container); err != nil {
		return err
	}
	tty := s.tty && useTTY(term.IsTerminal(int(s.stdin.Fd())), s.stderr)
	u := streamURL(s.namespace, s.pod, "exec", s.container, s.command, true, tty)
	err = streamSession(ctx, s.socket, u, s.stdin, s.stdout, s.stderr, tty)
	return sessionError(ctx, err, fmt.Sprintf("exec in pod %s/%s", s.namespace, s.pod))
}

// streamSession runs one streaming session (exec -i, attach) at u through
// the daemon's socket: stdin (nil: none) goes to the container, its
// output comes back. With tty, stdin is a terminal: it is put in raw mode
// for the session (restored on the way out) and its size follows resizes;
// the container's terminal has one output stream, so stderr is unused.
func streamSession(ctx context.Context, socket string, u *url.URL, stdin *os.File, stdout, stderr io.Writer, tty bool) error {
	opts := remotecommand.StreamOptions{Stdout: stdout, Tty: tty}
	if stdin != nil {
		// Not a typed nil in the interface: remotecommand opens a stdin
		// stream for any non-nil Stdin.
		opts.Stdin = stdin
	}
	if !tty {
		// A terminal merges stderr into stdout, as in kubectl.
		opts.Stderr = stderr
	}
	ex, err := spdyExecutor(socket, u)
	if err != nil {
		return err
	}
	if tty && stdin != nil {
		fd := int(stdin.Fd())
		old, err := term.MakeRaw(fd)
		if err != nil {
			return fmt.Errorf("put the terminal in raw mode: %w", err)
		}
		// Deferred, so every return restores it, and so does a panic; SIGINT
		// and SIGTERM cancel ctx, which ends the stream and returns here. (In
		// raw mode ^C is a byte sent to the container, not a signal.)
		defer term.Restore(fd, old) //nolint:errcheck // nothing better to do on the way out
		winch := make(chan os.Signal, 1)
		signal.Notify(winch, syscall.SIGWINCH)
		defer signal.Stop(winch)
		q := newSizeQueue(func() (int, int, error) { return term.GetSize(fd) }, winch)
		defer q.stop()
		opts.TerminalSizeQueue = q
	}
	return ex.StreamWithContext(ctx, opts)
}

// sessionError turns the error a session ended with into minikubelet's: a
// command's exit code becomes an *exitError, a cancelled ctx (SIGINT,
// SIGTERM) is returned as is, anything else is wrapped with what.
func sessionError(ctx context.Context, err error, what string) error {
	var ce utilexec.CodeExitError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &ce):
		code := ce.Code
		if code < 0 || code > 255 {
			code = 1
		}
		return &exitError{code: code, err: fmt.Errorf("command terminated with exit code %d", ce.Code)}
	case ctx.Err() != nil:
		return ctx.Err()
	}
	return fmt.Errorf("%s: %w", what, err)
}

// useTTY reports whether a session asked for -t gets a terminal: only when
// stdin is one; else it warns as kubectl does and goes on without.
func useTTY(stdinIsTerminal bool, stderr io.Writer) bool {
	if !stdinIsTerminal {
		fmt.Fprintln(stderr, ttyWarning)
	}
	return stdinIsTerminal
}

// containerRunning fails when the container named (or the pod's only one
// for "") has a status that is not running; the daemon decides the rest
// (an unknown name, several containers without -c).
func containerRunning(pod *v1.Pod, container string) error {
	if container == "" {
		if len(pod.Spec.Containers) != 1 {
			return nil
		}
		container = pod.Spec.Containers[0].Name
	}
	for _, list := range [][]v1.ContainerStatus{pod.Status.ContainerStatuses, pod.Status.InitContainerStatuses, pod.Status.EphemeralContainerStatuses} {
		for _, cs := range list {
			if cs.Name != container || cs.State.Running != nil {
				continue
			}
			state := "waiting"
			switch {
			case cs.State.Terminated != nil:
				state = "terminated: " + cs.State.Terminated.Reason
			case cs.State.Waiting != nil && cs.State.Waiting.Reason != "":
				state = "waiting: " + cs.State.Waiting.Reason
			}
			return fmt.Errorf("container %s of pod %s/%s is not running (%s): see why with `minikubelet describe pod %s -n %s`",
				container, pod.Namespace, pod.Name, state, pod.Name, pod.Namespace)
		}
	}
	return nil
}

// streamURL is the request of a streaming session: kind is the pod's
// subresource ("exec" with its command, or "attach"). The output is always
// asked for; stderr apart only without a terminal. The host is a
// placeholder: the connection goes to the unix socket.
func streamURL(ns, pod, kind, container string, command []string, stdin, tty bool) *url.URL {
	q := url.Values{"stdout": {"true"}}
	if len(command) > 0 {
		q["command"] = command
	}
	if stdin {
		q.Set("stdin", "true")
	}
	if tty {
		q.Set("tty", "true")
	} else {
		q.Set("stderr", "true")
	}
	if container != "" {
		q.Set("container", container)
	}
	return &url.URL{Scheme: "http", Host: "minikubelet",
		Path: "/api/v1/namespaces/" + url.PathEscape(ns) + "/pods/" + url.PathEscape(pod) + "/" + kind, RawQuery: q.Encode()}
}

// spdyExecutor returns client-go's SPDY executor dialing the unix socket.
//
// kubectl tries WebSocket first and falls back to SPDY; this client speaks
// SPDY only: client-go's WebSocket round tripper (transport/websocket,
// v0.37) dials with a gorilla Dialer that takes no dial function from the
// rest.Config, so it can reach TCP only, never the unix socket. SPDY's
// round tripper dials through UpgradeTransport's DialContext. The daemon
// serves both through the same proxy (agent/streaming).
func spdyExecutor(socket string, u *url.URL) (remotecommand.Executor, error) {
	tr := &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "unix", socket)
	}}
	rt, err := spdy.NewRoundTripperWithConfig(spdy.RoundTripperConfig{UpgradeTransport: tr, PingPeriod: 5 * time.Second})
	if err != nil {
		return nil, fmt.Errorf("build the streaming client: %w", err)
	}
	return remotecommand.NewSPDYExecutorForTransports(rt, rt, http.MethodPost, u)
}

// sizeQueue is the TerminalSizeQueue of a -t session: the terminal's size
// at the start, then again on every signal (SIGWINCH) until stop.
type sizeQueue struct {
	ch   chan remotecommand.TerminalSize
	done chan struct{}
}

// newSizeQueue starts watching: size reads the terminal's width and height.
func newSizeQueue(size func() (width, height int, err error), resized <-chan os.Signal) *sizeQueue {
	q := &sizeQueue{ch: make(chan remotecommand.TerminalSize, 1), done: make(chan struct{})}
	go func() {
		defer close(q.ch)
		var last remotecommand.TerminalSize
		for first := true; ; first = false {
			if w, h, err := size(); err == nil && w > 0 && h > 0 && w <= 0xffff && h <= 0xffff {
				s := remotecommand.TerminalSize{Width: uint16(w), Height: uint16(h)}
				if first || s != last {
					select {
					case q.ch <- s:
						last = s
					case <-q.done:
						return
					}
				}
			}
			select {
			case <-resized:
			case <-q.done:
				return
			}
		}
	}()
	return q
}

// Next returns the next size, or nil once the queue is stopped.
func (q *sizeQueue) Next() *remotecommand.TerminalSize {
	s, ok := <-q.ch
	if !ok {
		return nil
	}
	return &s
}

func (q *sizeQueue) stop() { close(q.done) }
