package main

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/minikubelet/minikubelet/agent/api"
)

const logsUsage = `Usage: minikubelet logs NAME [-c CONTAINER] [-f] [-p] [--tail N] [--timestamps]
                        [--since 5m | --since-time RFC3339] [--limit-bytes N] [-n NS]

Print a container's log (the CRI log file, partial lines joined). With -f,
keep following it, across the daemon's log rotations, until that instance
of the container exits (a restart ends it, as kubectl logs -f) or Ctrl-C.
With -p, print the log of the instance its status shows as last terminated
(kubectl's --previous): in a crash loop's back-off, the run that just
crashed.
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
	var sinceTime string
	var limit int64
	fs.StringVar(&sinceTime, "since-time", "", "only lines at or after this RFC3339 time, e.g. 2024-01-02T15:04:05Z")
	fs.Int64Var(&limit, "limit-bytes", 0, "stop after this many bytes of output (0: no limit)")
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
	if since > 0 && sinceTime != "" {
		return usageError(fs, "at most one of --since and --since-time may be given")
	}
	if since > 0 {
		s := int64((since + time.Second - 1) / time.Second)
		req.SinceSeconds = &s
	}
	if sinceTime != "" {
		t, err := time.Parse(time.RFC3339, sinceTime)
		if err != nil {
			return usageError(fs, "--since-time %q is not an RFC3339 time, e.g. 2024-01-02T15:04:05Z", sinceTime)
		}
		req.SinceTime = t
	}
	if limit < 0 {
		return usageError(fs, "--limit-bytes must be 0 or more")
	}
	if limit > 0 {
		req.LimitBytes = &limit
	}
	rc, err := cf.client().Logs(ctx, cf.namespace, podName(pos[0]), req)
	if err != nil {
		return err
	}
	defer rc.Close()
	if _, err := io.Copy(stdout, rc); err != nil {
		if ctx.Err() != nil {
			// Ctrl-C while following: a normal end (interruptedExit: 130,
			// as kubectl logs -f, which the signal ends).
			return ctx.Err()
		}
		return fmt.Errorf("read log: %w", err)
	}
	return nil
}
