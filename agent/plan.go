package agent

import (
	"fmt"

	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/minikubelet/minikubelet/agent/manifest"
	"github.com/minikubelet/minikubelet/agent/podstatus"
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
	// InitContainersToStart are sidecars (indexes in spec.initContainers)
	// to restart in an initialized pod.
	InitContainersToStart []int
	// ContainersToStart are indexes in spec.containers.
	ContainersToStart []int
	// EphemeralContainersToStart are indexes in spec.ephemeralContainers
	// (ephemeral.go).
	EphemeralContainersToStart []int
	// ContainersToKill maps running container IDs to why they are killed.
	ContainersToKill map[string]killReason
}

// killReason says why a running container is killed.
type killReason struct {
	// Name is the container's name.
	Name string
	// Message is the Killing event's text.
	Message string
	// Probe is the failed liveness or startup probe, if that is why: its
	// terminationGracePeriodSeconds may override the pod's.
	Probe *v1.Probe
}

// probeView is what the planner needs from the prober, by container name
// (for the running instance the prober was last told about).
type probeView struct {
	// failed holds containers whose liveness or startup probe failed:
	// "liveness" or "startup".
	failed map[string]string
	// notStarted holds running containers whose startup probe has not
	// succeeded yet.
	notStarted map[string]bool
}

// probeKill returns the kill for a probe failure of c, if any, and whether
// the container is then started again (the kubelet does unless the pod's
// policy is Never; sidecars always are).
func (pv probeView) probeKill(pod *v1.Pod, c *v1.Container, sidecar bool) (killReason, bool, bool) {
	kind, failed := pv.failed[c.Name]
	if !failed {
		return killReason{}, false, false
	}
	probe := c.LivenessProbe
	if kind == "startup" {
		probe = c.StartupProbe
	}
	restart := sidecar || pod.Spec.RestartPolicy != v1.RestartPolicyNever
	msg := fmt.Sprintf("Container %s failed %s probe", c.Name, kind)
	if restart {
		msg += ", will be restarted"
	}
	return killReason{Name: c.Name, Message: msg, Probe: probe}, true, restart
}

// changesRuntime reports whether executing the plan touches the runtime.
func (p podActions) changesRuntime() bool {
	return p.KillPod || p.CreateSandbox || p.NextInitContainer >= 0 ||
		len(p.InitContainersToStart) > 0 || len(p.ContainersToStart) > 0 || len(p.ContainersToKill) > 0 ||
		len(p.EphemeralContainersToStart) > 0
}

