package agent

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/utils/ptr"

	"github.com/minikubelet/minikubelet/agent/lifecycle"
	"github.com/minikubelet/minikubelet/agent/node"
	"github.com/minikubelet/minikubelet/agent/podevents"
	"github.com/minikubelet/minikubelet/agent/podspec"
	"github.com/minikubelet/minikubelet/cri"
)

// Issue #29, findings 2 to 4: a hook's output is bounded wherever it goes,
// every event message is bounded, a termination request cancels the sync
// in flight (a hung hook or pull), and stopping the agent waits for no pod.
// The pure bounds are tested where they live: TestTruncateMessage_CharacterBoundary
// in agent/podevents, TestBoundedOutput in agent/lifecycle.

// Every event is cut to the API's 1024 bytes, in the pod's ring and for the
// observers (the daemon's event API, the cluster's event writer).
func TestEvents_EveryMessageBounded(t *testing.T) {
	h := newHarness(t)
	pod := testPod(t, hookPod)
	w := newPodWorker(h.agent, pod)
	w.event(v1.EventTypeWarning, "Big", "%s", strings.Repeat("€", 1<<20))
	w.containerEvent("web", v1.EventTypeWarning, "Big", "%s", strings.Repeat("x", 1<<20))
	evs := w.eventList()
	require.Len(t, evs, 2)
	for _, e := range evs {
		assert.LessOrEqual(t, len(e.Message), podevents.MaxMessageBytes)
		assert.True(t, utf8.ValidString(e.Message))
	}
	h.rec.mu.Lock()
	defer h.rec.mu.Unlock()
	require.Len(t, h.rec.events, 2)
	for _, e := range h.rec.events {
		assert.LessOrEqual(t, len(e.Message), podevents.MaxMessageBytes, "what the observers got")
	}
}

// The attack: a postStart exec hook prints 8 MB (2-byte characters, so a
// cut can fall inside one) and exits 1. The container's waiting message
// keeps at most lifecycle.MaxHookMessage bytes, its FailedPostStartHook
// event 1024, both valid UTF-8 and beginning with what the hook printed.
func TestAgent_PostStartHookOutputBounded(t *testing.T) {
	h := newHarness(t)
	h.fake.SetExecHandler(func(string, []string) ([]byte, []byte, error) {
		return []byte(strings.Repeat("é", 4<<20)), []byte(strings.Repeat("e", 1<<20)), &cri.ExitError{ExitCode: 1}
	})
	pod := lifecyclePod(t, &v1.Lifecycle{PostStart: &v1.LifecycleHandler{Exec: &v1.ExecAction{Command: []string{"/bin/loud"}}}})
	h.agent.SetPods([]*v1.Pod{pod})
	p := h.rec.waitStatus(t, "PostStartHookError", func(p *v1.Pod) bool {
		w := p.Status.ContainerStatuses[0].State.Waiting
		return w != nil && w.Reason == "PostStartHookError"
	})
	msg := p.Status.ContainerStatuses[0].State.Waiting.Message
	assert.LessOrEqual(t, len(msg), lifecycle.MaxHookMessage)
	assert.True(t, utf8.ValidString(msg))
	assert.Contains(t, msg, `Exec lifecycle hook ([/bin/loud]) for Container "web"`)
	assert.Contains(t, msg, `message: "éééé`)

	h.rec.mu.Lock()
	defer h.rec.mu.Unlock()
	found := false
	for _, e := range h.rec.events {
		assert.LessOrEqual(t, len(e.Message), podevents.MaxMessageBytes, "event %s", e.Reason)
		assert.True(t, utf8.ValidString(e.Message), "event %s", e.Reason)
		if e.Reason == "FailedPostStartHook" {
			found = true
			assert.True(t, strings.HasPrefix(e.Message, `Exec lifecycle hook ([/bin/loud])`), e.Message)
		}
	}
	assert.True(t, found, "a FailedPostStartHook event")
}

// workerOf returns the pod's worker.
func workerOf(t *testing.T, a *Agent, pod *v1.Pod) *podWorker {
	t.Helper()
	a.mu.Lock()
	defer a.mu.Unlock()
	w := a.workers[pod.UID]
	require.NotNil(t, w)
	return w
}

// deleteAndWait deletes the pod with grace 1 (the local API's DELETE: the
// mark, then the set without it) and waits for its teardown to finish.
func deleteAndWait(t *testing.T, h *harness, pod *v1.Pod) {
	t.Helper()
	w := workerOf(t, h.agent, pod)
	done := h.agent.PodDone(pod.UID)
	w.setDeletion(ptr.To[int64](1), h.clock.Now(), true)
	h.agent.SetPods(nil)
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatalf("the pod's teardown did not finish; runtime calls: %v", h.fake.Calls())
	}
}

