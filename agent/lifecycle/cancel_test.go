package lifecycle

import (
	"testing"
	"time"

	testclock "k8s.io/utils/clock/testing"
)

func TestCancelLater(t *testing.T) {
	clk := testclock.NewFakeClock(time.Unix(0, 0))
	wait := func(ch <-chan struct{}, what string) {
		t.Helper()
		select {
		case <-ch:
		case <-time.After(5 * time.Second):
			t.Fatal(what)
		}
	}
	// The hook ends first: cancelled then, not at the bound.
	done, cancelled := make(chan struct{}), make(chan struct{})
	CancelLater(clk, 5*time.Second, done, func() { close(cancelled) })
	select {
	case <-cancelled:
		t.Fatal("cancelled at once")
	case <-time.After(20 * time.Millisecond):
	}
	close(done)
	wait(cancelled, "not cancelled when the hook ended")

	// The hook runs on: cancelled at the bound.
	cancelled = make(chan struct{})
	CancelLater(clk, 5*time.Second, make(chan struct{}), func() { close(cancelled) })
	clk.Step(4 * time.Second)
	select {
	case <-cancelled:
		t.Fatal("cancelled before the bound")
	case <-time.After(20 * time.Millisecond):
	}
	clk.Step(time.Second)
	wait(cancelled, "not cancelled at the bound")
}
