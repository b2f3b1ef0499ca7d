package agent

import (
	"context"
	"errors"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/proto"
	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/minikubelet/minikubelet/agent/podspec"
	"github.com/minikubelet/minikubelet/cri"
	"github.com/minikubelet/minikubelet/cri/critest"
	"github.com/minikubelet/minikubelet/probes"
)

// A sync whose own change is the condition of the next step (a sidecar it
// started, an init container that completed while it was started, a
// startup probe that passed) must be followed by a sync without the
// periodic resync (issue #17). These tests run the whole worker loop (and
// the sync loop where a probe is involved) and never let the fake clock
// reach ResyncPeriod: a step that waits for the resync fails them.

// scriptedRuntime adds critest's behaviour annotations to the containers
// it names when they are created (the agent puts no pod annotation on its
// containers).
type scriptedRuntime struct {
	*critest.FakeRuntime
	// annotate maps a container name to the annotations it gets.
	annotate map[string]map[string]string
}

func (r scriptedRuntime) CreateContainer(ctx context.Context, sandboxID string, cfg *runtimeapi.ContainerConfig, sbCfg *runtimeapi.PodSandboxConfig) (string, error) {
	if extra, ok := r.annotate[cfg.GetMetadata().GetName()]; ok {
		cfg = proto.Clone(cfg).(*runtimeapi.ContainerConfig)
		maps.Copy(cfg.Annotations, extra)
	}
	return r.FakeRuntime.CreateContainer(ctx, sandboxID, cfg, sbCfg)
}

// newPromptHarness is a harness whose periodic resync and relist are an
// hour away: only a sync's own requeue (or a probe result) can move a pod.
func newPromptHarness(t *testing.T, annotate map[string]map[string]string) *harness {
	t.Helper()
	h := newHarness(t)
	h.agent.cfg.ResyncPeriod = time.Hour
	h.agent.cfg.RelistPeriod = time.Hour
	if annotate != nil {
		h.agent.runtime = scriptedRuntime{FakeRuntime: h.fake.Runtime, annotate: annotate}
	}
	h.fake.SetImages("reg.local/busybox:1")
	return h
}

// appStarted is true once every app container runs.
func appStarted(p *v1.Pod) bool {
	if len(p.Status.ContainerStatuses) == 0 {
		return false
	}
	for _, cs := range p.Status.ContainerStatuses {
		if cs.State.Running == nil {
			return false
		}
	}
	return true
}

// waitFakeTimeStill waits (in real time) for cond while the fake clock
// stands still.
func (h *harness) waitFakeTimeStill(t *testing.T, what string, cond func(*v1.Pod) bool) *v1.Pod {
	t.Helper()
	start := h.clock.Now()
	p := h.rec.waitStatus(t, what+" with the fake clock standing still (a step waited for the periodic resync)", cond)
	require.Equal(t, start, h.clock.Now())
	return p
}

func TestAgent_SidecarWithoutStartupProbeLetsAppStartAtOnce(t *testing.T) {
	h := newPromptHarness(t, nil)
	pod := testPod(t, `
apiVersion: v1
kind: Pod
metadata: {name: sidecar}
spec:
  initContainers:
  - {name: logshipper, image: reg.local/busybox:1, restartPolicy: Always}
  - {name: setup, image: reg.local/busybox:1, restartPolicy: Always}
  containers:
  - {name: app, image: reg.local/busybox:1}
`)
	h.agent.SetPods([]*v1.Pod{pod})
	p := h.waitFakeTimeStill(t, "app started after two sidecars", appStarted)
	assert.Equal(t, v1.PodRunning, p.Status.Phase)
	calls := without(h.fake.Calls(), observeCalls...)
	assert.Equal(t, []string{
		"RunPodSandbox sidecar attempt=0",
		"CreateContainer logshipper attempt=0", "StartContainer logshipper",
		"CreateContainer setup attempt=0", "StartContainer setup",
		"CreateContainer app attempt=0", "StartContainer app",
	}, calls)
}

func TestAgent_InitContainerCompletingAtOnceLetsAppStart(t *testing.T) {
	exitNow := map[string]string{critest.AnnotationExitAfterMs: "0"}
	h := newPromptHarness(t, map[string]map[string]string{"first": exitNow, "second": exitNow})
	pod := testPod(t, `
apiVersion: v1
kind: Pod
metadata: {name: init}
spec:
  initContainers:
  - {name: first, image: reg.local/busybox:1}
  - {name: second, image: reg.local/busybox:1}
  containers:
  - {name: app, image: reg.local/busybox:1}
`)
	h.agent.SetPods([]*v1.Pod{pod})
	h.waitFakeTimeStill(t, "app started after two init containers that exit 0 at once", appStarted)
	assert.Equal(t, []string{
		"RunPodSandbox init attempt=0",
		"CreateContainer first attempt=0", "StartContainer first",
		"CreateContainer second attempt=0", "StartContainer second",
		"CreateContainer app attempt=0", "StartContainer app",
	}, without(h.fake.Calls(), observeCalls...))
}

