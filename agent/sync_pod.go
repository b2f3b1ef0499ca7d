package agent

// Over 600 lines: syncPod and the steps it runs in order (observe, plan, kill, start,
// prune); planning is pure in plan.go, sandbox and container creation in
// sync_sandbox.go and container.go.

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/minikubelet/minikubelet/agent/images"
	"github.com/minikubelet/minikubelet/agent/lifecycle"
	"github.com/minikubelet/minikubelet/agent/logrotate"
	"github.com/minikubelet/minikubelet/agent/manifest"
	"github.com/minikubelet/minikubelet/agent/podevents"
	"github.com/minikubelet/minikubelet/agent/podspec"
	"github.com/minikubelet/minikubelet/cri"
)

// Back-off reasons (kubelet-facts §1).
var (
	ErrCrashLoopBackOff = errors.New("CrashLoopBackOff")
	ErrImagePullBackOff = images.ErrImagePullBackOff
)

// networkRetryPeriod is how soon a pod waiting for the pod network is
// synced again (the kubelet's backOffOnTransientErrorPeriod).
const networkRetryPeriod = time.Second

// syncResult collects what one sync learned, for the requeue decision.
type syncResult struct {
	mu sync.Mutex
	// failed is set when any step failed.
	failed bool
	// retryIn is the soonest a back-off expires (0 = none).
	retryIn time.Duration

	// What the sync changed in the runtime, so that its closing
	// observation asks only about that (refreshPodState).
	// sandbox is the sandbox it created, from its PodSandboxStatus.
	sandbox *sandboxInfo
	// touched maps the containers it created or stopped to their sandbox.
	touched map[string]string
	// removed are the containers it removed.
	removed []string
	// observeAll is set when the sync changed more than the above records
	// (the whole pod was killed, or a step lost track of what it did).
	observeAll bool
	// killed is set when killing the whole pod stopped something (a
	// running container or a sandbox this worker had not stopped yet).
	killed bool
}

// changed reports whether the sync itself changed the runtime: created a
// sandbox, created, started, stopped or removed a container, or stopped a
// sandbox. Planning alone (a start held back by back-off) is no change.
func (r *syncResult) changed() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.sandbox != nil || len(r.touched) > 0 || len(r.removed) > 0 || r.killed
}

// touch records a container the sync created or stopped.
func (r *syncResult) touch(id, sandboxID string) {
	r.mu.Lock()
	if r.touched == nil {
		r.touched = map[string]string{}
	}
	r.touched[id] = sandboxID
	r.mu.Unlock()
}

// remove records a container the sync removed.
func (r *syncResult) remove(id string) {
	r.mu.Lock()
	r.removed = append(r.removed, id)
	r.mu.Unlock()
}

// lostTrack makes the closing observation a full one.
func (r *syncResult) lostTrack() {
	r.mu.Lock()
	r.observeAll = true
	r.mu.Unlock()
}

func (r *syncResult) fail() {
	r.mu.Lock()
	r.failed = true
	r.mu.Unlock()
}

func (r *syncResult) retryAfter(d time.Duration) {
	r.mu.Lock()
	if r.retryIn == 0 || d < r.retryIn {
		r.retryIn = d
	}
	r.mu.Unlock()
}

