package agent

// Over 600 lines: the engine's harness and its core lifecycle cases; other
// areas of the engine have test files of their own.

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	testclock "k8s.io/utils/clock/testing"

	"github.com/minikubelet/minikubelet/agent/manifest"
	"github.com/minikubelet/minikubelet/agent/node"
	"github.com/minikubelet/minikubelet/agent/podevents"
	"github.com/minikubelet/minikubelet/cgroups/cgroupstest"
	"github.com/minikubelet/minikubelet/cni"
	"github.com/minikubelet/minikubelet/cri/critest"
)

// recorder is an Observer that keeps everything and signals each status.
type recorder struct {
	mu       sync.Mutex
	events   []podevents.Event
	steps    []podevents.Step
	statuses []*v1.Pod
	changed  chan struct{} // capacity 1, poked on every status
}

func newRecorder() *recorder { return &recorder{changed: make(chan struct{}, 1)} }

func (r *recorder) PodEvent(_ *v1.Pod, ev podevents.Event) {
	r.mu.Lock()
	r.events = append(r.events, ev)
	r.mu.Unlock()
}

func (r *recorder) PodStep(_ *v1.Pod, s podevents.Step) {
	r.mu.Lock()
	r.steps = append(r.steps, s)
	r.mu.Unlock()
}

func (r *recorder) PodStatus(p *v1.Pod) {
	r.mu.Lock()
	r.statuses = append(r.statuses, p)
	r.mu.Unlock()
	select {
	case r.changed <- struct{}{}:
	default:
	}
}

func (r *recorder) reasons() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for _, e := range r.events {
		out = append(out, e.Reason)
	}
	return out
}

// waitStatus waits until cond holds for the newest status.
func (r *recorder) waitStatus(t *testing.T, what string, cond func(*v1.Pod) bool) *v1.Pod {
	t.Helper()
	deadline := time.After(10 * time.Second)
	for {
		r.mu.Lock()
		var last *v1.Pod
		if n := len(r.statuses); n > 0 {
			last = r.statuses[n-1]
		}
		r.mu.Unlock()
		if last != nil && cond(last) {
			return last
		}
		select {
		case <-r.changed:
		case <-deadline:
			t.Fatalf("timed out waiting for %s; last status: %+v", what, last)
		}
	}
}

// testNetwork is a pod network whose every host directory (containerd's
// CNI conf dir, the plugin dir, host-local's data dir, libcni's result
// cache) is private to the test: a unit test must not read what `make
// demo` left on the machine, such as /etc/cni/net.d/10-minikubelet.conflist
// (issue #17), nor remove what a real pod left there.
func testNetwork(tb testing.TB) cni.Config {
	return cni.Config{ConfDir: tb.TempDir(), BinDirs: []string{tb.TempDir()}, DataDir: tb.TempDir(), CacheDir: tb.TempDir()}
}

type harness struct {
	fake  *critest.Fake
	clock *testclock.FakeClock
	rec   *recorder
	agent *Agent
}

func newHarness(t *testing.T) *harness {
	t.Helper()
	h := &harness{fake: critest.New(), clock: testclock.NewFakeClock(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)), rec: newRecorder()}
	h.fake.Now = h.clock.Now
	h.agent = New(Config{
		NodeName:   "node-1",
		RootDir:    t.TempDir(),
		PodLogDir:  t.TempDir(),
		ResolvConf: "/nonexistent",
		Network:    testNetwork(t),
		// Never the host's own addresses (node.HostIPs).
		HostIPs: []string{"192.0.2.1"},
	}, Deps{Runtime: h.fake.Runtime, Images: h.fake.Images, Clock: h.clock, Observer: h.rec})
	t.Cleanup(h.agent.stopWorkers)
	return h
}

// waitCallsSettle waits until the fake runtime's call log stops growing
// (no new call for 20 ms): the sync in flight has finished.
func (h *harness) waitCallsSettle(t *testing.T) {
	t.Helper()
	last := -1
	require.Eventually(t, func() bool {
		n := len(h.fake.Calls())
		settled := n == last
		last = n
		return settled
	}, 10*time.Second, 20*time.Millisecond, "the runtime calls did not settle")
}

