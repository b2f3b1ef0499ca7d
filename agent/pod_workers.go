package agent

// Over 600 lines: the pod worker's state machine (sync, terminating,
// terminated) and its queue are one unit, as the kubelet's pod_workers.go.

import (
	"context"
	"errors"
	"log/slog"
	"reflect"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/minikubelet/minikubelet/agent/backoff"
	"github.com/minikubelet/minikubelet/agent/fingerprint"
	"github.com/minikubelet/minikubelet/agent/podevents"
	"github.com/minikubelet/minikubelet/agent/podstatus"
	"github.com/minikubelet/minikubelet/agent/resize"
	"github.com/minikubelet/minikubelet/agent/termmsg"
)

// podWorker is the one goroutine that owns every runtime mutation of one pod
// (house style rule 3). Updates and triggers are coalesced: the worker
// always syncs the newest spec, and a requested teardown is never lost.
//
//	           update/trigger/timer
//	          ┌──────────────┐
//	          ▼              │
//	new ──► syncing ─────────┴──► finished (the pod is over: its syncs do
//	          │ terminate()    │   nothing, its status is final)
//	          ▼                │ terminate()
//	     terminating ◄─────────┘
//	          │
//	          ▼
//	        done (teardown finished, channel closed)
type podWorker struct {
	a      *Agent
	logger *slog.Logger

	// mu guards the fields below it.
	mu sync.Mutex
	// spec is the newest desired pod.
	spec *v1.Pod
	// resize is the pod's in-place resize state (agent/resize), under a
	// lock of its own: its resizable resources as the node admitted them
	// and as its running containers have them, the allocated view of spec,
	// the resize conditions, its checkpoint (resize.go).
	resize resize.Tracker
	// terminating is set once the pod left the desired set; never unset.
	terminating bool
	// status is the last computed status.
	status v1.PodStatus
	// events is the pod's bounded event ring.
	events podevents.Ring
	// steps is the startup trace, in order.
	steps []podevents.Step
	// reasons caches the last start failure per container name (the
	// kubelet's reason cache): it becomes the waiting reason in status.
	reasons map[string]error
	// startTime is when the agent first accepted the pod.
	startTime time.Time
	// pulls is the time spent pulling images; startObserved is set once
	// the pod start SLI was recorded.
	pulls         time.Duration
	startObserved bool
	// oomReported holds container IDs whose OOM kill was reported.
	oomReported map[string]bool
	// wasReady is set once the pod was first Ready.
	wasReady bool
	// failReason and failMessage, once set, fail the pod for good
	// (deadline.go: setFailed).
	failReason, failMessage string
	// killBy is when a kill must be over by the newest deletion's grace
	// period (zero: no deletion with one); graceCut is closed, and
	// replaced, whenever setDeletion sets it, so a kill under way (a
	// preStop hook's wait) shortens to it, as the kubelet's pod workers
	// cut a termination short on a shorter grace period.
	killBy   time.Time
	graceCut chan struct{}
	// restartBase is, by container name, the restart count a container's
	// first instance gets when this worker runs a pod that an earlier
	// worker tore down (same UID, back: restartAfterTeardown). The kubelet
	// leaves a torn-down pod's dead containers to its GC, so the pod's new
	// instances count on from them (node e2e "MirrorPod should
	// successfully recreate when file is removed and recreated" wants
	// restart count 1); the agent's teardown removed them, so the count
	// comes from the earlier worker's status. Set before run; nil: none.
	restartBase map[string]int
	// stoppedSandboxes are the sandbox IDs this worker stopped.
	stoppedSandboxes map[string]bool
	// networkNotReady is why the pod waits for the pod network ("" = not
	// waiting); shown as the containers' waiting message.
	networkNotReady string
	// observed is the fingerprint (podState.fingerprint) of the newest
	// runtime state the worker observed; busy is set while it syncs or
	// tears down. The relister wakes the worker only for what it has not
	// seen (relist.go).
	observed string
	// observedOnce is set by the first setObserved.
	observedOnce bool
	busy         bool
	// heldEvents are the runtime events that came while the worker was
	// busy, up to maxHeldEvents (heldOverflow: more came): setIdle looks
	// at them against the closing observation (runtimeEvent).
	heldEvents   []*runtimeapi.ContainerEventResponse
	heldOverflow bool
	// evicted is set once the eviction manager evicted the pod; never
	// unset: the pod is killed and never started again (eviction_engine.go).
	evicted *podEviction
	// finished is closed once the pod is over: it reached a terminal phase
	// (syncPod, failPod) or was evicted (syncEvicted), nothing of it runs
	// and nothing is started again. Its syncs then do nothing, and the
	// status published when it finished stays, whatever is left of it in
	// the runtime: the kubelet's terminated pod worker (terminatedAt set),
	// whose status manager keeps the pod's last status. Its dead
	// containers and sandboxes are then the GC's under disk pressure
	// (podTerminatedForGC), and an evicted pod's at once (podGoneForGC).
	// finishOnce guards the close, under mu.
	finished   chan struct{}
	finishOnce sync.Once
	// finalUnsaved is set while the final status of a finished local-API
	// pod could not be stored (final_status.go: storeFinalStatus).
	finalUnsaved bool

	// syncCancel cancels the context of the sync in flight (nil: none).
	// A termination request (terminate) and an eviction call it, as the
	// kubelet's pod workers cancel the in-flight SyncPod when the pod
	// becomes terminating: a sync waiting on a postStart hook, an image
	// pull or the runtime must not hold up the teardown.
	syncCancel context.CancelCauseFunc

	// wake has capacity 1 so notifiers never block; a pending wake-up
	// already covers any later one.
	wake chan struct{}
	// ctx is cancelled when the agent stops (no teardown then). Each sync
	// runs under a child of it (syncCancel); kills run under ctx itself
	// (killContext), so a termination request does not cut a kill short,
	// the agent's stop does.
	ctx    context.Context
	cancel context.CancelFunc
	// tornDown is set by run when it returns after a teardown; the agent
	// then forgets the worker and closes done.
	tornDown bool
	// orphan is set, before it runs, on the teardown of what a previous
	// run left (tearDownOrphanLocked): its pod, if wanted again, is
	// admitted before it starts. quiet, on that of a pod admission
	// rejected at a restart: it publishes no status and no end, and is not
	// listed; the rejection stays the pod's (the kubelet's kill of a
	// runtime-only pod).
	orphan, quiet bool
	// done is closed once the teardown finished and the agent forgot the
	// worker.
	done chan struct{}
}

