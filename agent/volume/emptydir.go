package volume

// Memory-backed emptyDir volumes: the size of their tmpfs.

import (
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// EmptyDirMemorySize is the size of a memory-backed volume, the kubelet's
// rule (SizeMemoryBackedVolumes): the pod's memory limit (the sum of its
// containers' limits, or the largest init container's), the node's
// allocatable memory when no container has one, and sizeLimit when it is
// smaller. 0 means the kernel's default (half the RAM).
func EmptyDirMemorySize(pod *v1.Pod, sizeLimit *resource.Quantity, allocatable v1.ResourceList) int64 {
	var limit int64
	for _, c := range pod.Spec.Containers {
		if q, ok := c.Resources.Limits[v1.ResourceMemory]; ok {
			limit += q.Value()
		}
	}
	for _, c := range pod.Spec.InitContainers {
		if q, ok := c.Resources.Limits[v1.ResourceMemory]; ok && q.Value() > limit {
			limit = q.Value()
		}
	}
	if limit == 0 {
		if q, ok := allocatable[v1.ResourceMemory]; ok {
			limit = q.Value()
		}
	}
	if sizeLimit != nil && sizeLimit.Value() > 0 && (limit == 0 || sizeLimit.Value() < limit) {
		limit = sizeLimit.Value()
	}
	return limit
}
