package podspec

import v1 "k8s.io/api/core/v1"

// GracePeriod is the pod's termination grace period in seconds: the
// deletion's, else the spec's, else 30; at least 1 at pod level
// (kubelet-facts §7.1).
func GracePeriod(pod *v1.Pod) int64 {
	g := int64(30)
	if pod.DeletionGracePeriodSeconds != nil {
		g = *pod.DeletionGracePeriodSeconds
	} else if pod.Spec.TerminationGracePeriodSeconds != nil {
		g = *pod.Spec.TerminationGracePeriodSeconds
	}
	return max(g, 1)
}

// KillGracePeriod is the grace period for killing one container: a failed
// probe's own terminationGracePeriodSeconds wins over the pod's, unless the
// pod is being deleted with a grace period (kubelet-facts §4.3).
func KillGracePeriod(pod *v1.Pod, probe *v1.Probe) int64 {
	if pod.DeletionGracePeriodSeconds == nil && probe != nil && probe.TerminationGracePeriodSeconds != nil {
		return max(*probe.TerminationGracePeriodSeconds, 1)
	}
	return GracePeriod(pod)
}