func newPodWorker(a *Agent, pod *v1.Pod) *podWorker {
	ctx, cancel := context.WithCancel(context.Background())
	w := &podWorker{
		a:         a,
		logger:    a.logger.With("pod", pod.Namespace+"/"+pod.Name, "podUID", string(pod.UID)),
		spec:      pod,
		reasons:   map[string]error{},
		startTime: a.clock.Now(),
		wake:      make(chan struct{}, 1),
		ctx:       ctx,
		cancel:    cancel,
		done:      make(chan struct{}),
		finished:  make(chan struct{}),
		// A pod marked deleted before it ran only tears down (kubelet).
		terminating: pod.DeletionTimestamp != nil,
	}
	if err := w.resize.Init(pod, a.podDir(pod), w.logger, w.event); err != nil { // resize.go
		a.logger.Warn("Ignoring an unreadable resources checkpoint", "pod", pod.Namespace+"/"+pod.Name, "err", err)
	}
	w.status = podstatus.Initial(pod, w.startTime)
	w.trigger()
	return w
}

// nextRestartCounts is, by container name, the restart count the next
// instance of each container that ran gets: one more than its last
// status says.
func (w *podWorker) nextRestartCounts() map[string]int {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := map[string]int{}
	for _, list := range [][]v1.ContainerStatus{w.status.InitContainerStatuses, w.status.ContainerStatuses, w.status.EphemeralContainerStatuses} {
		for _, cs := range list {
			if cs.ContainerID != "" {
				out[cs.Name] = int(cs.RestartCount) + 1
			}
		}
	}
	return out
}

