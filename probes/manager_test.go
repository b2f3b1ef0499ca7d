package probes_test

// Over 600 lines: table tests of the probe manager, one per probe kind and
// outcome, sharing one fake clock harness.

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	testingclock "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	"github.com/minikubelet/minikubelet/probes"
	"github.com/minikubelet/minikubelet/probes/probestest"
)

// t0 is the fake clock's start.
var t0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

const podUID = types.UID("uid-1")

// workerKey names a worker in the harness.
type workerKey struct {
	container string
	kind      probes.Kind
}

// harness runs a Manager on a fake clock and counts the scheduling points
// of its workers, so tests step time only when workers are waiting.
type harness struct {
	t      *testing.T
	clk    *testingclock.FakeClock
	exec   *probestest.FakeExecer
	m      *probes.Manager
	events chan probes.Event

	// mu guards waits and exits.
	mu    sync.Mutex
	waits map[workerKey]int
	exits map[workerKey]int
}

// newHarness builds a Manager whose clock started one hour ago (no jitter)
// unless jitter is given.
func newHarness(t *testing.T, cfg probes.Config) *harness {
	t.Helper()
	h := &harness{
		t:      t,
		clk:    testingclock.NewFakeClock(t0),
		exec:   probestest.NewFakeExecer(),
		events: make(chan probes.Event, 100),
		waits:  map[workerKey]int{},
		exits:  map[workerKey]int{},
	}
	cfg.Clock = h.clk
	if cfg.Execer == nil {
		cfg.Execer = h.exec
	}
	if cfg.Rand == nil {
		cfg.Rand = func() float64 { return 0 }
	}
	cfg.OnEvent = func(ev probes.Event) {
		select {
		case h.events <- ev:
		default:
		}
	}
	h.m = probes.New(cfg)
	h.m.SetTestHook(func(container string, kind probes.Kind, what string) {
		h.mu.Lock()
		defer h.mu.Unlock()
		k := workerKey{container, kind}
		if what == "waiting" {
			h.waits[k]++
		} else {
			h.exits[k]++
		}
	})
	t.Cleanup(h.m.Close)
	return h
}

// counts returns the waits+exits of each key.
func (h *harness) counts(keys []workerKey) []int {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := make([]int, len(keys))
	for i, k := range keys {
		out[i] = h.waits[k] + h.exits[k]
	}
	return out
}

// waitIdle waits until each key has reached at least n scheduling points.
func (h *harness) waitIdle(keys []workerKey, n []int) {
	h.t.Helper()
	require.Eventually(h.t, func() bool {
		got := h.counts(keys)
		for i := range got {
			if got[i] < n[i] {
				return false
			}
		}
		return true
	}, 5*time.Second, time.Millisecond, "workers %v did not settle", keys)
}

// start calls UpdatePod and waits for the listed workers to wait or exit.
func (h *harness) start(pod *v1.Pod, cs []probes.ContainerState, keys ...workerKey) {
	h.t.Helper()
	before := h.counts(keys)
	h.m.UpdatePod(pod, "127.0.0.1", cs)
	for i := range before {
		before[i]++
	}
	h.waitIdle(keys, before)
}

// restart replaces running workers with a new container instance and waits
// for the old ones to exit and the new ones to wait or exit.
func (h *harness) restart(pod *v1.Pod, cs []probes.ContainerState, keys ...workerKey) {
	h.t.Helper()
	before := h.counts(keys)
	h.m.UpdatePod(pod, "127.0.0.1", cs)
	for i := range before {
		before[i] += 2
	}
	h.waitIdle(keys, before)
}

// step advances the clock by d and waits for the listed workers (those
// due) to finish their run.
func (h *harness) step(d time.Duration, keys ...workerKey) {
	h.t.Helper()
	before := h.counts(keys)
	h.clk.Step(d)
	for i := range before {
		before[i]++
	}
	h.waitIdle(keys, before)
}

// exited reports whether the worker's goroutine has exited n times.
func (h *harness) exited(k workerKey) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.exits[k]
}

// nextUpdate returns the next update or fails.
func (h *harness) nextUpdate() probes.Update {
	h.t.Helper()
	select {
	case u := <-h.m.Updates():
		return u
	case <-time.After(5 * time.Second):
		h.t.Fatal("no update")
		return probes.Update{}
	}
}

// noUpdate asserts that no update is pending.
func (h *harness) noUpdate() {
	h.t.Helper()
	select {
	case u := <-h.m.Updates():
		h.t.Fatalf("unexpected update %+v", u)
	default:
	}
}

// result returns the cached result, failing if there is none.
func (h *harness) result(container string, kind probes.Kind) probes.Result {
	h.t.Helper()
	r, ok := h.m.Result(podUID, container, kind)
	require.True(h.t, ok, "no %s result for %s", kind, container)
	return r
}

// execProbe is an exec probe running cmd with the given schedule.
func execProbe(cmd string, initialDelay, period, success, failure int32) *v1.Probe {
	return &v1.Probe{
		ProbeHandler:        v1.ProbeHandler{Exec: &v1.ExecAction{Command: []string{cmd}}},
		InitialDelaySeconds: initialDelay,
		PeriodSeconds:       period,
		TimeoutSeconds:      1,
		SuccessThreshold:    success,
		FailureThreshold:    failure,
	}
}