// syncPod moves one pod one step closer to its spec and returns when the
// worker should sync it again (house style rule 2: observe, plan, execute):
//
//  1. Observe the pod's sandboxes and containers in the runtime.
//  2. Plan with computePodActions.
//  3. Kill what must go: the whole pod, or single containers.
//  4. Publish what step 1 saw when the plan changes anything (as the
//     kubelet, before its runtime's SyncPod); create the sandbox when
//     needed, pulling the pod's images meanwhile;
//     then, when containers are to start, the images of its image volumes
//     (a pod whose image volumes the runtime cannot mount, or whose
//     user namespace it cannot make, is failed before step 1, as a pod
//     past its deadline).
//  5. Start the next init container.
//  6. Start the app containers, concurrently.
//  7. Prune dead instances and publish the status from a fresh observation
//     of what the sync changed; a pod in a terminal phase with nothing
//     left to stop is finished (podWorker.finished).
//  8. Requeue: at once when the sync's own change lets the next step go
//     (promptResync), else when a back-off expires, after ErrorBackoff
//     on failure, or at the periodic resync.
//
// A returned duration of 0 means "sync again at once".
func (a *Agent) syncPod(ctx context.Context, w *podWorker) (next time.Duration) {
	if w.isFinished() {
		// The pod is over (completed, failed or evicted): nothing of it
		// runs again, and its status stays as published when it
		// finished, whatever GC has removed of it since.
		a.retryFinalStatus(w) // a write of it that failed (final_status.go)
		return a.cfg.ResyncPeriod
	}
	w.mu.Lock()
	ev := w.evicted
	w.mu.Unlock()
	if ev != nil {
		return a.syncEvicted(ctx, w, ev) // eviction_engine.go
	}
	pod := w.pod()
	res := &syncResult{}
	// A pod with an active deadline is synced again when it falls due,
	// whatever else the requeue says (deadline.go).
	failed, due := a.checkActiveDeadline(w, pod)
	if !failed {
		// Image volumes the runtime cannot mount fail the pod before
		// anything of it is created (imagevolume.go).
		failed = a.refuseImageVolumes(ctx, w, pod)
	}
	if !failed {
		// So does hostUsers: false on a runtime without user
		// namespaces (userns.go).
		failed = a.refuseUserNamespaces(ctx, w, pod)
	}
	if due > 0 {
		defer func() {
			if next > due {
				next = due
			}
		}()
	}

	// Step 1: observe. A worker that has seen nothing of its pod yet (a
	// new pod) will most likely create its sandbox next: what that needs
	// first is looked after while the pod is observed (sandboxPrelude).
	var pre *sandboxPrelude
	if w.observedNothing() && !failed {
		pre = a.startSandboxPrelude(ctx, pod)
		defer pre.wait()
	}
	st, err := a.observePod(ctx, pod)
	if err != nil {
		w.logger.Warn("Observe pod failed", "err", err)
		return a.cfg.ErrorBackoff
	}
	w.setObserved(st)

	a.reportOOMKills(w, st)
	if failed {
		// Step 1b: a pod failed for good (past its active deadline) is
		// only killed.
		return a.failPod(ctx, w, pod, st)
	}
	// Labels, annotations, ConfigMaps or Secrets may have changed: the data
	// volumes already set up follow them (projection.go).
	a.volumes().RefreshDataVolumes(w.logger, pod)

	// Step 2: plan, with what the prober knows of the running containers.
	a.updateProbes(pod, st)
	act := computePodActions(pod, st, a.probeView(pod))
	// Step 2b: an in-place resize: restarts its resizePolicy asks for
	// join the plan's kills and starts (resize.go).
	ra := a.planResize(w, pod, st, &act)
	w.logger.Debug("Sync pod", "actions", act.String())

	// Step 3: kill.
	if act.KillPod {
		if act.CreateSandbox && len(st.sandboxes) > 0 {
			w.event(v1.EventTypeNormal, "SandboxChanged", "Pod sandbox changed, it will be killed and re-created.")
		}
		res.lostTrack()
		if podKillChanges(w, st) {
			res.mu.Lock()
			res.killed = true
			res.mu.Unlock()
		}
		if err := a.killPod(ctx, w, st, podspec.GracePeriod(pod)); err != nil {
			w.logger.Warn("Kill pod failed", "err", err)
			res.fail()
		}
	} else {
		for id, kr := range act.ContainersToKill {
			w.logger.Info("Killing container", "containerID", id, "reason", kr.Message)
			res.touch(id, sandboxOf(st, id))
			if err := a.killContainer(ctx, w, id, kr.Name, kr.Message, podspec.KillGracePeriod(pod, kr.Probe)); err != nil {
				res.fail()
			}
		}
	}

	// Step 3b: resize the running containers in place (resize.go).
	var resizeErr error
	if !act.KillPod && !act.CreateSandbox && ra.InPlace() {
		if resizeErr = a.doResize(ctx, w, pod, ra); resizeErr != nil {
			w.logger.Warn("Resize in place failed", "err", resizeErr)
			res.fail()
		}
	}

	// Step 4: sandbox, with the images pulled concurrently. A pod network
	// that is not ready would only make RunPodSandbox fail after CNI ADD:
	// wait for it, and say why, as the kubelet does.
	if act.CreateSandbox && !pod.Spec.HostNetwork {
		ns := pre.networkState(ctx, a)
		if !ns.ready {
			msg := ns.message
			if ns.err != nil {
				msg = cri.Message(ns.err)
			}
			text := fmt.Sprintf("network is not ready: container runtime network not ready: NetworkReady=false reason:%s message:%s; %s", ns.reason, msg, a.podNetworkHint())
			w.event(v1.EventTypeWarning, "NetworkNotReady", "%s", text)
			w.setNetworkNotReady(text)
			w.setStatus(a.computePodStatus(w, pod, st))
			return networkRetryPeriod
		}
		w.setNetworkNotReady("")
	}
	// Publish what was observed before the sandbox, pulls and starts, as
	// the kubelet's syncPod before its runtime's SyncPod: a new pod Pending
	// with Ready False (a ClusterTrustBundle [Conformance] spec reads it
	// within 10 s, image still pulling); a dead container terminated before
	// its restart (TestChaosContainerdKill gives that 5 s). Not a terminal
	// phase: its sidecars may still run until the kills (e2e_node).
	if act.changesRuntime() {
		if s := a.computePodStatus(w, pod, st); s.Phase != v1.PodSucceeded && s.Phase != v1.PodFailed {
			w.setStatus(s)
		}
	}
	sb, prepulled := a.ensureSandbox(ctx, w, pod, st, act, res, pre)

	if sb != nil && startsContainers(act) {
		// Step 4b: the images of the image volumes, before any container
		// that may mount them is created (agent/images).
		sb.imageVolumes = a.imageManager().PullVolumes(ctx, pod, w.pullReport(""), sb.config, res.retryAfter)
	}
	if sb != nil {
		// Step 5: next init container.
		if i := act.NextInitContainer; i >= 0 {
			a.startOne(ctx, w, sb, st, &pod.Spec.InitContainers[i], podspec.ContainerTypeInit, prepulled, res)
		}
		// Step 6: sidecar restarts and app containers, concurrently (the
		// kubelet starts them one after another), except that one with a
		// postStart hook holds the next until its hook ended, as the
		// kubelet's start of a container includes its hook.
		var wg sync.WaitGroup
		for _, i := range act.InitContainersToStart {
			wg.Add(1)
			go func() {
				defer wg.Done()
				a.startOne(ctx, w, sb, st, &pod.Spec.InitContainers[i], podspec.ContainerTypeInit, prepulled, res)
			}()
		}
		for _, i := range act.ContainersToStart {
			wg.Add(1)
			go func() {
				defer wg.Done()
				a.startOne(ctx, w, sb, st, &pod.Spec.Containers[i], podspec.ContainerTypeRegular, prepulled, res)
			}()
			if lc := pod.Spec.Containers[i].Lifecycle; lc != nil && lc.PostStart != nil {
				wg.Wait()
			}
		}
		for _, i := range act.EphemeralContainersToStart {
			wg.Add(1)
			go func() {
				defer wg.Done()
				a.startEphemeral(ctx, w, sb, st, manifest.EphemeralContainer(&pod.Spec.EphemeralContainers[i]), prepulled, res)
			}()
		}
		wg.Wait()
	}

	// Step 7: prune and publish. A sync that changed nothing (the common
	// resync of a running pod) reuses its first observation instead of
	// asking the runtime again; one that did asks about what it changed.
	st2 := st
	if act.changesRuntime() {
		st2, err = a.refreshPodState(ctx, pod, st, res)
		if err != nil {
			w.logger.Warn("Observe pod failed", "err", err)
			return a.cfg.ErrorBackoff
		}
	}
	if removed := a.pruneContainers(ctx, w, st2); len(removed) > 0 {
		st2 = st2.without(removed)
	}
	w.setObserved(st2)
	a.updateProbes(pod, st2)
	w.resize.Finish(pod, runningIn(st2), resizeErr, a.clock.Now()) // resize.go
	status := a.computePodStatus(w, pod, st2)
	w.setStatus(status)
	a.finishIfOver(w, status.Phase, st2)

	// Step 8: requeue.
	if a.promptResync(pod, st2, res, w) {
		w.logger.Debug("Sync pod again at once: its own change lets the next step go")
		return 0
	}
	switch {
	case res.retryIn > 0 && (!res.failed || res.retryIn < a.cfg.ErrorBackoff):
		return res.retryIn
	case res.failed:
		return a.cfg.ErrorBackoff
	}
	return a.cfg.ResyncPeriod
}