// A Never pod whose only app container exits (code 1) before the sync that
// started it observes the pod again: the pod is then over (Failed), and
// the sidecar and the sandbox stop in the sync that follows at once (the
// relister would not wake the worker: its own observation saw the exit).
func TestAgent_ExitedLastContainerFinishesPodAtOnce(t *testing.T) {
	h := newPromptHarness(t, map[string]map[string]string{"app": {critest.AnnotationExitAfterMs: "0", critest.AnnotationExitCode: "1"}})
	pod := testPod(t, `
apiVersion: v1
kind: Pod
metadata: {name: once}
spec:
  restartPolicy: Never
  initContainers:
  - {name: sidecar, image: reg.local/busybox:1, restartPolicy: Always}
  containers:
  - {name: app, image: reg.local/busybox:1}
`)
	h.agent.SetPods([]*v1.Pod{pod})
	h.waitFakeTimeStill(t, "Failed", phaseIs(v1.PodFailed))
	require.Eventually(t, func() bool {
		return strings.Contains(strings.Join(h.fake.Calls(), "\n"), "StopPodSandbox")
	}, 5*time.Second, 10*time.Millisecond, "the finished pod's sandbox is stopped without the periodic resync")
}

func TestAgent_StartupProbeSuccessStartsNextStep(t *testing.T) {
	h := newPromptHarness(t, nil)
	// No start-up jitter: each probe's first run is due when its
	// container starts, and a readiness run not triggered by the startup
	// success would come a whole period (20 s) later.
	h.agent.probes = probes.New(probes.Config{
		Execer: h.fake.Runtime, ClassifyExecError: cri.ClassifyExecError, Clock: h.clock,
		Logger: h.agent.logger, OnEvent: h.agent.onProbeEvent, Rand: func() float64 { return 0 },
	})
	go func() { _ = h.agent.Run(t.Context()) }()
	pod := testPod(t, `
apiVersion: v1
kind: Pod
metadata: {name: probed}
spec:
  initContainers:
  - name: proxy
    image: reg.local/busybox:1
    restartPolicy: Always
    startupProbe: {exec: {command: ["true"]}, periodSeconds: 1}
  containers:
  - name: app
    image: reg.local/busybox:1
    startupProbe: {exec: {command: ["true"]}, periodSeconds: 1}
    readinessProbe: {exec: {command: ["true"]}, periodSeconds: 20}
`)
	h.agent.SetPods([]*v1.Pod{pod})
	// The sidecar's startup success starts the app, whose startup success
	// runs its readiness probe at once.
	ready := func(p *v1.Pod) bool {
		return appStarted(p) && len(p.Status.ContainerStatuses) == 1 && p.Status.ContainerStatuses[0].Ready
	}
	waited := h.stepUntil(t, "app Ready", 10*time.Second, ready)
	assert.LessOrEqual(t, waited, 2*time.Second, "Ready at once after the startup probes, not a readiness period later")
}

// A container that exits at once is restarted once at once (its first
// restart has no back-off), then when its back-off ends: the prompt
// requeue never loops, and the restart does not wait for the periodic
// resync either.
func TestAgent_CrashingContainerIsNotSyncedHot(t *testing.T) {
	h := newPromptHarness(t, map[string]map[string]string{"app": {critest.AnnotationExitAfterMs: "0", critest.AnnotationExitCode: "1"}})
	pod := testPod(t, `
apiVersion: v1
kind: Pod
metadata: {name: crash}
spec:
  containers:
  - {name: app, image: reg.local/busybox:1}
`)
	starts := func() int {
		n := 0
		for _, c := range h.fake.Calls() {
			if c == "StartContainer app" {
				n++
			}
		}
		return n
	}
	h.agent.SetPods([]*v1.Pod{pod})
	h.rec.waitStatus(t, "restarted once", func(p *v1.Pod) bool { return p.Status.ContainerStatuses[0].RestartCount == 1 })
	// A hot loop would never let the calls settle.
	h.waitCallsSettle(t)
	assert.Equal(t, 2, starts(), "the first start and the first restart; the back-off holds the next")
	waited := h.stepUntil(t, "second restart", 20*time.Second, func(p *v1.Pod) bool { return p.Status.ContainerStatuses[0].RestartCount == 2 })
	assert.LessOrEqual(t, waited, 11*time.Second, "restarted when the 10 s back-off ends, not at the resync")
	h.waitCallsSettle(t)
	assert.Equal(t, 3, starts())
}