// stepUntil advances the fake clock in half-second steps, at most total,
// until the newest status satisfies cond, and returns the fake time that
// passed. Stepping repeatedly (rather than once by the expected delay) does
// not depend on whether the worker already re-armed its timer. A step
// waits until the runtime calls have stopped for 20 ms: stepping every
// 20 ms of wall-clock time regardless let a sync that a loaded machine
// slowed down see fake seconds pass mid-sync, beyond the bounds the
// callers assert on the returned time.
func (h *harness) stepUntil(t *testing.T, what string, total time.Duration, cond func(*v1.Pod) bool) time.Duration {
	t.Helper()
	start := h.clock.Now()
	realDeadline := time.Now().Add(time.Minute)
	calls := len(h.fake.Calls())
	for {
		h.rec.mu.Lock()
		var last *v1.Pod
		if n := len(h.rec.statuses); n > 0 {
			last = h.rec.statuses[n-1]
		}
		h.rec.mu.Unlock()
		if last != nil && cond(last) {
			return h.clock.Since(start)
		}
		if h.clock.Since(start) > total {
			t.Fatalf("no %s within %s of fake time; last status: %+v", what, total, last)
		}
		if time.Now().After(realDeadline) {
			t.Fatalf("no %s within a minute: the runtime calls never settled for a step; last status: %+v", what, last)
		}
		select {
		case <-h.rec.changed:
		case <-time.After(20 * time.Millisecond):
			if n := len(h.fake.Calls()); n != calls {
				calls = n // a sync is in flight: let it finish first
				continue
			}
			h.clock.Step(500 * time.Millisecond)
		}
	}
}

// pod decodes a manifest with the real loader, so fixtures carry the
// API-server defaults.
func testPod(t *testing.T, text string) *v1.Pod {
	t.Helper()
	pods, err := manifest.PrepareManifest([]byte(text), "test.yaml", "node-1")
	require.NoError(t, err)
	require.Len(t, pods, 1)
	return pods[0]
}

func phaseIs(ph v1.PodPhase) func(*v1.Pod) bool {
	return func(p *v1.Pod) bool { return p.Status.Phase == ph }
}

// without drops the observation calls from a call log.
func without(calls []string, prefixes ...string) []string {
	var out []string
next:
	for _, c := range calls {
		for _, p := range prefixes {
			if strings.HasPrefix(c, p) {
				continue next
			}
		}
		out = append(out, c)
	}
	return out
}

var observeCalls = []string{"Status", "ListPodSandbox", "ListContainers", "ContainerStatus", "PodSandboxStatus", "ImageStatus"}

const twoContainers = `
apiVersion: v1
kind: Pod
metadata: {name: web, namespace: demo, labels: {app: web}}
spec:
  containers:
  - name: web
    image: reg.local/web:1
    ports: [{containerPort: 8080, hostPort: 18080}]
    env: [{name: IP, valueFrom: {fieldRef: {fieldPath: status.podIP}}}]
  - name: side
    image: reg.local/side:1
`

func TestAgent_RunsPodThroughCRI(t *testing.T) {
	h := newHarness(t)
	h.agent.cfg.PodSecurity = node.PodSecurityPrivileged // twoContainers has a hostPort, which baseline refuses
	pod := testPod(t, twoContainers)
	h.agent.SetPods([]*v1.Pod{pod})
	got := h.rec.waitStatus(t, "Running", phaseIs(v1.PodRunning))

	assert.Equal(t, critest.DefaultPodIP, got.Status.PodIP)
	calls := without(h.fake.Calls(), observeCalls...)
	// Both images are pulled while the sandbox is created; each container
	// is created then started (the two concurrently, in any order).
	assert.ElementsMatch(t, []string{
		"RunPodSandbox web attempt=0",
		"PullImage reg.local/web:1", "PullImage reg.local/side:1",
		"CreateContainer web attempt=0", "StartContainer web",
		"CreateContainer side attempt=0", "StartContainer side",
	}, calls)
	for _, c := range []string{"web", "side"} {
		assert.Less(t, indexOf(calls, "RunPodSandbox web attempt=0"), indexOf(calls, "CreateContainer "+c+" attempt=0"))
		assert.Less(t, indexOf(calls, "PullImage reg.local/"+c+":1"), indexOf(calls, "CreateContainer "+c+" attempt=0"))
		assert.Less(t, indexOf(calls, "CreateContainer "+c+" attempt=0"), indexOf(calls, "StartContainer "+c))
	}

	// Sandbox labels: the pod's own plus identity and ownership.
	sbs, err := h.fake.Runtime.ListPodSandbox(context.Background(), nil)
	require.NoError(t, err)
	require.Len(t, sbs, 1)
	assert.Equal(t, map[string]string{
		"app":                         "web",
		"io.kubernetes.pod.name":      "web",
		"io.kubernetes.pod.namespace": "demo",
		"io.kubernetes.pod.uid":       string(pod.UID),
		"io.minikubelet.managed-by":   "minikubelet",
		"io.minikubelet.agent":        node.ServeAgentID(h.agent.cfg.RootDir),
	}, sbs[0].Labels)

	// Containers: identity labels only, hash and restart count annotations,
	// the kubelet's log path.
	ctrs, err := h.fake.Runtime.ListContainers(context.Background(), nil)
	require.NoError(t, err)
	require.Len(t, ctrs, 2)
	for _, c := range ctrs {
		assert.Equal(t, "demo", c.Labels["io.kubernetes.pod.namespace"])
		assert.Equal(t, "minikubelet", c.Labels["io.minikubelet.managed-by"])
		assert.Equal(t, node.ServeAgentID(h.agent.cfg.RootDir), c.Labels["io.minikubelet.agent"])
		assert.NotContains(t, c.Labels, "app", "pod labels are not copied onto containers")
		assert.Equal(t, "0", c.Annotations["io.kubernetes.container.restartCount"])
		assert.NotEmpty(t, c.Annotations["io.kubernetes.container.hash"])
	}
	for _, cs := range got.Status.ContainerStatuses {
		assert.True(t, cs.Ready, cs.Name)
		assert.NotNil(t, cs.State.Running, cs.Name)
		assert.True(t, strings.HasPrefix(cs.ContainerID, "containerd://"), cs.ContainerID)
	}
	assert.Contains(t, h.rec.reasons(), "Pulling")
	assert.Contains(t, h.rec.reasons(), "Started")
}

