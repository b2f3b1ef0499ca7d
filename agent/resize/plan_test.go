package resize

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// fixture is a running pod with one app container "app" (cpu 500m/1,
// memory 128Mi/256Mi) and one native sidecar "side", and the IDs of their
// running instances.
func fixture() (*v1.Pod, map[string]string) {
	pod := &v1.Pod{}
	pod.Name, pod.Namespace, pod.UID = "web", "demo", "uid-1"
	pod.Spec.RestartPolicy = v1.RestartPolicyAlways
	always := v1.ContainerRestartPolicyAlways
	pod.Spec.InitContainers = []v1.Container{{Name: "side", Image: "side", RestartPolicy: &always,
		Resources: v1.ResourceRequirements{Requests: rl("100m", "64Mi"), Limits: rl("200m", "64Mi")}}}
	pod.Spec.Containers = []v1.Container{{Name: "app", Image: "app",
		Resources: v1.ResourceRequirements{Requests: rl("500m", "128Mi"), Limits: rl("1", "256Mi")}}}
	return pod, map[string]string{"app": "c-app", "side": "c-side"}
}

// rl builds a cpu/memory list; "" leaves a resource out.
func rl(cpu, mem string) v1.ResourceList {
	l := v1.ResourceList{}
	if cpu != "" {
		l[v1.ResourceCPU] = resource.MustParse(cpu)
	}
	if mem != "" {
		l[v1.ResourceMemory] = resource.MustParse(mem)
	}
	return l
}

