package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

const execUsage = `Usage: minikubelet exec NAME [-c CONTAINER] [-n NS] [-i] [-t] [--timeout 30s] -- COMMAND [ARG...]

Run a command in a container; minikubelet exits with the command's exit
code. Without -i the command runs without stdin or a terminal (CRI
ExecSync) and its stdout and stderr are printed when it ends. With -i it
runs interactively over the daemon's streaming exec (as kubectl exec -i):
stdin is passed to it and its output shown as it comes; -t (-it) adds a
terminal: the local one is put in raw mode (restored on exit) and its size
follows resizes. As with kubectl, -t needs -i, and -t on a stdin that is
not a terminal is dropped with a warning.

Examples:
  minikubelet exec web -- cat /etc/hostname
  minikubelet exec -it web -- sh
  printf 'a\nb\n' | minikubelet exec -i web -- wc -l
`

// execStdin is the stdin an interactive exec reads (a variable for tests).
var execStdin = os.Stdin

func execCommand(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("exec", execUsage, stderr)
	var cf clientFlags
	cf.register(fs)
	var container string
	var stdin, tty, it bool
	var timeout time.Duration
	fs.StringVar(&container, "container", "", "the container (default: the pod's only container)")
	fs.StringVar(&container, "c", "", "shorthand for --container")
	fs.DurationVar(&timeout, "timeout", 0, "stop the command after this long (0: no limit; not with -i)")
	fs.BoolVar(&stdin, "stdin", false, "pass stdin to the command and stream its output (interactive exec)")
	fs.BoolVar(&stdin, "i", false, "shorthand for --stdin")
	fs.BoolVar(&tty, "tty", false, "run the command on a terminal (needs -i; stdin must be a terminal)")
	fs.BoolVar(&tty, "t", false, "shorthand for --tty")
	fs.BoolVar(&it, "it", false, "shorthand for -i -t")
	fs.BoolVar(&it, "ti", false, "shorthand for -i -t")

	// The command starts after "--"; the flags are before it.
	var command []string
	if i := slices.Index(args, "--"); i >= 0 {
		args, command = args[:i], args[i+1:]
	}
	pos, err := parseArgs(fs, args)
	if err != nil {
		return helpIsNil(err)
	}
	if it {
		stdin, tty = true, true
	}
	if len(pos) == 0 {
		return usageError(fs, "exec needs a pod name")
	}
	// `exec POD CMD…` without "--", as old kubectl allowed.
	if command == nil {
		command = pos[1:]
	} else if len(pos) > 1 {
		return usageError(fs, "exec takes one pod name before --, got %q", pos)
	}
	if len(command) == 0 {
		return usageError(fs, "exec needs a command after --")
	}
	name := podName(pos[0])
	if stdin {
		if timeout > 0 {
			return usageError(fs, "--timeout applies only without -i: an interactive command runs until it exits")
		}
		s := interactiveExec{socket: cf.socket, namespace: cf.namespace, pod: name, container: container,
			command: command, tty: tty, stdin: execStdin, stdout: stdout, stderr: stderr}
		return s.run(ctx, cf.client())
	}
	// -t without -i is ignored, as kubectl ignores it (its SetupTTY drops
	// the terminal when there is no stdin).
	res, err := cf.client().Exec(ctx, cf.namespace, name, container, command, timeout)
	if err != nil {
		return execError(err, cf.namespace, name)
	}
	if _, err := stdout.Write(res.Stdout); err != nil {
		return err
	}
	if _, err := stderr.Write(res.Stderr); err != nil {
		return err
	}
	if res.ExitCode != 0 {
		code := res.ExitCode
		if code < 0 || code > 255 {
			code = 1
		}
		return &exitError{code: code, err: fmt.Errorf("command terminated with exit code %d", res.ExitCode)}
	}
	return nil
}

// execError adds what to do next to the errors exec meets most.
func execError(err error, ns, name string) error {
	if apierrors.IsNotFound(err) {
		var se *apierrors.StatusError
		if errors.As(err, &se) && se.ErrStatus.Details != nil && se.ErrStatus.Details.Kind == "containers" {
			return fmt.Errorf("%w: list the pod's containers with `minikubelet describe pod %s -n %s`", err, name, ns)
		}
		return fmt.Errorf("%w: list the pods with `minikubelet get pods -n %s` (or -A)", err, ns)
	}
	return err
}
