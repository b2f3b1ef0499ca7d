package hoststats

import (
	"bytes"
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"

	"github.com/minikubelet/minikubelet/agent/eviction"
	"github.com/minikubelet/minikubelet/agent/volume"
)

// fixedObservation is the Provider with a fixed node observation: the
// pods' measurements are the real ones, the node is not read.
type fixedObservation struct {
	*Provider
}

func (fixedObservation) Observe(context.Context) eviction.NodeObservation {
	return eviction.NodeObservation{Signals: map[eviction.Signal]eviction.Observation{
		eviction.SignalMemoryAvailable: {Available: 4000 * mi, Capacity: 4096 * mi},
	}}
}

// waitGroupDone waits for wg, at most d.
func waitGroupDone(wg *sync.WaitGroup, d time.Duration) bool {
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
		return true
	case <-time.After(d):
		return false
	}
}

// fakePods is the engine as the eviction manager sees it (eviction.Pods):
// its pods are evictable until evicted; an eviction is recorded with its
// message.
type fakePods struct {
	mu      sync.Mutex
	pods    []*v1.Pod
	evicted map[types.UID]string
}

func (f *fakePods) Evictable() []*v1.Pod {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []*v1.Pod
	for _, p := range f.pods {
		if _, ok := f.evicted[p.UID]; !ok {
			out = append(out, p)
		}
	}
	return out
}

func (f *fakePods) Evict(uid types.UID, _ int64, message string, _ bool) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, ok := f.evicted[uid]; ok {
		return false
	}
	f.evicted[uid] = message
	return true
}

func (f *fakePods) CleanedUp(types.UID) (cleanedUp, gone <-chan struct{}) { return nil, nil }

// localStoragePod is a pod whose container "app" has no limits and a disk
// emptyDir "data" with sizeLimit.
func localStoragePod(name, sizeLimit string) *v1.Pod {
	size := resource.MustParse(sizeLimit)
	p := &v1.Pod{}
	p.Name, p.Namespace, p.UID = name, "default", types.UID("uid-"+name)
	p.Spec.Containers = []v1.Container{{Name: "app", Image: "reg.local/app:1"}}
	p.Spec.Volumes = []v1.Volume{{Name: "data", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{SizeLimit: &size}}}}
	return p
}

// A pod whose files take forever to measure (here a walk that blocks until
// it is stopped, as a pod of millions of files makes it take seconds)
// holds back neither the other pods' measurements nor the cycle: the pod
// past its emptyDir sizeLimit is evicted in the first cycle, which returns
// within podFilesWait; the slow pod's walk is not started again while it
// runs, and ends when the eviction loop stops. When the cycle walked the
// pods itself, one after the other, the first cycle never returned.
func TestEviction_SlowPodMeasurementHoldsBackNoOne(t *testing.T) {
	slow := localStoragePod("slow", "1Mi")
	over := localStoragePod("over", "1Mi")
	h := newTestEngine(t)
	h.run(slow, over)
	ths, err := eviction.ParseThresholds("memory.available<100Mi", "", "")
	require.NoError(t, err)
	var slowWalks atomic.Int32
	slowStarted, slowEnded := make(chan struct{}, 10), make(chan struct{}, 10)
	s := h.provider(fakeStats{ctrStats(string(slow.UID), "app", 0, 0), ctrStats(string(over.UID), "app", 0, 0)})
	s.measure = func(ctx context.Context, p *v1.Pod, pace walkPacer) *podFiles {
		if p.UID == slow.UID {
			slowWalks.Add(1)
			slowStarted <- struct{}{}
			<-ctx.Done()
			slowEnded <- struct{}{}
			return &podFiles{}
		}
		return s.measurePodFiles(ctx, p, pace)
	}
	pods := &fakePods{pods: []*v1.Pod{slow, over}, evicted: map[types.UID]string{}}
	m, err := eviction.NewManager(eviction.Config{Thresholds: ths, Stats: fixedObservation{s}, PressureTransitionPeriod: time.Minute}.WithDefaults(),
		pods, clock.RealClock{}, slog.New(slog.DiscardHandler), prometheus.NewRegistry())
	require.NoError(t, err)
	data := h.EmptyDirPath(over, "data")
	require.NoError(t, os.MkdirAll(data, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(data, "fill"), bytes.Repeat([]byte("x"), 2<<20), 0o644))

	start := time.Now()
	cycle := make(chan []*v1.Pod, 1)
	go func() { cycle <- m.Synchronize(context.Background()) }()
	var evicted []*v1.Pod
	select {
	case evicted = <-cycle:
	case <-time.After(10 * time.Second):
		t.Fatal("the cycle waits for the slow pod's walk")
	}
	took := time.Since(start)
	require.Len(t, evicted, 1)
	assert.Equal(t, "over", evicted[0].Name)
	assert.Less(t, took, podFilesWait+2*time.Second, "the cycle waits for the slow pod's first figure podFilesWait at most")
	pods.mu.Lock()
	assert.Equal(t, map[types.UID]string{over.UID: `Usage of EmptyDir volume "data" exceeds the limit "1Mi". `}, pods.evicted)
	pods.mu.Unlock()

	// The next cycles: the slow walk still runs, is not started again,
	// and the pod without a figure stays unjudged (not evicted).
	assert.Empty(t, m.Synchronize(context.Background()))
	assert.Equal(t, int32(1), slowWalks.Load())
	pods.mu.Lock()
	assert.NotContains(t, pods.evicted, slow.UID)
	pods.mu.Unlock()

	// The loop's end stops the measurement.
	ctx, cancel := context.WithCancel(context.Background())
	loopDone := make(chan struct{})
	go func() { m.Run(ctx); close(loopDone) }()
	cancel()
	select {
	case <-loopDone:
	case <-time.After(10 * time.Second):
		t.Fatal("the eviction loop did not stop")
	}
	select {
	case <-slowEnded:
	case <-time.After(5 * time.Second):
		t.Fatal("the slow pod's walk still runs after the eviction loop stopped")
	}
	assert.True(t, waitGroupDone(&s.files().walks, 5*time.Second), "a measurement goroutine outlived the loop")
}

