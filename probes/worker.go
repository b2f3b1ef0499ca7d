package probes

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
)

// A worker probes one container instance for one probe kind. It lives as
// long as that instance runs (a new container ID gets a new worker), so
// results never survive a restart.
//
//	              UpdatePod: running, new ID
//	                         |
//	                         v
//	+------------- waiting (initial result: readiness Failure,
//	|                 |  ^    liveness Success, startup Unknown)
//	|       timer /   |  |
//	|       trigger   v  |  not started yet (gated by startup),
//	|              probing   in initial delay, below threshold,
//	|                 |      error after 3 tries (discarded)
//	|                 |
//	|  threshold reached: cached result changes -> Update published
//	|                 |
//	|   +-------------+--------------------------------+
//	|   | liveness/startup Failure   startup Success   |
//	|   v                                              v
//	| on hold (worker exits;                done (worker exits;
//	|  result stays Failure until            result stays Success)
//	|  the agent restarts the container)
//	|
//	+--> stopped: container not running / gone, new ID, RemovePod,
//	     StopLivenessAndStartup (liveness, startup), Close
//
// Schedule: the first run is at startedAt + initialDelaySeconds, or later by
// rand[0,1) × period when the Manager started less than one period ago
// (jitter after an agent restart), and never before the worker starts; then
// every periodSeconds on that grid, missed ticks skipped. Every run after
// the first (and after the quick readiness retries, which stay exact) is
// moved up to the agent's next slot: quarter seconds of wall-clock time,
// shifted by an offset the Manager picks at random, the same instants for
// every worker (scheduleSlot). With per-container phases, as in the kubelet,
// 100 pods probed every second woke the agent 200 separate times a second,
// and each wake-up cost more than the probe it ran; on shared slots the runs
// of one slot share one wake-up. Every run is the same amount, less than a
// slot (250 ms), later than the kubelet's would be: only the gap between
// the first run and the second grows; the period between runs, the
// initial delay, timeouts and thresholds are the kubelet's. The kubelet's
// jitter after a restart is rounded up to a slot
// too: it still spreads the first runs over the period, in period/slot
// batches (kubelet-facts §4.2).
type worker struct {
	// m is the owning manager.
	m *Manager
	// pod and container instance this worker belongs to; their fields are
	// read under m.mu.
	pod *podProbes
	cp  *containerProbes
	// container is a private copy of the container spec (read-only).
	container *v1.Container
	// kind, probe and timing are fixed for the worker's life.
	kind   Kind
	probe  *v1.Probe
	timing timing
	// containerID and startedAt copy cp's (fixed).
	containerID string
	startedAt   time.Time
	// logger carries pod, podUID, container, containerID and probe.
	logger *slog.Logger
	// ctx is cancelled by stopLocked; it bounds in-flight probes and
	// unblocks a pending publish.
	ctx    context.Context
	cancel context.CancelFunc

	// The fields below are guarded by m.mu.

	// state says whether a goroutine runs the worker or it is parked
	// (schedule.go); index is its place in the queue while parked.
	state workerState
	index int
	// triggered asks a running worker for one more run before it parks.
	triggered bool
	// wake is when the next run is due; written by the worker's
	// goroutine, read by the scheduler while the worker is parked.
	wake time.Time

	// stopped is set when the worker is removed from its container; a
	// stopped worker publishes nothing and records nothing.
	stopped bool
	// result is the cached result readers see.
	result Result
	// lastResult and resultRun count consecutive identical (cached-form)
	// run results toward the thresholds.
	lastResult Result
	resultRun  int
	// onHold: a liveness or startup Failure was published; nothing more
	// happens until a new container ID replaces this worker.
	onHold bool
	// st holds the counters and last-run fields of Status.
	st ProbeStatus

	// The fields below belong to the goroutine running the worker (no
	// lock; the hand-over between its goroutines goes through m.mu).

	// next is the run's place on the worker's own grid (its period from
	// the first run), first the first run.
	next, first time.Time
	// quiet marks the next run as a quick retry; quickDelay and quickN
	// count the quick retries (quickRetry).
	quiet      bool
	quickDelay time.Duration
	quickN     int
	// execCmd is an exec probe's command with the env expanded, built at
	// the first run.
	execCmd []string
	// target is a network probe's prepared destination (prober.run).
	target target
}

