package agent

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/minikubelet/minikubelet/agent/podspec"
)

const (
	running = runtimeapi.ContainerState_CONTAINER_RUNNING
	exited  = runtimeapi.ContainerState_CONTAINER_EXITED
	created = runtimeapi.ContainerState_CONTAINER_CREATED
	unknown = runtimeapi.ContainerState_CONTAINER_UNKNOWN
)

// planPod is the base fixture: two init containers (one a sidecar) and two
// app containers.
func planPod() *v1.Pod {
	always := v1.ContainerRestartPolicyAlways
	return &v1.Pod{Spec: v1.PodSpec{
		RestartPolicy: v1.RestartPolicyAlways,
		InitContainers: []v1.Container{
			{Name: "setup", Image: "i"},
			{Name: "proxy", Image: "i", RestartPolicy: &always},
		},
		Containers: []v1.Container{{Name: "a", Image: "i"}, {Name: "b", Image: "i"}},
	}}
}

// ready is a ready sandbox sb1 with an IP.
func readySandbox() *sandboxInfo {
	return &sandboxInfo{id: "sb1", attempt: 0, ready: true, ip: "10.88.0.2", createdAt: 10}
}

// ctr builds one observed instance in sb1 with the spec's hash.
func ctr(pod *v1.Pod, name string, state runtimeapi.ContainerState, exit int32, created int64) *containerInfo {
	var spec *v1.Container
	for _, list := range [][]v1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for i := range list {
			if list[i].Name == name {
				spec = &list[i]
			}
		}
	}
	return &containerInfo{id: name + "-" + string(rune('0'+created)), name: name, sandboxID: "sb1", state: state, exitCode: exit,
		createdAt: created, hash: podspec.ContainerHash(spec)}
}

// initialized is the state of a pod whose init phase is over and whose app
// containers run.
func initialized(pod *v1.Pod) *podState {
	return &podState{
		sandboxes: []*sandboxInfo{readySandbox()},
		containers: []*containerInfo{
			ctr(pod, "b", running, 0, 5), ctr(pod, "a", running, 0, 4),
			ctr(pod, "proxy", running, 0, 3), ctr(pod, "setup", exited, 0, 2),
		},
	}
}