func TestPlan(t *testing.T) {
	type want struct {
		cpu, memory []string // container names, in update order
		restart     []string
		restartApp  []int
		restartSide []int
	}
	tests := map[string]struct {
		// mutate changes the allocated pod (the spec the sync acts on) and
		// the running instances; the actuated resources are the fixture's.
		mutate       func(pod *v1.Pod, running map[string]string)
		want         want
		wantNoChange bool
	}{
		"nothing changed": {mutate: func(*v1.Pod, map[string]string) {}, wantNoChange: true},
		"cpu limit up": {
			mutate: func(p *v1.Pod, _ map[string]string) {
				p.Spec.Containers[0].Resources.Limits[v1.ResourceCPU] = resource.MustParse("2")
			},
			want: want{cpu: []string{"app"}},
		},
		"cpu request down": {
			mutate: func(p *v1.Pod, _ map[string]string) {
				p.Spec.Containers[0].Resources.Requests[v1.ResourceCPU] = resource.MustParse("250m")
			},
			want: want{cpu: []string{"app"}},
		},
		"memory limit up": {
			mutate: func(p *v1.Pod, _ map[string]string) {
				p.Spec.Containers[0].Resources.Limits[v1.ResourceMemory] = resource.MustParse("512Mi")
			},
			want: want{memory: []string{"app"}},
		},
		"memory limit down": {
			mutate: func(p *v1.Pod, _ map[string]string) {
				p.Spec.Containers[0].Resources.Limits[v1.ResourceMemory] = resource.MustParse("200Mi")
			},
			want: want{memory: []string{"app"}},
		},
		"cpu and memory: one update per resource": {
			mutate: func(p *v1.Pod, _ map[string]string) {
				p.Spec.Containers[0].Resources.Limits = rl("2", "512Mi")
			},
			want: want{cpu: []string{"app"}, memory: []string{"app"}},
		},
		"a limit removed is an increase": {
			mutate: func(p *v1.Pod, _ map[string]string) {
				delete(p.Spec.Containers[0].Resources.Limits, v1.ResourceCPU)                          // up
				p.Spec.InitContainers[0].Resources.Limits[v1.ResourceCPU] = resource.MustParse("150m") // down
			},
			want: want{cpu: []string{"side", "app"}},
		},
		"same quantity spelled otherwise is no change": {
			mutate: func(p *v1.Pod, _ map[string]string) {
				p.Spec.Containers[0].Resources.Limits[v1.ResourceCPU] = resource.MustParse("1000m")
			},
			wantNoChange: true,
		},
		"decreases go before increases": {
			mutate: func(p *v1.Pod, _ map[string]string) {
				p.Spec.Containers[0].Resources.Limits[v1.ResourceCPU] = resource.MustParse("2")        // up
				p.Spec.InitContainers[0].Resources.Limits[v1.ResourceCPU] = resource.MustParse("150m") // down
			},
			want: want{cpu: []string{"side", "app"}},
		},
		"RestartContainer for the changed resource restarts": {
			mutate: func(p *v1.Pod, _ map[string]string) {
				p.Spec.Containers[0].ResizePolicy = []v1.ContainerResizePolicy{{ResourceName: v1.ResourceMemory, RestartPolicy: v1.RestartContainer}}
				p.Spec.Containers[0].Resources.Limits[v1.ResourceMemory] = resource.MustParse("512Mi")
			},
			want: want{restart: []string{"c-app"}, restartApp: []int{0}},
		},
		"RestartContainer for another resource updates in place": {
			mutate: func(p *v1.Pod, _ map[string]string) {
				p.Spec.Containers[0].ResizePolicy = []v1.ContainerResizePolicy{{ResourceName: v1.ResourceMemory, RestartPolicy: v1.RestartContainer}}
				p.Spec.Containers[0].Resources.Limits[v1.ResourceCPU] = resource.MustParse("2")
			},
			want: want{cpu: []string{"app"}},
		},
		"sidecar with RestartContainer restarts as an init container": {
			mutate: func(p *v1.Pod, _ map[string]string) {
				p.Spec.InitContainers[0].ResizePolicy = []v1.ContainerResizePolicy{{ResourceName: v1.ResourceCPU, RestartPolicy: v1.RestartContainer}}
				p.Spec.InitContainers[0].Resources.Requests[v1.ResourceCPU] = resource.MustParse("150m")
			},
			want: want{restart: []string{"c-side"}, restartSide: []int{0}},
		},
		"a container that is not running is not resized": {
			mutate: func(p *v1.Pod, running map[string]string) {
				delete(running, "app")
				p.Spec.Containers[0].Resources.Limits[v1.ResourceCPU] = resource.MustParse("2")
			},
			wantNoChange: true,
		},
		"a pod being deleted is not resized": {
			mutate: func(p *v1.Pod, _ map[string]string) {
				now := metav1.Now()
				p.DeletionTimestamp = &now
				p.Spec.Containers[0].Resources.Limits[v1.ResourceCPU] = resource.MustParse("2")
			},
			wantNoChange: true,
		},
		"an init container that is no sidecar is not resized": {
			mutate: func(p *v1.Pod, _ map[string]string) {
				p.Spec.InitContainers[0].RestartPolicy = nil
				p.Spec.InitContainers[0].Resources.Limits[v1.ResourceCPU] = resource.MustParse("150m")
			},
			wantNoChange: true,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			pod, running := fixture()
			actuated := Of(pod)
			tc.mutate(pod, running)
			ra := Plan(pod, actuated, func(n string) string { return running[n] })
			if tc.wantNoChange {
				assert.True(t, ra.Empty(), "%+v", ra)
				assert.False(t, ra.InPlace())
				return
			}
			names := func(l []Container) []string {
				var out []string
				for _, u := range l {
					out = append(out, u.Name)
					assert.Equal(t, running[u.Name], u.ID, "the running instance is updated")
				}
				return out
			}
			var restart []string
			for id := range ra.Restart {
				restart = append(restart, id)
			}
			assert.Equal(t, tc.want.cpu, names(ra.Update[v1.ResourceCPU]), "cpu updates")
			assert.Equal(t, tc.want.memory, names(ra.Update[v1.ResourceMemory]), "memory updates")
			assert.Equal(t, tc.want.restart, restart, "restarts")
			assert.Equal(t, tc.want.restartApp, ra.RestartApp)
			assert.Equal(t, tc.want.restartSide, ra.RestartSidecar)
			assert.False(t, ra.Empty())
		})
	}
}

func TestUpdateOrder_MemoryBeforeCPU(t *testing.T) {
	assert.Equal(t, []v1.ResourceName{v1.ResourceMemory, v1.ResourceCPU}, UpdateOrder)
}

func TestCheckMemoryDecrease(t *testing.T) {
	app := Container{Name: "app", ID: "c-app"}
	tests := map[string]struct {
		limit   string // the allocated memory limit of app ("": none)
		usage   map[string]uint64
		asked   bool // the usage is asked for
		wantErr string
	}{
		"an increase is not checked":      {limit: "512Mi", usage: map[string]uint64{"c-app": 300 << 20}},
		"no limit is not checked":         {limit: "", usage: map[string]uint64{"c-app": 300 << 20}},
		"a decrease above usage passes":   {limit: "200Mi", usage: map[string]uint64{"c-app": 100 << 20}, asked: true},
		"usage unknown: best effort":      {limit: "200Mi", usage: map[string]uint64{}, asked: true},
		"a decrease to the usage refused": {limit: "100Mi", usage: map[string]uint64{"c-app": 100 << 20}, asked: true, wantErr: `cannot decrease memory limits: attempting to set container "app" memory limit (104857600) below current usage (104857600)`},
		"a decrease below usage refused":  {limit: "64Mi", usage: map[string]uint64{"c-app": 100 << 20}, asked: true, wantErr: `cannot decrease memory limits: attempting to set container "app" memory limit (67108864) below current usage (104857600)`},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			pod, _ := fixture()
			actuated := Of(pod) // memory limit 256Mi
			pod.Spec.Containers[0].Resources.Limits = rl("1", tc.limit)
			asked := false
			err := CheckMemoryDecrease(pod, actuated, []Container{app}, func(id string) (uint64, bool) {
				asked = true
				u, ok := tc.usage[id]
				return u, ok
			})
			assert.Equal(t, tc.asked, asked, "usage asked")
			if tc.wantErr == "" {
				assert.NoError(t, err)
				return
			}
			require.Error(t, err)
			assert.True(t, errors.Is(err, ErrResize))
			assert.Equal(t, ErrResize.Error()+": "+tc.wantErr, err.Error())
		})
	}
}