// The attack: a postStart hook that never ends (`sleep 100000`), then a
// deletion with grace 1. The deletion cancels the sync waiting on the
// hook, and the teardown stops the container with the deletion's grace
// period, while the hook's exec is still running in the runtime. The hook
// was abandoned, not failed: no FailedPostStartHook, no kill of its own.
func TestAgent_DeletionCancelsHungPostStartExecHook(t *testing.T) {
	h := newHarness(t)
	entered, release := make(chan struct{}), make(chan struct{})
	defer close(release)
	h.fake.SetExecHandler(func(string, []string) ([]byte, []byte, error) {
		close(entered)
		<-release // sleep 100000
		return nil, nil, nil
	})
	pod := lifecyclePod(t, &v1.Lifecycle{PostStart: &v1.LifecycleHandler{Exec: &v1.ExecAction{Command: []string{"sleep", "100000"}}}})
	h.agent.SetPods([]*v1.Pod{pod})
	<-entered
	deleteAndWait(t, h, pod)
	calls := without(h.fake.Calls(), observeCalls...)
	assert.Contains(t, calls, "StopContainer web timeout=2", "the teardown's kill, with the deletion's grace (2 s minimum)")
	assert.Equal(t, 1, countPrefix(calls, "StopContainer web"), "one kill only: %v", calls)
	assert.Contains(t, calls, "RemovePodSandbox web")
	assert.NotContains(t, h.rec.reasons(), "FailedPostStartHook")
}

// The same with an httpGet postStart hook whose server accepts and never
// answers.
func TestAgent_DeletionCancelsHungPostStartHTTPHook(t *testing.T) {
	h := newHarness(t)
	h.agent.cfg.PodSecurity = node.PodSecurityPrivileged // the hook's host is the test's loopback server, which baseline refuses
	entered := make(chan struct{})
	var once sync.Once
	srv := httptest.NewServer(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
		once.Do(func() { close(entered) })
		<-r.Context().Done() // never answers
	}))
	defer srv.Close()
	host, port := hostPort(t, srv.URL)
	pod := lifecyclePod(t, &v1.Lifecycle{PostStart: &v1.LifecycleHandler{HTTPGet: &v1.HTTPGetAction{Host: host, Port: intstr.FromInt32(int32(port)), Path: "/hang"}}})
	h.agent.SetPods([]*v1.Pod{pod})
	select {
	case <-entered:
	case <-time.After(10 * time.Second):
		t.Fatal("the hook's request did not arrive")
	}
	deleteAndWait(t, h, pod)
	calls := without(h.fake.Calls(), observeCalls...)
	assert.Contains(t, calls, "StopContainer web timeout=2")
	assert.NotContains(t, h.rec.reasons(), "FailedPostStartHook")
}

// blockingPulls is the fake's image service whose PullImage waits until its
// context ends, as a pull from a registry that never answers.
type blockingPulls struct {
	cri.Images
	entered chan struct{}
	once    sync.Once
}

func (b *blockingPulls) PullImage(ctx context.Context, _ *runtimeapi.ImageSpec, _ *runtimeapi.AuthConfig, _ *runtimeapi.PodSandboxConfig) (string, error) {
	b.once.Do(func() { close(b.entered) })
	<-ctx.Done()
	return "", ctx.Err()
}

// The attack: an image pull that takes minutes, then a deletion. The
// deletion cancels the pull; the pod goes without a pull failure or
// back-off recorded.
func TestAgent_DeletionCancelsImagePull(t *testing.T) {
	h := newHarness(t)
	pulls := &blockingPulls{Images: h.fake.Images, entered: make(chan struct{})}
	h.agent.images = pulls
	pod := testPod(t, hookPod)
	h.agent.SetPods([]*v1.Pod{pod})
	select {
	case <-pulls.entered:
	case <-time.After(10 * time.Second):
		t.Fatal("the pull did not start")
	}
	deleteAndWait(t, h, pod)
	assert.NotContains(t, h.rec.reasons(), "Failed", "a cancelled pull is no failure")
	in, _ := h.agent.imageBackoff.InBackoffSinceUpdate(podspec.ImageBackoffKey(pod, pod.Spec.Containers[0].Image), h.clock.Now())
	assert.False(t, in, "no pull back-off")
}