// promptResync reports whether the pod must be synced again at once because
// the sync's own change is the condition of the next step: an init
// container that completed while it was started, a native sidecar started
// (without a startup probe it counts as started at once, and the next init
// container or the app containers may go), a container killed whose pod is
// now done, a sandbox created. The kubelet gets this next sync from the
// PLEG event of its own change; here the relister wakes a worker only for
// what the worker has not seen, and its sync ends by observing what it
// changed, so nothing else would wake it before the periodic resync.
//
// The rule is: the sync changed the runtime, did not fail, and the plan
// recomputed on its closing observation st2 has a step that changes the
// runtime and is not held back by back-off. It cannot loop hot:
//   - every prompt sync follows a sync that made a change of its own, and
//     a start held back by crash or image-pull back-off is no step: the
//     sync is requeued when that back-off ends instead, so a crash-looping
//     container is restarted at its back-off's pace;
//   - a failed step (a start, a pull, a kill, a sandbox) sets res.failed:
//     the requeue is ErrorBackoff or the back-off's, never at once;
//   - a pod waiting for the pod network returns before this (every
//     networkRetryPeriod), having changed nothing;
//   - killing a pod that has nothing running and no sandbox left to stop
//     is no change (podKillChanges), so a finished pod, which the plan
//     always asks to kill, is not synced again;
//   - a step gated by a probe (startup not yet succeeded) is no step of
//     the plan: the probe's result change wakes the worker instead;
//   - should a runtime undo every change anyway (a container that stays
//     UNKNOWN after each stop), the worker brakes after maxPromptSyncs
//     syncs at once in a row.
//
// A step held back by back-off is recorded in res (retryAfter), so the
// sync is requeued when it is due.
//
// Requeuing at once after any change, without the plan, would cost every
// new pod a second, useless sync (the plan of a pod whose app containers
// were just started is empty) and sync a crash-looping pod once more per
// restart for nothing.
func (a *Agent) promptResync(pod *v1.Pod, st2 *podState, res *syncResult, w *podWorker) bool {
	res.mu.Lock()
	failed := res.failed
	res.mu.Unlock()
	if failed || !res.changed() {
		return false
	}
	next := computePodActions(pod, st2, a.probeView(pod))
	switch {
	case next.KillPod:
		return podKillChanges(w, st2) || next.CreateSandbox
	case next.CreateSandbox, len(next.ContainersToKill) > 0:
		return true
	}
	var starts []*v1.Container
	if i := next.NextInitContainer; i >= 0 {
		starts = append(starts, &pod.Spec.InitContainers[i])
	}
	for _, i := range next.InitContainersToStart {
		starts = append(starts, &pod.Spec.InitContainers[i])
	}
	for _, i := range next.ContainersToStart {
		starts = append(starts, &pod.Spec.Containers[i])
	}
	prompt := false
	for _, c := range starts {
		if left, held := a.startHeldBack(pod, c, st2); held {
			// The step is due when its back-off ends (a container that
			// exited before the closing observation: the relister will
			// not wake the worker for it).
			res.retryAfter(left)
			continue
		}
		prompt = true
	}
	return prompt
}

