package agent

import (
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/minikubelet/minikubelet/agent/podstatus"
	"github.com/minikubelet/minikubelet/cri"
	"github.com/minikubelet/minikubelet/probes"
)

// newProber builds the probe manager over the agent's runtime: exec probes
// go through CRI ExecSync, whose errors it learns to read here (probes may
// not import cri).
func (a *Agent) newProber() *probes.Manager {
	return probes.New(probes.Config{
		Execer:            a.runtime,
		ClassifyExecError: cri.ClassifyExecError,
		Clock:             a.clock,
		Logger:            a.logger,
		OnEvent:           a.onProbeEvent,
	})
}

// onProbeEvent records a probe's Unhealthy or ProbeWarning event on its pod.
// It runs on prober goroutines and only takes short locks.
func (a *Agent) onProbeEvent(ev probes.Event) {
	a.mu.Lock()
	w := a.workers[ev.PodUID]
	a.mu.Unlock()
	if w != nil {
		w.containerEvent(ev.ContainerName, ev.Type, ev.Reason, "%s", ev.Message)
	}
}

// countProbeResult records a probe result change in prober_probe_total.
// a.mu is held throughout: the worker's end removes the pod's series under
// it (metrics.ForgetPod), and a result counted after that would bring a
// series back for good.
func (a *Agent) countProbeResult(u probes.Update) {
	a.mu.Lock()
	defer a.mu.Unlock()
	w := a.workers[u.PodUID]
	if w == nil {
		return
	}
	pod := w.pod()
	result := "failed"
	if u.Result == probes.Success {
		result = "successful"
	}
	a.metrics.ProbeTotal.WithLabelValues(u.Kind.String(), result, u.ContainerName, pod.Name, pod.Namespace, string(pod.UID)).Inc()
}

// updateProbes tells the prober which instance of each container is the
// newest and whether it runs: workers start for running containers with
// probes and stop for the others.
func (a *Agent) updateProbes(pod *v1.Pod, st *podState) {
	podIP := ""
	if len(st.sandboxes) > 0 && st.sandboxes[0].ready {
		podIP = st.sandboxes[0].ip
	}
	var states []probes.ContainerState
	for _, list := range [][]v1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for i := range list {
			cur := st.latest(list[i].Name)
			if cur == nil {
				continue
			}
			states = append(states, probes.ContainerState{
				Name:      cur.name,
				ID:        cur.id,
				Running:   cur.state == runtimeapi.ContainerState_CONTAINER_RUNNING,
				StartedAt: time.Unix(0, cur.startedAt),
			})
		}
	}
	a.probes.UpdatePod(pod, podIP, states)
}

// probeView snapshots what the planner needs from the prober.
func (a *Agent) probeView(pod *v1.Pod) probeView {
	pv := probeView{failed: map[string]string{}, notStarted: map[string]bool{}}
	check := func(c *v1.Container) {
		if r, ok := a.probes.Result(pod.UID, c.Name, probes.Startup); ok {
			if r == probes.Failure {
				pv.failed[c.Name] = "startup"
			} else if r != probes.Success {
				pv.notStarted[c.Name] = true
			}
		}
		if r, ok := a.probes.Result(pod.UID, c.Name, probes.Liveness); ok && r == probes.Failure {
			pv.failed[c.Name] = "liveness"
		}
	}
	for i := range pod.Spec.InitContainers {
		if isSidecar(&pod.Spec.InitContainers[i]) {
			check(&pod.Spec.InitContainers[i])
		}
	}
	for i := range pod.Spec.Containers {
		check(&pod.Spec.Containers[i])
	}
	return pv
}

// readinessWhileTerminating publishes a readiness change of a pod being
// torn down. Its worker is busy in terminatePod (killPod waits out the
// grace period) and does not sync, yet the kubelet keeps the readiness
// probe running until the containers stop and its status manager writes
// the new Ready at once: a Service stops sending traffic to a pod whose
// probe fails while it drains (conformance: "Probing container should
// mark readiness on pods to false while pod is in progress of
// terminating"). The last published status is re-derived with the
// prober's current readiness; its other fields stay as the last sync saw
// them.
func (a *Agent) readinessWhileTerminating(w *podWorker) {
	pod := w.pod()
	w.mu.Lock()
	st := *w.status.DeepCopy()
	w.mu.Unlock()
	changed := false
	apply := func(list []v1.ContainerStatus) {
		for i := range list {
			cs := &list[i]
			ready := cs.State.Running != nil && a.probes.Ready(pod.UID, cs.Name)
			if cs.Ready != ready {
				cs.Ready, changed = ready, true
			}
		}
	}
	apply(st.ContainerStatuses)
	apply(st.InitContainerStatuses)
	if !changed {
		return
	}
	// The runtime state only decides PodReadyToStartContainers, which is
	// kept: only the two readiness conditions are taken from the new set.
	fresh := podstatus.Conditions(pod, &st, false, st.Conditions, metav1.NewTime(a.clock.Now()))
	for i := range st.Conditions {
		for _, c := range fresh {
			if c.Type == st.Conditions[i].Type && (c.Type == v1.ContainersReady || c.Type == v1.PodReady) {
				st.Conditions[i] = c
			}
		}
	}
	w.setStatus(st)
}
