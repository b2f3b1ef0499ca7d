package probes

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
)

// maxOutput bounds the output a probe keeps: an exec command's combined
// stdout and stderr, an HTTP body (kubelet maxReadLength, 10 KiB).
const maxOutput = 10 * 1024

// Execer runs a command in a container and waits for it. cri.Runtime's
// ExecSync has exactly this signature, so the agent passes its runtime.
//
// A command that exits non-zero or outlives timeout is reported through err;
// how to tell those apart from a broken call is the ExecErrorClassifier's
// job.
type Execer interface {
	ExecSync(ctx context.Context, containerID string, cmd []string, timeout time.Duration) (stdout []byte, stderr []byte, err error)
}

// ExecErrorClassifier reads an error returned by Execer.ExecSync:
// isExit with the exit code when the command ran and exited non-zero,
// isTimeout when it did not finish within its timeout. Neither means the
// exec itself failed (runtime unreachable, container gone), which the probe
// reports as an error, not as a Failure.
//
// The agent's classifier is, with cri's types:
//
//	func(err error) (int, bool, bool) {
//		var ee *cri.ExitError
//		if errors.As(err, &ee) {
//			return int(ee.ExitCode), true, false
//		}
//		return 0, false, errors.Is(err, cri.ErrExecTimeout)
//	}
type ExecErrorClassifier func(err error) (exitCode int, isExit bool, isTimeout bool)

// DefaultExecErrorClassifier is used when none is configured. It recognises
// any error in the chain with an ExitCode() int method (os/exec.ExitError,
// probestest.ExitError) as an exit, and context.DeadlineExceeded or an error
// with Timeout() bool returning true (net.Error, probestest.ErrTimeout) as a
// timeout.
func DefaultExecErrorClassifier(err error) (exitCode int, isExit bool, isTimeout bool) {
	var ec interface{ ExitCode() int }
	if errors.As(err, &ec) {
		return ec.ExitCode(), true, false
	}
	var te interface{ Timeout() bool }
	if errors.Is(err, context.DeadlineExceeded) || (errors.As(err, &te) && te.Timeout()) {
		return 0, false, true
	}
	return 0, false, false
}

// Exec runs cmd in the container through e with the probe's timeout:
// exit 0 is Success, a non-zero exit is Failure and a timeout is Failure
// with a "timed out" message (kubelet gate ExecProbeTimeout, GA). The output
// is stdout followed by stderr, cut at 10 KiB. Any other ExecSync error is
// returned as error with Unknown. classify nil means
// DefaultExecErrorClassifier.
func Exec(ctx context.Context, e Execer, classify ExecErrorClassifier, containerID string, cmd []string, timeout time.Duration) (Result, string, error) {
	if classify == nil {
		classify = DefaultExecErrorClassifier
	}
	stdout, stderr, err := e.ExecSync(ctx, containerID, cmd, timeout)
	out := limitOutput(stdout, stderr)
	if err == nil {
		return Success, out, nil
	}
	code, isExit, isTimeout := classify(err)
	switch {
	case isExit && code == 0:
		return Success, out, nil
	case isExit:
		return Failure, out, nil
	case isTimeout:
		return Failure, fmt.Sprintf("command %q timed out after %s", cmd, timeout), nil
	}
	return Unknown, "", fmt.Errorf("exec %q: %w", cmd, err)
}

// limitOutput joins stdout and stderr, keeping at most maxOutput bytes.
func limitOutput(stdout, stderr []byte) string {
	var b strings.Builder
	for _, p := range [][]byte{stdout, stderr} {
		if room := maxOutput - b.Len(); len(p) > room {
			p = p[:room]
		}
		b.Write(p)
	}
	return b.String()
}

// expandCommand expands $(VAR) references in cmd with the container's
// static environment: only env entries with a plain value count (no
// valueFrom, no downward API), as the kubelet does for exec probes.
// "$$" is a literal "$"; a reference to an unknown variable, or an
// unterminated one, is kept as written.
func expandCommand(cmd []string, env []v1.EnvVar) []string {
	if len(cmd) == 0 {
		return cmd
	}
	vars := make(map[string]string, len(env))
	for _, e := range env {
		if e.ValueFrom == nil {
			vars[e.Name] = e.Value
		}
	}
	out := make([]string, len(cmd))
	for i, arg := range cmd {
		out[i] = expand(arg, vars)
	}
	return out
}

// expand expands one argument; see expandCommand.
func expand(s string, vars map[string]string) string {
	if !strings.Contains(s, "$") {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '$' || i+1 == len(s) {
			b.WriteByte(s[i])
			continue
		}
		switch s[i+1] {
		case '$':
			b.WriteByte('$')
			i++
		case '(':
			end := strings.IndexByte(s[i+2:], ')')
			if end < 0 {
				b.WriteString(s[i:])
				return b.String()
			}
			name := s[i+2 : i+2+end]
			if v, ok := vars[name]; ok {
				b.WriteString(v)
			} else {
				b.WriteString(s[i : i+3+end])
			}
			i += 2 + end
		default:
			b.WriteByte('$')
		}
	}
	return b.String()
}
