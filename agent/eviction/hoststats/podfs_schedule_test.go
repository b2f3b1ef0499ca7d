package hoststats

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	testclock "k8s.io/utils/clock/testing"

	"github.com/minikubelet/minikubelet/agent/volume"
)

// scheduledCache is a podFilesCache on a fake wall clock whose walks are
// instant (they take no fake time) and counted by pod.
type scheduledCache struct {
	*podFilesCache
	clock *testclock.FakeClock
	mu    sync.Mutex
	walks map[types.UID]int
}

func newScheduledCache(period time.Duration, rnd func() float64) *scheduledCache {
	s := &scheduledCache{clock: testclock.NewFakeClock(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)), walks: map[types.UID]int{}}
	s.podFilesCache = newPodFilesCache(func(_ context.Context, p *v1.Pod, _ walkPacer) *podFiles {
		s.mu.Lock()
		defer s.mu.Unlock()
		s.walks[p.UID]++
		return &podFiles{Held: int64(s.walks[p.UID]), HeldOK: true}
	}, func(types.UID) bool { return true })
	s.podFilesCache.clock, s.period, s.rand = s.clock, period, rnd
	s.podFilesCache.wait = time.Minute // the instant walks end long before
	return s
}

func (s *scheduledCache) walked(uid types.UID) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.walks[uid]
}

func podWithUID(uid string) *v1.Pod {
	p := &v1.Pod{}
	p.UID = types.UID(uid)
	return p
}

// A pod's files are walked at the first call, then again only once the
// jittered period after the last walk has passed (the kubelet's
// wait.JitterUntil(period, 1.0): period to 2*period), however often the
// cycles ask: with 10 s cycles over 10 minutes a pod is walked 10 times at
// most, where each cycle walked it before (60 times). The figure between
// walks is the latest.
func TestPodFilesCache_WalksOncePerJitteredPeriod(t *testing.T) {
	for _, tc := range []struct {
		rand float64
		gap  time.Duration // between two walks
	}{{0, time.Minute}, {0.5, 90 * time.Second}, {0.999, 119*time.Second + 940*time.Millisecond}} {
		s := newScheduledCache(time.Minute, func() float64 { return tc.rand })
		p := podWithUID("uid-a")
		ctx := context.Background()
		got := s.get(ctx, []*v1.Pod{p})
		require.Contains(t, got, p.UID)
		assert.Equal(t, 1, s.walked(p.UID), "the first cycle walks the pod")

		// Cycles every 10 s until just before the walk is due: no walk.
		var waited time.Duration
		for waited+10*time.Second < tc.gap {
			s.clock.Step(10 * time.Second)
			waited += 10 * time.Second
			s.cycle()
			got = s.get(ctx, []*v1.Pod{p})
			require.Equal(t, 1, s.walked(p.UID), "rand %v: walked again %s after the last walk", tc.rand, waited)
			assert.Equal(t, int64(1), got[p.UID].Held, "the latest figure between walks")
		}
		s.clock.Step(tc.gap - waited - time.Millisecond)
		s.get(ctx, []*v1.Pod{p})
		require.Equal(t, 1, s.walked(p.UID), "rand %v: walked before its jittered period (%s)", tc.rand, tc.gap)
		s.clock.Step(time.Millisecond)
		got = s.get(ctx, []*v1.Pod{p})
		require.Equal(t, 2, s.walked(p.UID), "rand %v: not walked %s after the last walk", tc.rand, tc.gap)
		assert.Equal(t, int64(2), got[p.UID].Held)
	}

	// Ten minutes of 10 s cycles, each pod with its own jitter: at most
	// one walk per period, at least one per two periods.
	var mu sync.Mutex
	r := []float64{0.1, 0.9}
	i := 0
	s := newScheduledCache(time.Minute, func() float64 {
		mu.Lock()
		defer mu.Unlock()
		i++
		return r[i%2]
	})
	a, b := podWithUID("uid-a"), podWithUID("uid-b")
	for range 60 {
		s.cycle()
		s.get(context.Background(), []*v1.Pod{a, b})
		s.clock.Step(10 * time.Second)
	}
	for _, p := range []*v1.Pod{a, b} {
		n := s.walked(p.UID)
		assert.GreaterOrEqual(t, n, 5, "pod %s walked too rarely", p.UID)
		assert.LessOrEqual(t, n, 10, "pod %s walked more than once a minute", p.UID)
	}
}

// pacedWalk is a fake walk of steps batches, each taking step of fake
// time and adding 1 MiB and an inode, that reports every batch to pace.
// It signals each pace call on paced (buffered: never blocks) and its end
// on done.
type pacedWalk struct {
	clock      *testclock.FakeClock
	steps      int
	step       time.Duration
	paced      chan int
	done       chan struct{}
	mu         sync.Mutex
	lastCalled int
}

func (w *pacedWalk) measure(ctx context.Context, _ *v1.Pod, pace walkPacer) *podFiles {
	var u volume.Usage
	for i := 1; i <= w.steps; i++ {
		w.clock.Step(w.step)
		u.Bytes += 1 << 20
		u.Inodes++
		w.mu.Lock()
		w.lastCalled = i
		w.mu.Unlock()
		if err := pace(ctx, podDirPart, u); err != nil {
			u.Incomplete = err.Error()
			break
		}
		w.paced <- i
	}
	w.done <- struct{}{}
	return &podFiles{Files: u, EmptyDirs: map[string]volume.Usage{}, ContainerLogs: map[string]volume.Usage{}}
}