func TestContainerWith(t *testing.T) {
	pod, _ := fixture()
	r := v1.ResourceRequirements{Limits: rl("3", "1Gi")}
	c := ContainerWith(pod, Container{Name: "side", Sidecar: true}, r)
	assert.Equal(t, "side", c.Name)
	assert.Equal(t, r, c.Resources)
	assert.Equal(t, rl("200m", "64Mi"), pod.Spec.InitContainers[0].Resources.Limits, "the pod's container is not changed")
	assert.Equal(t, &v1.Container{Name: "gone"}, ContainerWith(pod, Container{Name: "gone"}, r))
	assert.Equal(t, v1.ResourceRequirements{Requests: rl("500m", "128Mi"), Limits: rl("1", "256Mi")}, Requirements(pod, Container{Name: "app"}))
	assert.Equal(t, v1.ResourceRequirements{}, Requirements(pod, Container{Name: "app", Sidecar: true}), "app is no init container")
}

func TestPodCgroupSteps(t *testing.T) {
	i64 := func(v int64) *int64 { return &v }
	u64 := func(v uint64) *uint64 { return &v }
	// pc is a pod cgroup with shares, a quota over the default period and
	// a memory limit (nil: unset).
	pc := func(shares uint64, quota, mem *int64) PodCgroup {
		return PodCgroup{CPUShares: u64(shares), CPUQuota: quota, CPUPeriod: u64(100000), MemoryLimit: mem}
	}
	tests := map[string]struct {
		n                  v1.ResourceName
		before, after      PodCgroup
		wantGrow, wantShrk PodCgroup
	}{
		"cpu up: quota and shares before the containers": {n: v1.ResourceCPU,
			before: pc(1024, i64(100000), nil), after: pc(2048, i64(200000), nil),
			wantGrow: PodCgroup{CPUShares: u64(2048), CPUQuota: i64(200000), CPUPeriod: u64(100000)}},
		"cpu down: after them": {n: v1.ResourceCPU,
			before: pc(2048, i64(200000), nil), after: pc(1024, i64(100000), nil),
			wantShrk: PodCgroup{CPUShares: u64(1024), CPUQuota: i64(100000), CPUPeriod: u64(100000)}},
		"cpu limit removed: unlimited grows": {n: v1.ResourceCPU,
			before: pc(1024, i64(100000), nil), after: pc(1024, i64(-1), nil),
			wantGrow: PodCgroup{CPUQuota: i64(-1), CPUPeriod: u64(100000)}},
		"cpu request up, limit down: shares before, quota after": {n: v1.ResourceCPU,
			before: pc(512, i64(200000), nil), after: pc(1024, i64(150000), nil),
			wantGrow: PodCgroup{CPUShares: u64(1024)}, wantShrk: PodCgroup{CPUQuota: i64(150000), CPUPeriod: u64(100000)}},
		"memory up: before": {n: v1.ResourceMemory,
			before: pc(1024, nil, i64(128<<20)), after: pc(1024, nil, i64(256<<20)),
			wantGrow: PodCgroup{MemoryLimit: i64(256 << 20)}},
		"memory down: after": {n: v1.ResourceMemory,
			before: pc(1024, nil, i64(256<<20)), after: pc(1024, nil, i64(128<<20)),
			wantShrk: PodCgroup{MemoryLimit: i64(128 << 20)}},
		"memory pass leaves cpu alone": {n: v1.ResourceMemory,
			before: pc(1024, i64(100000), i64(128<<20)), after: pc(2048, i64(200000), i64(128<<20))},
		"nothing changed": {n: v1.ResourceCPU, before: pc(1024, i64(100000), nil), after: pc(1024, i64(100000), nil)},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			grow, shrink := PodCgroupSteps(tc.n, tc.before, tc.after)
			assert.Equal(t, tc.wantGrow, grow, "written before the containers")
			assert.Equal(t, tc.wantShrk, shrink, "written after them")
		})
	}
}
