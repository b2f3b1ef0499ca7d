package agent

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/minikubelet/minikubelet/agent/eviction"
	"github.com/minikubelet/minikubelet/agent/podstatus"
	"github.com/minikubelet/minikubelet/agent/source"
)

// fakeEvictionStats returns what the test sets.
type fakeEvictionStats struct {
	mu   sync.Mutex
	obs  eviction.NodeObservation
	pods map[string]*eviction.PodStats // by pod name
	// diskAsked counts PodStats calls that asked for disk usage.
	diskAsked int
	// local are the local storage usages by pod name; localAsked the
	// number of pods of each LocalStorage call.
	local      map[string]*eviction.LocalStorageUsage
	localAsked []int
}

func (f *fakeEvictionStats) set(sig eviction.Signal, avail, capacity int64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.obs.Signals == nil {
		f.obs.Signals = map[eviction.Signal]eviction.Observation{}
	}
	f.obs.Signals[sig] = eviction.Observation{Available: avail, Capacity: capacity}
}

func (f *fakeEvictionStats) Observe(context.Context) eviction.NodeObservation {
	f.mu.Lock()
	defer f.mu.Unlock()
	o := f.obs
	o.Signals = map[eviction.Signal]eviction.Observation{}
	for k, v := range f.obs.Signals {
		o.Signals[k] = v
	}
	return o
}

func (f *fakeEvictionStats) PodStats(_ context.Context, pods []*v1.Pod, disk bool) map[types.UID]*eviction.PodStats {
	f.mu.Lock()
	defer f.mu.Unlock()
	if disk {
		f.diskAsked++
	}
	out := map[types.UID]*eviction.PodStats{}
	for _, p := range pods {
		if s, ok := f.pods[p.Name]; ok {
			out[p.UID] = s
		}
	}
	return out
}

// LocalStorage returns the usages the test set, by pod name.
func (f *fakeEvictionStats) LocalStorage(_ context.Context, pods []*v1.Pod) map[types.UID]*eviction.LocalStorageUsage {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.localAsked = append(f.localAsked, len(pods))
	out := map[types.UID]*eviction.LocalStorageUsage{}
	for _, p := range pods {
		if u, ok := f.local[p.Name]; ok {
			out[p.UID] = u
		}
	}
	return out
}

// fakeReclaimer records its calls; free, if set, runs on each.
type fakeReclaimer struct {
	mu    sync.Mutex
	calls []string
	free  func(what string)
}

func (r *fakeReclaimer) call(what string) error {
	r.mu.Lock()
	r.calls = append(r.calls, what)
	free := r.free
	r.mu.Unlock()
	if free != nil {
		free(what)
	}
	return nil
}
func (r *fakeReclaimer) DeleteDeadContainers(context.Context) error { return r.call("containers") }
func (r *fakeReclaimer) DeleteUnusedImages(context.Context) error   { return r.call("images") }

const mi = 1 << 20

func evictionPod(t *testing.T, name, resources string) *v1.Pod {
	t.Helper()
	return testPod(t, `
apiVersion: v1
kind: Pod
metadata: {name: `+name+`, namespace: default}
spec:
  terminationGracePeriodSeconds: 20
  containers:
  - name: app
    image: reg.local/app:1
    resources: `+resources+`
`)
}

// evictionHarness runs pods on the fake runtime with an eviction manager
// over fake stats.
func evictionHarness(t *testing.T, hard, soft, grace string, pods ...*v1.Pod) (*harness, *fakeEvictionStats, *fakeReclaimer) {
	t.Helper()
	h := newHarness(t)
	ths, err := eviction.ParseThresholds(hard, soft, grace)
	require.NoError(t, err)
	st := &fakeEvictionStats{pods: map[string]*eviction.PodStats{}}
	rc := &fakeReclaimer{}
	require.NoError(t, h.agent.EnableEviction(eviction.Config{Thresholds: ths, Stats: st, Reclaim: rc, MaxPodGracePeriod: 5,
		PressureTransitionPeriod: time.Minute}))
	h.agent.SetPods(pods)
	for _, p := range pods {
		require.Eventually(t, func() bool {
			got, ok := h.agent.GetPod(p.UID)
			return ok && got.Status.Phase == v1.PodRunning
		}, 10*time.Second, 10*time.Millisecond, "pod %s running", p.Name)
	}
	return h, st, rc
}

