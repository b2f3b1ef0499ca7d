package stopgate

import (
	"context"
	"testing"
	"time"
)

// waitTook runs g.Wait in the background and returns a channel that gets
// how long it took.
func waitTook(g *Gate, ctx context.Context, quiet, max time.Duration) <-chan time.Duration {
	out := make(chan time.Duration, 1)
	go func() {
		t0 := time.Now()
		g.Wait(ctx, quiet, max)
		out <- time.Since(t0)
	}()
	return out
}

func TestGate_NoStopNoWait(t *testing.T) {
	var g Gate
	g.Stopping()() // one that began and ended
	if d := <-waitTook(&g, context.Background(), time.Minute, time.Minute); d > time.Second {
		t.Fatalf("Wait with no stop going on took %s", d)
	}
}

// While stops keep ending, Wait holds until the last has ended.
func TestGate_HoldsWhileStopsKeepEnding(t *testing.T) {
	var g Gate
	ends := make([]func(), 5)
	for i := range ends {
		ends[i] = g.Stopping()
	}
	took := waitTook(&g, context.Background(), time.Second, time.Minute)
	for _, end := range ends {
		time.Sleep(100 * time.Millisecond)
		select {
		case d := <-took:
			t.Fatalf("Wait returned after %s while stops were still ending", d)
		default:
		}
		end()
		end() // a second call is a no-op, not another stop's end
	}
	select {
	case <-took:
	case <-time.After(10 * time.Second):
		t.Fatal("Wait did not return once every stop ended")
	}
}

// A stop that does not end (a long grace period) holds Wait for quiet only.
func TestGate_StalledStopHoldsForQuietOnly(t *testing.T) {
	var g Gate
	end := g.Stopping()
	defer end()
	d := <-waitTook(&g, context.Background(), 100*time.Millisecond, time.Minute)
	if d < 90*time.Millisecond || d > 10*time.Second {
		t.Fatalf("Wait beside a stalled stop took %s, want its quiet period of 100ms", d)
	}
}

// Stops that keep ending for longer than max hold Wait for max only, and a
// cancelled context ends it.
func TestGate_Bounds(t *testing.T) {
	var g Gate
	end := g.Stopping()
	defer end()
	stop := make(chan struct{})
	defer close(stop)
	go func() { // another stop ends every 20 ms
		for {
			select {
			case <-stop:
				return
			case <-time.After(20 * time.Millisecond):
				g.Stopping()()
			}
		}
	}()
	if d := <-waitTook(&g, context.Background(), time.Second, 200*time.Millisecond); d < 190*time.Millisecond || d > 10*time.Second {
		t.Fatalf("Wait took %s, want its bound of 200ms", d)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	if d := <-waitTook(&g, ctx, time.Minute, time.Minute); d < 90*time.Millisecond || d > 10*time.Second {
		t.Fatalf("Wait took %s, want the context's 100ms", d)
	}
}

// A teardown's hold is bounded by 10 s, half a second more for each other
// pod being stopped, at most the kubelet's container GC period.
func TestHoldBound(t *testing.T) {
	for _, c := range []struct {
		stopping int
		want     time.Duration
	}{
		{0, 10 * time.Second},
		{1, 10*time.Second + 500*time.Millisecond},
		{20, 20 * time.Second},
		{100, time.Minute},
		{250, time.Minute},
	} {
		if got := holdBound(c.stopping); got != c.want {
			t.Errorf("holdBound(%d) = %s, want %s", c.stopping, got, c.want)
		}
	}
}

// HoldRemoval returns at once when no other pod is being stopped, and
// otherwise holds while stops keep ending, beyond the old fixed 10 s when
// many pods are being stopped.
func TestGate_HoldRemoval(t *testing.T) {
	var g Gate
	t0 := time.Now()
	g.HoldRemoval(context.Background())
	if d := time.Since(t0); d > time.Second {
		t.Fatalf("HoldRemoval with no stop going on took %s", d)
	}
	ends := make([]func(), 30) // a bound of 25 s
	for i := range ends {
		ends[i] = g.Stopping()
	}
	defer func() {
		for _, end := range ends {
			end()
		}
	}()
	out := make(chan time.Duration, 1)
	go func() {
		t0 := time.Now()
		g.HoldRemoval(context.Background())
		out <- time.Since(t0)
	}()
	// One stop ends every 400 ms (within the quiet second) for 12 s.
	for i := range 30 {
		select {
		case d := <-out:
			t.Fatalf("HoldRemoval returned after %s while %d of 30 stops were still going", d, 30-i)
		case <-time.After(400 * time.Millisecond):
		}
		ends[i]()
	}
	select {
	case <-out:
	case <-time.After(10 * time.Second):
		t.Fatal("HoldRemoval did not return once every stop ended")
	}
}