// podWith returns a pod whose only container is c.
func podWith(c v1.Container) *v1.Pod {
	p := &v1.Pod{Spec: v1.PodSpec{Containers: []v1.Container{c}}}
	p.Name, p.Namespace, p.UID = "web", "default", podUID
	return p
}

// running is the state of a container running since startedAt.
func running(name, id string, startedAt time.Time) []probes.ContainerState {
	return []probes.ContainerState{{Name: name, ID: id, Running: true, StartedAt: startedAt}}
}

// cmdsRun returns the commands run so far, in order.
func (h *harness) cmdsRun() []string {
	var out []string
	for _, c := range h.exec.Calls() {
		out = append(out, c.Cmd[0])
	}
	return out
}

var (
	live  = workerKey{"app", probes.Liveness}
	ready = workerKey{"app", probes.Readiness}
	start = workerKey{"app", probes.Startup}
)

func TestManager_InitialResults(t *testing.T) {
	h := newHarness(t, probes.Config{})
	pod := podWith(v1.Container{Name: "app",
		LivenessProbe:  execProbe("live", 100, 10, 1, 3),
		ReadinessProbe: execProbe("ready", 100, 10, 1, 3),
		StartupProbe:   execProbe("start", 100, 10, 1, 3),
	})
	h.start(pod, running("app", "c1", t0), live, ready, start)

	assert.Equal(t, probes.Success, h.result("app", probes.Liveness))
	assert.Equal(t, probes.Failure, h.result("app", probes.Readiness))
	assert.Equal(t, probes.Unknown, h.result("app", probes.Startup))
	assert.False(t, h.m.Started(podUID, "app"))
	assert.False(t, h.m.Ready(podUID, "app"))
	h.noUpdate()

	_, ok := h.m.Result(podUID, "other", probes.Liveness)
	assert.False(t, ok)
}

func TestManager_NoProbesStartedAndReady(t *testing.T) {
	h := newHarness(t, probes.Config{})
	h.m.UpdatePod(podWith(v1.Container{Name: "app"}), "", running("app", "c1", t0))
	assert.True(t, h.m.Started(podUID, "app"))
	assert.True(t, h.m.Ready(podUID, "app"))
	h.m.UpdatePod(podWith(v1.Container{Name: "app"}), "", []probes.ContainerState{{Name: "app", ID: "c1"}})
	assert.False(t, h.m.Started(podUID, "app"), "not running is never started")
	assert.False(t, h.m.Ready(podUID, "app"))
}

func TestWorker_FailureThreshold(t *testing.T) {
	h := newHarness(t, probes.Config{})
	probe := execProbe("live", 5, 10, 1, 3)
	probe.TerminationGracePeriodSeconds = ptr.To[int64](7)
	h.exec.SetDefault("", probestest.Exit(1, "sick"))
	h.start(podWith(v1.Container{Name: "app", LivenessProbe: probe}), running("app", "c1", t0), live)

	h.step(4 * time.Second) // before the initial delay: nothing due
	assert.Equal(t, 0, h.exec.CallCount())

	h.step(time.Second, live) // t0+5: first run
	h.step(10*time.Second, live)
	assert.Equal(t, 2, h.exec.CallCount())
	assert.Equal(t, probes.Success, h.result("app", probes.Liveness), "below failureThreshold")
	h.noUpdate()

	h.step(10*time.Second, live) // third consecutive failure
	u := h.nextUpdate()
	assert.Equal(t, probes.Update{PodUID: podUID, ContainerName: "app", ContainerID: "c1", Kind: probes.Liveness,
		Result: probes.Failure, Message: "sick", TerminationGracePeriodSeconds: ptr.To[int64](7)}, u)
	assert.Equal(t, probes.Failure, h.result("app", probes.Liveness))

	st, ok := h.m.Status(podUID, "app", probes.Liveness)
	require.True(t, ok)
	assert.True(t, st.OnHold)
	assert.Equal(t, 3, st.Runs)
	assert.Equal(t, 3, st.ConsecutiveFailures)
	assert.Equal(t, "sick", st.LastMessage)
	assert.Equal(t, t0.Add(25*time.Second), st.LastProbeTime)
	assert.Equal(t, ptr.To[int64](7), st.TerminationGracePeriodSeconds)

	ev := <-h.events
	assert.Equal(t, probes.Event{PodUID: podUID, ContainerName: "app", ContainerID: "c1", Kind: probes.Liveness,
		Type: "Warning", Reason: "Unhealthy", Message: "Liveness probe failed: sick"}, ev)
}

func TestWorker_OnHoldUntilNewContainerID(t *testing.T) {
	h := newHarness(t, probes.Config{})
	pod := podWith(v1.Container{Name: "app", LivenessProbe: execProbe("live", 0, 10, 1, 1)})
	h.exec.Script("c1", probestest.Exit(1, "dead"))
	h.start(pod, running("app", "c1", t0.Add(-time.Minute)), live) // due at once
	assert.Equal(t, probes.Failure, h.nextUpdate().Result)
	assert.Equal(t, 1, h.exited(live), "on hold: the goroutine is gone")

	// The same instance is still running: it stays Failure, nothing runs.
	h.m.UpdatePod(pod, "127.0.0.1", running("app", "c1", t0.Add(-time.Minute)))
	h.clk.Step(time.Hour)
	assert.Equal(t, probes.Failure, h.result("app", probes.Liveness))
	assert.Equal(t, 1, h.exec.CallCount())

	// The restarted container gets a fresh worker with the initial result.
	h.start(pod, running("app", "c2", h.clk.Now()), live)
	assert.Equal(t, probes.Success, h.result("app", probes.Liveness))
	assert.Equal(t, 2, h.exec.CallCount())
	assert.Equal(t, "c2", h.exec.Calls()[1].ContainerID)
	h.noUpdate() // Success again is no change for the new instance
}

