package eviction

import (
	"slices"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// EvictedStatus is st as an evicted pod's: Failed, reason Evicted, the
// message, and with disruption (a pressure eviction) the DisruptionTarget
// condition the kubelet adds (reason TerminationByKubelet, transition at
// the eviction), replacing one already there; a local storage limit
// eviction gets none, as the kubelet's evictPod adds none there.
func EvictedStatus(st v1.PodStatus, message string, at time.Time, disruption bool) v1.PodStatus {
	st.Phase, st.Reason, st.Message = v1.PodFailed, Reason, message
	if !disruption {
		return st
	}
	cond := v1.PodCondition{Type: v1.DisruptionTarget, Status: v1.ConditionTrue, Reason: v1.PodReasonTerminationByKubelet,
		Message: message, LastTransitionTime: metav1.NewTime(at)}
	i := slices.IndexFunc(st.Conditions, func(c v1.PodCondition) bool { return c.Type == v1.DisruptionTarget })
	if i >= 0 {
		st.Conditions = slices.Clone(st.Conditions)
		st.Conditions[i] = cond
	} else {
		st.Conditions = append(st.Conditions, cond)
	}
	return st
}