// newWorker builds the worker of probe kind k of container c. m.mu must be
// held (it reads pp and cp).
func newWorker(m *Manager, pp *podProbes, cp *containerProbes, c *v1.Container, k Kind) *worker {
	p := probeOf(c, k)
	ctx, cancel := context.WithCancel(context.Background())
	w := &worker{
		m:           m,
		pod:         pp,
		cp:          cp,
		container:   c,
		kind:        k,
		probe:       p,
		timing:      timingOf(p),
		containerID: cp.id,
		startedAt:   cp.startedAt,
		logger: m.logger.With("pod", pp.key, "podUID", string(pp.uid), "container", c.Name,
			"containerID", cp.id, "probe", strings.ToLower(k.String())),
		ctx:    ctx,
		cancel: cancel,
		index:  -1,
		result: k.initialResult(),
	}
	w.st = ProbeStatus{
		PodUID:                        pp.uid,
		ContainerName:                 c.Name,
		ContainerID:                   cp.id,
		Kind:                          k,
		TerminationGracePeriodSeconds: p.TerminationGracePeriodSeconds,
	}
	return w
}

// stopLocked stops the worker: no more results, in-flight probe cancelled,
// a parked worker's exit started. m.mu must be held. Idempotent.
func (w *worker) stopLocked() {
	w.stopped = true
	w.cancel()
	if w.state == workerParked {
		w.m.unparkLocked(w)
		go w.exit()
	}
}

// statusLocked returns a copy of the worker's status. m.mu must be held.
func (w *worker) statusLocked() ProbeStatus {
	st := w.st
	st.Result = w.result
	st.OnHold = w.onHold
	return st
}

// run is a goroutine of the worker (see schedule.go): started at the
// worker's creation, when its run comes due or when it is triggered while
// parked. It probes, works out the next run and parks the worker again, or
// exits when the worker has nothing more to do.
func (w *worker) run(why wakeReason) {
	m := w.m
	if why == wakeStart {
		why = wakeNone
		if w.firstRun() {
			why = wakeDue
		}
	}
	for {
		switch why {
		case wakeTriggered:
			// Off schedule: the next scheduled run stays where it was.
			if !w.doProbe(false) {
				w.exit()
				return
			}
		case wakeDue:
			if !w.doProbe(w.quiet) {
				w.exit()
				return
			}
			w.reschedule()
		}
		m.mu.Lock()
		switch {
		case w.stopped:
			m.mu.Unlock()
			w.exit()
			return
		case w.triggered:
			w.triggered = false
			why = wakeTriggered
		case !w.wake.After(m.clock.Now()):
			why = wakeDue
		default:
			m.parkLocked(w)
			// Under the lock: once it is released, the worker may be
			// stopped and exit before this goroutine goes on.
			m.hook(w, "waiting")
			m.mu.Unlock()
			return
		}
		m.mu.Unlock()
		m.hook(w, "waiting")
	}
}

// firstRun works out the first run and reports whether it is due now.
func (w *worker) firstRun() (due bool) {
	m := w.m
	now := m.clock.Now()
	next := w.startedAt.Add(w.timing.initialDelay)
	if m.clock.Since(m.start) < w.timing.period {
		// The kubelet's jitter, rounded up to a slot so that the first
		// runs after a restart share wake-ups too (no jitter: no
		// rounding, the first run stays exact).
		if j := time.Duration(m.rand() * float64(w.timing.period)); j > 0 {
			if jittered := m.align(now.Add(j)); jittered.After(next) {
				next = jittered
			}
		}
	}
	if next.Before(now) {
		next = now
	}
	// wake carries now's monotonic reading (startedAt has none), so that
	// the queue compares every wake time the same way.
	w.next, w.first, w.wake = next, next, now.Add(next.Sub(now))
	return !next.After(now)
}

