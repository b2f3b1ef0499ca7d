package agent

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/minikubelet/minikubelet/agent/node"
	"github.com/minikubelet/minikubelet/agent/podspec"
	"github.com/minikubelet/minikubelet/agent/resize"
)

// resizeFixture is a running pod with one app container "app" (cpu 500m/1,
// memory 128Mi/256Mi) and one native sidecar "side", both running in
// sandbox "sb".
func resizeFixture() (*v1.Pod, *podState) {
	pod := &v1.Pod{}
	pod.Name, pod.Namespace, pod.UID = "web", "demo", "uid-1"
	pod.Spec.RestartPolicy = v1.RestartPolicyAlways
	always := v1.ContainerRestartPolicyAlways
	pod.Spec.InitContainers = []v1.Container{{Name: "side", Image: "side", RestartPolicy: &always,
		Resources: v1.ResourceRequirements{Requests: rl("100m", "64Mi"), Limits: rl("200m", "64Mi")}}}
	pod.Spec.Containers = []v1.Container{{Name: "app", Image: "app",
		Resources: v1.ResourceRequirements{Requests: rl("500m", "128Mi"), Limits: rl("1", "256Mi")}}}
	st := &podState{
		sandboxes: []*sandboxInfo{{id: "sb", ready: true, ip: "10.0.0.2"}},
		containers: []*containerInfo{
			{id: "c-app", name: "app", sandboxID: "sb", state: runtimeapi.ContainerState_CONTAINER_RUNNING},
			{id: "c-side", name: "side", sandboxID: "sb", state: runtimeapi.ContainerState_CONTAINER_RUNNING},
		},
	}
	return pod, st
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

// planResize merges the restarts of resize.Plan into the sync's plan,
// without doubling a kill or a start the plan has already, and plans no
// resize while the pod is killed or its sandbox recreated.
func TestAgent_PlanResize(t *testing.T) {
	restartContainer := []v1.ContainerResizePolicy{{ResourceName: v1.ResourceMemory, RestartPolicy: v1.RestartContainer}}
	// appRestarts: app's memory with RestartContainer; sideInPlace: side's
	// cpu, in place; sideRestarts: side's memory with RestartContainer.
	appRestarts := func(p *v1.Pod) {
		p.Spec.Containers[0].ResizePolicy = restartContainer
		p.Spec.Containers[0].Resources.Limits[v1.ResourceMemory] = resource.MustParse("512Mi")
	}
	sideInPlace := func(p *v1.Pod) {
		p.Spec.InitContainers[0].Resources.Limits[v1.ResourceCPU] = resource.MustParse("150m")
	}
	sideRestarts := func(p *v1.Pod) {
		p.Spec.InitContainers[0].ResizePolicy = restartContainer
		p.Spec.InitContainers[0].Resources.Limits[v1.ResourceMemory] = resource.MustParse("32Mi")
	}
	tests := map[string]struct {
		mutate        []func(*v1.Pod)
		act           podActions
		wantKill      map[string]string // container ID -> message
		wantStart     []int
		wantInitStart []int
		wantInPlace   bool
	}{
		"a restart joins the plan, an update stays in place": {
			mutate:      []func(*v1.Pod){appRestarts, sideInPlace},
			act:         podActions{ContainersToKill: map[string]killReason{}},
			wantKill:    map[string]string{"c-app": "Container app resize requires restart"},
			wantStart:   []int{0},
			wantInPlace: true,
		},
		"a sidecar restarts as an init container": {
			mutate:        []func(*v1.Pod){sideRestarts},
			act:           podActions{ContainersToKill: map[string]killReason{}},
			wantKill:      map[string]string{"c-side": "Container side resize requires restart"},
			wantInitStart: []int{0},
		},
		"a kill and a start already planned stay as they are": {
			mutate:    []func(*v1.Pod){appRestarts},
			act:       podActions{ContainersToKill: map[string]killReason{"c-app": {Name: "app", Message: "probe"}}, ContainersToStart: []int{0}},
			wantKill:  map[string]string{"c-app": "probe"},
			wantStart: []int{0},
		},
		"the pod is killed: no resize": {
			mutate:   []func(*v1.Pod){appRestarts, sideInPlace},
			act:      podActions{KillPod: true, ContainersToKill: map[string]killReason{}},
			wantKill: map[string]string{},
		},
		"the sandbox is recreated: no resize": {
			mutate:   []func(*v1.Pod){appRestarts, sideInPlace},
			act:      podActions{CreateSandbox: true, ContainersToKill: map[string]killReason{}},
			wantKill: map[string]string{},
		},
		"no running sandbox: no resize": {
			mutate:   []func(*v1.Pod){appRestarts, sideInPlace, nil},
			act:      podActions{ContainersToKill: map[string]killReason{}},
			wantKill: map[string]string{},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			pod, st := resizeFixture()
			w := &podWorker{spec: pod}
			dir := t.TempDir() // actuated as allocated
			require.NoError(t, resize.SaveCheckpoint(dir, resize.Checkpoint{Allocated: resize.Of(pod), Actuated: resize.Of(pod)}))
			require.NoError(t, w.resize.Init(pod, dir, nil, nil))
			for _, m := range tc.mutate {
				if m == nil {
					st.sandboxes = nil
					continue
				}
				m(pod)
			}
			act := tc.act
			ra := (&Agent{}).planResize(w, pod, st, &act)
			kills := map[string]string{}
			for id, kr := range act.ContainersToKill {
				kills[id] = kr.Message
			}
			assert.Equal(t, tc.wantKill, kills)
			assert.Equal(t, tc.wantStart, act.ContainersToStart)
			assert.Equal(t, tc.wantInitStart, act.InitContainersToStart)
			assert.Equal(t, tc.wantInPlace, ra.InPlace())
			if tc.wantInPlace {
				assert.Equal(t, []resize.Container{{Name: "side", Sidecar: true, ID: "c-side"}}, ra.Update[v1.ResourceCPU])
			}
		})
	}
}

