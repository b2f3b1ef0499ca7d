package agent

import (
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"

	"github.com/minikubelet/minikubelet/cgroups"
)

// This file turns v1 pods into cgroup values (kubelet-facts §2.5, §5.2,
// §5.4–§5.6). Everything here is pure; the pod workers and the housekeeping
// loop hand the results to a cgroups.Manager.

// oom_score_adj values of kubelet's pkg/kubelet/qos/policy.go (§5.2).
const (
	guaranteedOOMScoreAdj int64 = -997
	besteffortOOMScoreAdj int64 = 1000
	// systemNodeCritical is the priority class whose pods get the
	// Guaranteed score whatever their QoS class.
	systemNodeCritical = "system-node-critical"
)

// podRequestsAndLimits aggregates the pod's requests and limits per
// resource the way the scheduler and the kubelet do (component-helpers
// PodRequests/PodLimits, §2.5): sidecars (restartable init containers) run
// alongside everything after them, so
//
//	pod = max( sum(app containers) + sum(sidecars),
//	           max over init container i of: own_i + sum(sidecars before i) )
//
// where for a sidecar own_i is already part of the sidecar sum. A resource
// missing from every container is absent from the result. Pod overhead and
// pod-level resources are refused by validation and add nothing.
func podRequestsAndLimits(pod *v1.Pod) (reqs, limits v1.ResourceList) {
	pick := func(c *v1.Container, limit bool) v1.ResourceList {
		if limit {
			return c.Resources.Limits
		}
		return c.Resources.Requests
	}
	aggregate := func(limit bool) v1.ResourceList {
		sum := v1.ResourceList{}
		for i := range pod.Spec.Containers {
			addResourceList(sum, pick(&pod.Spec.Containers[i], limit))
		}
		sidecars, initPeak := v1.ResourceList{}, v1.ResourceList{}
		for i := range pod.Spec.InitContainers {
			c := &pod.Spec.InitContainers[i]
			own := pick(c, limit)
			step := v1.ResourceList{}
			if isSidecar(c) {
				addResourceList(sum, own)
				addResourceList(sidecars, own)
				addResourceList(step, sidecars)
			} else {
				addResourceList(step, own)
				addResourceList(step, sidecars)
			}
			maxResourceList(initPeak, step)
		}
		maxResourceList(sum, initPeak)
		return sum
	}
	return aggregate(false), aggregate(true)
}

// addResourceList adds every quantity of add into into.
func addResourceList(into, add v1.ResourceList) {
	for name, q := range add {
		cur := into[name]
		cur.Add(q)
		into[name] = cur
	}
}

// maxResourceList raises every quantity of into to at least other's.
func maxResourceList(into, other v1.ResourceList) {
	for name, q := range other {
		if cur, ok := into[name]; !ok || q.Cmp(cur) > 0 {
			into[name] = q.DeepCopy()
		}
	}
}

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