func TestWorker_SuccessThreshold(t *testing.T) {
	h := newHarness(t, probes.Config{})
	h.exec.Script("c1",
		probestest.Exit(0, ""), probestest.Exit(0, "ok"), // success threshold 2
		probestest.Exit(1, "x"), probestest.Exit(0, ""), probestest.Exit(1, "y"), probestest.Exit(1, "z"), // not consecutive, then 2
	)
	h.start(podWith(v1.Container{Name: "app", ReadinessProbe: execProbe("ready", 0, 10, 2, 2)}),
		running("app", "c1", t0.Add(-time.Minute)), ready)
	assert.Equal(t, probes.Failure, h.result("app", probes.Readiness))
	h.noUpdate()

	h.step(10*time.Second, ready)
	u := h.nextUpdate()
	assert.Equal(t, probes.Success, u.Result)
	assert.Equal(t, "ok", u.Message)
	assert.True(t, h.m.Ready(podUID, "app"))

	for range 3 { // fail, succeed, fail: never two failures in a row
		h.step(10*time.Second, ready)
	}
	assert.Equal(t, probes.Success, h.result("app", probes.Readiness))
	h.noUpdate()

	h.step(10*time.Second, ready)
	assert.Equal(t, probes.Failure, h.nextUpdate().Result)
	assert.False(t, h.m.Ready(podUID, "app"))

	// Readiness keeps probing after a failure (no hold).
	h.step(10*time.Second, ready)
	assert.Equal(t, 7, h.exec.CallCount())
	assert.Equal(t, 0, h.exited(ready))
}

// A readiness probe that fails at its first run (the server is still
// opening its port) is retried quickly during its first period, quietly:
// the container is Ready within milliseconds instead of a period later, and
// only the first failure is reported.
func TestWorker_ReadinessQuickRetryUntilFirstSuccess(t *testing.T) {
	h := newHarness(t, probes.Config{})
	h.exec.Script("c1", probestest.Exit(1, "refused"), probestest.Exit(1, "refused"), probestest.Exit(0, ""))
	h.start(podWith(v1.Container{Name: "app", ReadinessProbe: execProbe("ready", 0, 10, 1, 3)}),
		running("app", "c1", t0), ready)
	require.Equal(t, 1, h.exec.CallCount(), "the first run is at once")
	ev := <-h.events
	assert.Equal(t, probes.ReasonUnhealthy, ev.Reason)

	h.step(10*time.Millisecond, ready) // first quick retry: fails, quietly
	require.Equal(t, 2, h.exec.CallCount())
	h.noUpdate()
	h.step(15*time.Millisecond, ready) // the delay grew by half: succeeds
	require.Equal(t, 3, h.exec.CallCount())
	u := h.nextUpdate()
	assert.Equal(t, probes.Success, u.Result)
	assert.True(t, h.m.Ready(podUID, "app"))
	assert.Empty(t, h.events, "quick retries report no failure event")

	st, ok := h.m.Status(podUID, "app", probes.Readiness)
	require.True(t, ok)
	// The failed quick retry counts nowhere (the kubelet would not have
	// run it): the first run and the success.
	assert.Equal(t, 2, st.Runs)
	assert.Equal(t, 1, st.Failures)
}

// A readiness probe failing from the start is retried quickly in its first
// period, but describe's consecutive failures count the kubelet's runs,
// one per period, as many as the Unhealthy events: issue #28 saw 18 after
// 11 s with a 2 s period (12 quick retries among them) while the events
// said 6.
func TestWorker_QuickRetriesAreNotCountedAsFailures(t *testing.T) {
	h := newHarness(t, probes.Config{})
	h.exec.SetDefault("c1", probestest.Exit(1, "dial tcp 10.88.0.5:80: connect: connection refused"))
	h.start(podWith(v1.Container{Name: "app", ReadinessProbe: execProbe("ready", 0, 2, 1, 3)}),
		running("app", "c1", t0), ready)
	// 11 s in 5 ms steps, waiting for the worker after each step that
	// fired its timer.
	for elapsed := time.Duration(0); elapsed < 11*time.Second; elapsed += 5 * time.Millisecond {
		before := h.counts([]workerKey{ready})
		h.clk.Step(5 * time.Millisecond)
		if h.clk.HasWaiters() {
			continue
		}
		before[0]++
		h.waitIdle([]workerKey{ready}, before)
	}
	runs := h.exec.CallCount()
	require.Greater(t, runs, 6, "the quick retries ran (else this test proves nothing)")
	unhealthy := 0
	for len(h.events) > 0 {
		if ev := <-h.events; ev.Reason == probes.ReasonUnhealthy {
			unhealthy++
		}
	}
	st, ok := h.m.Status(podUID, "app", probes.Readiness)
	require.True(t, ok)
	assert.Equal(t, 6, unhealthy, "one Unhealthy event per period: at 0, 2, 4, 6, 8 and 10 s")
	assert.Equal(t, unhealthy, st.ConsecutiveFailures, "%d probe runs in all", runs)
	assert.Equal(t, unhealthy, st.Runs)
}