func TestPodCgroupSteps(t *testing.T) {
	i64 := func(v int64) *int64 { return &v }
	u64 := func(v uint64) *uint64 { return &v }
	before := podCgroupResourcesFor(t, "1", "256Mi")
	after := podCgroupResourcesFor(t, "2", "128Mi")
	grow, shrink := resize.PodCgroupSteps(v1.ResourceCPU, before, after)
	assert.Equal(t, i64(200000), grow.CPUQuota, "a larger quota is written before the containers")
	assert.Nil(t, shrink.CPUQuota)
	grow, shrink = resize.PodCgroupSteps(v1.ResourceMemory, before, after)
	assert.Nil(t, grow.MemoryLimit)
	assert.Equal(t, i64(128<<20), shrink.MemoryLimit, "a smaller memory limit is written after the containers")
	// Shares follow the request.
	grow, _ = resize.PodCgroupSteps(v1.ResourceCPU, before, after)
	assert.Equal(t, u64(2048), grow.CPUShares)
}

// podCgroupResourcesFor is the Guaranteed pod cgroup of one container with
// cpu and memory as request and limit, as doResize hands it to
// resize.Steps.
func podCgroupResourcesFor(t *testing.T, cpu, mem string) resize.PodCgroup {
	t.Helper()
	pod := &v1.Pod{}
	pod.Spec.Containers = []v1.Container{{Name: "c", Resources: v1.ResourceRequirements{Requests: rl(cpu, mem), Limits: rl(cpu, mem)}}}
	return (&Agent{}).podCgroupOf(v1.PodQOSGuaranteed)(pod)
}

func TestContainerHashIgnoresResources(t *testing.T) {
	pod, _ := resizeFixture()
	c := pod.Spec.Containers[0]
	h := podspec.ContainerHash(&c)
	c.Resources.Limits = rl("3", "1Gi")
	assert.Equal(t, h, podspec.ContainerHash(&c), "a resources change is no new definition")
	c.Image = "app:2"
	assert.NotEqual(t, h, podspec.ContainerHash(&c))
	// A container a version before resize created (whole-spec hash) is
	// still this definition.
	c = pod.Spec.Containers[0]
	cur := &containerInfo{hash: podspec.LegacyContainerHash(&c)}
	assert.False(t, definitionChanged(cur, &c))
}