// pod returns the newest spec the worker syncs: the desired one with the
// allocated resources (resize.go), which differ from the desired ones
// while a resize is pending, as the kubelet's pod worker syncs
// UpdatePodFromAllocation's pod.
func (w *podWorker) pod() *v1.Pod {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.resize.View(w.spec)
}

// update hands a new spec to the worker.
func (w *podWorker) update(p *v1.Pod) {
	w.mu.Lock()
	w.spec = p
	w.resize.Refresh(p)
	w.mu.Unlock()
	w.trigger()
}

// specChanged reports whether p differs from the newest spec, ignoring the
// deletion mark setDeletion put there (sources never carry it), with the
// generation it counted. Sources
// hand over their whole set at every change: an unchanged pod must neither
// wake its worker (100 pods submitted one after another would sync every
// running pod 100 times) nor lose the grace period of its deletion.
func (w *podWorker) specChanged(p *v1.Pod) bool {
	w.mu.Lock()
	cur := w.spec
	w.mu.Unlock()
	if cur == p {
		return false
	}
	if cur.DeletionTimestamp != nil || cur.DeletionGracePeriodSeconds != nil {
		c := *cur // a shallow copy: only its own deletion fields are set
		c.DeletionTimestamp, c.DeletionGracePeriodSeconds = p.DeletionTimestamp, p.DeletionGracePeriodSeconds
		c.Generation = p.Generation
		cur = &c
	}
	// reflect.DeepEqual is the cheap common case (an unchanged pod decoded
	// again); the semantic comparison decides the rest.
	return !reflect.DeepEqual(cur, p) && !equality.Semantic.DeepEqual(cur, p)
}

// admissionView is the pod as admission counts it, its spec (shared,
// read-only) and phase, without snapshot's deep copy.
func (w *podWorker) admissionView() *v1.Pod {
	w.mu.Lock()
	defer w.mu.Unlock()
	spec := w.resize.View(w.spec) // admission counts the allocated resources
	return &v1.Pod{ObjectMeta: spec.ObjectMeta, Spec: spec.Spec, Status: v1.PodStatus{Phase: w.status.Phase}}
}

// errPodTerminating is the cause of a sync's cancellation by a
// termination request.
var errPodTerminating = errors.New("the pod is being terminated")

// errPodEvicted is the cause of a sync's cancellation by an eviction.
var errPodEvicted = errors.New("the pod is being evicted")

// terminate asks the worker to tear the pod down and exit. A sync in
// flight is cancelled: the teardown follows at once.
func (w *podWorker) terminate() {
	w.mu.Lock()
	w.terminating = true
	w.cancelSyncLocked(errPodTerminating)
	w.mu.Unlock()
	w.trigger()
}

// cancelSyncLocked cancels the sync in flight, if any; w.mu is held.
func (w *podWorker) cancelSyncLocked(cause error) {
	if w.syncCancel != nil {
		w.syncCancel(cause)
	}
}

// agentStopping reports whether the agent stopped the worker (its own
// context ended).
func (w *podWorker) agentStopping() bool {
	return w.ctx != nil && w.ctx.Err() != nil
}

// killContext is the context of a kill begun under ctx (a sync's or the
// teardown's): it keeps ctx's values, and ends only when the agent stops
// (the worker's own context), not when a termination request cancels the
// sync. The stop is the kill's caller's to bound.
func (w *podWorker) killContext(ctx context.Context) (context.Context, context.CancelFunc) {
	kctx, cancel := context.WithCancelCause(context.WithoutCancel(ctx))
	if w.ctx == nil {
		return kctx, func() { cancel(nil) }
	}
	stop := context.AfterFunc(w.ctx, func() { cancel(context.Cause(w.ctx)) })
	return kctx, func() {
		stop()
		cancel(nil)
	}
}