func indexOf(list []string, s string) int {
	for i, x := range list {
		if x == s {
			return i
		}
	}
	return -1
}

func TestAgent_InitContainersRunInOrder(t *testing.T) {
	h := newHarness(t)
	h.fake.SetImages("reg.local/busybox:1")
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
	w := h.agent.workers[pod.UID]

	// Step through: each init container must exit 0 before the next one.
	for _, name := range []string{"first", "second"} {
		p := h.rec.waitStatus(t, name+" running", func(p *v1.Pod) bool {
			for _, cs := range p.Status.InitContainerStatuses {
				if cs.Name == name && cs.State.Running != nil {
					return true
				}
			}
			return false
		})
		assert.Equal(t, v1.PodPending, p.Status.Phase)
		id := strings.TrimPrefix(initStatus(p, name).ContainerID, "containerd://")
		require.NoError(t, h.fake.ExitContainer(id, 0))
		w.trigger()
	}
	h.rec.waitStatus(t, "Running", phaseIs(v1.PodRunning))
	calls := without(h.fake.Calls(), observeCalls...)
	assert.Equal(t, []string{
		"RunPodSandbox init attempt=0",
		"CreateContainer first attempt=0", "StartContainer first",
		"CreateContainer second attempt=0", "StartContainer second",
		"CreateContainer app attempt=0", "StartContainer app",
	}, calls)
	assert.NotContains(t, h.fake.Calls(), "PullImage reg.local/busybox:1", "present image with IfNotPresent is not pulled")
}

func initStatus(p *v1.Pod, name string) v1.ContainerStatus {
	for _, cs := range p.Status.InitContainerStatuses {
		if cs.Name == name {
			return cs
		}
	}
	return v1.ContainerStatus{}
}

// pendingOnPull runs a pod whose only image fails to pull and returns it
// with its first ErrImagePull status.
func pendingOnPull(t *testing.T) (*harness, *v1.Pod, *v1.Pod) {
	t.Helper()
	h := newHarness(t)
	h.fake.FailPull("reg.local/missing:1", assert.AnError)
	pod := testPod(t, `
apiVersion: v1
kind: Pod
metadata: {name: noimg}
spec:
  containers: [{name: app, image: reg.local/missing:1}]
`)
	h.agent.SetPods([]*v1.Pod{pod})
	p := h.rec.waitStatus(t, "ErrImagePull", func(p *v1.Pod) bool {
		w := p.Status.ContainerStatuses[0].State.Waiting
		return w != nil && w.Reason == "ErrImagePull"
	})
	return h, pod, p
}

func TestAgent_ImagePullFailureIsErrImagePull(t *testing.T) {
	h, pod, p := pendingOnPull(t)
	assert.Contains(t, p.Status.ContainerStatuses[0].State.Waiting.Message, assert.AnError.Error())
	assert.Equal(t, v1.PodPending, p.Status.Phase)
	assert.NotContains(t, strings.Join(h.fake.Calls(), "\n"), "CreateContainer")

	// The next sync inside the back-off window does not pull again.
	h.fake.Reset()
	h.agent.workers[pod.UID].trigger()
	p = h.rec.waitStatus(t, "ImagePullBackOff", func(p *v1.Pod) bool {
		w := p.Status.ContainerStatuses[0].State.Waiting
		return w != nil && w.Reason == "ImagePullBackOff"
	})
	assert.Equal(t, `Back-off pulling image "reg.local/missing:1"`, p.Status.ContainerStatuses[0].State.Waiting.Message)
	assert.NotContains(t, h.fake.Calls(), "PullImage reg.local/missing:1")
}