// TestPromptResync is the requeue decision over the planner's base fixture
// (planPod: setup, the proxy sidecar, apps a and b): the sync's own change
// and the plan on its closing observation decide.
func TestPromptResync(t *testing.T) {
	touched := func(r *syncResult) { r.touch("x", "sb1") }
	for _, tc := range []struct {
		name  string
		res   func(*syncResult)
		state func(*v1.Pod) *podState
		setup func(h *harness, pod *v1.Pod)
		want  bool
		retry bool // a back-off's end was recorded
	}{
		{
			name: "sidecar started, no startup probe: the apps go at once",
			res:  touched,
			state: func(p *v1.Pod) *podState {
				return &podState{sandboxes: []*sandboxInfo{readySandbox()}, containers: []*containerInfo{ctr(p, "proxy", running, 0, 3), ctr(p, "setup", exited, 0, 2)}}
			},
			want: true,
		},
		{
			name: "init container completed before the closing observation",
			res:  touched,
			state: func(p *v1.Pod) *podState {
				return &podState{sandboxes: []*sandboxInfo{readySandbox()}, containers: []*containerInfo{ctr(p, "setup", exited, 0, 2)}}
			},
			want: true,
		},
		{
			name: "init container still running: the relister wakes the worker when it exits",
			res:  touched,
			state: func(p *v1.Pod) *podState {
				return &podState{sandboxes: []*sandboxInfo{readySandbox()}, containers: []*containerInfo{ctr(p, "setup", running, 0, 2)}}
			},
		},
		{
			name:  "apps started: nothing left to do",
			res:   touched,
			state: initialized,
		},
		{
			name: "the same plan without a change of the sync's own (a resync)",
			res:  func(*syncResult) {},
			state: func(p *v1.Pod) *podState {
				return &podState{sandboxes: []*sandboxInfo{readySandbox()}, containers: []*containerInfo{ctr(p, "setup", exited, 0, 2)}}
			},
		},
		{
			name: "a failed step never requeues at once",
			res:  func(r *syncResult) { r.touch("x", "sb1"); r.fail() },
			state: func(p *v1.Pod) *podState {
				return &podState{sandboxes: []*sandboxInfo{readySandbox()}, containers: []*containerInfo{ctr(p, "setup", exited, 0, 2)}}
			},
		},
		{
			name: "an app that exited before the closing observation, in crash back-off: requeued at its end",
			res:  touched,
			state: func(p *v1.Pod) *podState {
				st := initialized(p)
				st.containers[0] = ctr(p, "b", exited, 1, 5)
				return st
			},
			setup: func(h *harness, p *v1.Pod) {
				h.agent.crashBackoff.Next(podspec.CrashBackoffKey(p, &p.Spec.Containers[1]), h.clock.Now())
			},
			retry: true,
		},
		{
			name: "the last app killed: the pod is done and killed at once",
			res:  touched,
			state: func(p *v1.Pod) *podState {
				st := initialized(p)
				p.Spec.RestartPolicy = v1.RestartPolicyNever
				st.containers[0] = ctr(p, "b", exited, 1, 5)
				st.containers[1] = ctr(p, "a", exited, 0, 4)
				return st
			},
			want: true,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t)
			pod := planPod()
			pod.UID = "uid-1"
			st := tc.state(pod)
			for _, c := range st.containers {
				if c.state == exited {
					c.finishedAt = h.clock.Now().UnixNano()
				}
			}
			if tc.setup != nil {
				tc.setup(h, pod)
			}
			res := &syncResult{}
			tc.res(res)
			w := newPodWorker(h.agent, pod)
			assert.Equal(t, tc.want, h.agent.promptResync(pod, st, res, w))
			assert.Equal(t, tc.retry, res.retryIn > 0, "retryIn %s", res.retryIn)
		})
	}
}

// A pod that finished (Succeeded, not deleted) gives its volumes back, as
// the kubelet's SyncTerminatedPod unmounts a terminated pod's volumes: its
// emptyDir is gone from the node while the pod and its dead container stay
// (e2e_node "On termination of pod with memory backed volume should remove
// the volume from the node").
func TestAgent_FinishedPodsVolumesAreRemoved(t *testing.T) {
	h := newPromptHarness(t, map[string]map[string]string{"app": {critest.AnnotationExitAfterMs: "0"}})
	pod := testPod(t, `
apiVersion: v1
kind: Pod
metadata: {name: done}
spec:
  restartPolicy: Never
  containers:
  - {name: app, image: reg.local/busybox:1, volumeMounts: [{name: scratch, mountPath: /scratch}]}
  volumes: [{name: scratch, emptyDir: {}}]
`)
	vol := filepath.Join(h.agent.podDir(pod), "volumes", "kubernetes.io~empty-dir", "scratch")
	h.agent.SetPods([]*v1.Pod{pod})
	h.waitFakeTimeStill(t, "Succeeded", phaseIs(v1.PodSucceeded))
	require.Eventually(t, func() bool {
		_, err := os.Stat(vol)
		return errors.Is(err, os.ErrNotExist)
	}, 5*time.Second, 10*time.Millisecond, "the finished pod's emptyDir %s is still there", vol)
	_, held := h.agent.GetPod(pod.UID)
	assert.True(t, held, "the finished pod stays until it is deleted")
}
