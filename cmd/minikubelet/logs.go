package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/minikubelet/minikubelet/agent/api"
)

const logsUsage = `Usage: minikubelet logs NAME [-c CONTAINER] [-f] [-p] [--tail N] [--timestamps] [--since 5m] [-n NS]

Print a container's log (the CRI log file, partial lines joined). With -f,
keep following it, across the daemon's log rotations, until the container
exits or Ctrl-C. With -p, print the previous instance's log (before its
last restart).
`

func logsCommand(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("logs", logsUsage, stderr)
	var cf clientFlags
	cf.register(fs)
	var req api.LogRequest
	var tail int64
	var since time.Duration
	fs.StringVar(&req.Container, "container", "", "the container (default: the pod's only container)")
	fs.StringVar(&req.Container, "c", "", "shorthand for --container")
	fs.BoolVar(&req.Follow, "follow", false, "keep streaming new lines")
	fs.BoolVar(&req.Follow, "f", false, "shorthand for --follow")
	fs.BoolVar(&req.Previous, "previous", false, "the previous instance of the container")
	fs.BoolVar(&req.Previous, "p", false, "shorthand for --previous")
	fs.Int64Var(&tail, "tail", -1, "the number of recent lines to show (-1: all)")
	fs.BoolVar(&req.Timestamps, "timestamps", false, "prefix each line with its RFC3339 timestamp")
	fs.DurationVar(&since, "since", 0, "only lines newer than this duration, e.g. 5s, 2m")
	pos, err := parseArgs(fs, args)
	if err != nil {
		return helpIsNil(err)
	}
	if len(pos) != 1 {
		return usageError(fs, "logs needs exactly one pod name")
	}
	if tail >= 0 {
		req.TailLines = &tail
	}
	if since > 0 {
		s := int64((since + time.Second - 1) / time.Second)
		req.SinceSeconds = &s
	}
	rc, err := cf.client().Logs(ctx, cf.namespace, podName(pos[0]), req)
	if err != nil {
		return err
	}
	defer rc.Close()
	if _, err := io.Copy(stdout, rc); err != nil {
		if ctx.Err() != nil || errors.Is(err, context.Canceled) {
			return nil // Ctrl-C while following
		}
		return fmt.Errorf("read log: %w", err)
	}
	return nil
}