// A pod deleted while pending (its image never pulled, no container ever
// created) ends Failed, as on the kubelet: a cluster pod that a finalizer
// keeps shows it (e2e_node "Should transition to Failed phase a pod which
// is deleted while pending"). Before, a teardown with no container to stop
// published nothing and the pod stayed Pending.
func TestAgent_DeletedWhilePendingEndsFailed(t *testing.T) {
	h, pod, _ := pendingOnPull(t)
	h.teardown(t, pod)
	h.rec.mu.Lock()
	last := h.rec.statuses[len(h.rec.statuses)-1]
	h.rec.mu.Unlock()
	assert.Equal(t, v1.PodFailed, last.Status.Phase)
	assert.Empty(t, last.Status.Reason)
}

func TestAgent_PullPolicyNeverWithoutImage(t *testing.T) {
	h := newHarness(t)
	pod := testPod(t, `
apiVersion: v1
kind: Pod
metadata: {name: never}
spec:
  containers: [{name: app, image: reg.local/x:1, imagePullPolicy: Never}]
`)
	h.agent.SetPods([]*v1.Pod{pod})
	p := h.rec.waitStatus(t, "ErrImageNeverPull", func(p *v1.Pod) bool {
		w := p.Status.ContainerStatuses[0].State.Waiting
		return w != nil && w.Reason == "ErrImageNeverPull"
	})
	assert.Equal(t, `Container image "reg.local/x:1" is not present with pull policy of Never`, p.Status.ContainerStatuses[0].State.Waiting.Message)
	assert.NotContains(t, strings.Join(h.fake.Calls(), "\n"), "PullImage")
}

func TestAgent_TeardownRemovesEverything(t *testing.T) {
	h := newHarness(t)
	h.agent.cfg.PodSecurity = node.PodSecurityPrivileged // twoContainers has a hostPort, which baseline refuses
	pod := testPod(t, twoContainers)
	h.agent.SetPods([]*v1.Pod{pod})
	h.rec.waitStatus(t, "Running", phaseIs(v1.PodRunning))
	done := h.agent.PodDone(pod.UID)
	require.NotNil(t, done)
	h.fake.Reset()
	h.agent.SetPods(nil)
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("teardown did not finish")
	}
	calls := without(h.fake.Calls(), observeCalls...)
	// Containers stop (grace 30 s from the default) before the sandbox;
	// removal follows: RemovePodSandbox removes the sandbox's containers.
	assert.ElementsMatch(t, []string{
		"StopContainer web timeout=30", "StopContainer side timeout=30",
		"StopPodSandbox web",
		"RemovePodSandbox web",
	}, calls)
	assert.Less(t, indexOf(calls, "StopContainer web timeout=30"), indexOf(calls, "StopPodSandbox web"))
	assert.Less(t, indexOf(calls, "StopPodSandbox web"), indexOf(calls, "RemovePodSandbox web"))
	sbs, _ := h.fake.Runtime.ListPodSandbox(context.Background(), nil)
	assert.Empty(t, sbs)
	ctrs, _ := h.fake.Runtime.ListContainers(context.Background(), nil)
	assert.Empty(t, ctrs)
	_, known := h.agent.GetPod(pod.UID)
	assert.False(t, known)
}

// slowLifecycle is a PodLifecycle that takes its time over PodGone, as a
// busy observer might, and records when it finished.
type slowLifecycle struct {
	mu   sync.Mutex
	gone map[string]bool
}

func (l *slowLifecycle) PodAdded(*v1.Pod) {}
func (l *slowLifecycle) PodGone(p *v1.Pod) {
	time.Sleep(50 * time.Millisecond)
	l.mu.Lock()
	l.gone[p.Name] = true
	l.mu.Unlock()
}

// PodDone is closed only after everything a finished teardown does: the
// lifecycle heard of it (the daemon's watch hub drops the pod) and the
// pod's probe series are gone. It was closed first, and the daemon's
// churn test then raced the watch hub and the metrics (CI, stop 38).
func TestAgent_PodDoneAfterTheTeardownsEnd(t *testing.T) {
	h := newHarness(t)
	lc := &slowLifecycle{gone: map[string]bool{}}
	h.agent.SetPodLifecycle(lc)
	pod := testPod(t, `
apiVersion: v1
kind: Pod
metadata: {name: brief}
spec:
  containers: [{name: app, image: reg.local/x:1}]
`)
	h.agent.SetPods([]*v1.Pod{pod})
	h.rec.waitStatus(t, "Running", phaseIs(v1.PodRunning))
	h.agent.metrics.ProbeTotal.WithLabelValues("Readiness", "successful", "app", pod.Name, pod.Namespace, string(pod.UID)).Inc()
	h.teardown(t, pod) // waits on PodDone
	lc.mu.Lock()
	gone := lc.gone["brief"]
	lc.mu.Unlock()
	assert.True(t, gone, "the lifecycle's PodGone had returned when PodDone closed")
	mfs, err := h.agent.MetricsRegisterer().(prometheus.Gatherer).Gather()
	require.NoError(t, err)
	for _, mf := range mfs {
		assert.NotEqual(t, "prober_probe_total", mf.GetName(), "the pod's probe series were deleted when PodDone closed")
	}
}

