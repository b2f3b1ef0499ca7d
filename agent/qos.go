package agent

import (
	v1 "k8s.io/api/core/v1"
)

// podQOSClass computes the pod's QoS class by the Kubernetes rules
// (pkg/apis/core/v1/helper/qos, kubelet-facts §5.1): only cpu and memory
// count; init containers count with the app containers.
func podQOSClass(pod *v1.Pod) v1.PodQOSClass {
	if pod.Status.QOSClass != "" {
		return pod.Status.QOSClass
	}
	var all []v1.Container
	all = append(all, pod.Spec.InitContainers...)
	all = append(all, pod.Spec.Containers...)
	sawGuaranteed, sawBestEffort := false, false
	for i := range all {
		switch containerQOS(&all[i]) {
		case v1.PodQOSBurstable:
			return v1.PodQOSBurstable
		case v1.PodQOSGuaranteed:
			sawGuaranteed = true
		default:
			sawBestEffort = true
		}
	}
	switch {
	case sawGuaranteed && sawBestEffort:
		return v1.PodQOSBurstable
	case sawGuaranteed:
		return v1.PodQOSGuaranteed
	default:
		return v1.PodQOSBestEffort
	}
}

func containerQOS(c *v1.Container) v1.PodQOSClass {
	guaranteed, bestEffort := true, true
	for _, r := range []v1.ResourceName{v1.ResourceCPU, v1.ResourceMemory} {
		req, hasReq := c.Resources.Requests[r]
		lim, hasLim := c.Resources.Limits[r]
		if (hasReq && !req.IsZero()) || (hasLim && !lim.IsZero()) {
			bestEffort = false
		}
		if !hasLim || lim.IsZero() || !hasReq || req.Cmp(lim) != 0 {
			guaranteed = false
		}
	}
	switch {
	case bestEffort:
		return v1.PodQOSBestEffort
	case guaranteed:
		return v1.PodQOSGuaranteed
	default:
		return v1.PodQOSBurstable
	}
}

// QOSClass returns the pod's QoS class (Guaranteed, Burstable, BestEffort).
func QOSClass(pod *v1.Pod) v1.PodQOSClass { return podQOSClass(pod) }