// setDeletion marks the pod deleted through the API with an optional
// grace period, which then wins over the pod's own (kubelet-facts §7.1).
// bumpGeneration is for the local API, which plays the API server's part:
// a graceful deletion increments metadata.generation there.
func (w *podWorker) setDeletion(grace *int64, now time.Time, bumpGeneration bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	p := w.spec.DeepCopy()
	if p.DeletionTimestamp == nil {
		t := metav1.NewTime(now)
		p.DeletionTimestamp = &t
		if bumpGeneration {
			p.Generation++
		}
	}
	if grace != nil {
		g := *grace
		p.DeletionGracePeriodSeconds = &g
		w.killBy = now.Add(time.Duration(max(g, 1)) * time.Second)
		if w.graceCut != nil {
			close(w.graceCut)
		}
		w.graceCut = make(chan struct{})
	}
	w.spec = p
	// The allocated view (a resize pending, Deferred or Infeasible) must
	// carry the deletion too: w.pod() is what teardown and markDeleted read.
	w.resize.Refresh(p)
}

// killDeadline is when a kill must be over by the newest deletion's grace
// period (ok false: no such deadline) and a channel closed when a newer
// deletion sets another.
func (w *podWorker) killDeadline() (by time.Time, ok bool, changed <-chan struct{}) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.graceCut == nil {
		w.graceCut = make(chan struct{})
	}
	return w.killBy, !w.killBy.IsZero(), w.graceCut
}

// finish marks the pod finished (see podWorker.finished). A sync that
// found the pod over (asEvicted false: syncPod, failPod) leaves a pod the
// eviction manager evicted meanwhile to syncEvicted, which publishes it
// Failed/Evicted and removes its volumes before it finishes it. It reports
// whether this call finished the pod (false: not yet, or already).
func (w *podWorker) finish(asEvicted bool) (now bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.evicted != nil && !asEvicted {
		return false
	}
	w.finishOnce.Do(func() { close(w.finished); now = true })
	return now
}

// isFinished reports whether the pod is over (podWorker.finished).
func (w *podWorker) isFinished() bool {
	select {
	case <-w.finished:
		return true
	default:
		return false
	}
}

// isTerminating reports whether the worker is tearing its pod down.
func (w *podWorker) isTerminating() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.terminating
}

