package agent

import (
	"fmt"

	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// podActions is what one sync must do to move a pod's runtime state toward
// its spec. computePodActions produces it without I/O; syncPod executes it.
type podActions struct {
	// KillPod stops every container and sandbox of the pod first.
	KillPod bool
	// CreateSandbox creates a new sandbox with Attempt.
	CreateSandbox bool
	// SandboxID is the sandbox to start containers in when CreateSandbox is
	// false.
	SandboxID string
	// Attempt is the sandbox attempt to create or the current one.
	Attempt uint32
	// NextInitContainer is the index in spec.initContainers to start next,
	// or -1.
	NextInitContainer int
	// InitFailed is set when an init container failed and the restart
	// policy forbids retrying it: the pod is failed.
	InitFailed bool
	// ContainersToStart are indexes in spec.containers.
	ContainersToStart []int
	// ContainersToKill maps running container IDs to the reason.
	ContainersToKill map[string]string
}

// String renders the plan for debug logs and test failures.
func (p podActions) String() string {
	return fmt.Sprintf("{kill:%v create:%v attempt:%d sandbox:%q init:%d initFailed:%v start:%v kill:%v}",
		p.KillPod, p.CreateSandbox, p.Attempt, p.SandboxID, p.NextInitContainer, p.InitFailed, p.ContainersToStart, p.ContainersToKill)
}

// podSandboxChanged reports whether the pod needs a new sandbox and its
// attempt number (kubelet-facts §2.1).
func podSandboxChanged(pod *v1.Pod, st *podState) (bool, uint32) {
	if len(st.sandboxes) == 0 {
		return true, 0
	}
	var maxAttempt uint32
	ready := 0
	for _, sb := range st.sandboxes {
		maxAttempt = max(maxAttempt, sb.attempt)
		if sb.ready {
			ready++
		}
	}
	newest := st.sandboxes[0]
	switch {
	case ready > 1, !newest.ready:
		return true, maxAttempt + 1
	case newest.hostNetwork != pod.Spec.HostNetwork:
		return true, maxAttempt + 1
	case !pod.Spec.HostNetwork && newest.ip == "":
		return true, maxAttempt + 1
	}
	return false, newest.attempt
}

// shouldRestart is the kubelet's ShouldContainerBeRestarted for a container
// whose newest instance is c (nil: never created).
func shouldRestart(pod *v1.Pod, c *containerInfo) bool {
	if pod.DeletionTimestamp != nil {
		return false
	}
	if c == nil {
		return true
	}
	switch c.state {
	case runtimeapi.ContainerState_CONTAINER_RUNNING:
		return false
	case runtimeapi.ContainerState_CONTAINER_UNKNOWN, runtimeapi.ContainerState_CONTAINER_CREATED:
		return true
	}
	switch pod.Spec.RestartPolicy {
	case v1.RestartPolicyNever:
		return false
	case v1.RestartPolicyOnFailure:
		return c.exitCode != 0
	}
	return true
}

// computePodActions plans one sync (kubelet-facts §2.2, without sidecars and
// probes, which later issues add).
func computePodActions(pod *v1.Pod, st *podState) podActions {
	act := podActions{NextInitContainer: -1, ContainersToKill: map[string]string{}}

	changed, attempt := podSandboxChanged(pod, st)
	if changed {
		act.Attempt = attempt
		act.KillPod = len(st.sandboxes) > 0
		// A Never pod whose sandbox died after its containers ran is over.
		if pod.Spec.RestartPolicy == v1.RestartPolicyNever && attempt != 0 && len(st.containers) > 0 {
			return act
		}
		var toStart []int
		initialized := false
		for i := range pod.Spec.Containers {
			cur := st.latest(pod.Spec.Containers[i].Name)
			initialized = initialized || cur != nil
			if shouldRestart(pod, cur) {
				toStart = append(toStart, i)
			}
		}
		// Nothing left to run (OnFailure after success): the pod is done.
		if len(toStart) == 0 && initialized {
			return act
		}
		act.CreateSandbox = true
		if len(pod.Spec.InitContainers) > 0 {
			act.NextInitContainer = 0
			return act
		}
		act.ContainersToStart = toStart
		return act
	}
	act.SandboxID = st.sandboxes[0].id
	act.Attempt = attempt

	// Init containers run one at a time in order; once any app container
	// exists the pod counts as initialized and they never run again.
	// Only the current sandbox counts: a new sandbox runs them again, as
	// with the kubelet.
	sbID := act.SandboxID
	initialized := false
	for i := range pod.Spec.Containers {
		if st.latestIn(pod.Spec.Containers[i].Name, sbID) != nil {
			initialized = true
		}
	}
	if !initialized {
		for i := range pod.Spec.InitContainers {
			ic := st.latestIn(pod.Spec.InitContainers[i].Name, sbID)
			switch {
			case ic == nil:
				act.NextInitContainer = i
				return act
			case ic.state == runtimeapi.ContainerState_CONTAINER_RUNNING:
				return act // wait for it
			case ic.state == runtimeapi.ContainerState_CONTAINER_EXITED && ic.exitCode == 0:
				continue
			}
			// Failed (or created/unknown): init containers behave as
			// OnFailure under Always.
			if pod.Spec.RestartPolicy == v1.RestartPolicyNever && ic.state == runtimeapi.ContainerState_CONTAINER_EXITED {
				act.InitFailed = true
				act.KillPod = true
				return act
			}
			act.NextInitContainer = i
			return act
		}
	}

	keep := 0
	for i := range pod.Spec.Containers {
		c := &pod.Spec.Containers[i]
		cur := st.latest(c.Name)
		if cur != nil && cur.state == runtimeapi.ContainerState_CONTAINER_RUNNING {
			if cur.hash != containerHashString(c) {
				act.ContainersToKill[cur.id] = fmt.Sprintf("Container %s definition changed", c.Name)
				act.ContainersToStart = append(act.ContainersToStart, i)
				continue
			}
			keep++
			continue
		}
		if shouldRestart(pod, cur) {
			if cur != nil && cur.state == runtimeapi.ContainerState_CONTAINER_UNKNOWN {
				act.ContainersToKill[cur.id] = fmt.Sprintf("Container %s is in an unknown state", c.Name)
			}
			act.ContainersToStart = append(act.ContainersToStart, i)
		}
	}
	if keep == 0 && len(act.ContainersToStart) == 0 {
		act.KillPod = true
	}
	return act
}