// A pod deleted while its RunPodSandbox is in flight: the call is not cut
// short, and the teardown that follows removes the sandbox it created.
// containerd finishes (or cleans up) a cancelled RunPodSandbox on its own,
// and when its cleanup fails it keeps the sandbox NOTREADY: cancelling the
// call left that sandbox behind after the teardown had listed the pod (a
// daemon stopped then kept it; test/e2e's cleanup check found one).
func TestAgent_DeletedDuringRunPodSandboxLeavesNoSandbox(t *testing.T) {
	h := newHarness(t)
	pod := testPod(t, `
apiVersion: v1
kind: Pod
metadata: {name: brief}
spec:
  containers: [{name: app, image: reg.local/x:1}]
`)
	entered, release := make(chan struct{}), make(chan struct{})
	callErr := make(chan error, 1)
	h.fake.OnCall("RunPodSandbox", func(ctx context.Context) {
		close(entered)
		<-release
		callErr <- ctx.Err()
	})
	h.agent.SetPods([]*v1.Pod{pod})
	select {
	case <-entered:
	case <-time.After(10 * time.Second):
		t.Fatal("RunPodSandbox was never called")
	}
	done := h.agent.PodDone(pod.UID)
	require.NotNil(t, done)
	h.agent.SetPods(nil) // the deletion, while the call is in flight
	close(release)
	require.NoError(t, <-callErr, "the deletion cancelled the RunPodSandbox in flight")
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatalf("teardown did not finish; calls: %q", h.fake.Calls())
	}
	sbs, err := h.fake.Runtime.ListPodSandbox(context.Background(), nil)
	require.NoError(t, err)
	assert.Empty(t, sbs, "the sandbox created while the pod was being deleted")
	assert.Contains(t, h.fake.Calls(), "RemovePodSandbox brief")
}

func TestAgent_CrashedContainerRestartsThenBacksOff(t *testing.T) {
	h := newHarness(t)
	pod := testPod(t, `
apiVersion: v1
kind: Pod
metadata: {name: crash}
spec:
  containers: [{name: app, image: reg.local/x:1}]
`)
	h.agent.SetPods([]*v1.Pod{pod})
	w := h.agent.workers[pod.UID]
	p := h.rec.waitStatus(t, "Running", phaseIs(v1.PodRunning))

	// First crash: restarted at once, attempt 1.
	require.NoError(t, h.fake.ExitContainer(strings.TrimPrefix(p.Status.ContainerStatuses[0].ContainerID, "containerd://"), 1))
	w.trigger()
	p = h.rec.waitStatus(t, "restart 1", func(p *v1.Pod) bool {
		cs := p.Status.ContainerStatuses[0]
		return cs.RestartCount == 1 && cs.State.Running != nil
	})
	assert.Equal(t, int32(1), p.Status.ContainerStatuses[0].LastTerminationState.Terminated.ExitCode)
	assert.Contains(t, h.fake.Calls(), "CreateContainer app attempt=1")

	// Second crash inside the 10 s window: CrashLoopBackOff, no new start.
	require.NoError(t, h.fake.ExitContainer(strings.TrimPrefix(p.Status.ContainerStatuses[0].ContainerID, "containerd://"), 2))
	w.trigger()
	p = h.rec.waitStatus(t, "CrashLoopBackOff", func(p *v1.Pod) bool {
		ws := p.Status.ContainerStatuses[0].State.Waiting
		return ws != nil && ws.Reason == "CrashLoopBackOff"
	})
	assert.Equal(t, "back-off 10s restarting failed container=app pod=crash_default("+string(pod.UID)+")", p.Status.ContainerStatuses[0].State.Waiting.Message)
	assert.Equal(t, int32(2), p.Status.ContainerStatuses[0].LastTerminationState.Terminated.ExitCode)
	assert.NotContains(t, h.fake.Calls(), "CreateContainer app attempt=2")

	// After 10 s the worker's requeue timer fires and restarts it.
	waited := h.stepUntil(t, "restart 2", 30*time.Second, func(p *v1.Pod) bool {
		cs := p.Status.ContainerStatuses[0]
		return cs.RestartCount == 2 && cs.State.Running != nil
	})
	assert.GreaterOrEqual(t, waited, 10*time.Second, "restarted before the 10 s back-off")
	assert.Less(t, waited, 12*time.Second)
}

