package agent

import (
	"errors"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/minikubelet/minikubelet/agent/manifest"
	"github.com/minikubelet/minikubelet/agent/node"
	"github.com/minikubelet/minikubelet/agent/podevents"
	"github.com/minikubelet/minikubelet/agent/podspec"
	"github.com/minikubelet/minikubelet/agent/podstatus"
)

// errContainerCreating is the waiting reason of a container that is not
// created yet; with a message it says what it waits for.
var errContainerCreating = errors.New("ContainerCreating")

// computePodStatus turns the observed runtime state into a v1.PodStatus the
// way the kubelet's generateAPIPodStatus does (kubelet-facts §3), without
// the probe-driven parts (issue #5).
func (a *Agent) computePodStatus(w *podWorker, pod *v1.Pod, st *podState) v1.PodStatus {
	w.mu.Lock()
	prev := w.status
	reasons := make(map[string]error, len(w.reasons))
	for k, v := range w.reasons {
		reasons[k] = v
	}
	startTime := w.startTime
	netMsg := w.networkNotReady
	w.mu.Unlock()

	now := metav1.NewTime(a.clock.Now())
	t := metav1.NewTime(startTime)
	out := v1.PodStatus{
		// The generation of the spec this sync acted on, as the kubelet
		// sets it (PodObservedGenerationTracking, on since v1.34): it can
		// trail metadata.generation while an update waits for a sync.
		ObservedGeneration: pod.Generation,
		QOSClass:           podspec.QOSClass(pod),
		StartTime:          &t,
	}
	// The node's addresses, as the kubelet sets them from its Node once
	// the pod is bound to it (a host-network pod has them as its own).
	if ips := node.HostIPs(a.cfg.HostIPs); len(ips) > 0 {
		out.HostIP = ips[0]
		for _, ip := range ips {
			out.HostIPs = append(out.HostIPs, v1.HostIP{IP: ip})
		}
	}
	if len(st.sandboxes) > 0 && st.sandboxes[0].ready {
		if ip := st.sandboxes[0].ip; ip != "" {
			out.PodIP = ip
			out.PodIPs = []v1.PodIP{{IP: ip}}
		} else if pod.Spec.HostNetwork && out.HostIP != "" {
			out.PodIP = out.HostIP
			for _, h := range out.HostIPs {
				out.PodIPs = append(out.PodIPs, v1.PodIP{IP: h.IP})
			}
		}
	}
	defaultReason := "ContainerCreating"
	if len(pod.Spec.InitContainers) > 0 {
		defaultReason = "PodInitializing"
	}
	if netMsg != "" {
		// Nothing can be created before the network is ready: show why
		// in every container that does not exist yet.
		for _, list := range [][]v1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
			for i := range list {
				if _, ok := reasons[list[i].Name]; !ok && st.latest(list[i].Name) == nil {
					reasons[list[i].Name] = newReasonError(errContainerCreating, "%s", netMsg)
				}
			}
		}
	}
	for i := range pod.Spec.InitContainers {
		c := &pod.Spec.InitContainers[i]
		cs := a.containerStatus(c, st, reasons[c.Name], "PodInitializing")
		if isSidecar(c) {
			w.resize.SetStatusResources(c.Name, &cs) // resize.go
			a.applyProbes(pod, &cs)
		} else {
			cs.Ready = cs.State.Terminated != nil && cs.State.Terminated.ExitCode == 0
		}
		out.InitContainerStatuses = append(out.InitContainerStatuses, cs)
	}
	for i := range pod.Spec.Containers {
		c := &pod.Spec.Containers[i]
		cs := a.containerStatus(c, st, reasons[c.Name], defaultReason)
		w.resize.SetStatusResources(c.Name, &cs) // resize.go
		a.applyProbes(pod, &cs)
		out.ContainerStatuses = append(out.ContainerStatuses, cs)
	}
	for i := range pod.Spec.EphemeralContainers {
		c := manifest.EphemeralContainer(&pod.Spec.EphemeralContainers[i])
		out.EphemeralContainerStatuses = append(out.EphemeralContainerStatuses, a.containerStatus(c, st, reasons[c.Name], "ContainerCreating"))
	}
	out.Phase = podstatus.Phase(pod, &out)
	// Terminal phases are sticky (kubelet-facts §3.1).
	if prev.Phase == v1.PodSucceeded || prev.Phase == v1.PodFailed {
		out.Phase = prev.Phase
	}
	// A pod failed for good (deadline.go) says why, as the kubelet's
	// ShouldEvict handlers override phase, reason and message.
	if reason, msg := w.failure(); reason != "" {
		out.Phase, out.Reason, out.Message = v1.PodFailed, reason, msg
	}
	// A terminal pod whose sandbox is already down keeps the IPs it had:
	// the kubelet computes a pod's first terminal status while its
	// sandbox still runs (teardown follows), so its IPs reach the API
	// server with it (node e2e "PodIPs" wants them on the first
	// non-Pending status); here the sandbox may be stopped first.
	if out.PodIP == "" && prev.PodIP != "" && (out.Phase == v1.PodSucceeded || out.Phase == v1.PodFailed) {
		out.PodIP, out.PodIPs = prev.PodIP, prev.PodIPs
	}
	sandboxChanged, _ := podSandboxChanged(pod, st)
	out.Conditions = podstatus.Conditions(pod, &out, !sandboxChanged, prev.Conditions, now)
	// PodResizePending and PodResizeInProgress (resize.go).
	out.Conditions = append(out.Conditions, w.resize.Conditions(out.Phase)...)
	if out.Phase == v1.PodRunning && prev.Phase != v1.PodRunning {
		total := a.clock.Since(startTime)
		w.step(podevents.StepRunning, total, "total since accepted")
		if pulls := w.pullTime(); !w.startRecorded() {
			// The pod start SLI excludes image pulls (kubelet-facts §8.1).
			a.metrics.PodStartSLI.Observe((total - pulls).Seconds())
		}
	}
	if podstatus.ConditionTrue(out.Conditions, v1.PodReady) && !podstatus.ConditionTrue(prev.Conditions, v1.PodReady) && !w.readySeen() {
		w.step(podevents.StepReady, a.clock.Since(startTime), "total since accepted")
	}
	return out
}

