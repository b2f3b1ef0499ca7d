package main

import (
	"context"
	"fmt"
	"io"
	"slices"
	"time"
)

const execUsage = `Usage: minikubelet exec NAME [-c CONTAINER] [-n NS] [--timeout 30s] -- COMMAND [ARG...]

Run a command in a container and print its stdout and stderr; minikubelet
exits with the command's exit code. The command runs without a terminal or
stdin (CRI ExecSync): interactive exec (-i, -t, -it) is not supported yet.
`

func execCommand(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("exec", execUsage, stderr)
	var cf clientFlags
	cf.register(fs)
	var container string
	var stdin, tty, it bool
	var timeout time.Duration
	fs.StringVar(&container, "container", "", "the container (default: the pod's only container)")
	fs.StringVar(&container, "c", "", "shorthand for --container")
	fs.DurationVar(&timeout, "timeout", 0, "stop the command after this long (0: no limit)")
	fs.BoolVar(&stdin, "stdin", false, "not supported: interactive exec")
	fs.BoolVar(&stdin, "i", false, "not supported: interactive exec")
	fs.BoolVar(&tty, "tty", false, "not supported: interactive exec")
	fs.BoolVar(&tty, "t", false, "not supported: interactive exec")
	fs.BoolVar(&it, "it", false, "not supported: interactive exec")

	// The command starts after "--"; the flags are before it.
	var command []string
	if i := slices.Index(args, "--"); i >= 0 {
		args, command = args[:i], args[i+1:]
	}
	pos, err := parseArgs(fs, args)
	if err != nil {
		return helpIsNil(err)
	}
	if stdin || tty || it {
		return &exitError{code: 2, err: fmt.Errorf("interactive exec (-i/-t) is not supported yet: run a command without a terminal, e.g. minikubelet exec POD -- sh -c 'CMD'")}
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
	res, err := cf.client().Exec(ctx, cf.namespace, podName(pos[0]), container, command, timeout)
	if err != nil {
		return err
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