func TestComputePodActions(t *testing.T) {
	for name, tc := range map[string]struct {
		mutatePod func(*v1.Pod)
		state     func(*v1.Pod) *podState
		probes    probeView
		want      podActions
	}{
		"new pod: sandbox attempt 0 and the first init container": {
			state: func(*v1.Pod) *podState { return &podState{} },
			want:  podActions{CreateSandbox: true, NextInitContainer: 0},
		},
		"new pod without init containers: sandbox and every app container": {
			mutatePod: func(p *v1.Pod) { p.Spec.InitContainers = nil },
			state:     func(*v1.Pod) *podState { return &podState{} },
			want:      podActions{CreateSandbox: true, NextInitContainer: -1, ContainersToStart: []int{0, 1}},
		},
		"Never pod, app start interrupted by the agent's death: started again": {
			mutatePod: func(p *v1.Pod) { p.Spec.RestartPolicy = v1.RestartPolicyNever; p.Spec.InitContainers = nil },
			state: func(p *v1.Pod) *podState {
				a := ctr(p, "a", exited, 128, 2)
				a.reason, a.message = "StartError", "failed to create containerd task: failed to create shim task: context canceled: unknown"
				a.startInterrupted = true
				return &podState{sandboxes: []*sandboxInfo{readySandbox()}, containers: []*containerInfo{ctr(p, "b", running, 0, 3), a}}
			},
			want: podActions{SandboxID: "sb1", NextInitContainer: -1, ContainersToStart: []int{0}},
		},
		"Never pod, a real StartError: not started again": {
			mutatePod: func(p *v1.Pod) { p.Spec.RestartPolicy = v1.RestartPolicyNever; p.Spec.InitContainers = nil },
			state: func(p *v1.Pod) *podState {
				a := ctr(p, "a", exited, 128, 2)
				a.reason, a.message = "StartError", `exec: "nope": executable file not found in $PATH`
				return &podState{sandboxes: []*sandboxInfo{readySandbox()}, containers: []*containerInfo{ctr(p, "b", running, 0, 3), a}}
			},
			want: podActions{SandboxID: "sb1", NextInitContainer: -1},
		},
		"init container created but never started (agent died): started again": {
			state: func(p *v1.Pod) *podState {
				s := ctr(p, "setup", created, 0, 1)
				s.startInterrupted = true
				return &podState{sandboxes: []*sandboxInfo{readySandbox()}, containers: []*containerInfo{s}}
			},
			want: podActions{SandboxID: "sb1", NextInitContainer: 0},
		},
		"Never pod, init start interrupted: not a failure": {
			mutatePod: func(p *v1.Pod) { p.Spec.RestartPolicy = v1.RestartPolicyNever },
			state: func(p *v1.Pod) *podState {
				s := ctr(p, "setup", exited, 128, 1)
				s.reason, s.message = "StartError", "context canceled"
				s.startInterrupted = true
				return &podState{sandboxes: []*sandboxInfo{readySandbox()}, containers: []*containerInfo{s}}
			},
			want: podActions{SandboxID: "sb1", NextInitContainer: 0},
		},
		"init running: wait": {
			state: func(p *v1.Pod) *podState {
				return &podState{sandboxes: []*sandboxInfo{readySandbox()}, containers: []*containerInfo{ctr(p, "setup", running, 0, 1)}}
			},
			want: podActions{SandboxID: "sb1", NextInitContainer: -1},
		},
		"init done: the sidecar starts next": {
			state: func(p *v1.Pod) *podState {
				return &podState{sandboxes: []*sandboxInfo{readySandbox()}, containers: []*containerInfo{ctr(p, "setup", exited, 0, 1)}}
			},
			want: podActions{SandboxID: "sb1", NextInitContainer: 1},
		},
		"sidecar running: app containers start in the same sync": {
			state: func(p *v1.Pod) *podState {
				return &podState{sandboxes: []*sandboxInfo{readySandbox()}, containers: []*containerInfo{
					ctr(p, "proxy", running, 0, 2), ctr(p, "setup", exited, 0, 1)}}
			},
			want: podActions{SandboxID: "sb1", NextInitContainer: -1, ContainersToStart: []int{0, 1}},
		},
		"sidecar exited during init: restarted before anything else": {
			state: func(p *v1.Pod) *podState {
				return &podState{sandboxes: []*sandboxInfo{readySandbox()}, containers: []*containerInfo{
					ctr(p, "proxy", exited, 1, 2), ctr(p, "setup", exited, 0, 1)}}
			},
			want: podActions{SandboxID: "sb1", NextInitContainer: 1},
		},
		"init failed under Always: retried": {
			state: func(p *v1.Pod) *podState {
				return &podState{sandboxes: []*sandboxInfo{readySandbox()}, containers: []*containerInfo{ctr(p, "setup", exited, 1, 1)}}
			},
			want: podActions{SandboxID: "sb1", NextInitContainer: 0},
		},
		"init failed under OnFailure: retried": {
			mutatePod: func(p *v1.Pod) { p.Spec.RestartPolicy = v1.RestartPolicyOnFailure },
			state: func(p *v1.Pod) *podState {
				return &podState{sandboxes: []*sandboxInfo{readySandbox()}, containers: []*containerInfo{ctr(p, "setup", exited, 1, 1)}}
			},
			want: podActions{SandboxID: "sb1", NextInitContainer: 0},
		},
		"init failed under Never: the pod fails": {
			mutatePod: func(p *v1.Pod) { p.Spec.RestartPolicy = v1.RestartPolicyNever },
			state: func(p *v1.Pod) *podState {
				return &podState{sandboxes: []*sandboxInfo{readySandbox()}, containers: []*containerInfo{ctr(p, "setup", exited, 1, 1)}}
			},
			want: podActions{SandboxID: "sb1", NextInitContainer: -1, InitFailed: true, KillPod: true},
		},
		"all running: nothing to do": {
			state: initialized,
			want:  podActions{SandboxID: "sb1", NextInitContainer: -1},
		},
		"app exited 0 under Always: restarted": {
			state: func(p *v1.Pod) *podState {
				s := initialized(p)
				s.containers[1] = ctr(p, "a", exited, 0, 4)
				return s
			},
			want: podActions{SandboxID: "sb1", NextInitContainer: -1, ContainersToStart: []int{0}},
		},
		"app exited 0 under OnFailure: not restarted": {
			mutatePod: func(p *v1.Pod) { p.Spec.RestartPolicy = v1.RestartPolicyOnFailure },
			state: func(p *v1.Pod) *podState {
				s := initialized(p)
				s.containers[1] = ctr(p, "a", exited, 0, 4)
				return s
			},
			want: podActions{SandboxID: "sb1", NextInitContainer: -1},
		},
		"app exited 1 under OnFailure: restarted": {
			mutatePod: func(p *v1.Pod) { p.Spec.RestartPolicy = v1.RestartPolicyOnFailure },
			state: func(p *v1.Pod) *podState {
				s := initialized(p)
				s.containers[1] = ctr(p, "a", exited, 1, 4)
				return s
			},
			want: podActions{SandboxID: "sb1", NextInitContainer: -1, ContainersToStart: []int{0}},
		},
		"app exited 1 under Never: not restarted": {
			mutatePod: func(p *v1.Pod) { p.Spec.RestartPolicy = v1.RestartPolicyNever },
			state: func(p *v1.Pod) *podState {
				s := initialized(p)
				s.containers[1] = ctr(p, "a", exited, 1, 4)
				return s
			},
			want: podActions{SandboxID: "sb1", NextInitContainer: -1},
		},
		"all app containers done under Never: kill the pod, sidecar not restarted": {
			mutatePod: func(p *v1.Pod) { p.Spec.RestartPolicy = v1.RestartPolicyNever },
			state: func(p *v1.Pod) *podState {
				s := initialized(p)
				s.containers[0] = ctr(p, "b", exited, 0, 5)
				s.containers[1] = ctr(p, "a", exited, 1, 4)
				s.containers[2] = ctr(p, "proxy", exited, 0, 3)
				return s
			},
			want: podActions{SandboxID: "sb1", NextInitContainer: -1, KillPod: true},
		},
		"sidecar exited in a running pod: restarted whatever the policy": {
			mutatePod: func(p *v1.Pod) { p.Spec.RestartPolicy = v1.RestartPolicyNever },
			state: func(p *v1.Pod) *podState {
				s := initialized(p)
				s.containers[2] = ctr(p, "proxy", exited, 0, 3)
				return s
			},
			want: podActions{SandboxID: "sb1", NextInitContainer: -1, InitContainersToStart: []int{1}},
		},
		"regular init containers never re-run once initialized": {
			state: func(p *v1.Pod) *podState {
				s := initialized(p)
				s.containers = s.containers[:3] // the setup instance was removed
				return s
			},
			want: podActions{SandboxID: "sb1", NextInitContainer: -1},
		},
		"created but never started: started again": {
			state: func(p *v1.Pod) *podState {
				s := initialized(p)
				s.containers[1] = ctr(p, "a", created, 0, 4)
				return s
			},
			want: podActions{SandboxID: "sb1", NextInitContainer: -1, ContainersToStart: []int{0}},
		},
		"unknown state: killed and started": {
			state: func(p *v1.Pod) *podState {
				s := initialized(p)
				s.containers[1] = ctr(p, "a", unknown, 0, 4)
				return s
			},
			want: podActions{SandboxID: "sb1", NextInitContainer: -1, ContainersToStart: []int{0},
				ContainersToKill: map[string]killReason{"a-4": {Name: "a", Message: "Container a is in an unknown state"}}},
		},
		"definition changed: killed and started": {
			state: func(p *v1.Pod) *podState {
				s := initialized(p)
				s.containers[1].hash = "stale"
				return s
			},
			want: podActions{SandboxID: "sb1", NextInitContainer: -1, ContainersToStart: []int{0},
				ContainersToKill: map[string]killReason{"a-4": {Name: "a", Message: "Container a definition changed"}}},
		},
		"sandbox died: killed and recreated with attempt+1, init again": {
			state: func(p *v1.Pod) *podState {
				s := initialized(p)
				s.sandboxes[0].ready = false
				return s
			},
			want: podActions{KillPod: true, CreateSandbox: true, Attempt: 1, NextInitContainer: 0},
		},
		"sandbox lost its IP: recreated": {
			state: func(p *v1.Pod) *podState {
				s := initialized(p)
				s.sandboxes[0].ip = ""
				return s
			},
			want: podActions{KillPod: true, CreateSandbox: true, Attempt: 1, NextInitContainer: 0},
		},
		"host-network pod needs no IP": {
			mutatePod: func(p *v1.Pod) { p.Spec.HostNetwork = true },
			state: func(p *v1.Pod) *podState {
				s := initialized(p)
				s.sandboxes[0].ip = ""
				s.sandboxes[0].hostNetwork = true
				return s
			},
			want: podActions{SandboxID: "sb1", NextInitContainer: -1},
		},
		"two ready sandboxes: replaced by a new one": {
			state: func(p *v1.Pod) *podState {
				s := initialized(p)
				s.sandboxes = append(s.sandboxes, &sandboxInfo{id: "sb0", attempt: 2, ready: true, ip: "10.88.0.3", createdAt: 1})
				return s
			},
			want: podActions{KillPod: true, CreateSandbox: true, Attempt: 3, NextInitContainer: 0},
		},
		"sandbox died under Never after containers ran: only killed": {
			mutatePod: func(p *v1.Pod) { p.Spec.RestartPolicy = v1.RestartPolicyNever },
			state: func(p *v1.Pod) *podState {
				s := initialized(p)
				s.sandboxes[0].ready = false
				s.sandboxes[0].attempt = 1
				return s
			},
			want: podActions{KillPod: true, Attempt: 2, NextInitContainer: -1},
		},
		"sandbox died under OnFailure after everything succeeded: only killed": {
			mutatePod: func(p *v1.Pod) { p.Spec.RestartPolicy = v1.RestartPolicyOnFailure },
			state: func(p *v1.Pod) *podState {
				s := initialized(p)
				s.sandboxes[0].ready = false
				s.containers[0] = ctr(p, "b", exited, 0, 5)
				s.containers[1] = ctr(p, "a", exited, 0, 4)
				return s
			},
			want: podActions{KillPod: true, Attempt: 1, NextInitContainer: -1},
		},
	} {
		t.Run(name, func(t *testing.T) {
			pod := planPod()
			if tc.mutatePod != nil {
				tc.mutatePod(pod)
			}
			got := computePodActions(pod, tc.state(pod), tc.probes)
			if tc.want.ContainersToKill == nil {
				tc.want.ContainersToKill = map[string]killReason{}
			}
			assert.Equal(t, tc.want, got)
		})
	}
}

