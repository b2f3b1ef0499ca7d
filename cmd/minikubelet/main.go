// Command minikubelet is the node half of Kubernetes, small enough to read:
// it runs Pod manifests on containerd through the CRI.
//
// This package only parses flags, sets up logging and signals, builds the
// concrete cri/cni implementations and hands them to package agent.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/minikubelet/minikubelet/agent/api"
	// Heap profiling off before the other packages initialize (see there).
	_ "github.com/minikubelet/minikubelet/cmd/minikubelet/earlyinit"
)

// defaultSocket is the local API's unix socket.
const defaultSocket = "/run/minikubelet/minikubelet.sock"

// defaultRunDir is serve's --run-dir: its lock and the tmpfs of the local
// API's Secrets. It is the default socket's directory, but not derived
// from --socket: a socket the user names elsewhere (/tmp/x.sock) gets no
// node state beside it.
const defaultRunDir = "/run/minikubelet"

// defaultManifestDir is serve's --manifest-dir.
const defaultManifestDir = "/etc/minikubelet/manifests"

// version is set at build time (-ldflags "-X main.version=…").
var version = "v0.1.0-dev"

const usage = `minikubelet runs Kubernetes Pod manifests on one machine through the CRI.

Usage:
  minikubelet serve [flags]        the daemon: run the node's pods (manifest dir + local API)
  minikubelet run [flags] FILE     run the pods in FILE: through the daemon when it runs,
                                   else in the foreground until Ctrl-C
` + apiUsage + `  minikubelet kubeconfig           print the admin kubeconfig of serve --api-address (for kubectl)
  minikubelet version              print the version
  minikubelet help [COMMAND]       show help

Run 'minikubelet help run' for the flags.
`

// exitError carries a process exit code with its message.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if len(os.Args) > 1 && os.Args[1] != "serve" {
		// Start-up mapped all of the binary's code and read-only data
		// (earlyinit's prefault). A command still running 10 s later (a
		// foreground run, logs -f, get -w, attach) lets go of what it does
		// not use again, as the daemon does once it serves (serve.go): its
		// resident memory, and the daemon's eviction of the binary from
		// the page cache, which skips pages another process maps.
		time.AfterFunc(10*time.Second, func() { dropBinaryPagesLogged(nil, "start-up", false) })
	}
	err := runMain(ctx, os.Args[1:], os.Stdout, os.Stderr)
	if err == nil {
		return
	}
	if code, ok := interruptedExit(ctx, err); ok {
		os.Exit(code)
	}
	code := 1
	var ee *exitError
	if errors.As(err, &ee) {
		code = ee.code
	}
	if !errors.Is(err, errUsageShown) {
		fmt.Fprintln(os.Stderr, "minikubelet:", err)
	}
	os.Exit(code)
}

// interruptedExit reports whether err only says that the user's Ctrl-C
// (or a SIGTERM) ended the command, and the exit code: the shell's 128+n
// (130, 143), with no message. That is a normal end: kubectl attach, logs
// -f and exec -i end the same way, killed by the signal (kubectl installs
// no handler for them), so a script sees 130 from either; 0 would hide
// that the command did not finish, 1 would read as a failure with no
// message.
func interruptedExit(ctx context.Context, err error) (int, bool) {
	if ctx.Err() == nil || !errors.Is(err, context.Canceled) {
		return 0, false
	}
	if c := context.Cause(ctx); c != nil && strings.Contains(c.Error(), "terminated") {
		return 128 + int(syscall.SIGTERM), true
	}
	return 128 + int(syscall.SIGINT), true
}

// errUsageShown marks errors whose text was already printed.
var errUsageShown = errors.New("usage shown")

func runMain(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return &exitError{code: 2, err: errUsageShown}
	}
	switch args[0] {
	case "run":
		return runCommand(ctx, args[1:], stdout, stderr)
	case "serve":
		return serveCommand(ctx, args[1:], stdout, stderr)
	case "kubeconfig":
		return kubeconfigCommand(ctx, args[1:], stdout, stderr)
	case "version", "--version":
		fmt.Fprintf(stdout, "Client: minikubelet %s\n", version)
		vctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		defer cancel()
		if v, err := api.NewClient(clientSocket()).Version(vctx); err == nil {
			fmt.Fprintf(stdout, "Daemon: minikubelet %s on node %s\nRuntime: %s %s (CRI %s)\n", v.Version, v.NodeName, v.RuntimeName, v.RuntimeVersion, v.RuntimeAPIVersion)
		} else {
			fmt.Fprintf(stdout, "Daemon: not reachable on %s (%v)\n", clientSocket(), err)
		}
		return nil
	case "help", "-h", "--help":
		if len(args) > 1 && args[1] == "run" {
			return runCommand(ctx, []string{"-h"}, stdout, stderr)
		}
		if len(args) > 1 && args[1] == "serve" {
			return serveCommand(ctx, []string{"-h"}, stdout, stderr)
		}
		if len(args) > 1 && args[1] == "kubeconfig" {
			return kubeconfigCommand(ctx, []string{"-h"}, stdout, stderr)
		}
		if len(args) > 1 {
			if handled, err := apiCommands(ctx, args[1], []string{"-h"}, stdout, stderr); handled {
				return err
			}
		}
		fmt.Fprint(stdout, usage)
		return nil
	}
	if handled, err := apiCommands(ctx, args[0], args[1:], stdout, stderr); handled {
		return err
	}
	fmt.Fprint(stderr, usage)
	return &exitError{code: 2, err: fmt.Errorf("unknown command %q", args[0])}
}

// newLogger builds the process logger: text or JSON on stderr.
func newLogger(w io.Writer, level, format string) (*slog.Logger, error) {
	var lv slog.Level
	if err := lv.UnmarshalText([]byte(level)); err != nil {
		return nil, fmt.Errorf("--log-level: %w", err)
	}
	opts := &slog.HandlerOptions{Level: lv}
	switch format {
	case "text":
		return slog.New(slog.NewTextHandler(w, opts)), nil
	case "json":
		return slog.New(slog.NewJSONHandler(w, opts)), nil
	}
	return nil, fmt.Errorf("--log-format must be text or json, not %q", format)
}