// startHeldBack reports whether startOne would not start c now because of
// a crash or image-pull back-off (the same checks, without their effects),
// and how long the back-off has left.
func (a *Agent) startHeldBack(pod *v1.Pod, c *v1.Container, st *podState) (time.Duration, bool) {
	now := a.clock.Now()
	if prev := st.latest(c.Name); prev != nil && !interruptedStart(prev) {
		finished := time.Unix(0, prev.finishedAt)
		if in, delay := a.crashBackoff.InBackoffSince(podspec.CrashBackoffKey(pod, c), finished, now); in {
			return max(finished.Add(delay).Sub(now), time.Millisecond), true
		}
	}
	if in, left := a.imageBackoff.InBackoffSinceUpdate(podspec.ImageBackoffKey(pod, c.Image), now); in {
		return max(left, time.Millisecond), true
	}
	return 0, false
}

// podKillChanges reports whether killing the whole pod would change the
// runtime: a container runs (or is in an unknown state), or a sandbox was
// not stopped by this worker yet (killPod's own checks).
func podKillChanges(w *podWorker, st *podState) bool {
	for _, c := range st.containers {
		if c.state == runtimeapi.ContainerState_CONTAINER_RUNNING || c.state == runtimeapi.ContainerState_CONTAINER_UNKNOWN {
			return true
		}
	}
	for _, sb := range st.sandboxes {
		if !w.sandboxStopped(sb.id) {
			return true
		}
	}
	return false
}