// Liveness keeps the kubelet's schedule: a failure is not retried early.
func TestWorker_LivenessNoQuickRetry(t *testing.T) {
	h := newHarness(t, probes.Config{})
	h.exec.Script("c1", probestest.Exit(1, "down"), probestest.Exit(1, "down"))
	h.start(podWith(v1.Container{Name: "app", LivenessProbe: execProbe("live", 0, 10, 1, 3)}),
		running("app", "c1", t0), live)
	require.Equal(t, 1, h.exec.CallCount())
	h.clk.Step(time.Second)
	require.Never(t, func() bool { return h.exec.CallCount() > 1 }, 50*time.Millisecond, 5*time.Millisecond)
	h.step(9*time.Second, live)
	assert.Equal(t, 2, h.exec.CallCount(), "the next run is one period after the first")
}

func TestWorker_InitialDelayFromStartedAt(t *testing.T) {
	h := newHarness(t, probes.Config{})
	// Started 20s ago with a 30s delay: the first run is 10s from now,
	// then every 10s on that grid.
	h.start(podWith(v1.Container{Name: "app", ReadinessProbe: execProbe("ready", 30, 10, 1, 3)}),
		running("app", "c1", t0.Add(-20*time.Second)), ready)
	h.step(9 * time.Second)
	assert.Equal(t, 0, h.exec.CallCount())
	h.step(time.Second, ready)
	assert.Equal(t, 1, h.exec.CallCount())
	assert.Equal(t, probes.Success, h.nextUpdate().Result)
	h.step(9 * time.Second)
	assert.Equal(t, 1, h.exec.CallCount())
	h.step(time.Second, ready)
	assert.Equal(t, 2, h.exec.CallCount())
}

func TestWorker_JitterOnlyRightAfterManagerStart(t *testing.T) {
	h := newHarness(t, probes.Config{Rand: func() float64 { return 0.5 }})
	pod := podWith(v1.Container{Name: "app", ReadinessProbe: execProbe("ready", 0, 10, 1, 3)})

	// Within the manager's first period: the first run waits 0.5 × 10s,
	// to the slot at or after it (the grid is quarter seconds + 125 ms).
	h.start(pod, running("app", "c1", t0.Add(-time.Hour)), ready)
	h.step(5 * time.Second)
	assert.Equal(t, 0, h.exec.CallCount())
	h.step(125*time.Millisecond, ready)
	assert.Equal(t, 1, h.exec.CallCount())

	// Later containers start without jitter.
	h.step(20*time.Second, ready)
	require.Equal(t, 2, h.exec.CallCount())
	h.restart(pod, running("app", "c2", h.clk.Now()), ready)
	assert.Equal(t, 3, h.exec.CallCount(), "no jitter once the manager is older than a period")
}

func TestWorker_StartupGatesLivenessAndReadiness(t *testing.T) {
	h := newHarness(t, probes.Config{})
	h.exec.Script("c1", probestest.Exit(1, "booting"), probestest.Exit(1, "booting"), probestest.Exit(0, "up"))
	// Startup runs at t0, +10, +20; liveness and readiness at +5, +15, +25
	// so that the order within a tick never matters.
	pod := podWith(v1.Container{Name: "app",
		LivenessProbe:  execProbe("live", 65, 10, 1, 3),
		ReadinessProbe: execProbe("ready", 65, 10, 1, 3),
		StartupProbe:   execProbe("start", 0, 10, 1, 30),
	})
	h.start(pod, running("app", "c1", t0.Add(-time.Minute)), live, ready, start)
	h.step(5*time.Second, live, ready)
	h.step(5*time.Second, start)
	h.step(5*time.Second, live, ready)
	assert.Equal(t, []string{"start", "start"}, h.cmdsRun(), "liveness and readiness wait for startup")
	assert.False(t, h.m.Started(podUID, "app"))
	assert.False(t, h.m.Ready(podUID, "app"))

	// The startup success runs the readiness probe at once, off its
	// schedule (issues #17, #19: not a readiness period later); liveness
	// keeps its schedule.
	before := h.counts([]workerKey{ready})
	h.step(5*time.Second, start)
	u := h.nextUpdate()
	assert.Equal(t, probes.Startup, u.Kind)
	assert.Equal(t, probes.Success, u.Result)
	assert.True(t, h.m.Started(podUID, "app"))
	assert.Equal(t, 1, h.exited(start), "startup stops probing once it succeeded")
	h.waitIdle([]workerKey{ready}, []int{before[0] + 1})
	assert.Equal(t, []string{"start", "start", "start", "ready"}, h.cmdsRun(), "readiness right after the startup success")
	assert.Equal(t, probes.Readiness, h.nextUpdate().Kind)
	assert.True(t, h.m.Ready(podUID, "app"))

	h.step(5*time.Second, live, ready)
	assert.ElementsMatch(t, []string{"start", "start", "start", "ready", "live", "ready"}, h.cmdsRun())
	r, ok := h.m.Result(podUID, "app", probes.Startup)
	assert.True(t, ok)
	assert.Equal(t, probes.Success, r)
}

