package podstatus

import (
	v1 "k8s.io/api/core/v1"

	"github.com/minikubelet/minikubelet/agent/manifest"
)

// Phase is the kubelet's getPhase without sidecars (kubelet-facts §3.1).
func Phase(pod *v1.Pod, st *v1.PodStatus) v1.PodPhase {
	pendingInit, failedInit, pendingSidecar := 0, 0, 0
	for i, cs := range st.InitContainerStatuses {
		if i < len(pod.Spec.InitContainers) && manifest.IsSidecar(&pod.Spec.InitContainers[i]) {
			// Terminated sidecars do not count; one not started yet
			// holds the pod in Pending.
			if cs.Started == nil || !*cs.Started {
				if cs.State.Terminated == nil && cs.LastTerminationState.Terminated == nil {
					pendingSidecar++
				}
			}
			continue
		}
		switch {
		case cs.State.Terminated != nil && cs.State.Terminated.ExitCode != 0:
			failedInit++
		case cs.State.Waiting != nil && cs.LastTerminationState.Terminated != nil && cs.LastTerminationState.Terminated.ExitCode != 0:
			failedInit++
		case cs.State.Terminated == nil:
			pendingInit++
		}
	}
	// Once app containers exist, init containers are done.
	appStarted := false
	for _, cs := range st.ContainerStatuses {
		if cs.ContainerID != "" {
			appStarted = true
		}
	}
	if appStarted {
		pendingInit, failedInit, pendingSidecar = 0, 0, 0
	}
	// ownStopped counts the stopped containers whose own restartPolicy
	// keeps them stopped (restart_rules.go).
	running, waiting, stopped, succeeded, ownStopped := 0, 0, 0, 0, 0
	for i, cs := range st.ContainerStatuses {
		own := i < len(pod.Spec.Containers) && pod.Spec.Containers[i].RestartPolicy != nil
		switch {
		case cs.State.Running != nil:
			running++
		case own && willRestart(pod, &pod.Spec.Containers[i], &cs):
			// Its own restartPolicy or rules start it again: the pod
			// is not done, whatever its policy says.
			running++
		case cs.State.Terminated != nil:
			stopped++
			if cs.State.Terminated.ExitCode == 0 {
				succeeded++
			}
			if own {
				ownStopped++
			}
		case cs.State.Waiting != nil && cs.LastTerminationState.Terminated != nil:
			stopped++
			if own {
				ownStopped++
			}
		default:
			waiting++
		}
	}
	switch {
	case failedInit > 0 && pod.Spec.RestartPolicy == v1.RestartPolicyNever:
		return v1.PodFailed
	case pendingInit > 0 || failedInit > 0 || pendingSidecar > 0 || waiting > 0:
		return v1.PodPending
	case running > 0:
		return v1.PodRunning
	case stopped > 0:
		switch {
		case ownStopped == stopped && stopped == succeeded:
			// Every stopped container stays so by its own policy.
			return v1.PodSucceeded
		case ownStopped == stopped:
			return v1.PodFailed
		case pod.Spec.RestartPolicy == v1.RestartPolicyAlways:
			return v1.PodRunning
		case stopped == succeeded:
			return v1.PodSucceeded
		case pod.Spec.RestartPolicy == v1.RestartPolicyNever:
			return v1.PodFailed
		default:
			return v1.PodRunning
		}
	}
	return v1.PodPending
}

// TerminalPhase is the phase of a pod whose termination is complete
// (the kubelet's getPhase with podIsTerminal): a stopped container is not
// restarted any more whatever the restartPolicy, so stopped containers
// make the pod Succeeded if all of them succeeded, else Failed; one still
// waiting (never started: a pod deleted while pending) makes it Failed,
// as the kubelet's generateAPIPodStatus forces a terminal phase.
func TerminalPhase(pod *v1.Pod, st *v1.PodStatus) v1.PodPhase {
	p := *pod // a shallow copy: Spec is a value, only its policy changes
	p.Spec.RestartPolicy = v1.RestartPolicyNever
	if ph := Phase(&p, st); ph == v1.PodSucceeded {
		return ph
	}
	return v1.PodFailed
}
