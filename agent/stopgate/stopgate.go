package stopgate

import (
	"context"
	"sync"
	"time"
)

// Gate counts the pods being stopped. The zero value is ready to use.
type Gate struct {
	mu       sync.Mutex
	stopping int
	ended    chan struct{} // closed (and replaced) whenever a stop ends
}

// Stopping marks one pod's stop as begun; the returned func marks it
// ended (a second call does nothing).
func (g *Gate) Stopping() (ended func()) {
	g.mu.Lock()
	g.stopping++
	if g.ended == nil {
		g.ended = make(chan struct{})
	}
	g.mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			g.mu.Lock()
			g.stopping--
			close(g.ended)
			g.ended = make(chan struct{})
			g.mu.Unlock()
		})
	}
}

// The periods of a teardown's hold (HoldRemoval).
const (
	// holdQuiet ends the hold once no stop has ended for that long.
	holdQuiet = time.Second
	// The bound of the hold: holdBase, plus holdPerPod for each other pod
	// being stopped when the hold begins, at most holdMax. A fixed 10 s
	// was too short where stops are slow: on the 2-core AMD VM of
	// 2026-12-02, 110 pods' stops spanned 60–80 s, so most removals ran
	// beside the later stops (110 manifests removed: down in 79 s against
	// the raw floor's 63–68 s gone and the kubelet's 61–91 s; with a 60 s
	// bound 69 s, and gone 81 → 74 s). Half a second a pod is about what
	// one pod's stop costs there. holdMax is the kubelet's container GC
	// period, within which it removes a stopped pod's sandbox; and the
	// bound grows only with a mass deletion, so a pod deleted beside a
	// few others is held about as long as before.
	holdBase   = 10 * time.Second
	holdPerPod = 500 * time.Millisecond
	holdMax    = time.Minute
)

// holdBound is the bound of a hold that begins while `stopping` other pods
// are being stopped.
func holdBound(stopping int) time.Duration {
	return min(holdBase+time.Duration(stopping)*holdPerPod, holdMax)
}

// HoldRemoval is a teardown's Wait, once its own stop has ended: until
// no stop has ended for a second, bounded by holdBound of the pods being
// stopped now.
func (g *Gate) HoldRemoval(ctx context.Context) {
	g.mu.Lock()
	n := g.stopping
	g.mu.Unlock()
	g.Wait(ctx, holdQuiet, holdBound(n))
}

// Wait returns once no pod is being stopped, once no stop has ended for
// quiet, after max in all, or when ctx ends; at once when no pod is being
// stopped. The times are real: a fake clock in a test holds nothing.
func (g *Gate) Wait(ctx context.Context, quiet, max time.Duration) {
	deadline := time.Now().Add(max)
	for {
		g.mu.Lock()
		n, ended := g.stopping, g.ended
		g.mu.Unlock()
		d := min(quiet, time.Until(deadline))
		if n == 0 || d <= 0 {
			return
		}
		t := time.NewTimer(d)
		select {
		case <-ended:
			t.Stop()
		case <-t.C:
			return
		case <-ctx.Done():
			t.Stop()
			return
		}
	}
}