func TestWorker_StartupFailureHolds(t *testing.T) {
	h := newHarness(t, probes.Config{})
	h.exec.SetDefault("", probestest.Exit(1, "never"))
	pod := podWith(v1.Container{Name: "app",
		LivenessProbe: execProbe("live", 0, 10, 1, 3),
		StartupProbe:  execProbe("start", 0, 5, 1, 2),
	})
	h.start(pod, running("app", "c1", t0.Add(-time.Minute)), live, start)
	h.step(5*time.Second, start)
	u := h.nextUpdate()
	assert.Equal(t, probes.Startup, u.Kind)
	assert.Equal(t, probes.Failure, u.Result)
	assert.Equal(t, 1, h.exited(start))
	h.step(5*time.Second, live) // due but gated; startup is on hold
	h.step(10*time.Second, live)
	assert.Equal(t, []string{"start", "start"}, h.cmdsRun())
	assert.False(t, h.m.Started(podUID, "app"))
}

func TestWorker_ErrorsRetriedThenDiscarded(t *testing.T) {
	h := newHarness(t, probes.Config{})
	broken := probestest.ExecResult{Err: errors.New("runtime unavailable")}
	h.exec.Script("c1",
		broken, broken, broken, // one run: 3 tries, discarded
		broken, broken, probestest.Exit(1, "bad"), // one run: third try counts
	)
	h.start(podWith(v1.Container{Name: "app", LivenessProbe: execProbe("live", 0, 10, 1, 1)}),
		running("app", "c1", t0.Add(-time.Minute)), live)
	assert.Equal(t, 3, h.exec.CallCount())
	assert.Equal(t, probes.Success, h.result("app", probes.Liveness), "errors never change the result")
	st, _ := h.m.Status(podUID, "app", probes.Liveness)
	assert.Equal(t, 1, st.Errors)
	assert.Equal(t, 0, st.Runs)
	assert.Contains(t, st.LastError, "runtime unavailable")
	ev := <-h.events
	assert.Equal(t, "Unhealthy", ev.Reason)
	assert.Contains(t, ev.Message, "Liveness probe errored: ")
	h.noUpdate()

	h.step(10*time.Second, live)
	assert.Equal(t, 6, h.exec.CallCount())
	assert.Equal(t, probes.Failure, h.nextUpdate().Result)
}

func TestManager_StopsWorkersWhenContainersGo(t *testing.T) {
	baseline := runtime.NumGoroutine()
	h := newHarness(t, probes.Config{})
	sidecar := v1.Container{Name: "side", RestartPolicy: ptr.To(v1.ContainerRestartPolicyAlways),
		ReadinessProbe: execProbe("side-ready", 100, 10, 1, 3)}
	plainInit := v1.Container{Name: "init", ReadinessProbe: execProbe("never", 0, 10, 1, 3)}
	pod := podWith(v1.Container{Name: "app",
		LivenessProbe:  execProbe("live", 100, 10, 1, 3),
		ReadinessProbe: execProbe("ready", 100, 10, 1, 3),
		StartupProbe:   execProbe("start", 100, 10, 1, 3),
	})
	pod.Spec.InitContainers = []v1.Container{plainInit, sidecar}
	side := workerKey{"side", probes.Readiness}
	all := []probes.ContainerState{
		{Name: "init", ID: "i1", Running: true, StartedAt: t0},
		{Name: "side", ID: "s1", Running: true, StartedAt: t0},
		{Name: "app", ID: "c1", Running: true, StartedAt: t0},
	}
	h.start(pod, all, live, ready, start, side)
	_, ok := h.m.Result(podUID, "init", probes.Readiness)
	assert.False(t, ok, "regular init containers are not probed")
	_, ok = h.m.Result(podUID, "side", probes.Readiness)
	assert.True(t, ok, "native sidecars are probed")

	// The sidecar stops running: its worker goes.
	h.m.UpdatePod(pod, "127.0.0.1", []probes.ContainerState{all[0], {Name: "side", ID: "s1"}, all[2]})
	h.waitIdle([]workerKey{side}, []int{2})
	assert.Equal(t, 1, h.exited(side))
	assert.False(t, h.m.Ready(podUID, "side"))

	// The app container disappears from the listing: its workers go.
	h.m.UpdatePod(pod, "127.0.0.1", all[:1])
	h.waitIdle([]workerKey{live, ready, start}, []int{2, 2, 2})
	_, ok = h.m.Result(podUID, "app", probes.Liveness)
	assert.False(t, ok)

	// Back, then the pod is removed.
	h.start(pod, all, live, ready, start, side)
	h.m.RemovePod(podUID)
	h.waitIdle([]workerKey{live, ready, start, side}, []int{4, 4, 4, 4})
	assert.Nil(t, h.m.PodStatus(podUID))
	assertGoroutines(t, baseline)
}

