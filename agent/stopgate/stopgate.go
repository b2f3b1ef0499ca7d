// Package stopgate lets the stops of a mass deletion go before the
// removals. A pod's teardown has two halves: stop (its containers with
// their grace period, then its sandbox, whose CNI DEL releases the IP) and
// remove (the sandbox and containers from the runtime, the pod cgroup, its
// directories). When a hundred pods are deleted at once on two cores, the
// first pods' removals ran beside the later pods' stops and slowed them:
// the last pod was down (nothing running, its IP released) later than
// with the kubelet, whose removals wait for its garbage collection.
//
// A teardown holds its removal while other pods are being stopped and
// their stops keep ending: once none has ended for a while (a stop that
// waits out a long grace period), or after a bound, the removal goes on.
// A lone pod's removal is never held, and one deleted beside a pod with a
// long grace period is held for the quiet period only.
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