// finishIfOver finishes the pod (podWorker.finished) once its phase is
// terminal and its kill is complete: nothing runs and every sandbox was
// stopped (podKillChanges). This is where the kubelet's pod worker, after
// SyncPod reported the pod terminal, runs SyncTerminatingPod and
// SyncTerminatedPod and marks it terminated (terminatedAt), which makes
// its runtime removable (ShouldPodRuntimeBeRemoved) under disk pressure.
func (a *Agent) finishIfOver(w *podWorker, phase v1.PodPhase, st *podState) {
	if (phase == v1.PodSucceeded || phase == v1.PodFailed) && !podKillChanges(w, st) {
		a.finishPod(w, false) // final_status.go
	}
}

// sandboxOf returns the sandbox of an observed container ("" if unknown).
func sandboxOf(st *podState, id string) string {
	for _, c := range st.containers {
		if c.id == id {
			return c.sandboxID
		}
	}
	return ""
}

// refreshPodState is the observation that closes a sync which changed the
// runtime. The sync knows what it changed: the sandbox it created came
// with its status, and only the containers it created or stopped need a
// ContainerStatus; everything else is as the sync's first observation
// found it (a change the runtime made by itself meanwhile differs from
// what the worker saw, so the next relist wakes the worker for it). A sync
// that killed the whole pod, or lost track of a step, observes it all.
func (a *Agent) refreshPodState(ctx context.Context, pod *v1.Pod, st *podState, res *syncResult) (*podState, error) {
	res.mu.Lock()
	all, created, touched, removed := res.observeAll, res.sandbox, res.touched, res.removed
	res.mu.Unlock()
	if all {
		return a.observePod(ctx, pod)
	}
	out := &podState{sandboxes: slices.Clone(st.sandboxes)}
	if created != nil {
		out.sandboxes = append(out.sandboxes, created)
		out.sortSandboxes()
	}
	for _, c := range st.containers {
		if _, ok := touched[c.id]; !ok && !slices.Contains(removed, c.id) {
			out.containers = append(out.containers, c)
		}
	}
	for id, sandboxID := range touched {
		resp, err := a.runtime.ContainerStatus(ctx, id, false)
		switch {
		case cri.IsNotFound(err):
			continue
		case err != nil:
			return nil, fmt.Errorf("container status %s: %w", id, err)
		}
		if s := resp.GetStatus(); s != nil {
			out.containers = append(out.containers, a.containerFromStatus(s, sandboxID))
		}
	}
	out.sortContainers()
	return out, nil
}

// pullResult is the outcome of one image pull made during sandbox creation.
type pullResult = images.PullResult

