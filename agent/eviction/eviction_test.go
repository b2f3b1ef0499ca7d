package eviction

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestParseThresholds(t *testing.T) {
	for _, tc := range []struct {
		name            string
		hard, soft, gp  string
		want            []string
		wantGrace       map[string]time.Duration
		wantErrContains string
	}{
		{name: "kubelet defaults", hard: DefaultEvictionHard,
			want: []string{"memory.available<100Mi", "nodefs.available<10%", "nodefs.inodesFree<5%", "imagefs.available<15%", "imagefs.inodesFree<5%"}},
		{name: "soft with grace", hard: "memory.available<1Gi", soft: "memory.available<1.5Gi,nodefs.available<20%", gp: "memory.available=1m30s,nodefs.available=2m",
			want:      []string{"memory.available<1Gi", "memory.available<1536Mi", "nodefs.available<20%"},
			wantGrace: map[string]time.Duration{"memory.available<1536Mi": 90 * time.Second, "nodefs.available<20%": 2 * time.Minute}},
		{name: "zero turns a signal off", hard: "memory.available<0,nodefs.available<0%,pid.available<100", want: []string{"pid.available<100"}},
		{name: "soft without grace", soft: "memory.available<1Gi", wantErrContains: "has no grace period"},
		{name: "grace without soft", gp: "memory.available=1m", wantErrContains: "has no soft threshold"},
		{name: "unknown signal", hard: "memory.free<1Gi", wantErrContains: `unknown eviction signal "memory.free"`},
		{name: "twice", hard: "memory.available<1Gi,memory.available<2Gi", wantErrContains: "given twice"},
		{name: "not <", hard: "memory.available>1Gi", wantErrContains: "only < is supported"},
		{name: "bad percentage", hard: "nodefs.available<120%", wantErrContains: "between 0% and 100%"},
		{name: "bad quantity", hard: "memory.available<lots", wantErrContains: "quantity"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseThresholds(tc.hard, tc.soft, tc.gp)
			if tc.wantErrContains != "" {
				require.ErrorContains(t, err, tc.wantErrContains)
				return
			}
			require.NoError(t, err)
			var names []string
			for _, th := range got {
				names = append(names, th.String())
				assert.Equal(t, tc.wantGrace[th.String()], th.GracePeriod, th.String())
			}
			assert.Equal(t, tc.want, names)
		})
	}
}

// The kubelet's documented example: memory.available<10% of a 10Gi node
// is met below 1Gi available.
func TestThreshold_Level(t *testing.T) {
	ths, err := ParseThresholds("memory.available<10%,nodefs.available<500Mi", "", "")
	require.NoError(t, err)
	assert.Equal(t, int64(1<<30), ths[0].Level(10<<30))
	assert.Equal(t, int64(500<<20), ths[1].Level(10<<30))
}

// Hard thresholds count at once; soft ones once met for their grace
// period without interruption.
func TestTracker_Met(t *testing.T) {
	ths, err := ParseThresholds("memory.available<100Mi", "memory.available<1Gi", "memory.available=30s")
	require.NoError(t, err)
	tr := NewTracker()
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	obs := func(avail int64) map[Signal]Observation {
		return map[Signal]Observation{SignalMemoryAvailable: {Available: avail, Capacity: 8 << 30}}
	}
	assert.Empty(t, tr.Met(ths, obs(2<<30), t0))
	assert.Empty(t, tr.Met(ths, obs(512<<20), t0), "soft met, grace not yet over")
	assert.Empty(t, tr.Met(ths, obs(512<<20), t0.Add(29*time.Second)))
	met := tr.Met(ths, obs(512<<20), t0.Add(30*time.Second))
	require.Len(t, met, 1)
	assert.Equal(t, "memory.available<1Gi", met[0].String())
	assert.Empty(t, tr.Met(ths, obs(2<<30), t0.Add(31*time.Second)), "recovered: the grace period starts over")
	assert.Empty(t, tr.Met(ths, obs(512<<20), t0.Add(32*time.Second)))
	met = tr.Met(ths, obs(50<<20), t0.Add(33*time.Second))
	require.Len(t, met, 1, "the hard threshold at once; the soft one still in its grace period")
	assert.Equal(t, "memory.available<100Mi", met[0].String())
	assert.Empty(t, tr.Met(ths, map[Signal]Observation{}, t0.Add(time.Hour)), "no observation meets nothing")
}

func pod(name string, prio int32, req map[v1.ResourceName]string, limits bool) *v1.Pod {
	rl := v1.ResourceList{}
	for k, v := range req {
		rl[k] = resource.MustParse(v)
	}
	c := v1.Container{Name: "app", Resources: v1.ResourceRequirements{Requests: rl}}
	if limits {
		c.Resources.Limits = rl
	}
	return &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: v1.PodSpec{Priority: &prio, Containers: []v1.Container{c}}}
}

func mem(n int64) *PodStats {
	return &PodStats{Memory: n, ContainerMemory: map[string]int64{"app": n}}
}

