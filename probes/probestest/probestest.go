// Package probestest provides a scriptable fake Execer for tests of
// probes and of the agent's probe wiring.
package probestest

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/minikubelet/minikubelet/probes"
)

// ExitError is an exec result for a command that exited non-zero. Its
// ExitCode method makes probes.DefaultExecErrorClassifier see an exit.
type ExitError struct {
	// Code is the exit status.
	Code int
}

// Error implements error.
func (e *ExitError) Error() string { return fmt.Sprintf("command exited with code %d", e.Code) }

// ExitCode returns Code.
func (e *ExitError) ExitCode() int { return e.Code }

// ErrTimeout is an exec result for a command that outlived its timeout.
// probes.DefaultExecErrorClassifier sees it as a timeout.
var ErrTimeout error = timeoutError{}

// timeoutError implements Timeout() bool, like net.Error.
type timeoutError struct{}

func (timeoutError) Error() string { return "exec timed out" }
func (timeoutError) Timeout() bool { return true }

// ExecResult is one scripted answer of FakeExecer.
type ExecResult struct {
	Stdout, Stderr []byte
	// Err is nil (exit 0), an *ExitError, ErrTimeout or any other error
	// (the exec itself failed).
	Err error
}

// Exit returns a result exiting with code and printing out on stdout.
func Exit(code int, out string) ExecResult {
	r := ExecResult{Stdout: []byte(out)}
	if code != 0 {
		r.Err = &ExitError{Code: code}
	}
	return r
}

// Timeout returns a result for a timed-out command.
func Timeout() ExecResult { return ExecResult{Err: ErrTimeout} }

// ExecCall records one ExecSync call.
type ExecCall struct {
	ContainerID string
	Cmd         []string
	Timeout     time.Duration
}

// FakeExecer answers ExecSync from a script. Results are consumed in order
// per container ID (Script), then from a per-container default (SetDefault),
// then Default. Func, if set, answers instead of all of those. Safe for
// concurrent use.
type FakeExecer struct {
	// Func, if set, answers every call.
	Func func(ctx context.Context, containerID string, cmd []string, timeout time.Duration) ExecResult

	// mu guards the fields below.
	mu sync.Mutex
	// scripts holds queued results by container ID; "" is any container.
	scripts map[string][]ExecResult
	// defaults holds what a container answers once its script is used up.
	defaults map[string]ExecResult
	// fallback is the answer with no script and no default (exit 0).
	fallback ExecResult
	// calls records every call in order.
	calls []ExecCall
}

var _ probes.Execer = (*FakeExecer)(nil)

// NewFakeExecer returns a FakeExecer whose commands exit 0 with no output.
func NewFakeExecer() *FakeExecer {
	return &FakeExecer{scripts: map[string][]ExecResult{}, defaults: map[string]ExecResult{}}
}

// Script queues results for containerID ("" for any container without its
// own script); each call consumes one.
func (f *FakeExecer) Script(containerID string, results ...ExecResult) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.scripts[containerID] = append(f.scripts[containerID], results...)
}

// SetDefault sets what containerID ("" for every container) answers once its
// script is used up.
func (f *FakeExecer) SetDefault(containerID string, r ExecResult) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if containerID == "" {
		f.fallback = r
		return
	}
	f.defaults[containerID] = r
}

// Calls returns a copy of the calls so far.
func (f *FakeExecer) Calls() []ExecCall {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]ExecCall(nil), f.calls...)
}

// CallCount returns the number of calls so far.
func (f *FakeExecer) CallCount() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.calls)
}

// ExecSync implements probes.Execer.
func (f *FakeExecer) ExecSync(ctx context.Context, containerID string, cmd []string, timeout time.Duration) ([]byte, []byte, error) {
	r := f.next(containerID, cmd, timeout)
	if f.Func != nil {
		r = f.Func(ctx, containerID, cmd, timeout)
	}
	if err := ctx.Err(); err != nil {
		return nil, nil, err
	}
	return r.Stdout, r.Stderr, r.Err
}

// next records the call and pops the scripted answer.
func (f *FakeExecer) next(containerID string, cmd []string, timeout time.Duration) ExecResult {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, ExecCall{ContainerID: containerID, Cmd: append([]string(nil), cmd...), Timeout: timeout})
	for _, id := range []string{containerID, ""} {
		if q := f.scripts[id]; len(q) > 0 {
			f.scripts[id] = q[1:]
			return q[0]
		}
	}
	if r, ok := f.defaults[containerID]; ok {
		return r
	}
	return f.fallback
}

// String summarises the calls, one per line ("<id> <cmd...>"), for
// failure messages.
func (f *FakeExecer) String() string {
	var b strings.Builder
	for _, c := range f.Calls() {
		fmt.Fprintf(&b, "%s %s\n", c.ContainerID, strings.Join(c.Cmd, " "))
	}
	return b.String()
}
