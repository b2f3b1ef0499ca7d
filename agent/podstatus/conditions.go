package podstatus

import (
	"fmt"
	"strings"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/minikubelet/minikubelet/agent/manifest"
)

// Conditions computes the kubelet-owned conditions, keeping each
// condition's lastTransitionTime while its status does not change.
// sandboxReady says that the pod's newest sandbox is ready and needs no
// replacing (the engine's plan would keep it): it alone decides
// PodReadyToStartContainers, the one condition the runtime's state sets.
func Conditions(pod *v1.Pod, st *v1.PodStatus, sandboxReady bool, prev []v1.PodCondition, now metav1.Time) []v1.PodCondition {
	cond := func(t v1.PodConditionType, ok bool, reason, msg string) v1.PodCondition {
		s := v1.ConditionFalse
		if ok {
			s = v1.ConditionTrue
			reason, msg = "", ""
		}
		c := v1.PodCondition{Type: t, Status: s, Reason: reason, Message: msg, LastTransitionTime: now, ObservedGeneration: pod.Generation}
		for _, p := range prev {
			if p.Type == t && p.Status == s {
				c.LastTransitionTime = p.LastTransitionTime
			}
		}
		return c
	}
	// Initialized.
	var incomplete []string
	appStarted := false
	for _, cs := range st.ContainerStatuses {
		if cs.ContainerID != "" {
			appStarted = true
		}
	}
	for i, cs := range st.InitContainerStatuses {
		done := cs.Ready
		if i < len(pod.Spec.InitContainers) && manifest.IsSidecar(&pod.Spec.InitContainers[i]) {
			done = cs.Started != nil && *cs.Started
		}
		if !done {
			incomplete = append(incomplete, cs.Name)
		}
	}
	initOK := len(incomplete) == 0 || appStarted || st.Phase == v1.PodSucceeded
	initMsg := ""
	if !initOK {
		initMsg = fmt.Sprintf("containers with incomplete status: [%s]", strings.Join(incomplete, " "))
	}
	// ContainersReady.
	// Sidecars count for readiness like app containers.
	var unready []string
	for i, cs := range st.InitContainerStatuses {
		if i < len(pod.Spec.InitContainers) && manifest.IsSidecar(&pod.Spec.InitContainers[i]) && !cs.Ready {
			unready = append(unready, cs.Name)
		}
	}
	for _, cs := range st.ContainerStatuses {
		if !cs.Ready {
			unready = append(unready, cs.Name)
		}
	}
	readyReason, readyMsg := "ContainersNotReady", fmt.Sprintf("containers with unready status: [%s]", strings.Join(unready, " "))
	switch st.Phase {
	case v1.PodSucceeded:
		readyReason, readyMsg = "PodCompleted", ""
	case v1.PodFailed:
		readyReason, readyMsg = "PodFailed", ""
	}
	ready := len(unready) == 0 && st.Phase != v1.PodSucceeded && st.Phase != v1.PodFailed
	// Ready also needs every readiness gate's condition True; the
	// conditions are another controller's, on the API server's pod
	// (gateConditions). The kubelet's GeneratePodReadyCondition.
	gates := gateConditions(pod)
	podReady, podReason, podMsg := ready, readyReason, readyMsg
	if ready {
		if msg := readinessGatesUnready(pod, gates); msg != "" {
			podReady, podReason, podMsg = false, "ReadinessGatesNotReady", msg
		}
	}
	conds := make([]v1.PodCondition, 0, len(gates)+5)
	// The gates' conditions first, as they are, as the kubelet copies the
	// conditions it does not own from the API's pod.
	conds = append(conds, gates...)
	conds = append(conds,
		cond(v1.PodReadyToStartContainers, sandboxReady, "", ""),
		cond(v1.PodInitialized, initOK, "ContainersNotInitialized", initMsg),
		cond(v1.ContainersReady, ready, readyReason, readyMsg),
		cond(v1.PodReady, podReady, podReason, podMsg),
		cond(v1.PodScheduled, true, "", ""),
	)
	return conds
}

// gateConditions are the conditions of pod's status whose type a readiness
// gate names: for a cluster pod, those the API server's pod carries
// (cluster.PreparePod keeps them); a local pod has none.
func gateConditions(pod *v1.Pod) []v1.PodCondition {
	var out []v1.PodCondition
	for _, c := range pod.Status.Conditions {
		for _, g := range pod.Spec.ReadinessGates {
			if c.Type == g.ConditionType {
				out = append(out, c)
				break
			}
		}
	}
	return out
}

// readinessGatesUnready says, in the kubelet's words, which readiness gates
// of pod hold it unready ("" if none does).
func readinessGatesUnready(pod *v1.Pod, gates []v1.PodCondition) string {
	var msgs []string
	for _, g := range pod.Spec.ReadinessGates {
		var c *v1.PodCondition
		for i := range gates {
			if gates[i].Type == g.ConditionType {
				c = &gates[i]
				break
			}
		}
		switch {
		case c == nil:
			msgs = append(msgs, fmt.Sprintf("corresponding condition of pod readiness gate %q does not exist.", string(g.ConditionType)))
		case c.Status != v1.ConditionTrue:
			msgs = append(msgs, fmt.Sprintf("the status of pod readiness gate %q is not \"True\", but %v", string(g.ConditionType), c.Status))
		}
	}
	return strings.Join(msgs, ", ")
}

// ConditionTrue reports whether the condition of that type is True.
func ConditionTrue(cs []v1.PodCondition, t v1.PodConditionType) bool {
	for _, c := range cs {
		if c.Type == t {
			return c.Status == v1.ConditionTrue
		}
	}
	return false
}
