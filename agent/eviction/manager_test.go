package eviction

import (
	"context"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	testclock "k8s.io/utils/clock/testing"

	"github.com/minikubelet/minikubelet/agent/source"
)

// The manager's unit tests: the engine, the stats provider and the
// reclaimer are fakes of its narrow interfaces. The engine's side (an
// evicted pod killed, Failed/Evicted, never restarted) is tested in
// package agent (eviction_manager_test.go).

const mi = 1 << 20

// fakePods is the engine: its pods are all evictable until evicted.
type fakePods struct {
	mu      sync.Mutex
	pods    []*v1.Pod
	evicted []fakeEviction
}

type fakeEviction struct {
	name       string
	grace      int64
	message    string
	disruption bool
}

func (f *fakePods) Evictable() []*v1.Pod {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []*v1.Pod
	for _, p := range f.pods {
		gone := false
		for _, e := range f.evicted {
			gone = gone || e.name == p.Name
		}
		if !gone && !IsCritical(p) {
			out = append(out, p)
		}
	}
	return out
}

func (f *fakePods) Evict(uid types.UID, grace int64, message string, disruption bool) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, p := range f.pods {
		if p.UID == uid {
			f.evicted = append(f.evicted, fakeEviction{p.Name, grace, message, disruption})
			return true
		}
	}
	return false
}

func (f *fakePods) CleanedUp(types.UID) (cleanedUp, gone <-chan struct{}) { return nil, nil }

// fakeStats returns what the test sets.
type fakeStats struct {
	mu     sync.Mutex
	obs    NodeObservation
	pods   map[string]*PodStats // by pod name
	local  map[string]*LocalStorageUsage
	asked  []bool // the disk argument of each PodStats call
	cycles int
}

func (f *fakeStats) set(sig Signal, avail, capacity int64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.obs.Signals == nil {
		f.obs.Signals = map[Signal]Observation{}
	}
	f.obs.Signals[sig] = Observation{Available: avail, Capacity: capacity}
}

func (f *fakeStats) Observe(context.Context) NodeObservation {
	f.mu.Lock()
	defer f.mu.Unlock()
	o := f.obs
	o.Signals = map[Signal]Observation{}
	for k, v := range f.obs.Signals {
		o.Signals[k] = v
	}
	return o
}

func (f *fakeStats) PodStats(_ context.Context, pods []*v1.Pod, disk bool) map[types.UID]*PodStats {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.asked = append(f.asked, disk)
	out := map[types.UID]*PodStats{}
	for _, p := range pods {
		if s, ok := f.pods[p.Name]; ok {
			out[p.UID] = s
		}
	}
	return out
}

func (f *fakeStats) LocalStorage(_ context.Context, pods []*v1.Pod) map[types.UID]*LocalStorageUsage {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := map[types.UID]*LocalStorageUsage{}
	for _, p := range pods {
		if u, ok := f.local[p.Name]; ok {
			out[p.UID] = u
		}
	}
	return out
}

type fakeReclaimer struct {
	calls []string
	free  func(what string)
}

func (r *fakeReclaimer) call(what string) error {
	r.calls = append(r.calls, what)
	if r.free != nil {
		r.free(what)
	}
	return nil
}
func (r *fakeReclaimer) DeleteDeadContainers(context.Context) error { return r.call("containers") }
func (r *fakeReclaimer) DeleteUnusedImages(context.Context) error   { return r.call("images") }

func testPod(name string, requests, limits v1.ResourceList) *v1.Pod {
	grace := int64(20)
	return &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: types.UID("uid-" + name)},
		Spec: v1.PodSpec{TerminationGracePeriodSeconds: &grace, Containers: []v1.Container{{Name: "app", Image: "reg.local/app:1",
			Resources: v1.ResourceRequirements{Requests: requests, Limits: limits}}}}}
}

