package agent

import (
	v1 "k8s.io/api/core/v1"

	"github.com/minikubelet/minikubelet/agent/podspec"
)

// podQOSClass is the pod's QoS class (podspec.QOSClass).
func podQOSClass(pod *v1.Pod) v1.PodQOSClass { return podspec.QOSClass(pod) }

// QOSClass returns the pod's QoS class (Guaranteed, Burstable, BestEffort).
func QOSClass(pod *v1.Pod) v1.PodQOSClass { return podspec.QOSClass(pod) }

// podRequestsAndLimits aggregates the pod's requests and limits per
// resource (podspec.PodRequestsAndLimits).
func podRequestsAndLimits(pod *v1.Pod) (reqs, limits v1.ResourceList) {
	return podspec.PodRequestsAndLimits(pod)
}

// CPU conversions of pkg/kubelet/cm/helpers_linux.go: agent/podspec's.
const (
	minShares    = podspec.MinShares
	maxShares    = podspec.MaxShares
	sharesPerCPU = podspec.SharesPerCPU
	milliPerCPU  = podspec.MilliPerCPU
	quotaPeriod  = podspec.QuotaPeriod
)

func milliCPUToShares(m int64) int64        { return podspec.MilliCPUToShares(m) }
func milliCPUToQuota(m, period int64) int64 { return podspec.MilliCPUToQuota(m, period) }