func TestManager_RemovePodCancelsInFlightProbe(t *testing.T) {
	baseline := runtime.NumGoroutine()
	h := newHarness(t, probes.Config{})
	entered := make(chan struct{})
	h.exec.Func = func(ctx context.Context, _ string, _ []string, _ time.Duration) probestest.ExecResult {
		close(entered)
		<-ctx.Done()
		return probestest.ExecResult{Err: ctx.Err()}
	}
	h.m.UpdatePod(podWith(v1.Container{Name: "app", LivenessProbe: execProbe("live", 0, 10, 1, 1)}),
		"127.0.0.1", running("app", "c1", t0.Add(-time.Minute)))
	<-entered
	h.m.RemovePod(podUID)
	h.waitIdle([]workerKey{live}, []int{1})
	assert.Equal(t, 1, h.exited(live))
	assert.Equal(t, 1, h.exec.CallCount(), "a cancelled probe is not retried")
	h.noUpdate()
	assertGoroutines(t, baseline)
}

func TestManager_StopLivenessAndStartup(t *testing.T) {
	h := newHarness(t, probes.Config{})
	pod := podWith(v1.Container{Name: "app",
		LivenessProbe:  execProbe("live", 0, 10, 1, 3),
		ReadinessProbe: execProbe("ready", 0, 10, 1, 3),
		StartupProbe:   execProbe("start", 0, 10, 1, 3),
	})
	h.exec.Script("c1", probestest.Exit(1, "")) // startup not there yet
	h.start(pod, running("app", "c1", t0.Add(-time.Minute)), live, ready, start)
	h.m.StopLivenessAndStartup(podUID)
	h.waitIdle([]workerKey{live, start}, []int{2, 2})
	_, ok := h.m.Result(podUID, "app", probes.Liveness)
	assert.False(t, ok)
	assert.True(t, h.m.Started(podUID, "app"), "no startup worker means started")

	// Readiness keeps running until RemovePod.
	h.step(10*time.Second, ready)
	assert.Equal(t, []string{"start", "ready"}, h.cmdsRun())
	// A new instance of a terminating pod gets no liveness or startup.
	h.restart(pod, running("app", "c2", h.clk.Now()), ready)
	_, ok = h.m.Result(podUID, "app", probes.Liveness)
	assert.False(t, ok)
	_, ok = h.m.Result(podUID, "app", probes.Readiness)
	assert.True(t, ok)
}

func TestManager_Trigger(t *testing.T) {
	h := newHarness(t, probes.Config{})
	h.start(podWith(v1.Container{Name: "app", ReadinessProbe: execProbe("ready", 0, 10, 1, 3)}),
		running("app", "c1", t0.Add(-time.Minute)), ready)
	require.Equal(t, 1, h.exec.CallCount())
	before := h.counts([]workerKey{ready})
	h.m.Trigger(podUID, "app", probes.Readiness)
	h.waitIdle([]workerKey{ready}, []int{before[0] + 1})
	assert.Equal(t, 2, h.exec.CallCount())
	// The schedule is unchanged: the next run is still at +10s.
	h.step(10*time.Second, ready)
	assert.Equal(t, 3, h.exec.CallCount())
}

func TestManager_HTTPReadinessAgainstServer(t *testing.T) {
	var mu sync.Mutex
	code := http.StatusServiceUnavailable
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		w.WriteHeader(code)
	}))
	defer srv.Close()
	_, port := hostPort(t, srv.URL)

	h := newHarness(t, probes.Config{})
	c := v1.Container{Name: "app", Ports: []v1.ContainerPort{{Name: "http", ContainerPort: int32(port)}},
		ReadinessProbe: &v1.Probe{ProbeHandler: v1.ProbeHandler{HTTPGet: &v1.HTTPGetAction{Path: "/ready", Port: intstr.FromString("http")}},
			PeriodSeconds: 1, TimeoutSeconds: 1, SuccessThreshold: 1, FailureThreshold: 1}}
	h.start(podWith(c), running("app", "c1", t0.Add(-time.Minute)), ready)
	st, _ := h.m.Status(podUID, "app", probes.Readiness)
	assert.Equal(t, "HTTP probe failed with statuscode: 503", st.LastMessage)
	h.noUpdate()

	mu.Lock()
	code = http.StatusOK
	mu.Unlock()
	h.step(time.Second, ready)
	u := h.nextUpdate()
	assert.Equal(t, probes.Success, u.Result)
	assert.True(t, h.m.Ready(podUID, "app"))
	assert.Len(t, h.m.PodStatus(podUID), 1)
}

func TestManager_ManyPodsCloseLeavesNoGoroutines(t *testing.T) {
	baseline := runtime.NumGoroutine()
	h := newHarness(t, probes.Config{})
	for i := range 50 {
		pod := podWith(v1.Container{Name: "app",
			LivenessProbe:  execProbe("live", 100, 10, 1, 3),
			ReadinessProbe: execProbe("ready", 100, 10, 1, 3),
		})
		pod.UID = types.UID(fmt.Sprintf("uid-%d", i))
		h.m.UpdatePod(pod, "127.0.0.1", running("app", fmt.Sprintf("c%d", i), t0))
	}
	keys, want := make([]workerKey, 0, 2), []int{50, 50}
	keys = append(keys, live, ready)
	h.waitIdle(keys, want)
	// The 100 parked workers share the scheduler's one timer and have no
	// goroutine: the scheduler's is the only one besides the test's.
	assert.Equal(t, 1, h.clk.Waiters(), "one timer for every worker")
	assertGoroutines(t, baseline+1)
	h.m.Close()
	assertGoroutines(t, baseline)
}