func podStatus(t *testing.T, h *harness, p *v1.Pod) *v1.Pod {
	t.Helper()
	got, ok := h.agent.GetPod(p.UID)
	require.True(t, ok, p.Name)
	return got
}

func waitEvicted(t *testing.T, h *harness, p *v1.Pod) *v1.Pod {
	t.Helper()
	var got *v1.Pod
	require.Eventually(t, func() bool {
		got, _ = h.agent.GetPod(p.UID)
		return got != nil && got.Status.Reason == eviction.Reason
	}, 10*time.Second, 10*time.Millisecond, "pod %s evicted", p.Name)
	return got
}

func stopCalls(h *harness, name string) []string {
	var out []string
	for _, c := range h.fake.Calls() {
		if strings.HasPrefix(c, "StopContainer "+name+" ") {
			out = append(out, c)
		}
	}
	return out
}

// Memory pressure: the first pod of the kubelet's ranking (the BestEffort
// pod above its zero request) is evicted, one pod per cycle; the evicted
// pod ends Failed/Evicted with the kubelet's message, its container killed
// with the hard threshold's short grace, and is never started again.
func TestEviction_MemoryEvictsRankedPodOnePerCycle(t *testing.T) {
	be := evictionPod(t, "besteffort", "{}")
	g := evictionPod(t, "guaranteed", "{requests: {cpu: 100m, memory: 200Mi}, limits: {cpu: 100m, memory: 200Mi}}")
	h, st, rc := evictionHarness(t, "memory.available<100Mi", "", "", be, g)
	st.set(eviction.SignalMemoryAvailable, 90*mi, 4096*mi)
	st.pods["besteffort"] = &eviction.PodStats{Memory: 500 * mi, ContainerMemory: map[string]int64{"app": 500 * mi}}
	st.pods["guaranteed"] = &eviction.PodStats{Memory: 150 * mi, ContainerMemory: map[string]int64{"app": 150 * mi}}

	m := h.agent.eviction
	evicted := m.Synchronize(context.Background())
	require.Len(t, evicted, 1)
	assert.Equal(t, "besteffort", evicted[0].Name)
	assert.Empty(t, rc.calls, "memory: nothing to reclaim")
	got := waitEvicted(t, h, be)
	assert.Equal(t, v1.PodFailed, got.Status.Phase)
	assert.Equal(t, "The node was low on resource: memory. Threshold quantity: 100Mi, available: 90Mi. Container app was using 500Mi, request is 0, has larger consumption of memory.", got.Status.Message)
	assert.True(t, podstatus.ConditionTrue(got.Status.Conditions, v1.DisruptionTarget))
	// The hard threshold's 1 s, raised to killContainer's minimum of 2 s
	// (the kubelet's minimumGracePeriodInSeconds).
	assert.Equal(t, []string{"StopContainer app timeout=2"}, stopCalls(h, "app")[:1])
	assert.Contains(t, h.rec.reasons(), "Evicted")
	assert.Equal(t, v1.PodRunning, podStatus(t, h, g).Status.Phase, "one pod per cycle")
	assert.True(t, m.UnderPressure(v1.NodeMemoryPressure))

	// Never started again, however often it is synced.
	before := len(h.fake.Calls())
	h.clock.Step(2 * time.Minute)
	h.waitCallsSettle(t)
	for _, c := range h.fake.Calls()[before:] {
		assert.NotContains(t, c, "CreateContainer app", "an evicted pod is never restarted")
	}
	assert.Equal(t, eviction.Reason, podStatus(t, h, be).Status.Reason)

	// Still under pressure: the next cycle takes the next pod.
	evicted = m.Synchronize(context.Background())
	require.Len(t, evicted, 1)
	assert.Equal(t, "guaranteed", evicted[0].Name)
	waitEvicted(t, h, g)
	assert.Empty(t, m.Synchronize(context.Background()), "nothing left to evict")
	var metrics strings.Builder
	require.NoError(t, h.agent.WriteMetrics(&metrics))
	assert.Contains(t, metrics.String(), `kubelet_evictions{eviction_signal="memory.available"} 2`)
	assert.Contains(t, metrics.String(), `minikubelet_node_pressure{condition="MemoryPressure"} 1`)
	_, _, recs := m.Snapshot()
	require.Len(t, recs, 2)
	assert.Equal(t, "default/besteffort", recs[0].Pod)
	assert.Equal(t, "memory.available", recs[0].Signal)
}