func newTestManager(t *testing.T, hard, soft, grace string, pods ...*v1.Pod) (*Manager, *fakePods, *fakeStats, *fakeReclaimer, *testclock.FakeClock) {
	t.Helper()
	ths, err := ParseThresholds(hard, soft, grace)
	require.NoError(t, err)
	fp := &fakePods{pods: pods}
	st := &fakeStats{pods: map[string]*PodStats{}}
	rc := &fakeReclaimer{}
	clk := testclock.NewFakeClock(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	m, err := NewManager(Config{Thresholds: ths, Stats: st, Reclaim: rc, MaxPodGracePeriod: 5, PressureTransitionPeriod: time.Minute},
		fp, clk, slog.New(slog.DiscardHandler), prometheus.NewRegistry())
	require.NoError(t, err)
	return m, fp, st, rc, clk
}

func TestNewManager_NeedsStats(t *testing.T) {
	_, err := NewManager(Config{}, &fakePods{}, testclock.NewFakeClock(time.Now()), slog.New(slog.DiscardHandler), prometheus.NewRegistry())
	require.Error(t, err)
}

// Memory pressure: the first of the ranking goes, one pod per cycle, with
// the hard threshold's grace and the DisruptionTarget condition; memory
// never asks the pods' disk usage and reclaims nothing.
func TestManager_EvictsFirstRankedOnePerCycle(t *testing.T) {
	be := testPod("besteffort", nil, nil)
	g := testPod("guaranteed", v1.ResourceList{v1.ResourceMemory: resource.MustParse("200Mi")}, v1.ResourceList{v1.ResourceMemory: resource.MustParse("200Mi")})
	m, fp, st, rc, _ := newTestManager(t, "memory.available<100Mi", "", "", g, be)
	st.set(SignalMemoryAvailable, 90*mi, 4096*mi)
	st.pods["besteffort"] = &PodStats{Memory: 500 * mi, ContainerMemory: map[string]int64{"app": 500 * mi}}
	st.pods["guaranteed"] = &PodStats{Memory: 150 * mi, ContainerMemory: map[string]int64{"app": 150 * mi}}

	evicted := m.Synchronize(context.Background())
	require.Len(t, evicted, 1)
	assert.Equal(t, "besteffort", evicted[0].Name)
	assert.Equal(t, []fakeEviction{{"besteffort", immediateEvictionGracePeriodSeconds,
		"The node was low on resource: memory. Threshold quantity: 100Mi, available: 90Mi. Container app was using 500Mi, request is 0, has larger consumption of memory.", true}}, fp.evicted)
	assert.Empty(t, rc.calls)
	assert.Equal(t, []bool{false}, st.asked)
	assert.True(t, m.UnderPressure(v1.NodeMemoryPressure))

	evicted = m.Synchronize(context.Background())
	require.Len(t, evicted, 1)
	assert.Equal(t, "guaranteed", evicted[0].Name)
	assert.Empty(t, m.Synchronize(context.Background()), "nothing left to evict")
	_, _, recs := m.Snapshot()
	require.Len(t, recs, 2)
	assert.Equal(t, "default/besteffort", recs[0].Pod)
}

// Disk pressure reclaims first (images too when the image filesystem is
// the node's) and evicts nobody when that was enough.
func TestManager_DiskReclaimsBeforeEvicting(t *testing.T) {
	p := testPod("writer", nil, nil)
	m, fp, st, rc, _ := newTestManager(t, "nodefs.available<10%", "", "", p)
	st.obs.SameFs = true
	st.set(SignalNodeFsAvailable, 5*mi, 100*mi)
	rc.free = func(what string) {
		if what == "images" {
			st.set(SignalNodeFsAvailable, 20*mi, 100*mi)
		}
	}
	assert.Empty(t, m.Synchronize(context.Background()), "reclaim was enough")
	assert.Equal(t, []string{"containers", "images"}, rc.calls)
	assert.Empty(t, fp.evicted)

	rc.free, rc.calls = nil, nil
	st.obs.SameFs = false
	st.set(SignalNodeFsAvailable, 5*mi, 100*mi)
	require.Len(t, m.Synchronize(context.Background()), 1)
	assert.Equal(t, []string{"containers"}, rc.calls, "a separate image filesystem: nodefs reclaims dead containers only")
	assert.Equal(t, []bool{true}, st.asked, "disk pressure ranks by disk usage")
}

// A soft threshold evicts once met for its grace period, with at most
// MaxPodGracePeriod.
func TestManager_SoftThresholdGrace(t *testing.T) {
	p := testPod("soft", nil, nil)
	m, fp, st, _, clk := newTestManager(t, "memory.available<0", "memory.available<1Gi", "memory.available=30s", p)
	st.set(SignalMemoryAvailable, 512*mi, 4096*mi)
	assert.Empty(t, m.Synchronize(context.Background()), "grace period not over")
	clk.Step(30 * time.Second)
	require.Len(t, m.Synchronize(context.Background()), 1)
	require.Len(t, fp.evicted, 1)
	assert.Equal(t, int64(5), fp.evicted[0].grace, "the pod's 20 s capped by the maximum of 5 s")
}

// Minimum reclaim: a met threshold stays met until the signal is back
// above its level plus the minimum reclaim.
func TestEviction_MinimumReclaim(t *testing.T) {
	p1 := testPod("first", nil, nil)
	p2 := testPod("second", nil, nil)
	m, _, st, _, _ := newTestManager(t, "memory.available<100Mi", "", "", p1, p2)
	mr, err := ParseMinimumReclaim("memory.available=200Mi")
	require.NoError(t, err)
	m.cfg.MinimumReclaim = mr
	st.set(SignalMemoryAvailable, 50*mi, 4096*mi)
	require.NotEmpty(t, m.Synchronize(context.Background()))
	st.set(SignalMemoryAvailable, 250*mi, 4096*mi) // above 100Mi, below 300Mi
	require.NotEmpty(t, m.Synchronize(context.Background()), "not resolved before the minimum reclaim")
	st.set(SignalMemoryAvailable, 350*mi, 4096*mi)
	assert.Empty(t, m.Synchronize(context.Background()))
}

// Admit: under MemoryPressure alone only BestEffort pods are refused;
// under DiskPressure every pod but critical ones; the condition holds for
// the transition period.
func TestManager_Admit(t *testing.T) {
	m, _, st, _, clk := newTestManager(t, "memory.available<100Mi,nodefs.available<10%", "", "")
	be := testPod("be", nil, nil)
	bu := testPod("bu", v1.ResourceList{v1.ResourceMemory: resource.MustParse("10Mi")}, nil)
	static := testPod("static", nil, nil)
	static.Annotations = map[string]string{source.AnnotationConfigSource: source.SourceFile}
	prio := int32(CriticalPriority)
	crit := testPod("crit", nil, nil)
	crit.Spec.Priority = &prio

	reason, _ := m.Admit(be)
	assert.Empty(t, reason, "no pressure")
	st.set(SignalMemoryAvailable, 50*mi, 4096*mi)
	m.Synchronize(context.Background())
	reason, msg := m.Admit(be)
	assert.Equal(t, Reason, reason)
	assert.Equal(t, "The node had condition: [MemoryPressure]. ", msg)
	reason, _ = m.Admit(bu)
	assert.Empty(t, reason, "a Burstable pod is admitted under memory pressure")

	st.set(SignalMemoryAvailable, 2048*mi, 4096*mi)
	st.set(SignalNodeFsAvailable, 5*mi, 100*mi)
	clk.Step(59 * time.Second)
	m.Synchronize(context.Background())
	_, msg = m.Admit(bu)
	assert.Equal(t, "The node had condition: [DiskPressure MemoryPressure]. ", msg, "memory pressure held for the transition period")
	clk.Step(time.Second)
	m.Synchronize(context.Background())
	_, msg = m.Admit(bu)
	assert.Equal(t, "The node had condition: [DiskPressure]. ", msg)
	for _, p := range []*v1.Pod{static, crit} {
		reason, _ = m.Admit(p)
		assert.Empty(t, reason, "%s: critical pods always pass", p.Name)
	}
}

// Local storage limits are checked every cycle, pressure or not: a pod
// past its emptyDir sizeLimit is evicted at once, without the
// DisruptionTarget condition, and the cycle ends there.
func TestManager_LocalStorageWithoutPressure(t *testing.T) {
	limit := resource.MustParse("1Mi")
	p := testPod("filler", nil, nil)
	p.Spec.Volumes = []v1.Volume{{Name: "data", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{SizeLimit: &limit}}}}
	m, fp, st, _, _ := newTestManager(t, "memory.available<100Mi", "", "", p, testPod("other", nil, nil))
	st.set(SignalMemoryAvailable, 2048*mi, 4096*mi)
	st.local = map[string]*LocalStorageUsage{"filler": {EmptyDirs: map[string]int64{"data": 2 * mi}}}
	evicted := m.Synchronize(context.Background())
	require.Len(t, evicted, 1)
	assert.Equal(t, "filler", evicted[0].Name)
	require.Len(t, fp.evicted, 1)
	assert.Equal(t, int64(immediateEvictionGracePeriodSeconds), fp.evicted[0].grace)
	assert.False(t, fp.evicted[0].disruption)
	assert.Contains(t, fp.evicted[0].message, "data")
	assert.False(t, m.UnderPressure(v1.NodeMemoryPressure))
}