// assertGoroutines waits (bounded) for the goroutine count to return to
// baseline. It polls by hand: require.Eventually runs its own goroutines.
func assertGoroutines(t *testing.T, baseline int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for runtime.NumGoroutine() > baseline {
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<16)
			t.Fatalf("goroutines leaked: %d > %d\n%s", runtime.NumGoroutine(), baseline, buf[:runtime.Stack(buf, true)])
		}
		runtime.Gosched()
	}
}

// BenchmarkManager_UpdatePod measures re-observing an unchanged pod (what
// every relist does) with many pods under probe: it must not grow with the
// number of pods.
func BenchmarkManager_UpdatePod(b *testing.B) {
	for _, n := range []int{10, 1000} {
		b.Run(fmt.Sprintf("pods=%d", n), func(b *testing.B) {
			m := probes.New(probes.Config{Clock: testingclock.NewFakeClock(t0), Execer: probestest.NewFakeExecer()})
			defer m.Close()
			pods := make([]*v1.Pod, n)
			for i := range pods {
				pods[i] = podWith(v1.Container{Name: "app",
					LivenessProbe:  execProbe("live", 100, 10, 1, 3),
					ReadinessProbe: execProbe("ready", 100, 10, 1, 3),
				})
				pods[i].UID = types.UID(fmt.Sprintf("uid-%d", i))
				m.UpdatePod(pods[i], "10.88.0.2", running("app", fmt.Sprintf("c%d", i), t0))
			}
			cs := running("app", "c0", t0)
			for b.Loop() {
				m.UpdatePod(pods[0], "10.88.0.2", cs)
				_ = m.Ready(pods[0].UID, "app")
			}
		})
	}
}

// Quick retries are bounded: a readiness probe that keeps failing falls
// back to its period after quickRetries early runs, however long the
// period.
func TestWorker_ReadinessQuickRetriesBounded(t *testing.T) {
	h := newHarness(t, probes.Config{})
	fails := make([]probestest.ExecResult, 40)
	for i := range fails {
		fails[i] = probestest.Exit(1, "refused")
	}
	h.exec.Script("c1", fails...)
	h.start(podWith(v1.Container{Name: "app", ReadinessProbe: execProbe("ready", 0, 10, 1, 3)}),
		running("app", "c1", t0), ready)
	require.Equal(t, 1, h.exec.CallCount(), "the first run is at once")
	<-h.events
	// Each quick retry is due within 200 ms of the previous run.
	for i := 1; i <= 12; i++ {
		h.step(200*time.Millisecond, ready)
		require.Equal(t, 1+i, h.exec.CallCount(), "quick retry %d", i)
	}
	// No more early runs: the next is the regular one, a period after the
	// first.
	h.clk.Step(200 * time.Millisecond)
	require.Never(t, func() bool { return h.exec.CallCount() > 13 }, 50*time.Millisecond, 5*time.Millisecond)
	assert.Empty(t, h.events, "quick retries report no failure event")
}

// After the first run, which keeps its exact time (initial delay counted
// from startedAt), periodic runs move up to the next slot (quarter seconds;
// the harness's Rand pins the grid's offset to 0), so that workers of
// different phases run together; the period between runs stays.
func TestWorker_PeriodicRunsOnSharedSlots(t *testing.T) {
	h := newHarness(t, probes.Config{})
	a := workerKey{"a", probes.Liveness}
	b := workerKey{"b", probes.Liveness}
	pod := podWith(v1.Container{Name: "a", LivenessProbe: execProbe("a", 5, 1, 1, 3)})
	pod.Spec.Containers = append(pod.Spec.Containers, v1.Container{Name: "b", LivenessProbe: execProbe("b", 0, 1, 1, 3)})

	// a: started 5 s - 37 ms ago with a 5 s delay: due in 37 ms, off the grid.
	h.start(pod, running("a", "ca", t0.Add(37*time.Millisecond-5*time.Second)), a)
	assert.Equal(t, 0, h.exec.CallCount())
	h.step(37*time.Millisecond, a)
	require.Equal(t, []string{"a"}, h.cmdsRun(), "the first run is exact")
	st, _ := h.m.Status(podUID, "a", probes.Liveness)
	assert.Equal(t, t0.Add(37*time.Millisecond), st.LastProbeTime)

	// b starts at t0+160ms and runs at once.
	h.step(123 * time.Millisecond)
	cs := append(running("a", "ca", t0.Add(37*time.Millisecond-5*time.Second)), running("b", "cb", h.clk.Now())...)
	h.start(pod, cs, b)
	require.Equal(t, []string{"a", "b"}, h.cmdsRun())

	// Their next runs (exact: t0+1.037 s, t0+1.160 s) share the slot
	// t0+1.25 s.
	h.clk.Step(time.Second) // t0+1.16 s
	require.Never(t, func() bool { return h.exec.CallCount() > 2 }, 50*time.Millisecond, 5*time.Millisecond,
		"a run came before its slot")
	h.step(90*time.Millisecond, a, b) // t0+1.25 s
	require.ElementsMatch(t, []string{"a", "b", "a", "b"}, h.cmdsRun())
	for _, c := range []string{"a", "b"} {
		st, _ := h.m.Status(podUID, c, probes.Liveness)
		assert.Equal(t, t0.Add(1250*time.Millisecond), st.LastProbeTime, c)
	}

	// And then every period on that slot.
	h.step(time.Second, a, b) // t0+2.25 s
	assert.Len(t, h.cmdsRun(), 6)
	st, _ = h.m.Status(podUID, "b", probes.Liveness)
	assert.Equal(t, t0.Add(2250*time.Millisecond), st.LastProbeTime)
}

