package main

// This file holds what the kubectl-shaped commands (get, describe, logs,
// exec, attach, delete, completion) share: the dispatcher, the API client and the
// flags every one of them takes.

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/minikubelet/minikubelet/agent/api"
)

// socketEnv overrides the default API socket.
const socketEnv = "MINIKUBELET_SOCKET"

// apiUsage lists the commands that talk to the daemon, for the main usage.
const apiUsage = `  minikubelet get pods [NAME] [-n NS | -A] [-o wide|json|yaml|name] [-w]
                                   list pods, like kubectl get
  minikubelet describe pod NAME    show a pod, its events and where it is stuck
  minikubelet logs NAME [-c C] [-f] [-p] [--tail N] [--timestamps]
                                   print a container's log
  minikubelet exec NAME [-c C] [-i] [-t] -- CMD...
                                   run a command in a container (-it: a shell)
  minikubelet attach NAME [-c C] [-i] [-t] [-q]
                                   attach to a container's running process
  minikubelet delete pod NAME | -f FILE [--grace-period N] [--wait]
                                   delete pods
  minikubelet completion bash|zsh|fish
                                   print a shell completion script
`

// apiCommands runs the command cmd when it is one of the daemon's client
// commands; handled is false for any other command. Errors carrying an exit
// code are *exitError.
func apiCommands(ctx context.Context, cmd string, args []string, stdout, stderr io.Writer) (handled bool, err error) {
	var f func(context.Context, []string, io.Writer, io.Writer) error
	switch cmd {
	case "get":
		f = getCommand
	case "describe":
		f = describeCommand
	case "logs", "log":
		f = logsCommand
	case "exec":
		f = execCommand
	case "attach":
		f = attachCommand
	case "delete":
		f = deleteCommand
	case "completion":
		f = completionCommand
	default:
		return false, nil
	}
	return true, f(ctx, args, stdout, stderr)
}

// clientSocket is the socket the client dials without --socket.
func clientSocket() string {
	if s := os.Getenv(socketEnv); s != "" {
		return s
	}
	return api.DefaultSocket
}

// clientFlags are the flags of every client command.
type clientFlags struct {
	socket    string
	namespace string
}

func (c *clientFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&c.socket, "socket", clientSocket(), "the daemon's API socket (env "+socketEnv+")")
	fs.StringVar(&c.namespace, "namespace", "default", "the pods' namespace")
	fs.StringVar(&c.namespace, "n", "default", "shorthand for --namespace")
}

// client returns the API client for the flags.
func (c *clientFlags) client() *api.Client { return api.NewClient(c.socket) }

// newFlagSet returns a flag set whose -h prints usage and the flags.
func newFlagSet(name, usage string, stderr io.Writer) *flag.FlagSet {
	fs := newCommandFlagSet(name)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(stderr, usage)
		fmt.Fprintln(stderr, "\nFlags:")
		fs.PrintDefaults()
	}
	return fs
}

// parseArgs parses flags placed anywhere among the arguments, as kubectl
// allows (`get pods web -n prod`), and returns the positional arguments.
// Everything after "--" is positional. -h is not an error: handled
// reports that the usage was printed and the command should return nil.
func parseArgs(fs *flag.FlagSet, args []string) (pos []string, err error) {
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return nil, errHelpShown
			}
			return nil, &exitError{code: 2, err: errUsageShown}
		}
		rest := fs.Args()
		if consumed := len(args) - len(rest); consumed > 0 && args[consumed-1] == "--" {
			return append(pos, rest...), nil
		}
		if len(rest) == 0 {
			return pos, nil
		}
		pos = append(pos, rest[0])
		args = rest[1:]
	}
}

// errHelpShown is returned by parseArgs after -h; commands return nil.
var errHelpShown = errors.New("help shown")

// usageError prints the usage and returns an exit-2 error with the message.
func usageError(fs *flag.FlagSet, format string, a ...any) error {
	fs.Usage()
	return &exitError{code: 2, err: fmt.Errorf(format, a...)}
}

// podNames turns the arguments of get, describe and delete ("pods
// NAME…", "pod/NAME…") into pod names; the resource word is required.
func podNames(fs *flag.FlagSet, pos []string) ([]string, error) {
	if len(pos) == 0 {
		return nil, usageError(fs, "name a resource type: pods")
	}
	var names []string
	first, rest := pos[0], pos[1:]
	if kind, name, ok := strings.Cut(first, "/"); ok {
		if !isPodResource(kind) {
			return nil, usageError(fs, "minikubelet serves only pods, not %q", kind)
		}
		names = append(names, name)
	} else if !isPodResource(first) {
		return nil, usageError(fs, "minikubelet serves only pods, not %q", first)
	}
	for _, a := range rest {
		kind, name, ok := strings.Cut(a, "/")
		switch {
		case !ok:
			names = append(names, a)
		case isPodResource(kind):
			names = append(names, name)
		default:
			return nil, usageError(fs, "minikubelet serves only pods, not %q", kind)
		}
	}
	return names, nil
}

// isPodResource reports whether s names the pods resource.
func isPodResource(s string) bool {
	switch strings.ToLower(s) {
	case "pods", "pod", "po":
		return true
	}
	return false
}

// podName accepts "NAME" or "pod/NAME".
func podName(s string) string {
	if kind, name, ok := strings.Cut(s, "/"); ok && isPodResource(kind) {
		return name
	}
	return s
}