func TestAgent_RestartPolicyNeverFailsPod(t *testing.T) {
	h := newHarness(t)
	pod := testPod(t, `
apiVersion: v1
kind: Pod
metadata: {name: never}
spec:
  restartPolicy: Never
  containers: [{name: app, image: reg.local/x:1}]
`)
	h.agent.SetPods([]*v1.Pod{pod})
	p := h.rec.waitStatus(t, "Running", phaseIs(v1.PodRunning))
	require.NoError(t, h.fake.ExitContainer(strings.TrimPrefix(p.Status.ContainerStatuses[0].ContainerID, "containerd://"), 3))
	h.agent.workers[pod.UID].trigger()
	p = h.rec.waitStatus(t, "Failed", phaseIs(v1.PodFailed))
	assert.Equal(t, int32(3), p.Status.ContainerStatuses[0].State.Terminated.ExitCode)
	assert.NotContains(t, h.fake.Calls(), "CreateContainer app attempt=1")
	sbs, _ := h.fake.Runtime.ListPodSandbox(context.Background(), nil)
	require.Len(t, sbs, 1)
	assert.Equal(t, runtimeapi.PodSandboxState_SANDBOX_NOTREADY, sbs[0].State, "a finished pod's sandbox is stopped")
}

func TestAgent_WaitsForPodNetwork(t *testing.T) {
	h := newHarness(t)
	h.fake.SetNetworkReady(false, "NetworkPluginNotReady")
	pod := testPod(t, `
apiVersion: v1
kind: Pod
metadata: {name: net}
spec:
  containers: [{name: app, image: reg.local/x:1}]
`)
	h.agent.SetPods([]*v1.Pod{pod})
	p := h.rec.waitStatus(t, "waiting for the network", func(p *v1.Pod) bool {
		w := p.Status.ContainerStatuses[0].State.Waiting
		return w != nil && w.Reason == "ContainerCreating" && w.Message != ""
	})
	assert.Contains(t, p.Status.ContainerStatuses[0].State.Waiting.Message, "network is not ready")
	assert.Contains(t, p.Status.ContainerStatuses[0].State.Waiting.Message, "NetworkPluginNotReady")
	assert.Contains(t, p.Status.ContainerStatuses[0].State.Waiting.Message, `pod network "minikubelet" (10.88.0.0/16) has no conflist`, "names the network and what is missing")
	assert.NotContains(t, strings.Join(h.fake.Calls(), "\n"), "RunPodSandbox", "no sandbox before the network is ready")
	assert.Contains(t, h.rec.reasons(), "NetworkNotReady")

	h.fake.SetNetworkReady(true, "")
	waited := h.stepUntil(t, "Running", 10*time.Second, phaseIs(v1.PodRunning)) // the worker retries every second
	assert.LessOrEqual(t, waited, 2*time.Second)
}

// A pod removed and added back before its teardown finished runs again
// afterwards: nothing the user asked for is lost.
func TestAgent_ReAddedDuringTeardownRunsAgain(t *testing.T) {
	h := newHarness(t)
	pod := testPod(t, `
apiVersion: v1
kind: Pod
metadata: {name: again}
spec:
  containers: [{name: app, image: reg.local/x:1}]
`)
	h.agent.SetPods([]*v1.Pod{pod})
	h.rec.waitStatus(t, "Running", phaseIs(v1.PodRunning))
	old := h.agent.PodDone(pod.UID)
	h.agent.SetPods(nil)
	h.agent.SetPods([]*v1.Pod{pod})
	select {
	case <-old:
	case <-time.After(10 * time.Second):
		t.Fatal("old worker did not finish its teardown")
	}
	deadline := time.After(10 * time.Second)
	for {
		if p, ok := h.agent.GetPod(pod.UID); ok && p.Status.Phase == v1.PodRunning && h.agent.PodDone(pod.UID) != old {
			break
		}
		select {
		case <-h.rec.changed:
		case <-deadline:
			t.Fatalf("the pod did not run again; calls: %q", h.fake.Calls())
		}
	}
	n := 0
	for _, c := range h.fake.Calls() {
		if strings.HasPrefix(c, "RunPodSandbox again") {
			n++
		}
	}
	assert.Equal(t, 2, n, "a second sandbox after the teardown")
	// Its container counts on from the first run, as on the kubelet
	// (whose teardown leaves the dead container to the GC).
	p, _ := h.agent.GetPod(pod.UID)
	require.Len(t, p.Status.ContainerStatuses, 1)
	assert.Equal(t, int32(1), p.Status.ContainerStatuses[0].RestartCount, "the restart count goes on")
}