// trigger wakes the worker for a sync without blocking.
func (w *podWorker) trigger() {
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

// maxPromptSyncs bounds the syncs in a row that ask to sync again at once
// (promptResync); each takes one step of a pod's start (an init container,
// a sidecar), so a pod with more steps than this waits promptBrake between
// the extra ones. After that many, something undoes each sync's change.
const (
	maxPromptSyncs = 32
	promptBrake    = time.Second
)

// run is the worker's loop: sync, then wait for a wake-up or the requeue
// timer; tear down when terminating, retrying a teardown that failed until
// it succeeds or the agent stops.
func (w *podWorker) run() {
	defer w.cancel()
	// The first sync comes from the wake-up newPodWorker queued: a timer
	// firing at once as well would sync a new pod twice.
	timer := w.a.clock.NewTimer(w.a.cfg.ResyncPeriod)
	defer timer.Stop()
	teardownFailures := 0
	// prompt counts the syncs in a row that asked to sync again at once.
	prompt := 0
	for {
		select {
		case <-w.ctx.Done():
			return
		case <-w.wake:
		case <-timer.C():
		}
		w.mu.Lock()
		terminating := w.terminating
		w.busy = true
		var sctx context.Context
		if !terminating {
			// Under the lock terminate takes: a termination request
			// either comes first (no sync) or cancels this one.
			sctx, w.syncCancel = context.WithCancelCause(w.ctx)
		}
		w.mu.Unlock()
		if terminating {
			err := w.a.terminatePod(w.ctx, w)
			w.setIdle()
			if err == nil || w.ctx.Err() != nil {
				if err != nil {
					w.logger.Error("Pod teardown incomplete", "err", err)
				}
				w.tornDown = true
				return
			}
			// As the kubelet, keep trying until everything is gone: a
			// sandbox left behind would hold its IP and cgroup for good.
			teardownFailures++
			delay := backoff.TeardownRetry(teardownFailures)
			w.logger.Error("Pod teardown incomplete; retrying", "err", err, "retryIn", delay)
			if !timer.Stop() {
				select {
				case <-timer.C():
				default:
				}
			}
			timer.Reset(delay)
			continue
		}
		requeue := w.a.syncPod(sctx, w)
		if cause := context.Cause(sctx); cause != nil && w.ctx.Err() == nil {
			w.logger.Info("Pod sync cancelled", "cause", cause)
		}
		w.setIdle()
		if requeue > 0 {
			prompt = 0
		} else if prompt++; prompt <= maxPromptSyncs {
			// At once (promptResync): through the wake-up channel, as a
			// zero timer on a fake clock would never fire. The timer
			// still covers the periodic resync.
			w.trigger()
			requeue = w.a.cfg.ResyncPeriod
		} else {
			// A brake, should a runtime keep undoing what each sync does
			// (a container that stays UNKNOWN after every stop).
			w.logger.Warn("Pod synced at once too many times in a row; slowing down", "syncs", prompt)
			requeue = promptBrake
		}
		if !timer.Stop() {
			select {
			case <-timer.C():
			default:
			}
		}
		timer.Reset(requeue)
	}
}

// maxHeldEvents bounds the runtime events a busy worker keeps; past it,
// the worker syncs again after its sync whatever they said.
const maxHeldEvents = 16

// runtimeEvent wakes the worker for a runtime event of its pod unless its
// newest observation covers it (fingerprint.Covers; a stop never is), as
// the relister wakes it only for what it has not seen: a sync ends by
// observing what it created and started, so the events of its own start
// would give every new pod a second sync that finds nothing new, at the cost of two lists
// of every pod on the node and two statuses (issue #27: 110 pods started
// at once). An event that comes while the worker is busy waits for the
// sync's closing observation (setIdle).
func (w *podWorker) runtimeEvent(ev *runtimeapi.ContainerEventResponse) {
	w.mu.Lock()
	if w.busy {
		if len(w.heldEvents) < maxHeldEvents {
			w.heldEvents = append(w.heldEvents, ev)
		} else {
			w.heldOverflow = true
		}
		w.mu.Unlock()
		return
	}
	seen := w.observedOnce && fingerprint.Covers(w.observed, ev)
	w.mu.Unlock()
	if !seen {
		w.trigger()
	}
}

// setIdle marks the end of a sync or teardown attempt, and wakes the
// worker again for a runtime event held meanwhile that its observation
// does not cover (runtimeEvent).
func (w *podWorker) setIdle() {
	w.mu.Lock()
	w.busy = false
	wake := w.heldOverflow
	for _, ev := range w.heldEvents {
		wake = wake || !w.observedOnce || !fingerprint.Covers(w.observed, ev)
	}
	w.heldEvents, w.heldOverflow = nil, false
	if wake {
		w.trigger()
	}
	if w.syncCancel != nil {
		w.syncCancel(nil) // releases the sync's context
		w.syncCancel = nil
	}
	w.mu.Unlock()
}

// setObserved records what the worker just observed in the runtime.
func (w *podWorker) setObserved(st *podState) {
	fp := st.fingerprint()
	earliest := st.earliestCreated()
	w.mu.Lock()
	defer w.mu.Unlock()
	w.observed = fp
	if w.observedOnce {
		return
	}
	w.observedOnce = true
	// The worker's first look: what the runtime already holds of the pod
	// was made by an earlier agent process (a restart adopts it; teardown
	// removes a deleted pod's sandboxes, so a UID seen again is the same
	// pod). The pod started when its oldest object was created, not when
	// this process accepted it: status.startTime and, for a pod no API
	// server stamps, the creationTimestamp keep their values across
	// restarts, as the kubelet's pod objects keep theirs in the API
	// server. Its start is not this process's to measure (pod start SLI).
	if earliest != 0 {
		if t := time.Unix(0, earliest); t.Before(w.startTime) {
			w.startTime = t
		}
		w.startObserved = true
	}
}

// observedNothing reports whether the worker's newest observation found
// no sandbox or container of its pod (or it has observed nothing yet).
func (w *podWorker) observedNothing() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.observed == ""
}