func TestShouldRestart_DeletedPod(t *testing.T) {
	pod := planPod()
	now := metav1Now()
	pod.DeletionTimestamp = &now
	assert.False(t, shouldRestart(pod, &pod.Spec.Containers[0], nil))
	assert.False(t, shouldRestart(pod, &pod.Spec.InitContainers[1], &containerInfo{state: exited}))
}

func metav1Now() metav1.Time { return metav1.Now() }

// Only what an earlier agent process left mid-start is an interrupted
// start; a StartError of this process is a real failure.
func TestStartInterrupted(t *testing.T) {
	a := &Agent{started: time.Unix(100, 0)}
	before, soon, later := time.Unix(50, 0).UnixNano(), time.Unix(102, 0).UnixNano(), time.Unix(150, 0).UnixNano()
	for name, tc := range map[string]struct {
		c    containerInfo
		want bool
	}{
		"created, never started":                                {containerInfo{state: created, createdAt: before}, true},
		"created after this process started (in-flight create)": {containerInfo{state: created, createdAt: later}, true},
		"start cancelled":                                       {containerInfo{state: exited, reason: "StartError", message: "failed to create shim task: context canceled: unknown", finishedAt: before}, true},
		"shim start killed before this process":                 {containerInfo{state: exited, reason: "StartError", message: "failed to start shim: start failed: : signal: killed: unknown", finishedAt: before}, true},
		"shim start killed just after this process started":     {containerInfo{state: exited, reason: "StartError", message: "signal: killed", finishedAt: soon}, true},
		"killed during start, later: a real failure":            {containerInfo{state: exited, reason: "StartError", message: "signal: killed", finishedAt: later}, false},
		"a real StartError":                                     {containerInfo{state: exited, reason: "StartError", message: `exec: "nope": executable file not found in $PATH`, finishedAt: before}, false},
		"ran and exited":                                        {containerInfo{state: exited, startedAt: before, finishedAt: before, reason: "Error"}, false},
		"running":                                               {containerInfo{state: running, startedAt: before}, false},
	} {
		t.Run(name, func(t *testing.T) {
			assert.Equal(t, tc.want, a.startInterrupted(&tc.c))
		})
	}
}