// applyProbes sets started and ready from the prober: started once the
// startup probe succeeded (or there is none), ready once started and the
// readiness probe succeeded (or there is none); a container that is not
// running is neither.
func (a *Agent) applyProbes(pod *v1.Pod, cs *v1.ContainerStatus) {
	running := cs.State.Running != nil
	started := running && a.probes.Started(pod.UID, cs.Name)
	cs.Started = &started
	cs.Ready = running && a.probes.Ready(pod.UID, cs.Name)
}

// containerStatus maps the newest two runtime instances of a container to
// state and lastState; a cached start failure becomes the waiting reason.
func (a *Agent) containerStatus(c *v1.Container, st *podState, reason error, defaultReason string) v1.ContainerStatus {
	cs := v1.ContainerStatus{Name: c.Name, Image: c.Image}
	cur := st.latest(c.Name)
	if cur == nil {
		cs.State.Waiting = &v1.ContainerStateWaiting{Reason: defaultReason}
		if reason != nil {
			r, m := reasonAndMessage(reason)
			cs.State.Waiting = &v1.ContainerStateWaiting{Reason: r, Message: m}
		}
		return cs
	}
	cs.ContainerID = a.cfg.RuntimeName + "://" + cur.id
	cs.ImageID = cur.imageRef
	cs.VolumeMounts = podspec.VolumeMountStatuses(c, a.supportsRRO)
	cs.RestartCount = int32(cur.restartCount)
	cs.State = a.runtimeState(cur)
	if prev := st.previous(c.Name); prev != nil {
		cs.LastTerminationState = a.runtimeState(prev)
	}
	// A container that will be started again and has a cached failure
	// shows that failure as waiting; its last run moves to lastState.
	if reason != nil && cur.state != runtimeapi.ContainerState_CONTAINER_RUNNING {
		r, m := reasonAndMessage(reason)
		if cs.State.Terminated != nil {
			cs.LastTerminationState = cs.State
		}
		cs.State = v1.ContainerState{Waiting: &v1.ContainerStateWaiting{Reason: r, Message: m}}
	}
	started := cur.state == runtimeapi.ContainerState_CONTAINER_RUNNING
	cs.Started = &started
	return cs
}

// runtimeState converts one runtime instance's state.
func (a *Agent) runtimeState(c *containerInfo) v1.ContainerState {
	switch c.state {
	case runtimeapi.ContainerState_CONTAINER_RUNNING:
		return v1.ContainerState{Running: &v1.ContainerStateRunning{StartedAt: metav1.NewTime(time.Unix(0, c.startedAt))}}
	case runtimeapi.ContainerState_CONTAINER_EXITED:
		return v1.ContainerState{Terminated: &v1.ContainerStateTerminated{
			ExitCode:    c.exitCode,
			Reason:      c.reason,
			Message:     c.message,
			StartedAt:   metav1.NewTime(time.Unix(0, c.startedAt)),
			FinishedAt:  metav1.NewTime(time.Unix(0, c.finishedAt)),
			ContainerID: a.cfg.RuntimeName + "://" + c.id,
		}}
	case runtimeapi.ContainerState_CONTAINER_UNKNOWN:
		// The kubelet's rendering of a container the runtime lost track of.
		return v1.ContainerState{Terminated: &v1.ContainerStateTerminated{
			ExitCode:    137,
			Reason:      "ContainerStatusUnknown",
			Message:     "The container could not be located when the pod was terminated",
			StartedAt:   metav1.NewTime(time.Unix(0, c.startedAt)),
			ContainerID: a.cfg.RuntimeName + "://" + c.id,
		}}
	default:
		return v1.ContainerState{Waiting: &v1.ContainerStateWaiting{}}
	}
}
