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