// The cache: a call starts a measurement of each pod with none in flight
// and waits for it; a walk still running from an earlier call is neither
// waited for nor started again, its pod judged on its latest figure; a
// pod gone from the agent has its measurement stopped (its goroutine
// ends) and its figure dropped at the next call; stop ends the rest.
func TestPodFilesCache(t *testing.T) {
	a, b := &v1.Pod{}, &v1.Pod{}
	a.UID, b.UID = "uid-a", "uid-b"
	type call struct {
		uid types.UID
		n   int
	}
	var mu sync.Mutex
	calls := map[types.UID]int{}
	block := map[call]chan struct{}{} // a call that waits for its channel (or ctx)
	exited := make(chan call, 100)
	measure := func(ctx context.Context, p *v1.Pod, _ walkPacer) *podFiles {
		mu.Lock()
		calls[p.UID]++
		c := call{p.UID, calls[p.UID]}
		ch := block[c]
		mu.Unlock()
		defer func() { exited <- c }()
		if ch != nil {
			select {
			case <-ch:
			case <-ctx.Done():
			}
		}
		return &podFiles{Held: int64(c.n), HeldOK: true}
	}
	var aGone atomic.Bool
	c := newPodFilesCache(measure, func(uid types.UID) bool { return !(uid == a.UID && aGone.Load()) })
	// The wait bounds how long a call gives walks that do finish: 200 ms
	// once, and a loaded machine that stalled b's instant walk that long
	// left b's figure stale. It costs its length only where a's walk blocks.
	c.wait = 2 * time.Second
	ctx := context.Background()
	held := func(got map[types.UID]*podFiles, uid types.UID) int64 {
		t.Helper()
		require.Contains(t, got, uid)
		return got[uid].Held
	}

	got := c.get(ctx, []*v1.Pod{a, b})
	assert.Equal(t, int64(1), held(got, a.UID), "the first figure, waited for")
	assert.Equal(t, int64(1), held(got, b.UID))

	// a's second walk blocks: the call waits c.wait for it, then returns
	// a's latest figure and b's fresh one.
	release := make(chan struct{})
	mu.Lock()
	block[call{a.UID, 2}] = release
	mu.Unlock()
	got = c.get(ctx, []*v1.Pod{a, b})
	assert.Equal(t, int64(1), held(got, a.UID), "stale but latest")
	assert.Equal(t, int64(2), held(got, b.UID))

	// Still running: not started again, not waited for.
	c.wait = time.Hour
	start := time.Now()
	got = c.get(ctx, []*v1.Pod{a, b})
	assert.Less(t, time.Since(start), 10*time.Second, "waited for a walk an earlier call started")
	assert.Equal(t, int64(1), held(got, a.UID))
	assert.Equal(t, int64(3), held(got, b.UID))
	mu.Lock()
	assert.Equal(t, 2, calls[a.UID], "one walk of a pod at a time")
	mu.Unlock()
	c.wait = 2 * time.Second

	// a goes away with its walk blocked: the next call (for b only) stops
	// it and drops a.
	aGone.Store(true)
	c.get(ctx, []*v1.Pod{b})
	select {
	case ex := <-waitFor(exited, call{a.UID, 2}):
		assert.Equal(t, call{a.UID, 2}, ex)
	case <-time.After(5 * time.Second):
		t.Fatal("the gone pod's measurement goroutine did not end")
	}
	c.mu.Lock()
	assert.NotContains(t, c.pods, a.UID)
	assert.Contains(t, c.pods, b.UID)
	c.mu.Unlock()

	// stop ends a blocked walk of b and waits for it.
	mu.Lock()
	block[call{b.UID, 5}] = make(chan struct{})
	mu.Unlock()
	c.wait = 10 * time.Millisecond
	c.get(ctx, []*v1.Pod{b}) // b's 5th walk blocks
	stopped := make(chan struct{})
	go func() { c.stop(); close(stopped) }()
	select {
	case <-stopped:
	case <-time.After(5 * time.Second):
		t.Fatal("stop did not end the measurements")
	}
	assert.True(t, waitGroupDone(&c.walks, time.Second))
	c.mu.Lock()
	assert.Empty(t, c.pods)
	c.mu.Unlock()
	close(release)
}

