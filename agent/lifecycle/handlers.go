package lifecycle

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"sync/atomic"
	"time"

	"k8s.io/utils/clock"

	"github.com/minikubelet/minikubelet/cri"
)

// BigExecAnswer is the output size past which an exec hook's answer is
// handed back to the OS at once (ReleaseBigAnswer).
const BigExecAnswer = 1 << 20

// lastRelease is when ReleaseBigAnswer last ran (Unix ns, wall clock).
var lastRelease atomic.Int64

// ReleaseBigAnswer returns the memory of a big ExecSync answer, now
// garbage, to the OS: a hook printing 8 MB costs the gRPC buffer and the
// decoded copy, 16 MB the Go heap would otherwise keep for minutes (an RSS
// growth of 30 MB per such hook was measured). At most once a second: a
// full collection of the daemon's small heap takes milliseconds.
func ReleaseBigAnswer() {
	now := time.Now().UnixNano()
	last := lastRelease.Load()
	if now-last < int64(time.Second) || !lastRelease.CompareAndSwap(last, now) {
		return
	}
	debug.FreeOSMemory()
}

// ExecErrorText renders an ExecSync failure: the exit code for a command
// that ran, the runtime's message otherwise.
func ExecErrorText(err error) string {
	var ee *cri.ExitError
	if errors.As(err, &ee) {
		return ee.Error()
	}
	return cri.Message(err)
}

// Sleep waits seconds on clk (the agent's clock), or fails when ctx ends
// first (the container is being killed under it).
func Sleep(ctx context.Context, clk clock.Clock, seconds int64) error {
	if seconds <= 0 {
		return nil
	}
	t := clk.NewTimer(time.Duration(seconds) * time.Second)
	defer t.Stop()
	select {
	case <-t.C():
		return nil
	case <-ctx.Done():
		return fmt.Errorf("container terminated before sleep hook finished: %w", context.Cause(ctx))
	}
}

// CancelLater calls cancel once done is closed (the hook ended) or after d
// on clk, whichever comes first, without blocking the caller. A preStop
// hook still running when its grace period ends is left to die with its
// container, as the kubelet's executePreStopHook leaves it: the
// StopContainer that follows kills the container, and with it the hook,
// within its 2 s minimum (e2e_node times a looping hook at the grace period
// plus those 2 s); d bounds how long it may outlive that.
func CancelLater(clk clock.Clock, d time.Duration, done <-chan struct{}, cancel func()) {
	t := clk.NewTimer(d)
	go func() {
		defer t.Stop()
		defer cancel()
		select {
		case <-done:
		case <-t.C():
		}
	}()
}