// TestComputePodActions_UpdateInPlace: what an update through the API
// (manifest.ValidatePodUpdate's allowed changes) does to a running pod,
// planned against the containers started from the old spec: metadata,
// activeDeadlineSeconds and tolerations change no container hash and
// restart nothing; a changed image restarts only that container, in the
// same sandbox; the image of an init container that already completed
// changes nothing (it never runs again in this sandbox), a sidecar's
// restarts the sidecar.
func TestComputePodActions_UpdateInPlace(t *testing.T) {
	for name, tc := range map[string]struct {
		update func(*v1.Pod)
		state  func(old *v1.Pod) *podState // initialized when nil
		want   podActions
	}{
		"labels, annotations, activeDeadlineSeconds, tolerations: nothing": {
			update: func(p *v1.Pod) {
				p.Labels = map[string]string{"x": "y"}
				p.Annotations = map[string]string{"kubectl.kubernetes.io/last-applied-configuration": "{}"}
				deadline := int64(600)
				p.Spec.ActiveDeadlineSeconds = &deadline
				p.Spec.Tolerations = []v1.Toleration{{Key: "k", Operator: v1.TolerationOpExists}}
			},
			want: podActions{SandboxID: "sb1", NextInitContainer: -1},
		},
		"image of one app container: only that one": {
			update: func(p *v1.Pod) { p.Spec.Containers[1].Image = "i2" },
			want: podActions{SandboxID: "sb1", NextInitContainer: -1, ContainersToStart: []int{1},
				ContainersToKill: map[string]killReason{"b-5": {Name: "b", Message: "Container b definition changed"}}},
		},
		"image of a sidecar: only the sidecar": {
			update: func(p *v1.Pod) { p.Spec.InitContainers[1].Image = "i2" },
			want: podActions{SandboxID: "sb1", NextInitContainer: -1, InitContainersToStart: []int{1},
				ContainersToKill: map[string]killReason{"proxy-3": {Name: "proxy", Message: "Container proxy definition changed"}}},
		},
		"image of a sidecar during initialization: the sidecar restarts, the init container after it runs on": {
			update: func(p *v1.Pod) {
				p.Spec.InitContainers = append(p.Spec.InitContainers, v1.Container{Name: "migrate", Image: "i"})
				p.Spec.InitContainers[1].Image = "i2"
			},
			state: func(old *v1.Pod) *podState {
				old.Spec.InitContainers = append(old.Spec.InitContainers, v1.Container{Name: "migrate", Image: "i"})
				return &podState{sandboxes: []*sandboxInfo{readySandbox()}, containers: []*containerInfo{
					ctr(old, "migrate", running, 0, 4), ctr(old, "proxy", running, 0, 3), ctr(old, "setup", exited, 0, 2)}}
			},
			want: podActions{SandboxID: "sb1", NextInitContainer: 1,
				ContainersToKill: map[string]killReason{"proxy-3": {Name: "proxy", Message: "Container proxy definition changed"}}},
		},
		"image of a completed init container: nothing": {
			update: func(p *v1.Pod) { p.Spec.InitContainers[0].Image = "i2" },
			want:   podActions{SandboxID: "sb1", NextInitContainer: -1},
		},
	} {
		t.Run(name, func(t *testing.T) {
			old := planPod()
			state := initialized(old) // started from the old spec
			if tc.state != nil {
				state = tc.state(old)
			}
			pod := planPod()
			tc.update(pod)
			got := computePodActions(pod, state, probeView{})
			if tc.want.ContainersToKill == nil {
				tc.want.ContainersToKill = map[string]killReason{}
			}
			assert.Equal(t, tc.want, got)
		})
	}
}