// reschedule sets the wake time after a scheduled run: the next period on
// the worker's own grid, moved up to the slot that follows it, or sooner
// for a quick readiness retry.
func (w *worker) reschedule() {
	m := w.m
	now := m.clock.Now()
	for !w.next.After(now) {
		w.next = w.next.Add(w.timing.period)
	}
	wait := m.align(w.next).Sub(now)
	w.quiet = false
	if d, ok := w.quickRetry(now, w.first, &w.quickDelay, &w.quickN); ok && d < wait {
		wait, w.quiet = d, true
	}
	w.wake = now.Add(wait)
}

// exit ends the worker: it is done, its context is cancelled and the
// Manager stops counting it.
func (w *worker) exit() {
	m := w.m
	m.mu.Lock()
	w.state = workerDone
	m.mu.Unlock()
	w.cancel()
	m.hook(w, "exited")
	m.wg.Done()
}

// Quick retries of a readiness probe that has not succeeded yet.
const (
	quickRetryFirst = 10 * time.Millisecond
	quickRetryMax   = 200 * time.Millisecond
	// quickRetries bounds the quick retries of one container's readiness
	// probe (about the first 1.3 s): each exec probe is a process in the
	// container, and a server that is not up by then is not "opening its
	// port" any more; the regular schedule takes over.
	quickRetries = 12
)

// quickRetry returns how soon to run again a readiness probe that has not
// succeeded yet, during the first period after its first scheduled run:
// a server still opening its port when the first run comes is seen Ready
// within milliseconds instead of a whole period later (the kubelet waits the
// period). The pod was not Ready before and a failed retry changes nothing,
// so the retries are quiet (no Unhealthy event; the first run reported the
// failure) and regular runs keep their grid. The delay starts at
// quickRetryFirst and grows by half each time, up to quickRetryMax, for at
// most quickRetries retries (counted in *n).
func (w *worker) quickRetry(now, first time.Time, delay *time.Duration, n *int) (time.Duration, bool) {
	if w.kind != Readiness || *n >= quickRetries || !now.Before(first.Add(w.timing.period)) {
		return 0, false
	}
	w.m.mu.Lock()
	pending := !w.stopped && w.result == Failure && w.st.Successes == 0 && w.st.Runs > 0 && w.cp.started()
	w.m.mu.Unlock()
	if !pending {
		return 0, false
	}
	if *delay == 0 {
		*delay = quickRetryFirst
	} else {
		*delay = min(*delay*3/2, quickRetryMax)
	}
	*n++
	return *delay, true
}

// doProbe runs the probe once (with retries on errors), counts the result
// toward the thresholds and publishes a change. A quiet run reports no
// failure event. It returns false when the worker has nothing more to do.
func (w *worker) doProbe(quiet bool) (keepGoing bool) {
	m := w.m
	m.mu.Lock()
	switch {
	case w.stopped, w.onHold:
		m.mu.Unlock()
		return false
	case w.kind == Startup && w.result == Success:
		m.mu.Unlock()
		return false
	case w.kind != Startup && !w.cp.started():
		// Gated by the startup probe: liveness and readiness wait.
		m.mu.Unlock()
		return true
	}
	podIP := w.pod.podIP
	m.mu.Unlock()

	if m.clock.Now().Before(w.startedAt.Add(w.timing.initialDelay)) {
		// Only a manual trigger gets here early.
		return true
	}

	res, out, err := w.probeOnce(podIP)
	if w.ctx.Err() != nil {
		// Stopped while probing: the run says nothing about the container.
		return false
	}
	now := m.clock.Now()
	if err != nil {
		w.recordError(now, err)
		return true
	}
	if !quiet || res == Success || res == Warning {
		w.emitRunEvent(res, out)
	}

	cached := res.cached()
	if quiet && cached == Failure {
		// A quick retry that failed again is the agent's own extra look
		// (quickRetry): it changes nothing (the result is Failure already)
		// and counts nowhere, neither toward the threshold nor in the
		// status's run counts, so that describe's consecutive failures are
		// the kubelet's, one per period, as many as the Unhealthy events
		// (issue #28: 18 after 11 s with a 2 s period, 12 of them quick
		// retries, while the events said 6).
		return true
	}
	m.mu.Lock()
	if w.stopped {
		m.mu.Unlock()
		return false
	}
	w.recordRunLocked(now, res, out)
	if w.lastResult == cached {
		w.resultRun++
	} else {
		w.lastResult, w.resultRun = cached, 1
	}
	if (cached == Failure && w.resultRun < w.timing.failureThreshold) ||
		(cached == Success && w.resultRun < w.timing.successThreshold) {
		m.mu.Unlock()
		return true
	}
	changed := w.result != cached
	w.result = cached
	keepGoing = true
	if cached == Failure && w.kind != Readiness {
		w.onHold, w.resultRun = true, 0
		keepGoing = false
	}
	var readiness *worker
	if cached == Success && w.kind == Startup {
		keepGoing = false
		// The startup probe gated readiness until now: evaluate it at
		// once rather than at its next period (the kubelet's prober
		// triggers the readiness worker the same way), so the pod is
		// Ready as soon as its container answers (issues #17, #19).
		if changed {
			readiness = w.cp.workers[Readiness]
		}
	}
	m.mu.Unlock()

	if changed {
		w.logger.Info("Probe result changed", "result", cached.String(), "output", out)
		m.publish(w.ctx, Update{
			PodUID:                        w.pod.uid,
			ContainerName:                 w.container.Name,
			ContainerID:                   w.containerID,
			Kind:                          w.kind,
			Result:                        cached,
			Message:                       out,
			TerminationGracePeriodSeconds: w.probe.TerminationGracePeriodSeconds,
		})
	}
	if readiness != nil {
		// After the startup update: readiness's own must not overtake it.
		m.mu.Lock()
		m.triggerLocked(readiness)
		m.mu.Unlock()
	}
	return keepGoing
}