// podCgroupResources is the pod<uid> cgroup's configuration (kubelet
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
func podCgroupResources(pod *v1.Pod, qos v1.PodQOSClass, pidsLimit int64) cgroups.Resources {
	reqs, limits := podRequestsAndLimits(pod)
	r := cgroups.Resources{
		CPUShares:   ptr.To(uint64(minShares)),
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
	r.CPUShares = ptr.To(uint64(milliCPUToShares(reqs.Cpu().MilliValue())))
	cpuLimited := qos == v1.PodQOSGuaranteed || allContainersLimit(pod, v1.ResourceCPU)
	if cpuLimited {
		if q := milliCPUToQuota(limits.Cpu().MilliValue(), quotaPeriod); q > 0 {
			r.CPUQuota = ptr.To(q)
			r.CPUPeriod = ptr.To(uint64(quotaPeriod))
		}
	}
	memLimited := qos == v1.PodQOSGuaranteed || allContainersLimit(pod, v1.ResourceMemory)
	if m := limits.Memory().Value(); memLimited && m > 0 {
		r.MemoryLimit = ptr.To(m)
	}
	return r
}

// qosTierName is the parent of a pod cgroup for the QoS class: Guaranteed
// pods sit directly under kubepods (§5.5).
func qosTierName(qos v1.PodQOSClass) cgroups.Name {
	switch qos {
	case v1.PodQOSGuaranteed:
		return cgroups.Kubepods
	case v1.PodQOSBestEffort:
		return cgroups.KubepodsBestEffort
	default:
		return cgroups.KubepodsBurstable
	}
}

// podCgroupName is the pod's cgroup: kubepods[/burstable|/besteffort]/pod<uid>.
func podCgroupName(pod *v1.Pod, qos v1.PodQOSClass) cgroups.Name {
	return cgroups.PodName(qosTierName(qos), string(pod.UID))
}

// kubepodsResources is the node-level kubepods cgroup (§5.6): shares from
// the allocatable CPU, memory limit = allocatable memory, pids limit when
// positive. No CFS quota: pods may burst into reserved CPU.
func kubepodsResources(allocatableMilliCPU, allocatableMemory, pidsLimit int64) cgroups.Resources {
	r := cgroups.Resources{CPUShares: ptr.To(uint64(milliCPUToShares(allocatableMilliCPU)))}
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
		if podQOSClass(p) != v1.PodQOSBurstable {
			continue
		}
		reqs, _ := podRequestsAndLimits(p)
		sum.Add(*reqs.Cpu())
	}
	return cgroups.Resources{CPUShares: ptr.To(uint64(milliCPUToShares(sum.MilliValue())))}
}

// bestEffortTierResources is kubepods/besteffort: the minimum shares.
func bestEffortTierResources() cgroups.Resources {
	return cgroups.Resources{CPUShares: ptr.To(uint64(minShares))}
}

// containerOOMScoreAdj is c's oom_score_adj (kubelet qos.GetContainerOOMScoreAdjust,
// §5.2): node-critical pods and Guaranteed −997, BestEffort 1000, Burstable
// 1000 − 1000·memoryRequest/memoryCapacity (integer math) clamped to
// [3, 999]. A sidecar never scores above the regular container with the
// smallest memory request, so it is not killed before the app it serves.
func containerOOMScoreAdj(pod *v1.Pod, c *v1.Container, memoryCapacity int64) int64 {
	if pod.Spec.PriorityClassName == systemNodeCritical {
		return guaranteedOOMScoreAdj
	}
	switch podQOSClass(pod) {
	case v1.PodQOSGuaranteed:
		return guaranteedOOMScoreAdj
	case v1.PodQOSBestEffort:
		return besteffortOOMScoreAdj
	}
	if memoryCapacity <= 0 {
		return besteffortOOMScoreAdj - 1
	}
	adj := burstableOOMScore(c.Resources.Requests.Memory().Value(), memoryCapacity)
	if isSidecar(c) && len(pod.Spec.Containers) > 0 {
		smallest := pod.Spec.Containers[0].Resources.Requests.Memory().Value()
		for i := range pod.Spec.Containers[1:] {
			smallest = min(smallest, pod.Spec.Containers[i+1].Resources.Requests.Memory().Value())
		}
		adj = min(adj, burstableOOMScore(smallest, memoryCapacity))
	}
	// Burstable stays strictly between Guaranteed and BestEffort.
	switch {
	case adj < besteffortOOMScoreAdj+guaranteedOOMScoreAdj:
		return besteffortOOMScoreAdj + guaranteedOOMScoreAdj
	case adj == besteffortOOMScoreAdj:
		return besteffortOOMScoreAdj - 1
	}
	return adj
}

// burstableOOMScore is the unclamped Burstable formula.
func burstableOOMScore(memoryRequest, memoryCapacity int64) int64 {
	return besteffortOOMScoreAdj - (1000*memoryRequest)/memoryCapacity
}
