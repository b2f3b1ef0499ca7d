package api

// This file computes a pod's READY, STATUS and RESTARTS as the API
// server's printer does, for the served Table and the CLI alike.

import (
	"fmt"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/duration"
)

// PodRowCells are the computed READY, STATUS and RESTARTS cells of one pod
// (shared by the Table served here and the minikubelet CLI).
type PodRowCells struct {
	Ready, Status, Restarts string
}

// PodRow computes READY, STATUS and RESTARTS as kubectl's printPod does
// (k8s.io/kubernetes pkg/printers/internalversion/printers.go): the
// pod's phase or reason, overridden by the first init container that has
// not completed ("Init:N/M", "Init:<reason>"), then by the main
// containers' waiting/terminated reasons, "Terminating" on deletion.
func PodRow(pod *v1.Pod, now time.Time) PodRowCells {
	restarts, sidecarRestarts := 0, 0
	total := len(pod.Spec.Containers)
	ready := 0
	var lastRestart, sidecarLastRestart time.Time

	reason := string(pod.Status.Phase)
	if pod.Status.Reason != "" {
		reason = pod.Status.Reason
	}

	sidecars := map[string]bool{}
	for _, c := range pod.Spec.InitContainers {
		if c.RestartPolicy != nil && *c.RestartPolicy == v1.ContainerRestartPolicyAlways {
			sidecars[c.Name] = true
			total++
		}
	}

	initializing := false
	for i, c := range pod.Status.InitContainerStatuses {
		restarts += int(c.RestartCount)
		if t := c.LastTerminationState.Terminated; t != nil && t.FinishedAt.After(lastRestart) {
			lastRestart = t.FinishedAt.Time
		}
		if sidecars[c.Name] {
			sidecarRestarts += int(c.RestartCount)
			if t := c.LastTerminationState.Terminated; t != nil && t.FinishedAt.After(sidecarLastRestart) {
				sidecarLastRestart = t.FinishedAt.Time
			}
		}
		switch {
		case c.State.Terminated != nil && c.State.Terminated.ExitCode == 0:
			continue
		case sidecars[c.Name] && c.Started != nil && *c.Started:
			if c.Ready {
				ready++
			}
			continue
		case c.State.Terminated != nil:
			t := c.State.Terminated
			switch {
			case t.Reason != "":
				reason = "Init:" + t.Reason
			case t.Signal != 0:
				reason = fmt.Sprintf("Init:Signal:%d", t.Signal)
			default:
				reason = fmt.Sprintf("Init:ExitCode:%d", t.ExitCode)
			}
		case c.State.Waiting != nil && c.State.Waiting.Reason != "" && c.State.Waiting.Reason != "PodInitializing":
			reason = "Init:" + c.State.Waiting.Reason
		default:
			reason = fmt.Sprintf("Init:%d/%d", i, len(pod.Spec.InitContainers))
		}
		initializing = true
		break
	}

	if !initializing || conditionTrue(pod, v1.PodInitialized) {
		restarts, lastRestart = sidecarRestarts, sidecarLastRestart
		hasRunning := false
		for i := len(pod.Status.ContainerStatuses) - 1; i >= 0; i-- {
			c := pod.Status.ContainerStatuses[i]
			restarts += int(c.RestartCount)
			if t := c.LastTerminationState.Terminated; t != nil && t.FinishedAt.After(lastRestart) {
				lastRestart = t.FinishedAt.Time
			}
			switch {
			case c.State.Waiting != nil && c.State.Waiting.Reason != "":
				reason = c.State.Waiting.Reason
			case c.State.Terminated != nil && c.State.Terminated.Reason != "":
				reason = c.State.Terminated.Reason
			case c.State.Terminated != nil && c.State.Terminated.Signal != 0:
				reason = fmt.Sprintf("Signal:%d", c.State.Terminated.Signal)
			case c.State.Terminated != nil:
				reason = fmt.Sprintf("ExitCode:%d", c.State.Terminated.ExitCode)
			case c.Ready && c.State.Running != nil:
				hasRunning = true
				ready++
			}
		}
		// A completed container next to a running one: the pod still runs.
		if reason == "Completed" && hasRunning {
			if conditionTrue(pod, v1.PodReady) {
				reason = "Running"
			} else {
				reason = "NotReady"
			}
		}
	}

	if pod.DeletionTimestamp != nil && pod.Status.Phase != v1.PodSucceeded && pod.Status.Phase != v1.PodFailed {
		reason = "Terminating"
	}
	if reason == "" {
		reason = string(v1.PodPending)
	}

	r := fmt.Sprint(restarts)
	if restarts > 0 && !lastRestart.IsZero() {
		r = fmt.Sprintf("%d (%s ago)", restarts, duration.HumanDuration(now.Sub(lastRestart)))
	}
	return PodRowCells{Ready: fmt.Sprintf("%d/%d", ready, total), Status: reason, Restarts: r}
}

// conditionTrue reports whether the pod has condition t with status True.
func conditionTrue(pod *v1.Pod, t v1.PodConditionType) bool {
	for _, c := range pod.Status.Conditions {
		if c.Type == t {
			return c.Status == v1.ConditionTrue
		}
	}
	return false
}
