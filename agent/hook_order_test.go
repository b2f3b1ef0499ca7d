package agent

// The kubelet's order of a pod's starts and kills around lifecycle hooks
// (kubelet-facts §2.5, §7.2): a postStart hook holds the next container,
// every preStop hook of a pod's kill starts at once, and a hook past its
// grace period dies with its container.

import (
	"context"
	"runtime"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"

	"github.com/minikubelet/minikubelet/cri"
)

// As the kubelet (kubelet-facts §2.5): every sidecar's preStop hook starts
// when the pod's kill begins, not after the sidecars stopped before it; the
// StopContainers still go app first, then the sidecars in reverse order.
// Each hook here returns only once both have started: run one after the
// other, the first one waits alone and fails.
func TestAgent_SidecarPreStopHooksStartTogether(t *testing.T) {
	h := newHarness(t)
	pod := testPod(t, `
apiVersion: v1
kind: Pod
metadata: {name: sc, namespace: demo}
spec:
  initContainers:
  - {name: s1, image: reg.local/x:1, restartPolicy: Always, lifecycle: {preStop: {exec: {command: [/bin/drain-s1]}}}}
  - {name: s2, image: reg.local/x:1, restartPolicy: Always, lifecycle: {preStop: {exec: {command: [/bin/drain-s2]}}}}
  containers:
  - {name: web, image: reg.local/x:1}
`)
	var started sync.WaitGroup
	started.Add(2)
	both := make(chan struct{})
	go func() { started.Wait(); close(both) }()
	h.fake.SetExecHandler(func(_ string, cmd []string) ([]byte, []byte, error) {
		started.Done()
		select {
		case <-both:
			return nil, nil, nil
		case <-time.After(5 * time.Second):
			return []byte("ran alone"), nil, &cri.ExitError{ExitCode: 1}
		}
	})
	h.agent.SetPods([]*v1.Pod{pod})
	h.rec.waitStatus(t, "Running", phaseIs(v1.PodRunning))
	h.fake.Reset()
	h.teardown(t, pod)
	assert.NotContains(t, h.rec.reasons(), "FailedPreStopHook", "a sidecar's preStop hook ran alone")
	calls := without(h.fake.Calls(), observeCalls...)
	web, s1, s2 := indexOf(calls, "StopContainer web timeout=30"), indexOf(calls, "StopContainer s1 timeout=30"), indexOf(calls, "StopContainer s2 timeout=30")
	require.True(t, web >= 0 && s1 >= 0 && s2 >= 0, "calls: %v", calls)
	assert.Less(t, web, s2, "the app container stops before the sidecars")
	assert.Less(t, s2, s1, "sidecars stop in reverse order")
}

// As the kubelet, which starts the app containers one after another with
// each one's postStart hook inside its start: a container does not start
// before the postStart hook of one before it has finished.
func TestAgent_PostStartHookHoldsTheNextContainer(t *testing.T) {
	h := newHarness(t)
	pod := testPod(t, `
apiVersion: v1
kind: Pod
metadata: {name: ps, namespace: demo}
spec:
  containers:
  - {name: first, image: reg.local/x:1, lifecycle: {postStart: {exec: {command: [/bin/hook]}}}}
  - {name: second, image: reg.local/x:1}
`)
	h.fake.SetExecHandler(func(_ string, cmd []string) ([]byte, []byte, error) {
		time.Sleep(50 * time.Millisecond) // time for a concurrent start to show
		return nil, nil, nil
	})
	h.agent.SetPods([]*v1.Pod{pod})
	h.rec.waitStatus(t, "Running", phaseIs(v1.PodRunning))
	calls := without(h.fake.Calls(), observeCalls...)
	hook, second := indexOf(calls, "ExecSync first /bin/hook"), indexOf(calls, "CreateContainer second attempt=0")
	require.True(t, hook >= 0 && second >= 0, "calls: %v", calls)
	assert.Less(t, hook, second, "the second container was created during the first one's postStart hook: %v", calls)
}

// A preStop hook still running when the grace period ends is not stopped
// then, as by the kubelet: it dies with the container the StopContainer
// kills (e2e_node times a looping hook at the grace period plus the 2 s
// minimum). Here the runtime does not kill it (the fake has no processes):
// it is cancelled 2 s and the runtime timeout later, reported then.
func TestKillContainer_PreStopOutlivesTheGracePeriod(t *testing.T) {
	f := newHookFixture(t)
	f.agent.cfg.RuntimeTimeout = 3 * time.Second
	f.pod.Spec.Containers[0].Lifecycle = &v1.Lifecycle{PreStop: &v1.LifecycleHandler{Sleep: &v1.SleepAction{Seconds: 60}}}
	done := make(chan error, 1)
	go func() { done <- f.agent.killContainer(context.Background(), f.pw, f.id, "web", "", 5) }()
	step := func(n int) {
		deadline := time.Now().Add(10 * time.Second)
		for stepped := 0; stepped < n; {
			require.True(t, time.Now().Before(deadline), "nobody waits on the clock any more")
			if f.clock.HasWaiters() {
				f.clock.Step(time.Second)
				stepped++
			}
			runtime.Gosched()
		}
	}
	step(5)
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(10 * time.Second):
		t.Fatal("the hook was waited for beyond the grace period")
	}
	time.Sleep(50 * time.Millisecond)
	require.NotContains(t, f.rec.reasons(), "FailedPreStopHook", "the hook was stopped when the grace period ended")
	step(5) // the 2 s minimum and the 3 s runtime timeout
	require.Eventually(t, func() bool { return slices.Contains(f.rec.reasons(), "FailedPreStopHook") }, 5*time.Second, 10*time.Millisecond,
		"the hook still runs 2 s and the runtime timeout after the grace period")
}