// startOne starts one container unless it is backing off, and records the
// outcome in the reason cache.
func (a *Agent) startOne(ctx context.Context, w *podWorker, sb *sandboxInfo, st *podState, c *v1.Container, ctype string, prepulled map[string]pullResult, res *syncResult) {
	pod := w.pod()
	prev := st.latest(c.Name)
	// Without any earlier instance (removed by GC, or a reboot), the
	// restart count continues from the log files, as the kubelet does, or
	// from the pod's earlier run when it was torn down and came back
	// (restartBase).
	restartCount := max(logrotate.RestartCountFromLogs(filepath.Join(sb.config.LogDirectory, c.Name)), w.restartBase[c.Name])
	if interruptedStart(prev) {
		// The start the agent did not finish (see interruptedStart): the
		// instance goes, and its replacement takes its place and count.
		if err := a.removeContainer(ctx, w, prev.id); err != nil {
			w.logger.Warn("Remove container whose start was interrupted failed", "containerID", prev.id, "err", err)
			res.fail()
			return
		}
		res.remove(prev.id)
		w.logger.Info("Replacing a container whose start was interrupted", "container", c.Name, "containerID", prev.id, "state", prev.state.String())
		a.termMessages.Forget(prev.id)
		restartCount = prev.restartCount
		prev = nil
	}
	if prev != nil {
		restartCount = prev.restartCount + 1
		// Crash back-off, measured from the previous instance's finish.
		key := podspec.CrashBackoffKey(pod, c)
		finished := time.Unix(0, prev.finishedAt)
		if in, delay := a.crashBackoff.InBackoffSince(key, finished, a.clock.Now()); in {
			err := newReasonError(ErrCrashLoopBackOff, "back-off %s restarting failed container=%s pod=%s_%s(%s)", delay, c.Name, pod.Name, pod.Namespace, pod.UID)
			w.setReason(c.Name, err)
			w.containerEvent(c.Name, v1.EventTypeWarning, "BackOff", "Back-off restarting failed container %s in pod %s_%s(%s)", c.Name, pod.Name, pod.Namespace, pod.UID)
			res.retryAfter(finished.Add(delay).Sub(a.clock.Now()))
			return
		}
		a.crashBackoff.Next(key, finished)
		a.metrics.Restarts.Inc()
	}
	pr, pulled := prepulled[c.Image]
	if pulled && pr.Err != nil {
		w.setReason(c.Name, pr.Err)
		res.fail()
		return
	}
	if !pulled && a.imageInBackoff(pod, c) {
		_, left := a.imageBackoff.InBackoffSinceUpdate(podspec.ImageBackoffKey(pod, c.Image), a.clock.Now())
		w.setReason(c.Name, newReasonError(ErrImagePullBackOff, "Back-off pulling image %q", c.Image))
		w.containerEvent(c.Name, v1.EventTypeNormal, "BackOff", "Back-off pulling image %q", c.Image)
		res.retryAfter(left)
		return
	}
	vols, err := images.ContainerVolumes(pod, c, sb.imageVolumes, w.pullReport(c.Name).Event)
	if err != nil {
		w.setReason(c.Name, err)
		if !errors.Is(err, ErrImagePullBackOff) { // back-off: requeued when it ends
			res.fail()
		}
		return
	}
	id, err := a.startContainer(ctx, w, sb, c, ctype, restartCount, pr.Ref, pr.Image, vols)
	if id != "" {
		res.touch(id, sb.id)
		if ctype != podspec.ContainerTypeInit || isSidecar(c) {
			w.resize.RecordActuated(c) // created with its allocated resources (resize.go)
		}
	}
	if err != nil {
		if errors.Is(err, ErrImagePull) && !pulled {
			a.imageBackoff.Next(podspec.ImageBackoffKey(pod, c.Image), a.clock.Now())
		}
		w.setReason(c.Name, err)
		res.fail()
		return
	}
	w.setReason(c.Name, nil)
}