// event records a kubelet-style event and tells the observer.
func (w *podWorker) event(typ, reason, format string, args ...any) {
	w.containerEvent("", typ, reason, format, args...) // events.go
}

// step records one link of the startup chain.
func (w *podWorker) step(name string, d time.Duration, detail string) {
	s := podevents.Step{Name: name, Duration: d, Detail: detail, At: w.a.clock.Now()}
	w.mu.Lock()
	w.steps = append(w.steps, s)
	if name == podevents.StepImage {
		w.pulls += d
	}
	pod := w.spec
	w.mu.Unlock()
	w.a.observer.PodStep(pod, s)
}

// setReason caches (err != nil) or clears a container's start failure.
func (w *podWorker) setReason(container string, err error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if err == nil {
		delete(w.reasons, container)
	} else {
		w.reasons[container] = err
	}
}

// pullTime returns the time spent pulling the pod's images.
func (w *podWorker) pullTime() time.Duration {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.pulls
}

// startRecorded reports whether the pod start was already recorded, and
// marks it so.
func (w *podWorker) startRecorded() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	seen := w.startObserved
	w.startObserved = true
	return seen
}

// firstOOM reports whether the OOM kill of that container instance is new,
// and marks it reported.
func (w *podWorker) firstOOM(id string) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.oomReported[id] {
		return false
	}
	if w.oomReported == nil {
		w.oomReported = map[string]bool{}
	}
	w.oomReported[id] = true
	return true
}

// readySeen reports whether the pod was Ready before (the first time is
// the end of the startup chain) and marks it so.
func (w *podWorker) readySeen() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	seen := w.wasReady
	w.wasReady = true
	return seen
}

// sandboxStopped reports whether this worker already stopped the sandbox.
func (w *podWorker) sandboxStopped(id string) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.stoppedSandboxes[id]
}

// markSandboxStopped remembers that the sandbox was stopped.
func (w *podWorker) markSandboxStopped(id string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.stoppedSandboxes == nil {
		w.stoppedSandboxes = map[string]bool{}
	}
	w.stoppedSandboxes[id] = true
}

// setNetworkNotReady records why the pod waits for the network ("" clears).
func (w *podWorker) setNetworkNotReady(msg string) {
	w.mu.Lock()
	w.networkNotReady = msg
	w.mu.Unlock()
}

// setStatus stores a new status and tells the observer when it changed.
func (w *podWorker) setStatus(st v1.PodStatus) {
	w.mu.Lock()
	st = termmsg.Limit(&w.spec.Spec, st)
	same := equality.Semantic.DeepEqual(w.status, st)
	w.status = st
	w.mu.Unlock()
	// The daemon observes nothing: no copy of the pod for nobody.
	if _, nop := w.a.observer.(podevents.Nop); !same && !nop && !w.quiet {
		w.a.observer.PodStatus(w.snapshot())
	}
}

// snapshot returns a copy of the pod carrying its current status.
func (w *podWorker) snapshot() *v1.Pod {
	w.mu.Lock()
	defer w.mu.Unlock()
	p := w.spec.DeepCopy()
	p.Status = *w.status.DeepCopy()
	if p.CreationTimestamp.IsZero() {
		// No API server stamps it: the pod exists since the agent took it.
		p.CreationTimestamp = metav1.NewTime(w.startTime)
	}
	return p
}

// Events returns a copy of the pod's events, oldest first.
func (w *podWorker) eventList() []podevents.Event {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.events.List()
}