// A pod that does not fit the node's allocatable memory is rejected with
// the kubelet's reason and message, and nothing reaches the runtime.
func TestAgent_AdmissionRejectsOutOfMemory(t *testing.T) {
	h := newHarness(t)
	ni, err := node.DetectOn(node.Host{NumCPU: func() int { return 2 }, Meminfo: func() ([]byte, error) { return []byte("MemTotal: 1048576 kB\n"), nil }}, "node-1", nil, nil, nil, nil)
	require.NoError(t, err)
	h.agent.cfg.Node = ni
	pod := testPod(t, `
apiVersion: v1
kind: Pod
metadata: {name: big}
spec:
  containers: [{name: app, image: reg.local/x:1, resources: {requests: {memory: 2Gi}}}]
`)
	h.agent.SetPods([]*v1.Pod{pod})
	got, ok := h.agent.GetPod(pod.UID)
	require.True(t, ok)
	assert.Equal(t, v1.PodFailed, got.Status.Phase)
	assert.Equal(t, "OutOfmemory", got.Status.Reason)
	assert.Equal(t, "Pod was rejected: Node didn't have enough resource: memory, requested: 2147483648, used: 0, capacity: 1073741824", got.Status.Message)
	select {
	case <-h.agent.PodDone(pod.UID):
	default:
		t.Fatal("a rejected pod has nothing to wait for")
	}
	assert.Empty(t, without(h.fake.Calls(), observeCalls...), "no CRI object for a rejected pod")
	assert.Contains(t, h.rec.reasons(), "OutOfmemory")
	h.agent.SetPods(nil)
	_, ok = h.agent.GetPod(pod.UID)
	assert.False(t, ok)
}

// A pod whose spec.os.name is another OS is rejected at admission with the
// kubelet's reason and message (conformance: "PodOSRejection should reject
// pod when the node OS doesn't match pod's OS"), even without node
// allocatable; nothing reaches the runtime.
func TestAgent_AdmissionRejectsPodOS(t *testing.T) {
	h := newHarness(t)
	pod := testPod(t, `
apiVersion: v1
kind: Pod
metadata: {name: wrong-pod-os}
spec:
  os: {name: windows}
  containers: [{name: app, image: reg.local/x:1}]
`)
	h.agent.SetPods([]*v1.Pod{pod})
	got, ok := h.agent.GetPod(pod.UID)
	require.True(t, ok)
	assert.Equal(t, v1.PodFailed, got.Status.Phase)
	assert.Equal(t, "PodOSNotSupported", got.Status.Reason)
	assert.Equal(t, "Pod was rejected: Failed to admit pod as the OS field doesn't match node OS", got.Status.Message)
	assert.Empty(t, without(h.fake.Calls(), observeCalls...), "no CRI object for a rejected pod")
	assert.Contains(t, h.rec.reasons(), "PodOSNotSupported")

	linux := testPod(t, `
apiVersion: v1
kind: Pod
metadata: {name: right-pod-os}
spec:
  os: {name: linux}
  containers: [{name: app, image: reg.local/x:1}]
`)
	h.agent.SetPods([]*v1.Pod{pod, linux})
	h.rec.waitStatus(t, "Running", phaseIs(v1.PodRunning))
}

// A hostPath that reaches the agent's own state is refused unless the agent
// runs with --pod-security=privileged; nothing reaches the runtime. (Under
// baseline the guard answers first, naming the state it protects.)
func TestAgent_RefusesHostPathToOwnState(t *testing.T) {
	h := newHarness(t)
	// The API socket's directory (/run/minikubelet for the daemon), in a
	// directory of the test's own: the guard resolves what exists.
	sockDir := filepath.Join(t.TempDir(), "run", "minikubelet")
	require.NoError(t, os.MkdirAll(sockDir, 0o755))
	h.agent.cfg.ProtectedPaths = []string{sockDir}
	for i, path := range []string{h.agent.cfg.RootDir + "/api-pods", sockDir, "/"} {
		pod := testPod(t, fmt.Sprintf(`
apiVersion: v1
kind: Pod
metadata: {name: sneaky%d}
spec:
  volumes: [{name: state, hostPath: {path: %s}}]
  containers: [{name: app, image: reg.local/x:1, volumeMounts: [{name: state, mountPath: /state}]}]
`, i, path))
		h.agent.SetPods([]*v1.Pod{pod})
		got, ok := h.agent.GetPod(pod.UID)
		require.True(t, ok, path)
		assert.Equal(t, v1.PodFailed, got.Status.Phase, path)
		assert.Equal(t, "HostPathForbidden", got.Status.Reason, path)
		assert.Contains(t, got.Status.Message, "--pod-security=privileged", path)
	}
	assert.Empty(t, without(h.fake.Calls(), observeCalls...))

	h.agent.cfg.PodSecurity = node.PodSecurityPrivileged
	pod := testPod(t, fmt.Sprintf(`
apiVersion: v1
kind: Pod
metadata: {name: allowed}
spec:
  volumes: [{name: state, hostPath: {path: %s}}]
  containers: [{name: app, image: reg.local/x:1, volumeMounts: [{name: state, mountPath: /state}]}]
`, sockDir))
	h.agent.SetPods([]*v1.Pod{pod})
	h.rec.waitStatus(t, "Running", phaseIs(v1.PodRunning))
}