const resizePod = `
apiVersion: v1
kind: Pod
metadata: {name: web, namespace: demo, uid: 6f1c6f1c-0000-4000-8000-000000000001}
spec:
  containers:
  - name: app
    image: reg.local/app:1
    resources:
      requests: {cpu: 250m, memory: 64Mi}
      limits: {cpu: 500m, memory: 128Mi}
    resizePolicy:
    - {resourceName: memory, restartPolicy: RestartContainer}
`

// resized returns a copy of pod whose container has new limits (and the
// generation the API server bumps).
func resized(pod *v1.Pod, cpu, mem string) *v1.Pod {
	p := pod.DeepCopy()
	p.Generation++
	p.Spec.Containers[0].Resources.Limits = rl(cpu, mem)
	return p
}

func containerStatusOf(p *v1.Pod) v1.ContainerStatus {
	if len(p.Status.ContainerStatuses) == 0 {
		return v1.ContainerStatus{}
	}
	return p.Status.ContainerStatuses[0]
}

func hasResizeCondition(p *v1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == v1.PodResizePending || c.Type == v1.PodResizeInProgress {
			return true
		}
	}
	return false
}

// A cpu limit raised on a running pod updates the container through CRI
// UpdateContainerResources, without a restart; the status reports the new
// limit, the resize conditions come and go, and the allocation is in the
// checkpoint. A memory change with RestartContainer restarts it instead.
func TestAgent_ResizeInPlace(t *testing.T) {
	h := newHarness(t)
	pod := testPod(t, resizePod)
	pod.Generation = 1
	h.agent.SetPods([]*v1.Pod{pod})
	h.rec.waitStatus(t, "Running", phaseIs(v1.PodRunning))
	h.waitCallsSettle(t)
	running, ok := h.agent.GetPod(pod.UID)
	require.True(t, ok)
	first := containerStatusOf(running)
	require.NotNil(t, first.Resources, "a running container reports its resources (the API server refuses a resize without them)")
	h.fake.Reset()

	// cpu: in place.
	p2 := resized(pod, "1500m", "128Mi")
	h.agent.SetPods([]*v1.Pod{p2})
	got := h.rec.waitStatus(t, "the new cpu limit in status", func(p *v1.Pod) bool {
		cs := containerStatusOf(p)
		return cs.Resources != nil && cs.Resources.Limits.Cpu().MilliValue() == 1500 && !hasResizeCondition(p)
	})
	calls := without(h.fake.Calls(), observeCalls...)
	assert.Contains(t, calls, "UpdateContainerResources app")
	assert.NotContains(t, strings.Join(calls, ","), "CreateContainer", "a cpu resize must not recreate the container")
	cs := containerStatusOf(got)
	assert.EqualValues(t, 0, cs.RestartCount)
	assert.Equal(t, first.ContainerID, cs.ContainerID)
	assert.Equal(t, int64(2), got.Status.ObservedGeneration)
	lr := h.fake.Resources(strings.TrimPrefix(cs.ContainerID, h.agent.cfg.RuntimeName+"://"))
	require.NotNil(t, lr)
	assert.Equal(t, int64(150000), lr.CpuQuota, "the runtime got the new quota")
	assert.Equal(t, int64(128<<20), lr.MemoryLimitInBytes, "memory as before")
	cp, ok, err := resize.LoadCheckpoint(h.agent.podDir(pod))
	require.NoError(t, err)
	require.True(t, ok, "the allocation is checkpointed")
	allocCPU, actCPU := cp.Allocated["app"].Limits[v1.ResourceCPU], cp.Actuated["app"].Limits[v1.ResourceCPU]
	assert.Equal(t, int64(1500), allocCPU.MilliValue())
	assert.Equal(t, int64(1500), actCPU.MilliValue())
	assert.Subset(t, h.rec.reasons(), []string{resize.EventStarted, resize.EventCompleted})

	// memory, RestartContainer: a restart with the new limit.
	h.fake.Reset()
	p3 := resized(p2, "1500m", "256Mi")
	h.agent.SetPods([]*v1.Pod{p3})
	got = h.rec.waitStatus(t, "the restarted container", func(p *v1.Pod) bool {
		cs := containerStatusOf(p)
		return cs.RestartCount == 1 && cs.State.Running != nil && cs.Resources != nil &&
			cs.Resources.Limits.Memory().Value() == 256<<20 && !hasResizeCondition(p)
	})
	calls = without(h.fake.Calls(), observeCalls...)
	assert.NotContains(t, calls, "UpdateContainerResources app")
	assert.Contains(t, calls, "StopContainer app timeout=30")
	lr = h.fake.Resources(strings.TrimPrefix(containerStatusOf(got).ContainerID, h.agent.cfg.RuntimeName+"://"))
	require.NotNil(t, lr)
	assert.Equal(t, int64(256<<20), lr.MemoryLimitInBytes)
	assert.Equal(t, int64(150000), lr.CpuQuota)
}

