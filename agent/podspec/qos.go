package podspec

// Resources and QoS: the pod's QoS class, the container's CRI resources and
// oom_score_adj (kubelet-facts §5.1–§5.4). The pod-level cgroups built
// from the same sums are agent/podcgroup's.

import (
	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/minikubelet/minikubelet/agent/manifest"
)

// QOSClass computes the pod's QoS class by the Kubernetes rules
// (pkg/apis/core/v1/helper/qos, kubelet-facts §5.1): only cpu and memory
// count; init containers count with the app containers.
func QOSClass(pod *v1.Pod) v1.PodQOSClass {
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

// PodRequestsAndLimits aggregates the pod's requests and limits per
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
func PodRequestsAndLimits(pod *v1.Pod) (reqs, limits v1.ResourceList) {
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
			if manifest.IsSidecar(c) {
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

// oom_score_adj values of kubelet's pkg/kubelet/qos/policy.go (§5.2).
const (
	guaranteedOOMScoreAdj int64 = -997
	besteffortOOMScoreAdj int64 = 1000
	// systemNodeCritical is the priority class whose pods get the
	// Guaranteed score whatever their QoS class.
	systemNodeCritical = "system-node-critical"
)

// ContainerOOMScoreAdj is c's oom_score_adj (kubelet qos.GetContainerOOMScoreAdjust,
// §5.2): node-critical pods and Guaranteed −997, BestEffort 1000, Burstable
// 1000 − 1000·memoryRequest/memoryCapacity (integer math) clamped to
// [3, 999]. A sidecar never scores above the regular container with the
// smallest memory request, so it is not killed before the app it serves.
func ContainerOOMScoreAdj(pod *v1.Pod, c *v1.Container, memoryCapacity int64) int64 {
	if pod.Spec.PriorityClassName == systemNodeCritical {
		return guaranteedOOMScoreAdj
	}
	switch QOSClass(pod) {
	case v1.PodQOSGuaranteed:
		return guaranteedOOMScoreAdj
	case v1.PodQOSBestEffort:
		return besteffortOOMScoreAdj
	}
	if memoryCapacity <= 0 {
		return besteffortOOMScoreAdj - 1
	}
	adj := burstableOOMScore(c.Resources.Requests.Memory().Value(), memoryCapacity)
	if manifest.IsSidecar(c) && len(pod.Spec.Containers) > 0 {
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

// LinuxResources converts CPU and memory requests and limits as the kubelet
// does (kubelet-facts §5.3, §5.4). The oom_score_adj and the pod-level
// cgroups are the QoS issue's (#4).
func LinuxResources(c *v1.Container) *runtimeapi.LinuxContainerResources {
	r := &runtimeapi.LinuxContainerResources{}
	cpuReq, hasReq := c.Resources.Requests[v1.ResourceCPU]
	cpuLim, hasLim := c.Resources.Limits[v1.ResourceCPU]
	switch {
	case hasReq:
		r.CpuShares = MilliCPUToShares(cpuReq.MilliValue())
	case hasLim:
		r.CpuShares = MilliCPUToShares(cpuLim.MilliValue())
	default:
		r.CpuShares = MinShares
	}
	if hasLim {
		r.CpuPeriod = QuotaPeriod
		r.CpuQuota = MilliCPUToQuota(cpuLim.MilliValue(), QuotaPeriod)
	}
	if mem, ok := c.Resources.Limits[v1.ResourceMemory]; ok {
		r.MemoryLimitInBytes = mem.Value()
	}
	return r
}

// Constants of pkg/kubelet/cm/helpers_linux.go (kubelet-facts §5.4): CPU
// shares bounds and conversion, and the CFS period.
const (
	MinShares     = 2
	MaxShares     = 262144
	SharesPerCPU  = 1024
	MilliPerCPU   = 1000
	QuotaPeriod   = 100000
	minQuotaValue = 1000
)

// MilliCPUToShares converts milli-CPUs to cgroup CPU shares, clamped to
// [MinShares, MaxShares].
func MilliCPUToShares(m int64) int64 {
	if m == 0 {
		return MinShares
	}
	if m > MaxShares*MilliPerCPU/SharesPerCPU {
		return MaxShares // before m*SharesPerCPU can overflow to a negative
	}
	s := m * SharesPerCPU / MilliPerCPU
	return min(max(s, MinShares), MaxShares)
}

// MilliCPUToQuota converts a milli-CPU limit to a CFS quota for period (0:
// no limit), at least 1 ms.
func MilliCPUToQuota(m, period int64) int64 {
	if m == 0 {
		return 0
	}
	return max(m*period/MilliPerCPU, minQuotaValue)
}

// ContainerResources are the container's CRI resources plus its
// oom_score_adj from the pod's QoS class and the node's memory capacity (0:
// unknown).
func ContainerResources(pod *v1.Pod, c *v1.Container, memoryCapacity int64) *runtimeapi.LinuxContainerResources {
	r := LinuxResources(c)
	r.OomScoreAdj = ContainerOOMScoreAdj(pod, c, memoryCapacity)
	return r
}
