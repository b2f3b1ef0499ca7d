package agent

// Teardown: a pod that left the desired set is stopped, its final status
// published, and everything of it removed from the runtime and the host
// (split out of sync_pod.go, which does the syncs of a pod that stays).

import (
	"context"
	"errors"
	"fmt"

	v1 "k8s.io/api/core/v1"

	"github.com/minikubelet/minikubelet/agent/logrotate"
	"github.com/minikubelet/minikubelet/agent/podevents"
	"github.com/minikubelet/minikubelet/agent/podspec"
	"github.com/minikubelet/minikubelet/agent/podstatus"
	"github.com/minikubelet/minikubelet/cri"
)

// terminatePod tears the pod down completely: containers stopped with the
// grace period, sandboxes stopped (containerd runs CNI DEL: the IP is
// released), then every sandbox removed with its containers, and the pod's
// directories deleted. Each step is attempted even if an earlier one
// failed.
//
// Teardown needs the pod's objects and their states, not their statuses:
// the runtime's lists are enough (listPod). RemovePodSandbox removes the
// sandbox's containers first (containerd 1.6 and 2.x alike), so containers
// are removed one by one only when their sandbox could not be removed or
// is not listed; a container with a task containerd left behind (a start
// cut short on 2.x) has that task deleted first (removeContainer).
func (a *Agent) terminatePod(ctx context.Context, w *podWorker) error {
	pod := w.pod()
	// A container being stopped must not be restarted by its liveness
	// probe meanwhile; readiness keeps reporting until the stop ended.
	a.probes.StopLivenessAndStartup(pod.UID)
	defer a.probes.RemovePod(pod.UID)
	stopped := a.stops.Stopping()
	defer stopped()
	st, err := a.listPod(ctx, pod)
	if err != nil {
		return fmt.Errorf("observe pod for teardown: %w", err)
	}
	var errs []error
	if err := a.killPod(ctx, w, st, podspec.GracePeriod(pod)); err != nil {
		errs = append(errs, err)
	} else {
		a.publishStopped(ctx, w, pod, st)
	}
	// The removal after the other pods' stops (agent/stopgate); nothing
	// left to probe meanwhile.
	a.probes.RemovePod(pod.UID)
	stopped()
	a.stops.HoldRemoval(ctx)
	t0 := a.clock.Now()
	gone := map[string]bool{}
	for _, sb := range st.sandboxes {
		err := a.runtime.RemovePodSandbox(ctx, sb.id)
		if cri.IsStuckTask(err) {
			// A container with a task containerd left behind keeps its
			// sandbox: removing it deletes that task (removeContainer),
			// then the sandbox can go.
			for _, c := range st.containers {
				if c.sandboxID == sb.id {
					_ = a.removeContainer(ctx, w, c.id) // reported below if it stays
				}
			}
			err = a.runtime.RemovePodSandbox(ctx, sb.id)
		}
		if err != nil && !cri.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("remove sandbox %s: %w", shortID(sb.id), err))
			continue
		}
		gone[sb.id] = true
	}
	for _, c := range st.containers {
		if !gone[c.sandboxID] {
			if err := a.removeContainer(ctx, w, c.id); err != nil {
				errs = append(errs, fmt.Errorf("remove container %s: %w", c.name, err))
				continue
			}
		}
		a.termMessages.Forget(c.id)
	}
	if len(errs) == 0 {
		// Only once every sandbox is gone are its processes too.
		if err := a.podCgroups().Destroy(pod); err != nil {
			errs = append(errs, err)
		}
	}
	// Only a Burstable pod's requests count in the burstable tier: tearing
	// down 100 BestEffort pods must not list every sandbox 100 times.
	if podspec.QOSClass(pod) == v1.PodQOSBurstable {
		a.refreshBurstableTier(ctx)
	}
	// The pod dir goes last, and only after a clean teardown: it marks the
	// pod cgroup as this agent's, so orphan collection (collectOrphans) can
	// still remove a cgroup that a failed teardown left behind.
	if len(errs) == 0 {
		if err := a.cleanupPodDirs(pod); err != nil {
			errs = append(errs, err)
		}
	}
	crash, image := podspec.BackoffKeys(pod)
	a.crashBackoff.Reset(crash...)
	a.imageBackoff.Reset(image...)
	if len(errs) == 0 {
		w.step(podevents.StepRemoved, a.clock.Since(t0), fmt.Sprintf("%d container(s), %d sandbox(es)", len(st.containers), len(st.sandboxes)))
	}
	return errors.Join(errs...)
}

// publishStopped publishes the status of a pod whose containers have all
// been stopped for its teardown, before they are removed: their final
// states (exit codes, finishedAt) and a terminal phase, as the kubelet's
// SyncTerminatingPod does (generateAPIPodStatus with podIsTerminal). A
// cluster pod that a finalizer keeps after its teardown shows them on the
// API server until it goes (the Lifecycle Sleep Hook conformance specs
// wait for the container's terminated state of such a pod). It costs one
// ContainerStatus per container of st (the teardown's listing), nothing
// when there is nobody to tell (the daemon's podevents.Nop).
func (a *Agent) publishStopped(ctx context.Context, w *podWorker, pod *v1.Pod, listed *podState) {
	if _, nop := a.observer.(podevents.Nop); nop {
		return
	}
	res := &syncResult{}
	for _, c := range listed.containers {
		res.touch(c.id, c.sandboxID)
	}
	st, err := a.refreshPodState(ctx, pod, listed, res)
	if err != nil {
		w.logger.Warn("Observe pod after stopping it failed; its final status is not published", "err", err)
		return
	}
	status := a.computePodStatus(w, pod, st)
	status.Phase = podstatus.TerminalPhase(pod, &status)
	w.setStatus(status)
}

// removeContainer removes a container from the runtime; one already gone
// is not an error. A container whose removal containerd refuses because of
// a task the CRI does not know about (cri.IsStuckTask: a start cut short
// on containerd 2.x) has that task deleted through containerd's own task
// service, and is removed again: no CRI call can get it out of that state,
// and without this its pod could neither restart it nor be torn down.
func (a *Agent) removeContainer(ctx context.Context, w *podWorker, id string) error {
	err := a.runtime.RemoveContainer(ctx, id)
	if err == nil || cri.IsNotFound(err) {
		if uerr := logrotate.UnlinkContainerLog(a.cfg.ContainerLogsDir, id); uerr != nil {
			w.logger.Warn("Remove the container log symlink failed", "containerID", id, "err", uerr)
		}
		return nil
	}
	if !cri.IsStuckTask(err) {
		return err
	}
	tr, ok := a.runtime.(cri.TaskRemover)
	if !ok {
		return err
	}
	if terr := tr.RemoveStuckTask(ctx, id); terr != nil {
		w.logger.Warn("Delete the task containerd left behind for a container whose start was cut short failed", "containerID", id, "err", terr)
		return err
	}
	w.logger.Warn("Deleted the task containerd left behind for a container whose start was cut short", "containerID", id)
	a.metrics.StuckTasksRemoved.Inc()
	if err := a.runtime.RemoveContainer(ctx, id); err != nil && !cri.IsNotFound(err) {
		return err
	}
	if uerr := logrotate.UnlinkContainerLog(a.cfg.ContainerLogsDir, id); uerr != nil {
		w.logger.Warn("Remove the container log symlink failed", "containerID", id, "err", uerr)
	}
	return nil
}