// The start-up jitter after an agent restart is kept (the first runs are
// still spread over a period) but rounded up to a slot. Rand also picks the
// offset of the agent's grid.
func TestWorker_JitterRoundedUpToSlot(t *testing.T) {
	h := newHarness(t, probes.Config{Rand: func() float64 { return 0.42 }})
	// Period 10 s: the kubelet's first run would be at t0+4.2 s; the grid
	// is quarter seconds + 0.42 × 250 ms: …, t0+4.105 s, t0+4.355 s, ….
	h.start(podWith(v1.Container{Name: "app", ReadinessProbe: execProbe("ready", 0, 10, 1, 3)}),
		running("app", "c1", t0.Add(-time.Hour)), ready)
	h.clk.Step(4200 * time.Millisecond)
	require.Never(t, func() bool { return h.exec.CallCount() > 0 }, 50*time.Millisecond, 5*time.Millisecond)
	h.step(155*time.Millisecond, ready) // its slot, t0+4.355 s
	assert.Equal(t, 1, h.exec.CallCount())
	st, _ := h.m.Status(podUID, "app", probes.Readiness)
	assert.Equal(t, t0.Add(4355*time.Millisecond), st.LastProbeTime)
	h.step(10*time.Second, ready)
	assert.Equal(t, 2, h.exec.CallCount())
}

// Quick readiness retries keep their exact delays; the regular run after
// them is on a slot, one period after the first run rounded up.
func TestWorker_QuickRetriesExactThenSlot(t *testing.T) {
	h := newHarness(t, probes.Config{})
	h.exec.SetDefault("", probestest.Exit(1, "refused"))
	h.clk.Step(37 * time.Millisecond)
	h.start(podWith(v1.Container{Name: "app", ReadinessProbe: execProbe("ready", 0, 10, 1, 3)}),
		running("app", "c1", h.clk.Now()), ready)
	require.Equal(t, 1, h.exec.CallCount(), "the first run is at once, off the grid")
	h.step(10*time.Millisecond, ready) // t0+47ms: first quick retry, exact
	require.Equal(t, 2, h.exec.CallCount())
	h.step(15*time.Millisecond, ready) // t0+62ms: second, exact
	require.Equal(t, 3, h.exec.CallCount())
	for range 10 { // the other ten retries
		h.step(200*time.Millisecond, ready)
	}
	require.Equal(t, 13, h.exec.CallCount())
	// The first regular run: exact t0+10.037 s, on its slot t0+10.25 s.
	h.clk.Step(10*time.Second - h.clk.Since(t0.Add(37*time.Millisecond)))
	require.Never(t, func() bool { return h.exec.CallCount() > 13 }, 50*time.Millisecond, 5*time.Millisecond)
	h.step(213*time.Millisecond, ready)
	assert.Equal(t, 14, h.exec.CallCount())
	st, _ := h.m.Status(podUID, "app", probes.Readiness)
	assert.Equal(t, t0.Add(10250*time.Millisecond), st.LastProbeTime)
}

// A worker prepares its network target once per pod IP: a new IP (here the
// first one) is picked up at the next run.
func TestManager_NetworkTargetFollowsPodIP(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	defer srv.Close()
	_, port := hostPort(t, srv.URL)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer l.Close()
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			_ = c.Close()
		}
	}()

	h := newHarness(t, probes.Config{})
	probe := func(ph v1.ProbeHandler) *v1.Probe {
		return &v1.Probe{ProbeHandler: ph, PeriodSeconds: 1, TimeoutSeconds: 1, SuccessThreshold: 1, FailureThreshold: 3}
	}
	pod := podWith(v1.Container{Name: "app",
		LivenessProbe:  probe(v1.ProbeHandler{HTTPGet: &v1.HTTPGetAction{Port: intstr.FromInt32(int32(port))}}),
		ReadinessProbe: probe(v1.ProbeHandler{TCPSocket: &v1.TCPSocketAction{Port: intstr.FromInt32(int32(l.Addr().(*net.TCPAddr).Port))}}),
	})
	cs := running("app", "c1", t0.Add(-time.Minute))
	keys := []workerKey{live, ready}
	h.m.UpdatePod(pod, "", cs) // no pod IP yet
	h.waitIdle(keys, []int{1, 1})
	for _, k := range []probes.Kind{probes.Liveness, probes.Readiness} {
		st, _ := h.m.Status(podUID, "app", k)
		assert.Equal(t, 1, st.Errors, k)
		assert.Contains(t, st.LastError, "no IP address", k)
	}

	h.m.UpdatePod(pod, "127.0.0.1", cs)
	h.step(time.Second, live, ready)
	for _, k := range []probes.Kind{probes.Liveness, probes.Readiness} {
		st, _ := h.m.Status(podUID, "app", k)
		assert.Equal(t, probes.Success, st.LastResult, k)
		assert.Equal(t, 1, st.Runs, k)
	}
	assert.Equal(t, probes.Readiness, h.nextUpdate().Kind)
	assert.True(t, h.m.Ready(podUID, "app"))
}
