package agent

// spec.activeDeadlineSeconds, the kubelet's activeDeadlineHandler
// (pkg/kubelet/active_deadline.go): once a pod has been active on the node
// for longer than its deadline (counted from its start time, when the
// agent accepted it), it is failed for good: phase Failed, reason
// DeadlineExceeded, a Normal event, and its containers are killed with
// its grace period and never restarted. The deadline may change while the
// pod runs (the API allows lowering it, or setting one): the worker
// re-evaluates it at every sync and is woken when it falls due.

import (
	"context"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/minikubelet/minikubelet/agent/podspec"
	"github.com/minikubelet/minikubelet/agent/podstatus"
)

// The kubelet's reason and message for a pod past its deadline.
const (
	reasonDeadlineExceeded  = "DeadlineExceeded"
	messageDeadlineExceeded = "Pod was active on the node longer than the specified deadline"
)

// setFailed fails the pod for good with reason and message: every later
// status is Failed with them (computePodStatus) and every later sync only
// kills (failPod). The first reason stays.
func (w *podWorker) setFailed(reason, message string) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.failReason != "" {
		return false
	}
	w.failReason, w.failMessage = reason, message
	return true
}

// failure is the reason and message setFailed recorded ("" if none).
func (w *podWorker) failure() (reason, message string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.failReason, w.failMessage
}

// checkActiveDeadline fails the pod once it is past its active deadline
// (with the kubelet's event, once) and reports whether the pod is failed;
// else it returns how long until the deadline falls due (0: none).
func (a *Agent) checkActiveDeadline(w *podWorker, pod *v1.Pod) (failed bool, due time.Duration) {
	if reason, _ := w.failure(); reason != "" {
		return true, 0
	}
	w.mu.Lock()
	start := w.startTime
	w.mu.Unlock()
	left, ok := podstatus.ActiveDeadlineLeft(pod, start, a.clock.Now())
	switch {
	case !ok || pod.DeletionTimestamp != nil:
		// A pod being deleted is torn down with its own grace period.
		return false, 0
	case left > 0:
		return false, left
	}
	if w.setFailed(reasonDeadlineExceeded, messageDeadlineExceeded) {
		w.event(v1.EventTypeNormal, reasonDeadlineExceeded, "%s", messageDeadlineExceeded)
	}
	return true, 0
}

// failPod is the sync of a failed pod (setFailed): publish Failed, kill
// what still runs with the pod's grace period, publish again from what
// the runtime then holds. Nothing is started again.
func (a *Agent) failPod(ctx context.Context, w *podWorker, pod *v1.Pod, st *podState) time.Duration {
	status := a.computePodStatus(w, pod, st)
	w.setStatus(status)
	if !podKillChanges(w, st) {
		a.finishIfOver(w, status.Phase, st)
		return a.cfg.ResyncPeriod
	}
	reason, _ := w.failure()
	w.logger.Info("Killing pod", "reason", reason)
	if err := a.killPod(ctx, w, st, podspec.GracePeriod(pod)); err != nil {
		w.logger.Warn("Kill pod failed", "err", err)
		return a.cfg.ErrorBackoff
	}
	st2, err := a.observePod(ctx, pod)
	if err != nil {
		w.logger.Warn("Observe pod failed", "err", err)
		return a.cfg.ErrorBackoff
	}
	w.setObserved(st2)
	a.updateProbes(pod, st2)
	status = a.computePodStatus(w, pod, st2)
	w.setStatus(status)
	a.finishIfOver(w, status.Phase, st2)
	return a.cfg.ResyncPeriod
}