// A resize beyond the node's allocatable is Infeasible and not applied;
// reverting it clears the condition.
// runningOnTwoCPUs starts resizePod on a node of 2 CPUs and 1 GiB, and
// returns it with a resize of it to 3 CPUs (Infeasible there), not yet
// handed over.
func runningOnTwoCPUs(t *testing.T, h *harness) (pod, big *v1.Pod) {
	h.agent.cfg.Node = node.Info{Name: "node-1", Allocatable: v1.ResourceList{
		v1.ResourceCPU: resource.MustParse("2"), v1.ResourceMemory: resource.MustParse("1Gi"), v1.ResourcePods: resource.MustParse("110"),
	}}
	pod = testPod(t, resizePod)
	h.agent.SetPods([]*v1.Pod{pod})
	h.rec.waitStatus(t, "Running", phaseIs(v1.PodRunning))
	h.waitCallsSettle(t)
	h.fake.Reset()
	big = pod.DeepCopy()
	big.Generation++
	big.Spec.Containers[0].Resources.Requests = rl("3", "64Mi")
	big.Spec.Containers[0].Resources.Limits = rl("3", "128Mi")
	return pod, big
}

func TestAgent_ResizeInfeasible(t *testing.T) {
	h := newHarness(t)
	pod, big := runningOnTwoCPUs(t, h)
	h.agent.SetPods([]*v1.Pod{big})
	got := h.rec.waitStatus(t, "PodResizePending", func(p *v1.Pod) bool {
		for _, c := range p.Status.Conditions {
			if c.Type == v1.PodResizePending {
				return true
			}
		}
		return false
	})
	var pending v1.PodCondition
	for _, c := range got.Status.Conditions {
		if c.Type == v1.PodResizePending {
			pending = c
		}
	}
	assert.Equal(t, v1.PodReasonInfeasible, pending.Reason)
	assert.Equal(t, "Node didn't have enough capacity: cpu, requested: 3000, capacity: 2000", pending.Message)
	assert.Equal(t, big.Generation, pending.ObservedGeneration)
	assert.Equal(t, int64(500), containerStatusOf(got).Resources.Limits.Cpu().MilliValue(), "the status keeps the running values")
	assert.NotContains(t, without(h.fake.Calls(), observeCalls...), "UpdateContainerResources app")

	// Reverted: the condition goes.
	back := pod.DeepCopy()
	back.Generation = big.Generation + 1
	h.agent.SetPods([]*v1.Pod{back})
	h.rec.waitStatus(t, "no resize condition", func(p *v1.Pod) bool { return !hasResizeCondition(p) })
}

