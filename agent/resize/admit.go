package resize

import (
	"fmt"

	v1 "k8s.io/api/core/v1"

	"github.com/minikubelet/minikubelet/agent/node"
	"github.com/minikubelet/minikubelet/agent/podspec"
)

// Verdict is the outcome of admitting a resize.
type Verdict struct {
	// Fit: the resize is admitted (allocated).
	Fit bool
	// Reason is v1.PodReasonDeferred or v1.PodReasonInfeasible when not
	// Fit; Message says what did not fit, in the kubelet's words.
	Reason, Message string
}

// Admit decides whether desired, the new spec of an admitted pod, fits the
// node next to the other admitted pods (their allocated resources), as the
// kubelet's canAdmitPod with the ResizeOperation.
//
// Where it deviates from the kubelet v1.37: a resize whose requests alone
// exceed the node's allocatable is Infeasible (the kubelet up to v1.33 did
// the same); v1.37 reports it Deferred and retries it. minikubelet's
// allocatable is fixed while it runs, so such a resize can never fit:
// Infeasible tells the user (or an autoscaler) to stop waiting. (The
// v1.37 API server itself refuses such a resize of a pod bound to a node,
// "node didn't have enough allocatable resources", so in cluster mode it
// only reaches a node behind an older API server.)
func Admit(info node.Info, desired *v1.Pod, others []*v1.Pod) Verdict {
	if info.Allocatable == nil {
		return Verdict{Fit: true}
	}
	reqs, _ := podspec.PodRequestsAndLimits(desired)
	for _, n := range resizable {
		want, ok := reqs[n]
		alloc, has := info.Allocatable[n]
		if !ok || !has {
			continue
		}
		if want.Cmp(alloc) > 0 {
			w, c := want.Value(), alloc.Value()
			if n == v1.ResourceCPU {
				w, c = want.MilliValue(), alloc.MilliValue()
			}
			return Verdict{Reason: v1.PodReasonInfeasible,
				Message: fmt.Sprintf("Node didn't have enough capacity: %s, requested: %d, capacity: %d", n, w, c)}
		}
	}
	if ok, _, msg := node.Admit(info, desired, others); !ok {
		return Verdict{Reason: v1.PodReasonDeferred, Message: msg}
	}
	return Verdict{Fit: true}
}