// Disk pressure: dead containers and, the image filesystem being the node
// one, unused images are reclaimed first; no pod goes when that was
// enough, one does when it was not. The evicted pod's emptyDir is gone.
func TestEviction_DiskReclaimsBeforeEvicting(t *testing.T) {
	p := evictionPod(t, "writer", "{}")
	h, st, rc := evictionHarness(t, "nodefs.available<10%", "", "", p)
	st.obs.SameFs = true
	st.set(eviction.SignalNodeFsAvailable, 5*mi, 100*mi)
	st.pods["writer"] = &eviction.PodStats{Disk: 50 * mi}
	rc.free = func(what string) {
		if what == "images" {
			st.set(eviction.SignalNodeFsAvailable, 20*mi, 100*mi)
		}
	}
	m := h.agent.eviction
	assert.Empty(t, m.Synchronize(context.Background()), "reclaim was enough")
	assert.Equal(t, []string{"containers", "images"}, rc.calls)
	assert.Equal(t, v1.PodRunning, podStatus(t, h, p).Status.Phase)
	assert.True(t, m.UnderPressure(v1.NodeDiskPressure), "the condition is up all the same")

	// Reclaim frees nothing now.
	rc.free = nil
	rc.calls = nil
	st.set(eviction.SignalNodeFsAvailable, 5*mi, 100*mi)
	vol := filepath.Join(h.agent.podDir(p), "volumes", "kubernetes.io~empty-dir", "data")
	require.NoError(t, os.MkdirAll(vol, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(vol, "fill"), []byte("x"), 0o644))
	evicted := m.Synchronize(context.Background())
	require.Len(t, evicted, 1)
	assert.Equal(t, []string{"containers", "images"}, rc.calls)
	assert.Equal(t, 1, st.diskAsked, "disk usage is measured only to rank for disk")
	got := waitEvicted(t, h, p)
	assert.Equal(t, "The node was low on resource: ephemeral-storage. Threshold quantity: 10%, available: 5Mi.", got.Status.Message)
	require.Eventually(t, func() bool {
		_, err := os.Stat(vol)
		return os.IsNotExist(err)
	}, 10*time.Second, 10*time.Millisecond, "the evicted pod's emptyDir goes")

	// A separate image filesystem: nodefs reclaims dead containers only.
	rc.calls = nil
	st.obs.SameFs = false
	m.Synchronize(context.Background())
	assert.Equal(t, []string{"containers"}, rc.calls)
}