// The walks of one cycle take its budget at most: a walk that uses it up
// pauses where it is and carries on at the next cycle (not started
// again), until it ends; meanwhile the pod counts as what was walked so
// far (a lower bound, never 0), then as the complete figure. The walk
// time charged per cycle is the budget plus one batch at most.
func TestPodFilesCache_BudgetPausesWalkUntilNextCycle(t *testing.T) {
	clk := testclock.NewFakeClock(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	w := &pacedWalk{clock: clk, steps: 10, step: 30 * time.Millisecond, paced: make(chan int, 100), done: make(chan struct{}, 10)}
	c := newPodFilesCache(w.measure, func(types.UID) bool { return true })
	c.clock, c.period, c.budget, c.wait = clk, time.Minute, 100*time.Millisecond, time.Minute
	var pauses, walks int
	var charged time.Duration
	c.onPause = func() { pauses++ }
	c.onWalk = func() { walks++ }
	c.onWalkTime = func(d time.Duration) { charged += d }
	p := podWithUID("uid-big")
	ctx := context.Background()

	lastPaced := func() int {
		w.mu.Lock()
		defer w.mu.Unlock()
		return w.lastCalled
	}
	// Cycle 1: 4 batches (120 ms) use up the 100 ms; the call returns at
	// once (the budget spent, not the hour-long wait) with the lower bound.
	c.cycle()
	start := time.Now()
	got := c.get(ctx, []*v1.Pod{p})
	assert.Less(t, time.Since(start), 30*time.Second, "the call waited for a paused walk")
	require.Equal(t, 4, lastPaced(), "the walk stops at the batch that spent the budget")
	require.Contains(t, got, p.UID, "a pod whose walk was cut off counts as what was walked")
	assert.True(t, got[p.UID].Partial)
	assert.Equal(t, int64(4<<20), got[p.UID].Files.Bytes)
	assert.Empty(t, got[p.UID].Files.Incomplete, "a paused walk is not an unmeasurable pod")
	c.mu.Lock()
	assert.Equal(t, 1, pauses)
	assert.Equal(t, 120*time.Millisecond, charged)
	c.mu.Unlock()

	// A call in the same cycle neither starts it again nor lets it on.
	got = c.get(ctx, []*v1.Pod{p})
	assert.Equal(t, 4, lastPaced())
	assert.Equal(t, int64(4<<20), got[p.UID].Files.Bytes)

	// Cycle 2: it carries on from batch 5, pauses after batch 8.
	c.cycle()
	require.Eventually(t, func() bool {
		c.mu.Lock()
		defer c.mu.Unlock()
		return pauses == 2
	}, 10*time.Second, time.Millisecond)
	assert.Equal(t, 8, lastPaced(), "carried on where it was")
	got = c.get(ctx, []*v1.Pod{p})
	assert.Equal(t, int64(8<<20), got[p.UID].Files.Bytes)
	c.mu.Lock()
	assert.Equal(t, 240*time.Millisecond, charged, "paused time is not walk time")
	c.mu.Unlock()

	// Cycle 3: it ends; the pod's figure is the complete one, and it is
	// walked again only a period later.
	c.cycle()
	select {
	case <-w.done:
	case <-time.After(10 * time.Second):
		t.Fatal("the paused walk did not carry on")
	}
	require.Eventually(t, func() bool {
		c.mu.Lock()
		defer c.mu.Unlock()
		return walks == 1
	}, 10*time.Second, time.Millisecond)
	got = c.get(ctx, []*v1.Pod{p})
	assert.False(t, got[p.UID].Partial)
	assert.Equal(t, int64(10<<20), got[p.UID].Files.Bytes)
	assert.Equal(t, 10, lastPaced())
	select {
	case <-w.done:
		t.Fatal("walked again before its period")
	default:
	}

	// Its next walk, paused at once by a spent budget, leaves the pod at
	// its latest figure (higher than the partial one).
	c.mu.Lock()
	c.used = c.budget
	c.mu.Unlock()
	clk.Step(2 * time.Minute)
	got = c.get(ctx, []*v1.Pod{p})
	require.Eventually(t, func() bool { return lastPaced() == 1 }, 10*time.Second, time.Millisecond)
	assert.Equal(t, int64(10<<20), got[p.UID].Files.Bytes, "the latest complete figure while the new walk is below it")
	c.stop()
	select {
	case <-w.done:
	case <-time.After(10 * time.Second):
		t.Fatal("stop did not end the paused walk")
	}
}

// Without a budget (0) nothing pauses; without a period (0) each call
// walks again: what unit tests that measure at each call rely on.
func TestPodFilesCache_ZeroPeriodAndBudget(t *testing.T) {
	s := newScheduledCache(0, func() float64 { return 0.5 })
	p := podWithUID("uid-a")
	for i := 1; i <= 3; i++ {
		s.get(context.Background(), []*v1.Pod{p})
		assert.Equal(t, i, s.walked(p.UID))
	}
}