// The kubelet's order under memory pressure (kubelet docs, "Pod selection
// for kubelet eviction"): pods whose usage exceeds their requests first,
// by priority, then by usage above requests; BestEffort pods (no
// requests) therefore before Burstable pods within their requests and
// Guaranteed pods. Pods without stats go first.
func TestRank_Memory(t *testing.T) {
	const mi = 1 << 20
	cands := []Candidate{
		{Pod: pod("guaranteed-900-of-1Gi", 0, map[v1.ResourceName]string{"memory": "1Gi", "cpu": "1"}, true), Stats: mem(900 * mi)},
		{Pod: pod("burstable-under-100-of-500", 0, map[v1.ResourceName]string{"memory": "500Mi"}, false), Stats: mem(100 * mi)},
		{Pod: pod("besteffort-high-priority-1Gi", 1000, nil, false), Stats: mem(1024 * mi)},
		{Pod: pod("besteffort-100", 0, nil, false), Stats: mem(100 * mi)},
		{Pod: pod("burstable-over-400-of-200", 0, map[v1.ResourceName]string{"memory": "200Mi"}, false), Stats: mem(400 * mi)},
		{Pod: pod("no-stats", 0, nil, false)},
	}
	Rank(SignalMemoryAvailable, cands)
	var got []string
	for _, c := range cands {
		got = append(got, c.Pod.Name)
	}
	assert.Equal(t, []string{
		"no-stats",
		"burstable-over-400-of-200",    // exceeds by 200Mi
		"besteffort-100",               // exceeds by 100Mi
		"besteffort-high-priority-1Gi", // exceeds, but higher priority
		"guaranteed-900-of-1Gi",        // within requests: 124Mi below
		"burstable-under-100-of-500",   // 400Mi below
	}, got)
}

// Under disk pressure: the same order with disk usage and
// ephemeral-storage requests; under PID pressure by priority, then
// processes.
func TestRank_DiskAndPIDs(t *testing.T) {
	const mi = 1 << 20
	cands := []Candidate{
		{Pod: pod("requests-1Gi-uses-500", 0, map[v1.ResourceName]string{"ephemeral-storage": "1Gi"}, false), Stats: &PodStats{Disk: 500 * mi, Processes: 50}},
		{Pod: pod("uses-10", 0, nil, false), Stats: &PodStats{Disk: 10 * mi, Processes: 2}},
		{Pod: pod("uses-300", 0, nil, false), Stats: &PodStats{Disk: 300 * mi, Processes: 10}},
	}
	Rank(SignalNodeFsAvailable, cands)
	assert.Equal(t, "uses-300", cands[0].Pod.Name)
	assert.Equal(t, "uses-10", cands[1].Pod.Name)
	assert.Equal(t, "requests-1Gi-uses-500", cands[2].Pod.Name)
	Rank(SignalPIDAvailable, cands)
	assert.Equal(t, "requests-1Gi-uses-500", cands[0].Pod.Name)
	assert.Equal(t, "uses-300", cands[1].Pod.Name)
}

// Under inode pressure: by inodes used, as the kubelet; no request counts
// (nothing requests inodes, and an ephemeral-storage request is bytes).
func TestRank_Inodes(t *testing.T) {
	const mi = 1 << 20
	cands := []Candidate{
		{Pod: pod("big-file", 0, nil, false), Stats: &PodStats{Disk: 900 * mi, Inodes: 3}},
		{Pod: pod("requests-1Gi-many-files", 0, map[v1.ResourceName]string{"ephemeral-storage": "1Gi"}, false), Stats: &PodStats{Disk: mi, Inodes: 200000}},
		{Pod: pod("some-files", 0, nil, false), Stats: &PodStats{Disk: 10 * mi, Inodes: 5000}},
	}
	for _, s := range []Signal{SignalNodeFsInodesFree, SignalImageFsInodesFree} {
		Rank(s, cands)
		var got []string
		for _, c := range cands {
			got = append(got, c.Pod.Name)
		}
		assert.Equal(t, []string{"requests-1Gi-many-files", "some-files", "big-file"}, got, "%s", s)
	}
}

// The message is the kubelet's.
func TestMessage(t *testing.T) {
	ths, err := ParseThresholds("memory.available<100Mi", "", "")
	require.NoError(t, err)
	c := Candidate{Pod: pod("p", 0, map[v1.ResourceName]string{"memory": "64Mi"}, false), Stats: mem(200 << 20)}
	assert.Equal(t, "The node was low on resource: memory. Threshold quantity: 100Mi, available: 50Mi. Container app was using 200Mi, request is 64Mi, has larger consumption of memory.",
		Message(ths[0], 50<<20, c))
	ths, err = ParseThresholds("nodefs.available<10%", "", "")
	require.NoError(t, err)
	assert.Equal(t, "The node was low on resource: ephemeral-storage. Threshold quantity: 10%, available: 1Gi.",
		Message(ths[0], 1<<30, Candidate{Pod: pod("p", 0, nil, false)}))
}