// A soft threshold evicts only once met for its grace period, and the
// pod gets at most --eviction-max-pod-grace-period; the condition is up
// from the first crossing.
func TestEviction_SoftThresholdGracePeriods(t *testing.T) {
	p := evictionPod(t, "soft", "{}")
	h, st, _ := evictionHarness(t, "memory.available<0", "memory.available<1Gi", "memory.available=30s", p)
	st.set(eviction.SignalMemoryAvailable, 512*mi, 4096*mi)
	m := h.agent.eviction
	assert.Empty(t, m.Synchronize(context.Background()), "grace period not over")
	assert.True(t, m.UnderPressure(v1.NodeMemoryPressure))
	h.clock.Step(29 * time.Second)
	assert.Empty(t, m.Synchronize(context.Background()))
	h.clock.Step(time.Second)
	require.NotEmpty(t, m.Synchronize(context.Background()))
	waitEvicted(t, h, p)
	// The pod's 20 s, capped by the maximum of 5 s.
	assert.Equal(t, "StopContainer app timeout=5", stopCalls(h, "app")[0])
}

// Static pods (the manifest directory's) and pods of system-critical
// priority are never evicted.
func TestEviction_SkipsCriticalPods(t *testing.T) {
	static := evictionPod(t, "static", "{}")
	static.Annotations = map[string]string{source.AnnotationConfigSource: source.SourceFile}
	crit := evictionPod(t, "critical", "{}")
	prio := int32(2000001000)
	crit.Spec.Priority = &prio
	h, st, _ := evictionHarness(t, "memory.available<100Mi", "", "", static, crit)
	st.set(eviction.SignalMemoryAvailable, 10*mi, 4096*mi)
	assert.Empty(t, h.agent.eviction.Synchronize(context.Background()))
	assert.Equal(t, v1.PodRunning, podStatus(t, h, static).Status.Phase)
	assert.Equal(t, v1.PodRunning, podStatus(t, h, crit).Status.Phase)
}

// A pressure condition stays up for the transition period after its
// threshold was last crossed; meanwhile admission refuses BestEffort pods
// (MemoryPressure) with the kubelet's reason and message, and admits the
// others; DiskPressure refuses every non-critical pod.
func TestEviction_ConditionTransitionAndAdmission(t *testing.T) {
	h, st, _ := evictionHarness(t, "memory.available<100Mi,nodefs.available<10%", "", "")
	m := h.agent.eviction
	st.set(eviction.SignalMemoryAvailable, 50*mi, 4096*mi)
	st.set(eviction.SignalNodeFsAvailable, 50*mi, 100*mi)
	m.Synchronize(context.Background())
	assert.True(t, m.UnderPressure(v1.NodeMemoryPressure))
	assert.False(t, m.UnderPressure(v1.NodeDiskPressure))
	mem, disk, pid, ok := h.agent.NodePressure()
	assert.Equal(t, []bool{true, false, false, true}, []bool{mem, disk, pid, ok})

	be := evictionPod(t, "late-besteffort", "{}")
	bu := evictionPod(t, "late-burstable", "{requests: {memory: 10Mi}}")
	h.agent.SetPods([]*v1.Pod{be, bu})
	got := podStatus(t, h, be)
	assert.Equal(t, v1.PodFailed, got.Status.Phase)
	assert.Equal(t, "Evicted", got.Status.Reason)
	assert.Contains(t, got.Status.Message, "The node had condition: [MemoryPressure].")
	assert.NotEqual(t, "Evicted", podStatus(t, h, bu).Status.Reason, "a Burstable pod is admitted under memory pressure")

	// Recovered: the condition holds for the transition period (1 min).
	st.set(eviction.SignalMemoryAvailable, 2048*mi, 4096*mi)
	h.clock.Step(59 * time.Second)
	m.Synchronize(context.Background())
	assert.True(t, m.UnderPressure(v1.NodeMemoryPressure))
	h.clock.Step(time.Second)
	m.Synchronize(context.Background())
	assert.False(t, m.UnderPressure(v1.NodeMemoryPressure))
	conds := m.Conditions()
	require.Len(t, conds, 3)
	assert.Equal(t, v1.NodeMemoryPressure, conds[1].Type)
	assert.Equal(t, h.clock.Now(), conds[1].LastTransitionTime)

	// Disk pressure refuses every pod but critical ones.
	st.set(eviction.SignalNodeFsAvailable, 5*mi, 100*mi)
	m.Synchronize(context.Background())
	late := evictionPod(t, "late-guaranteed", "{requests: {cpu: 10m, memory: 10Mi}, limits: {cpu: 10m, memory: 10Mi}}")
	static := evictionPod(t, "late-static", "{}")
	static.Annotations = map[string]string{source.AnnotationConfigSource: source.SourceFile}
	h.agent.SetPods([]*v1.Pod{be, bu, late, static})
	assert.Contains(t, podStatus(t, h, late).Status.Message, "The node had condition: [DiskPressure].")
	assert.NotEqual(t, "Evicted", podStatus(t, h, static).Status.Reason)
}