// waitFor forwards from ch the first value equal to want.
func waitFor[T comparable](ch <-chan T, want T) <-chan T {
	out := make(chan T, 1)
	go func() {
		for v := range ch {
			if v == want {
				out <- v
				return
			}
		}
	}()
	return out
}

// One measurement walks each directory once: the pod directory (its
// emptyDirs measured as subtrees of that walk, not walked again on their
// own) and the log directory (each container's as a subtree), and the
// figures are what separate walks find.
func TestHostEvictionStats_EachDirectoryWalkedOnce(t *testing.T) {
	h := newTestEngine(t)
	size := resource.MustParse("1Mi")
	lim := v1.ResourceList{v1.ResourceEphemeralStorage: resource.MustParse("10Mi")}
	p := &v1.Pod{}
	p.Name, p.Namespace, p.UID = "p", "default", types.UID("uid-1")
	p.Spec.Volumes = []v1.Volume{{Name: "data", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{SizeLimit: &size}}}}
	p.Spec.Containers = []v1.Container{{Name: "a", Resources: v1.ResourceRequirements{Limits: lim}}}
	data := h.EmptyDirPath(p, "data")
	logs := filepath.Join(h.PodLogDir(p), "a")
	for _, d := range []string{data, logs} {
		require.NoError(t, os.MkdirAll(d, 0o755))
	}
	require.NoError(t, os.WriteFile(filepath.Join(data, "fill"), bytes.Repeat([]byte("x"), 256<<10), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(logs, "0.log"), bytes.Repeat([]byte("x"), 128<<10), 0o644))

	var mu sync.Mutex
	var walked []string
	s := h.provider(fakeStats{ctrStats("uid-1", "a", 0, 0)})
	s.walk = func(ctx context.Context, dir string, l volume.UsageLimits, subs []string) (volume.Usage, map[string]volume.Usage, error) {
		mu.Lock()
		walked = append(walked, dir)
		mu.Unlock()
		return volume.DiskUsageWithSubtrees(ctx, dir, l, subs)
	}
	got := s.LocalStorage(context.Background(), []*v1.Pod{p})
	require.Contains(t, got, p.UID)
	mu.Lock()
	assert.ElementsMatch(t, []string{h.PodDir(p), h.PodLogDir(p)}, walked, "each directory once, the emptyDir inside the pod directory's walk")
	mu.Unlock()

	u := got[p.UID]
	alone, err := volume.DiskUsage(context.Background(), data, volume.DefaultUsageLimits)
	require.NoError(t, err)
	assert.Equal(t, alone.Bytes, u.EmptyDirs["data"])
	alone, err = volume.DiskUsage(context.Background(), logs, volume.DefaultUsageLimits)
	require.NoError(t, err)
	assert.Equal(t, alone.Bytes, u.ContainerLogs["a"])
	require.True(t, u.PodMeasured)
	assert.GreaterOrEqual(t, u.Pod, int64((256+128)<<10))
}