// A resize that does not fit next to another pod is Deferred, and admitted
// once that pod's worker is gone (its teardown over), without any new
// update from the source.
func TestAgent_ResizeDeferredUntilAPodLeaves(t *testing.T) {
	h := newHarness(t)
	h.agent.cfg.Node = node.Info{Name: "node-1", Allocatable: v1.ResourceList{
		v1.ResourceCPU: resource.MustParse("2"), v1.ResourceMemory: resource.MustParse("1Gi"), v1.ResourcePods: resource.MustParse("110"),
	}}
	pod := testPod(t, resizePod)
	hog := testPod(t, strings.ReplaceAll(strings.ReplaceAll(resizePod, "name: web", "name: hog"), "000000000001", "000000000002"))
	hog.Spec.Containers[0].Resources.Requests = rl("1500m", "64Mi")
	hog.Spec.Containers[0].Resources.Limits = nil
	hog.Spec.Containers[0].ResizePolicy = nil
	h.agent.SetPods([]*v1.Pod{pod, hog})
	require.Eventually(t, func() bool {
		p, ok := h.agent.GetPod(pod.UID)
		q, ok2 := h.agent.GetPod(hog.UID)
		return ok && ok2 && p.Status.Phase == v1.PodRunning && q.Status.Phase == v1.PodRunning
	}, 10*time.Second, 10*time.Millisecond)

	big := pod.DeepCopy()
	big.Generation++
	big.Spec.Containers[0].Resources.Requests = rl("600m", "64Mi")
	big.Spec.Containers[0].Resources.Limits = rl("1", "128Mi")
	h.agent.SetPods([]*v1.Pod{big, hog})
	require.Eventually(t, func() bool {
		p, _ := h.agent.GetPod(pod.UID)
		for _, c := range p.Status.Conditions {
			if c.Type == v1.PodResizePending && c.Reason == v1.PodReasonDeferred &&
				c.Message == "Node didn't have enough resource: cpu, requested: 600, used: 1500, capacity: 2000" {
				return true
			}
		}
		return false
	}, 10*time.Second, 10*time.Millisecond, "Deferred")

	h.agent.SetPods([]*v1.Pod{big}) // hog deleted; its teardown frees its cpu
	require.Eventually(t, func() bool {
		p, _ := h.agent.GetPod(pod.UID)
		cs := containerStatusOf(p)
		return !hasResizeCondition(p) && cs.AllocatedResources.Cpu().MilliValue() == 600 &&
			cs.Resources != nil && cs.Resources.Limits.Cpu().MilliValue() == 1000
	}, 20*time.Second, 10*time.Millisecond, "the deferred resize admitted and applied once hog is gone")
}

// A restarted daemon starts a pod from its checkpointed allocation: a
// spec that changed meanwhile is taken as a resize (admitted, with its
// ResizeStarted event), not silently as the allocation.
func TestAgent_ResizeCheckpointAfterRestart(t *testing.T) {
	h := newHarness(t)
	pod := testPod(t, resizePod)
	require.NoError(t, resize.SaveCheckpoint(h.agent.podDir(pod), resize.Checkpoint{Allocated: resize.Of(pod), Actuated: resize.Of(pod)}))
	changed := resized(pod, "1500m", "128Mi")
	h.agent.SetPods([]*v1.Pod{changed})
	h.rec.waitStatus(t, "running with the new limit", func(p *v1.Pod) bool {
		cs := containerStatusOf(p)
		return p.Status.Phase == v1.PodRunning && cs.Resources != nil && cs.Resources.Limits.Cpu().MilliValue() == 1500 && !hasResizeCondition(p)
	})
	assert.Contains(t, h.rec.reasons(), resize.EventStarted, "the checkpoint's allocation (500m) was the starting point")
	cp, ok, err := resize.LoadCheckpoint(h.agent.podDir(pod))
	require.NoError(t, err)
	require.True(t, ok)
	lim := cp.Allocated["app"].Limits[v1.ResourceCPU]
	assert.Equal(t, int64(1500), lim.MilliValue())
}

// A pod whose resize is pending (Infeasible: its allocated view differs
// from its spec) and is then deleted with a grace period of its own is
// killed with that grace period: the deletion reaches the view the
// teardown reads, not only the spec (the view once kept the spec of
// before the deletion, and the pod's own 30 s were used).
func TestAgent_DeletionOfAPodWithAPendingResize(t *testing.T) {
	h := newHarness(t)
	pod, big := runningOnTwoCPUs(t, h)
	h.agent.SetPods([]*v1.Pod{big})
	h.rec.waitStatus(t, "PodResizePending", hasResizeCondition)
	h.waitCallsSettle(t)
	h.fake.Reset()

	w, _ := h.agent.FindPod(pod.Namespace, pod.Name)
	require.NotNil(t, w)
	grace := int64(3)
	w.SetDeletion(&grace)
	got := w.Pod()
	require.NotNil(t, got.DeletionTimestamp, "the worker's pod carries the deletion")
	require.NotNil(t, got.DeletionGracePeriodSeconds)
	assert.Equal(t, grace, *got.DeletionGracePeriodSeconds)

	h.agent.SetPods(nil)
	require.Eventually(t, func() bool { return len(stopCalls(h, "app")) > 0 }, 10*time.Second, 10*time.Millisecond, "the container is stopped")
	assert.Equal(t, "StopContainer app timeout=3", stopCalls(h, "app")[0], "the deletion's grace period, not the pod's own")
}