// The loop waits for the evicted pod's cleanup before it observes again
// (the kubelet's waitForPodsCleanup): the cleanup is signalled once the
// pod's containers were stopped and its volumes removed.
func TestEviction_WaitsForCleanup(t *testing.T) {
	p := evictionPod(t, "cleaned", "{}")
	h, st, _ := evictionHarness(t, "memory.available<100Mi", "", "", p)
	st.set(eviction.SignalMemoryAvailable, 10*mi, 4096*mi)
	m := h.agent.eviction
	require.NotEmpty(t, m.Synchronize(context.Background()))
	done := make(chan struct{})
	go func() {
		m.WaitCleanup(context.Background(), []*v1.Pod{p})
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("WaitCleanup did not return after the evicted pod was cleaned up")
	}
	assert.NotEmpty(t, stopCalls(h, "app"), "cleaned up only once its container was stopped")
	_, err := os.Stat(filepath.Join(h.agent.podDir(p), "volumes"))
	assert.True(t, os.IsNotExist(err), "and its volumes removed")
}

// An evicted pod's content goes once it is cleaned up, deleted or not (the
// kubelet's ShouldPodContentBeRemoved): container GC removes its dead
// container (the writable layer it filled) and sandbox while its worker
// still holds it Failed/Evicted, and later syncs keep the status published
// at the cleanup (the container's terminated state) instead of computing
// it again from a runtime without the container.
func TestEviction_EvictedPodContentCollected(t *testing.T) {
	p := evictionPod(t, "evicted-content", "{}")
	h, st, _ := evictionHarness(t, "memory.available<100Mi", "", "", p)
	open := h.agent.gateOrphans()
	open()
	require.False(t, h.agent.podGoneForGC(string(p.UID)), "a running pod's content stays")
	st.set(eviction.SignalMemoryAvailable, 10*mi, 4096*mi)
	m := h.agent.eviction
	require.NotEmpty(t, m.Synchronize(context.Background()))
	m.WaitCleanup(context.Background(), []*v1.Pod{p})
	require.True(t, h.agent.podGoneForGC(string(p.UID)), "an evicted, cleaned-up pod's content is the GC's")
	before := waitEvicted(t, h, p)
	require.Len(t, before.Status.ContainerStatuses, 1)
	require.NotNil(t, before.Status.ContainerStatuses[0].State.Terminated, "the evicted container's last state: %+v", before.Status.ContainerStatuses[0].State)

	g, err := h.agent.NewContainerGC()
	require.NoError(t, err)
	res, err := g.Collect(context.Background())
	require.NoError(t, err)
	assert.Len(t, res.Containers, 1, "the evicted pod's dead container removed")
	assert.Len(t, res.Sandboxes, 1, "and its sandbox")
	h.agent.mu.Lock()
	w := h.agent.workers[p.UID]
	h.agent.mu.Unlock()
	w.trigger() // a sync after the removal, as the relist's would be
	time.Sleep(200 * time.Millisecond)
	after := waitEvicted(t, h, p)
	assert.Equal(t, before.Status.ContainerStatuses, after.Status.ContainerStatuses, "the status stays as published at the cleanup")
	assert.Equal(t, v1.PodFailed, after.Status.Phase)
}