// killPod stops the pod's running containers, then every sandbox, in the
// kubelet's order (lifecycle.TerminationOrder): every kill begins at once,
// native sidecars stop last, in reverse spec order (kubelet-facts §2.5).
func (a *Agent) killPod(ctx context.Context, w *podWorker, st *podState, grace int64) error {
	var (
		wg      sync.WaitGroup
		mu      sync.Mutex
		errs    []error
		running []*containerInfo
		names   []string
	)
	t0 := a.clock.Now()
	for _, c := range st.containers {
		if c.state == runtimeapi.ContainerState_CONTAINER_RUNNING || c.state == runtimeapi.ContainerState_CONTAINER_UNKNOWN {
			running, names = append(running, c), append(names, c.name)
		}
	}
	order := lifecycle.NewTerminationOrder(w.pod(), names)
	for _, c := range running {
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer order.Exited(c.name)
			if err := a.killContainerAfter(ctx, w, c.id, c.name, "", grace, order); err != nil {
				mu.Lock()
				errs = append(errs, err)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	stopped := 0
	for _, sb := range st.sandboxes {
		// A sandbox this worker already stopped needs nothing more; one
		// that died by itself still needs StopPodSandbox (CNI DEL frees
		// its IP).
		if w.sandboxStopped(sb.id) {
			continue
		}
		if err := a.runtime.StopPodSandbox(ctx, sb.id); err != nil && !cri.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("stop sandbox %s: %w", shortID(sb.id), err))
			continue
		}
		w.markSandboxStopped(sb.id)
		stopped++
	}
	if running := countRunning(st); len(errs) == 0 && (stopped > 0 || running > 0) {
		w.step(podevents.StepKilled, a.clock.Since(t0), fmt.Sprintf("%d container(s), %d sandbox(es)", running, stopped))
	}
	return errors.Join(errs...)
}

func countRunning(st *podState) int {
	n := 0
	for _, c := range st.containers {
		if c.state == runtimeapi.ContainerState_CONTAINER_RUNNING {
			n++
		}
	}
	return n
}

// pruneContainers removes dead instances beyond the newest one per
// container name (kept for logs --previous) and dead sandboxes other than
// the newest. It returns the IDs of what it removed.
func (a *Agent) pruneContainers(ctx context.Context, w *podWorker, st *podState) []string {
	var removed []string
	seen := map[string]bool{}
	for _, c := range st.containers { // newest first
		dead := c.state == runtimeapi.ContainerState_CONTAINER_EXITED
		if !dead {
			continue
		}
		if !seen[c.name] {
			seen[c.name] = true
			continue
		}
		if err := a.removeContainer(ctx, w, c.id); err != nil {
			w.logger.Warn("Remove dead container failed", "containerID", c.id, "err", err)
			continue
		}
		a.termMessages.Forget(c.id)
		removed = append(removed, c.id)
	}
	for i, sb := range st.sandboxes {
		if i == 0 || sb.ready {
			continue
		}
		inUse := false
		for _, c := range st.containers {
			if c.sandboxID == sb.id && !slices.Contains(removed, c.id) {
				inUse = true
			}
		}
		if inUse {
			continue
		}
		if err := a.runtime.RemovePodSandbox(ctx, sb.id); err != nil && !cri.IsNotFound(err) {
			w.logger.Warn("Remove dead sandbox failed", "sandboxID", sb.id, "err", err)
			continue
		}
		removed = append(removed, sb.id)
	}
	return removed
}

// shortID is the first 13 characters of a runtime ID, as crictl prints.
func shortID(id string) string {
	id = strings.TrimPrefix(id, "sha256:")
	if len(id) > 13 {
		return id[:13]
	}
	return id
}

// reportOOMKills records a Warning event, once per container instance, for
// containers the kernel killed for exceeding their memory limit.
func (a *Agent) reportOOMKills(w *podWorker, st *podState) {
	for _, c := range st.containers {
		if c.state != runtimeapi.ContainerState_CONTAINER_EXITED || c.reason != "OOMKilled" || !w.firstOOM(c.id) {
			continue
		}
		limit := ""
		for _, list := range [][]v1.Container{w.pod().Spec.InitContainers, w.pod().Spec.Containers} {
			for i := range list {
				if list[i].Name == c.name {
					if m, ok := list[i].Resources.Limits[v1.ResourceMemory]; ok {
						limit = " of " + m.String()
					}
				}
			}
		}
		w.containerEvent(c.name, v1.EventTypeWarning, "OOMKilled", "Container %s was killed by the kernel for exceeding its memory limit%s (exit code %d)", c.name, limit, c.exitCode)
	}
}
