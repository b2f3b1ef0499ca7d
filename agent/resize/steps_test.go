package resize

import (
	"testing"

	"github.com/stretchr/testify/assert"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

func TestActions_Starts(t *testing.T) {
	tests := map[string]struct {
		ra                  Actions
		apps, inits         []int
		wantApps, wantInits []int
	}{
		"nothing to restart: the plan's as they are": {apps: []int{1}, wantApps: []int{1}},
		"restarts added":                  {ra: Actions{RestartApp: []int{0}, RestartSidecar: []int{1}}, wantApps: []int{0}, wantInits: []int{1}},
		"a start already planned: once":   {ra: Actions{RestartApp: []int{0, 2}}, apps: []int{2}, wantApps: []int{2, 0}},
		"a sidecar already planned: once": {ra: Actions{RestartSidecar: []int{0}}, inits: []int{0}, wantInits: []int{0}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			apps, inits := tc.ra.Starts(tc.apps, tc.inits)
			assert.Equal(t, tc.wantApps, apps)
			assert.Equal(t, tc.wantInits, inits)
		})
	}
}

// sumCgroup is a pod cgroup for Steps: the quota is the containers' cpu
// limits in millicores, the memory limit their sum, the shares their cpu
// requests in millicores.
func sumCgroup(p *v1.Pod) PodCgroup {
	var quota, mem int64
	var shares uint64
	EachContainer(&p.Spec, func(c *v1.Container, _ bool) {
		quota += c.Resources.Limits.Cpu().MilliValue()
		mem += c.Resources.Limits.Memory().Value()
		shares += uint64(c.Resources.Requests.Cpu().MilliValue())
	})
	return PodCgroup{CPUShares: &shares, CPUQuota: &quota, MemoryLimit: &mem}
}

func TestSteps(t *testing.T) {
	pod, ids := fixture()
	i64 := func(v int64) *int64 { return &v }
	u64 := func(v uint64) *uint64 { return &v }
	running := func(n string) string { return ids[n] }
	// step is a Step without its Pod and Spec (checked apart).
	type step struct {
		cgroup    PodCgroup
		container string
		limits    v1.ResourceList
	}
	tests := map[string]struct {
		mutate func(p *v1.Pod)
		want   []step
	}{
		"nothing changed: no step": {mutate: func(*v1.Pod) {}},
		"cpu limit up: the pod cgroup first": {
			mutate: func(p *v1.Pod) { p.Spec.Containers[0].Resources.Limits[v1.ResourceCPU] = resource.MustParse("2") },
			want: []step{
				{cgroup: PodCgroup{CPUQuota: i64(2200)}},
				{container: "app", limits: rl("2", "256Mi")},
			},
		},
		"memory limit down: the pod cgroup last": {
			mutate: func(p *v1.Pod) {
				p.Spec.Containers[0].Resources.Limits[v1.ResourceMemory] = resource.MustParse("192Mi")
			},
			want: []step{
				{container: "app", limits: rl("1", "192Mi")},
				{cgroup: PodCgroup{MemoryLimit: i64(256 << 20)}},
			},
		},
		"memory before cpu; cpu as actuated by the memory pass": {
			mutate: func(p *v1.Pod) {
				p.Spec.Containers[0].Resources.Limits = rl("2", "512Mi")
				p.Spec.InitContainers[0].Resources.Requests[v1.ResourceCPU] = resource.MustParse("50m")
			},
			want: []step{
				{cgroup: PodCgroup{MemoryLimit: i64(576 << 20)}},
				{container: "app", limits: rl("1", "512Mi")},
				{cgroup: PodCgroup{CPUQuota: i64(2200)}},
				{container: "side", limits: rl("200m", "64Mi")}, // a decrease first
				{container: "app", limits: rl("2", "512Mi")},
				{cgroup: PodCgroup{CPUShares: u64(550)}},
			},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			actuated := Of(pod)
			p := pod.DeepCopy()
			tc.mutate(p)
			ra := Plan(p, actuated, running)
			steps := Steps(p, actuated, ra, sumCgroup)
			var got []step
			for _, s := range steps {
				if s.Container == "" {
					got = append(got, step{cgroup: s.PodCgroup})
					continue
				}
				got = append(got, step{container: s.Container, limits: s.Resources.Limits})
				assert.Equal(t, ids[s.Container], s.ID)
				assert.Equal(t, s.Resources, s.Spec.Resources, "the container to translate has the step's resources")
				assert.Equal(t, s.Container, s.Spec.Name)
			}
			assert.Equal(t, tc.want, got)
			assert.True(t, actuated.Equal(Of(pod)), "actuated is the caller's: not changed")
		})
	}
}

// Each container's step translates the pod with what was actuated so far:
// the earlier passes' updates.
func TestSteps_PodAsActuatedSoFar(t *testing.T) {
	pod, ids := fixture()
	p := pod.DeepCopy()
	p.Spec.Containers[0].Resources.Limits = rl("2", "512Mi")
	ra := Plan(p, Of(pod), func(n string) string { return ids[n] })
	steps := Steps(p, Of(pod), ra, sumCgroup)
	var pods []*v1.Pod
	for _, s := range steps {
		if s.Container != "" {
			pods = append(pods, s.Pod)
		}
	}
	assert.Len(t, pods, 2)
	assert.Equal(t, "1", pods[0].Spec.Containers[0].Resources.Limits.Cpu().String(), "the memory pass: cpu as actuated")
	assert.Equal(t, "512Mi", pods[1].Spec.Containers[0].Resources.Limits.Memory().String(), "the cpu pass: the memory pass done")
}
