package podstatus

import (
	"time"

	v1 "k8s.io/api/core/v1"
)

// ActiveDeadlineLeft is how long pod, started at start, may still run at
// now (0 or less: the deadline passed, as the kubelet's activeDeadlineHandler
// counts it); ok is false without a deadline (spec.activeDeadlineSeconds)
// or a start time.
func ActiveDeadlineLeft(pod *v1.Pod, start, now time.Time) (left time.Duration, ok bool) {
	if pod.Spec.ActiveDeadlineSeconds == nil || start.IsZero() {
		return 0, false
	}
	allowed := time.Duration(*pod.Spec.ActiveDeadlineSeconds) * time.Second
	return allowed - now.Sub(start), true
}