// An eviction cancels the sync in flight too: the eviction's kill does not
// wait for a hung postStart hook.
func TestAgent_EvictionCancelsHungSync(t *testing.T) {
	h := newHarness(t)
	entered, release := make(chan struct{}), make(chan struct{})
	defer close(release)
	h.fake.SetExecHandler(func(string, []string) ([]byte, []byte, error) {
		close(entered)
		<-release
		return nil, nil, nil
	})
	pod := lifecyclePod(t, &v1.Lifecycle{PostStart: &v1.LifecycleHandler{Exec: &v1.ExecAction{Command: []string{"sleep", "100000"}}}})
	h.agent.SetPods([]*v1.Pod{pod})
	<-entered
	require.True(t, h.agent.evictPod(pod.UID, 0, "The node was low on resource: memory.", true))
	p := h.rec.waitStatus(t, "Failed/Evicted", func(p *v1.Pod) bool {
		return p.Status.Phase == v1.PodFailed && p.Status.Reason == "Evicted"
	})
	assert.Equal(t, "Evicted", p.Status.Reason)
	assert.Contains(t, without(h.fake.Calls(), observeCalls...), "StopContainer web timeout=2")
}

// blockingStops is the fake runtime whose StopContainer waits until its
// context ends, as containerd waiting out a 500 s grace period.
type blockingStops struct {
	cri.Runtime
	entered  chan struct{}
	once     sync.Once
	returned chan error
}

func (b *blockingStops) StopContainer(ctx context.Context, _ string, _ int64) error {
	b.once.Do(func() { close(b.entered) })
	<-ctx.Done()
	b.returned <- ctx.Err()
	return ctx.Err()
}

// The attack: a pod with a 500 s grace period being torn down, its
// StopContainer waiting out the grace period, and the agent stopped. The
// stop does not wait for the pod: the StopContainer call is cancelled and
// every worker has returned when stopWorkers does.
func TestAgent_StopDoesNotWaitForAKill(t *testing.T) {
	h := newHarness(t)
	stops := &blockingStops{Runtime: h.fake.Runtime, entered: make(chan struct{}), returned: make(chan error, 1)}
	h.agent.runtime = stops
	pod := testPod(t, hookPod)
	pod.Spec.TerminationGracePeriodSeconds = ptr.To[int64](500)
	h.agent.SetPods([]*v1.Pod{pod})
	h.rec.waitStatus(t, "Running", phaseIs(v1.PodRunning))
	h.agent.SetPods(nil)
	select {
	case <-stops.entered:
	case <-time.After(10 * time.Second):
		t.Fatal("the teardown did not stop the container")
	}
	h.agent.stopWorkers()
	select {
	case err := <-stops.returned:
		assert.ErrorIs(t, err, context.Canceled, "the StopContainer call was cancelled")
	default:
		t.Fatal("stopWorkers returned while StopContainer still waited")
	}
	assert.False(t, h.agent.Holds(pod.UID), "the worker returned")
}

// The same during a preStop hook that takes the grace period: the hook's
// exec is cancelled and nothing more is asked of the runtime (no
// StopContainer): the next start kills the pod again.
func TestAgent_StopDoesNotWaitForAPreStopHook(t *testing.T) {
	h := newHarness(t)
	entered, release := make(chan struct{}), make(chan struct{})
	defer close(release)
	h.fake.SetExecHandler(func(string, []string) ([]byte, []byte, error) {
		close(entered)
		<-release // sleep 500
		return nil, nil, nil
	})
	pod := lifecyclePod(t, &v1.Lifecycle{PreStop: &v1.LifecycleHandler{Exec: &v1.ExecAction{Command: []string{"sleep", "500"}}}})
	pod.Spec.TerminationGracePeriodSeconds = ptr.To[int64](500)
	h.agent.SetPods([]*v1.Pod{pod})
	h.rec.waitStatus(t, "Running", phaseIs(v1.PodRunning))
	h.agent.SetPods(nil)
	<-entered
	h.agent.stopWorkers()
	assert.False(t, h.agent.Holds(pod.UID), "the worker returned")
	calls := without(h.fake.Calls(), observeCalls...)
	assert.Zero(t, countPrefix(calls, "StopContainer"), "nothing asked of the runtime after the stop: %v", calls)
	assert.NotContains(t, h.rec.reasons(), "FailedPreStopHook", "the hook was abandoned, not failed")
}

// countPrefix counts the entries of list beginning with prefix.
func countPrefix(list []string, prefix string) int {
	n := 0
	for _, s := range list {
		if strings.HasPrefix(s, prefix) {
			n++
		}
	}
	return n
}