// A source hands over its whole set at every change. A pod whose spec did
// not change is not synced again, and keeps the grace period of a deletion
// in progress; a changed spec is handed to its worker.
func TestAgent_SetPodsWakesOnlyChangedPods(t *testing.T) {
	h := newHarness(t)
	const manifest = `
apiVersion: v1
kind: Pod
metadata: {name: web, namespace: demo, uid: 11111111-2222-3333-4444-555555555555}
spec:
  containers:
  - {name: web, image: reg.local/web:1}
`
	h.agent.SetPods([]*v1.Pod{testPod(t, manifest)})
	h.rec.waitStatus(t, "Running", phaseIs(v1.PodRunning))
	h.waitCallsSettle(t) // the sync that published Running finishes
	h.fake.Reset()

	// The same pod, decoded again: nothing to do.
	h.agent.SetPods([]*v1.Pod{testPod(t, manifest)})
	require.Never(t, func() bool { return len(h.fake.Calls()) > 0 }, 200*time.Millisecond, 10*time.Millisecond,
		"an unchanged pod was synced again")

	// A deletion mark survives an unchanged set.
	w, _ := h.agent.findPod("demo", "web")
	require.NotNil(t, w)
	grace := int64(1)
	w.setDeletion(&grace, h.clock.Now(), true)
	h.agent.SetPods([]*v1.Pod{testPod(t, manifest)})
	require.NotNil(t, w.pod().DeletionGracePeriodSeconds)
	assert.Equal(t, int64(1), *w.pod().DeletionGracePeriodSeconds)

	// A changed spec (same UID) is handed over.
	changed := testPod(t, strings.Replace(manifest, "name: web, namespace", "name: web, labels: {v: '2'}, namespace", 1))
	require.Equal(t, w.pod().UID, changed.UID)
	h.agent.SetPods([]*v1.Pod{changed})
	assert.Equal(t, "2", w.pod().Labels["v"])
	require.Eventually(t, func() bool { return len(h.fake.Calls()) > 0 }, 5*time.Second, 10*time.Millisecond,
		"the changed pod was not synced")
}

// Tearing down a pod lists every sandbox again (for the burstable tier's
// shares) only when the pod was Burstable: a mass deletion of BestEffort
// pods does not list the node's sandboxes once per pod.
func TestAgent_TeardownRefreshesBurstableTierOnlyForBurstable(t *testing.T) {
	for _, tc := range []struct {
		name      string
		resources string
		lists     int
	}{
		{name: "BestEffort", resources: "{}", lists: 1},
		{name: "Burstable", resources: "{requests: {cpu: 100m}}", lists: 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t)
			h.agent.cgroups = cgroupstest.NewFake()
			pod := testPod(t, `
apiVersion: v1
kind: Pod
metadata: {name: web, namespace: demo}
spec:
  containers:
  - {name: web, image: reg.local/web:1, resources: `+tc.resources+`}
`)
			h.agent.SetPods([]*v1.Pod{pod})
			h.rec.waitStatus(t, "Running", phaseIs(v1.PodRunning))
			done := h.agent.PodDone(pod.UID)
			require.NotNil(t, done)
			h.waitCallsSettle(t) // the sync that published Running finishes
			h.fake.Reset()
			h.agent.SetPods(nil)
			h.clock.Step(time.Minute) // nothing waits on the fake clock but grace periods
			select {
			case <-done:
			case <-time.After(10 * time.Second):
				t.Fatal("teardown did not finish")
			}
			lists := 0
			for _, c := range h.fake.Calls() {
				if c == "ListPodSandbox" {
					lists++
				}
			}
			assert.Equal(t, tc.lists, lists, "ListPodSandbox calls during teardown: %v", h.fake.Calls())
		})
	}
}

// A hostname FQDN over the kernel's 64 characters: the sandbox is never
// created, and the Warning event is the kubelet's, "Failed to create pod
// sandbox: failed to construct FQDN ..." (e2e_node's FQDN spec waits for
// exactly those words).
func TestAgent_FQDNTooLongIsAFailedSandboxEvent(t *testing.T) {
	h := newHarness(t)
	h.agent.cfg.ClusterDomain = "cluster.local"
	pod := testPod(t, `
apiVersion: v1
kind: Pod
metadata: {name: hostfqdnveryveryveryverylongforfqdntobemorethan64bytes, namespace: demo}
spec:
  subdomain: t
  setHostnameAsFQDN: true
  containers: [{name: app, image: reg.local/x:1}]
`)
	h.agent.SetPods([]*v1.Pod{pod})
	require.Eventually(t, func() bool {
		for _, e := range h.rec.eventTexts() {
			if strings.HasPrefix(e, "FailedCreatePodSandBox: Failed to create pod sandbox: failed to construct FQDN from pod hostname and cluster domain, FQDN ") {
				return true
			}
		}
		return false
	}, 10*time.Second, 10*time.Millisecond, "events: %v", h.rec.eventTexts())
	assert.NotContains(t, strings.Join(h.fake.Calls(), "\n"), "RunPodSandbox")
}