// String renders the plan for debug logs and test failures.
func (p podActions) String() string {
	return fmt.Sprintf("{killPod:%v create:%v attempt:%d sandbox:%q nextInit:%d initFailed:%v sidecars:%v start:%v ephemeral:%v kill:%v}",
		p.KillPod, p.CreateSandbox, p.Attempt, p.SandboxID, p.NextInitContainer, p.InitFailed, p.InitContainersToStart, p.ContainersToStart, p.EphemeralContainersToStart, p.ContainersToKill)
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

// isSidecar reports whether an init container is a native sidecar
// (restartPolicy: Always).
func isSidecar(c *v1.Container) bool { return manifest.IsSidecar(c) }

// interruptedStart reports whether instance c never ran because the
// previous agent process died while starting it (observePod decides, see
// Agent.startInterrupted). Such an instance is not a failure of the
// container: it is replaced without counting a restart or backing off,
// whatever the restart policy (startOne), so a crash of the agent neither
// fails a Never pod nor leaves a created container behind for good.
func interruptedStart(c *containerInfo) bool {
	return c != nil && c.startInterrupted
}

// shouldRestart is the kubelet's ShouldContainerBeRestarted for a container
// whose newest instance is c (nil: never created). Sidecars restart
// whatever the pod's policy.
func shouldRestart(pod *v1.Pod, spec *v1.Container, c *containerInfo) bool {
	if pod.DeletionTimestamp != nil {
		return false
	}
	if c == nil || interruptedStart(c) {
		return true
	}
	switch c.state {
	case runtimeapi.ContainerState_CONTAINER_RUNNING:
		return false
	case runtimeapi.ContainerState_CONTAINER_UNKNOWN, runtimeapi.ContainerState_CONTAINER_CREATED:
		return true
	}
	if isSidecar(spec) {
		return true
	}
	// The container's own restartPolicy and rules, else the pod's
	// (agent/podstatus).
	return podstatus.ContainerShouldRestart(spec, pod, c.exitCode)
}

// computePodActions plans one sync (kubelet-facts §2.2, §2.4, §2.5): what
// to kill, whether to (re)create the sandbox, which init container runs
// next, which sidecars and app containers start. Probes join with #5.
//
//	sandbox changed? ──yes──► kill all, new sandbox (attempt+1), init[0] or all app containers
//	      │no
//	not initialized? ──yes──► walk init containers in order: start the first
//	      │no                 missing/failed one; a sidecar counts once running
//	restart exited sidecars; start/restart app containers per policy;
//	nothing running and nothing to start ──► kill the pod (it is done)
func computePodActions(pod *v1.Pod, st *podState, pv probeView) podActions {
	act := podActions{NextInitContainer: -1, ContainersToKill: map[string]killReason{}}

	changed, attempt := podSandboxChanged(pod, st)
	if changed {
		act.Attempt = attempt
		act.KillPod = len(st.sandboxes) > 0
		// A Never pod whose sandbox died after its containers ran is over.
		if pod.Spec.RestartPolicy == v1.RestartPolicyNever && attempt != 0 && len(st.containers) > 0 {
			return act
		}
		// Everything runs again in the new sandbox, except what exited
		// and is not started again by its policy: what succeeded under
		// OnFailure, and a container whose own restartPolicy or rules
		// keep it stopped (ContainerRestartRules; without this, the
		// sandbox of an Always pod whose only container has its own
		// restartPolicy Never, killed because the pod was done, came back
		// with that container restarted once).
		var toStart []int
		initialized := false
		for i := range pod.Spec.Containers {
			c := &pod.Spec.Containers[i]
			cur := st.latest(c.Name)
			initialized = initialized || cur != nil
			if cur != nil && cur.state == runtimeapi.ContainerState_CONTAINER_EXITED && !podstatus.ContainerShouldRestart(c, pod, cur.exitCode) {
				continue
			}
			toStart = append(toStart, i)
		}
		// Nothing left to run (OnFailure after success, or stopped by
		// their own policy): the pod is done.
		if len(toStart) == 0 && initialized {
			return act
		}
		act.CreateSandbox = true
		// A new sandbox runs the init containers again, as with the
		// kubelet.
		if len(pod.Spec.InitContainers) > 0 {
			act.NextInitContainer = 0
			return act
		}
		act.ContainersToStart = toStart
		return act
	}
	act.SandboxID = st.sandboxes[0].id
	act.Attempt = attempt

	// Only the current sandbox counts for initialization: once any app
	// container exists in it, regular init containers never run again.
	sbID := act.SandboxID
	initialized := false
	for i := range pod.Spec.Containers {
		if st.latestIn(pod.Spec.Containers[i].Name, sbID) != nil {
			initialized = true
		}
	}
	if !initialized {
		for i := range pod.Spec.InitContainers {
			spec := &pod.Spec.InitContainers[i]
			ic := st.latestIn(spec.Name, sbID)
			running := ic != nil && ic.state == runtimeapi.ContainerState_CONTAINER_RUNNING
			switch {
			case ic == nil:
				act.NextInitContainer = i
				return act
			case isSidecar(spec) && running && pv.failed[spec.Name] != "":
				kr, _, _ := pv.probeKill(pod, spec, true)
				act.ContainersToKill[ic.id] = kr
				act.NextInitContainer = i
				return act
			case isSidecar(spec) && running && definitionChanged(ic, spec):
				// Changed during initialization (an image update): restarted; what runs after it goes on.
				act.ContainersToKill[ic.id] = killReason{Name: spec.Name, Message: fmt.Sprintf("Container %s definition changed", spec.Name)}
				act.NextInitContainer = i
				return act
			case isSidecar(spec) && running && pv.notStarted[spec.Name]:
				return act // wait for its startup probe
			case isSidecar(spec) && running:
				continue // started: the next one may go
			case isSidecar(spec):
				act.NextInitContainer = i // exited or failed to start: restart it
				return act
			case running:
				return act // wait for it to finish
			case ic.state == runtimeapi.ContainerState_CONTAINER_EXITED && ic.exitCode == 0 && !interruptedStart(ic):
				continue
			case interruptedStart(ic):
				act.NextInitContainer = i // its start was cut short: start it again
				return act
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
			if kr, failed, restart := pv.probeKill(pod, c, false); failed {
				act.ContainersToKill[cur.id] = kr
				if restart {
					act.ContainersToStart = append(act.ContainersToStart, i)
				}
				continue
			}
			if definitionChanged(cur, c) {
				act.ContainersToKill[cur.id] = killReason{Name: c.Name, Message: fmt.Sprintf("Container %s definition changed", c.Name)}
				act.ContainersToStart = append(act.ContainersToStart, i)
				continue
			}
			keep++
			continue
		}
		if shouldRestart(pod, c, cur) {
			if cur != nil && cur.state == runtimeapi.ContainerState_CONTAINER_UNKNOWN {
				act.ContainersToKill[cur.id] = killReason{Name: c.Name, Message: fmt.Sprintf("Container %s is in an unknown state", c.Name)}
			}
			act.ContainersToStart = append(act.ContainersToStart, i)
		}
	}
	if keep == 0 && len(act.ContainersToStart) == 0 {
		// Every app container is done: sidecars must not keep the pod
		// alive, so they are not restarted and the pod is killed.
		act.KillPod = true
		return act
	}
	// Ephemeral containers start in an initialized pod, once.
	act.EphemeralContainersToStart = ephemeralToStart(pod, st)
	// Sidecars of an initialized pod are kept running.
	for i := range pod.Spec.InitContainers {
		spec := &pod.Spec.InitContainers[i]
		if !isSidecar(spec) {
			continue
		}
		cur := st.latestIn(spec.Name, sbID)
		switch {
		case cur != nil && cur.state == runtimeapi.ContainerState_CONTAINER_RUNNING:
			if kr, failed, _ := pv.probeKill(pod, spec, true); failed {
				act.ContainersToKill[cur.id] = kr
				act.InitContainersToStart = append(act.InitContainersToStart, i)
			} else if definitionChanged(cur, spec) {
				act.ContainersToKill[cur.id] = killReason{Name: spec.Name, Message: fmt.Sprintf("Container %s definition changed", spec.Name)}
				act.InitContainersToStart = append(act.InitContainersToStart, i)
			}
		case shouldRestart(pod, spec, cur):
			act.InitContainersToStart = append(act.InitContainersToStart, i)
		}
	}
	return act
}