// probeOnce runs the probe, up to maxProbeRetries times while it errors.
// It runs on the worker's goroutine, which exits when the worker parks, so
// the 8–16 KiB of stack that dialling and parsing an answer take are not
// kept between runs.
func (w *worker) probeOnce(podIP string) (res Result, out string, err error) {
	for range maxProbeRetries {
		res, out, err = w.m.prober.run(w.ctx, w, podIP)
		if err == nil || w.ctx.Err() != nil {
			break
		}
	}
	return res, out, err
}

// recordRunLocked updates the status after a completed run. m.mu must be
// held.
func (w *worker) recordRunLocked(now time.Time, res Result, out string) {
	st := &w.st
	st.Runs++
	st.LastResult, st.LastMessage, st.LastProbeTime = res, out, now
	if res.cached() == Success {
		st.Successes++
		st.ConsecutiveFailures = 0
		st.LastSuccessTime = now
	} else {
		st.Failures++
		st.ConsecutiveFailures++
	}
}

// recordError notes a run discarded after maxProbeRetries errors and
// reports it; the cached result and threshold counts stay as they were.
func (w *worker) recordError(now time.Time, err error) {
	m := w.m
	m.mu.Lock()
	if !w.stopped {
		w.st.Errors++
		w.st.LastError = err.Error()
		w.st.LastProbeTime = now
	}
	m.mu.Unlock()
	w.logger.Warn("Probe errored", "err", err)
	w.event(ReasonUnhealthy, fmt.Sprintf("%s probe errored: %v", w.kind, err))
}

// emitRunEvent reports a failed or warning run as the kubelet does, before
// thresholds are counted.
func (w *worker) emitRunEvent(res Result, out string) {
	switch res {
	case Success:
		w.logger.Debug("Probe succeeded")
	case Warning:
		w.logger.Debug("Probe succeeded with a warning", "output", out)
		w.event(ReasonProbeWarning, fmt.Sprintf("%s probe warning: %s", w.kind, out))
	default:
		w.logger.Debug("Probe failed", "result", res.String(), "output", out)
		w.event(ReasonUnhealthy, fmt.Sprintf("%s probe failed: %s", w.kind, out))
	}
}

// event calls Config.OnEvent, if set.
func (w *worker) event(reason, msg string) {
	if w.m.onEvent == nil {
		return
	}
	w.m.onEvent(Event{
		PodUID:        w.pod.uid,
		ContainerName: w.container.Name,
		ContainerID:   w.containerID,
		Kind:          w.kind,
		Type:          v1.EventTypeWarning,
		Reason:        reason,
		Message:       msg,
	})
}
