package podcgroup

import (
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"

	"github.com/minikubelet/minikubelet/agent/podspec"
	"github.com/minikubelet/minikubelet/cgroups"
)

// This file turns v1 pods into cgroup values (kubelet-facts §2.5, §5.2,
// §5.4–§5.6). Everything here is pure; the pod workers and the housekeeping
// loop hand the results to a cgroups.Manager (Manager, manager.go).

// allContainersLimit reports whether every init and app container declares a
// non-zero limit for r: only then does a Burstable pod cgroup get the
// summed limit (§5.6), since one unlimited container makes the pod
// unlimited.
func allContainersLimit(pod *v1.Pod, r v1.ResourceName) bool {
	for _, list := range [][]v1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for i := range list {
			if q, ok := list[i].Resources.Limits[r]; !ok || q.IsZero() {
				return false
			}
		}
	}
	return true
}

// Resources is the pod<uid> cgroup's configuration (kubelet
// ResourceConfigForPod, §5.6):
//   - Guaranteed: shares from the CPU request sum, CFS quota from the CPU
//     limit sum, memory limit = memory limit sum;
//   - Burstable: shares always; quota only if every container has a CPU
//     limit, memory limit only if every container has a memory limit;
//   - BestEffort: shares 2.
//
// Unset quota and memory are written as unlimited (not left alone) so that
// Ensure converges a cgroup left behind by an earlier incarnation.
// pidsLimit > 0 sets pids.max (--pod-pids-limit), otherwise unlimited.
func Resources(pod *v1.Pod, qos v1.PodQOSClass, pidsLimit int64) cgroups.Resources {
	reqs, limits := podspec.PodRequestsAndLimits(pod)
	r := cgroups.Resources{
		CPUShares:   ptr.To(uint64(podspec.MinShares)),
		CPUQuota:    ptr.To[int64](cgroups.Unlimited),
		MemoryLimit: ptr.To[int64](cgroups.Unlimited),
		PidsLimit:   ptr.To[int64](cgroups.Unlimited),
	}
	if pidsLimit > 0 {
		r.PidsLimit = ptr.To(pidsLimit)
	}
	if qos == v1.PodQOSBestEffort {
		return r
	}
	r.CPUShares = ptr.To(uint64(podspec.MilliCPUToShares(reqs.Cpu().MilliValue())))
	cpuLimited := qos == v1.PodQOSGuaranteed || allContainersLimit(pod, v1.ResourceCPU)
	if cpuLimited {
		if q := podspec.MilliCPUToQuota(limits.Cpu().MilliValue(), podspec.QuotaPeriod); q > 0 {
			r.CPUQuota = ptr.To(q)
			r.CPUPeriod = ptr.To(uint64(podspec.QuotaPeriod))
		}
	}
	memLimited := qos == v1.PodQOSGuaranteed || allContainersLimit(pod, v1.ResourceMemory)
	if m := limits.Memory().Value(); memLimited && m > 0 {
		r.MemoryLimit = ptr.To(m)
	}
	return r
}

// tierName is the parent of a pod cgroup for the QoS class: Guaranteed
// pods sit directly under kubepods (§5.5).
func tierName(qos v1.PodQOSClass) cgroups.Name {
	switch qos {
	case v1.PodQOSGuaranteed:
		return cgroups.Kubepods
	case v1.PodQOSBestEffort:
		return cgroups.KubepodsBestEffort
	default:
		return cgroups.KubepodsBurstable
	}
}

// Name is the pod's cgroup: kubepods[/burstable|/besteffort]/pod<uid>.
func Name(pod *v1.Pod, qos v1.PodQOSClass) cgroups.Name {
	return cgroups.PodName(tierName(qos), string(pod.UID))
}

// kubepodsResources is the node-level kubepods cgroup (§5.6): shares from
// the allocatable CPU, memory limit = allocatable memory, pids limit when
// positive. No CFS quota: pods may burst into reserved CPU.
func kubepodsResources(allocatableMilliCPU, allocatableMemory, pidsLimit int64) cgroups.Resources {
	r := cgroups.Resources{CPUShares: ptr.To(uint64(podspec.MilliCPUToShares(allocatableMilliCPU)))}
	if allocatableMemory > 0 {
		r.MemoryLimit = ptr.To(allocatableMemory)
	}
	if pidsLimit > 0 {
		r.PidsLimit = ptr.To(pidsLimit)
	}
	return r
}

// burstableTierResources is kubepods/burstable: shares from the sum of the
// CPU requests of the active Burstable pods (2 when none), no limits
// (§5.6; the QOSReserved gate is not implemented). Pods of other classes in
// pods are ignored.
func burstableTierResources(pods []*v1.Pod) cgroups.Resources {
	var sum resource.Quantity
	for _, p := range pods {
		if podspec.QOSClass(p) != v1.PodQOSBurstable {
			continue
		}
		reqs, _ := podspec.PodRequestsAndLimits(p)
		sum.Add(*reqs.Cpu())
	}
	return cgroups.Resources{CPUShares: ptr.To(uint64(podspec.MilliCPUToShares(sum.MilliValue())))}
}

// bestEffortTierResources is kubepods/besteffort: the minimum shares.
func bestEffortTierResources() cgroups.Resources {
	return cgroups.Resources{CPUShares: ptr.To(uint64(podspec.MinShares))}
}
