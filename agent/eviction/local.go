package eviction

// Local storage limits: the kubelet's localStorageEviction
// (pkg/kubelet/eviction/eviction_manager.go), checked every monitoring
// cycle whether or not the node is under pressure. A pod is evicted when
//
//  1. a disk-backed emptyDir uses more than its sizeLimit
//     (emptyDirLimitEviction);
//  2. the pod (its containers' writable layers and logs, and its disk
//     volumes) uses more than the sum of its containers' ephemeral-storage
//     limits (podEphemeralStorageLimitEviction);
//  3. a container (its writable layer and its logs) uses more than its
//     ephemeral-storage limit (containerEphemeralStorageLimitEviction);
//
// checked in that order, the first one found naming the pod's eviction.

import (
	"fmt"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// The kubelet's signal names of the local storage evictions (its
// kubelet_evictions metric's eviction_signal label).
const (
	SignalEmptyDirFsLimit           = "emptydirfs.limit"
	SignalEphemeralPodFsLimit       = "ephemeralpodfs.limit"
	SignalEphemeralContainerFsLimit = "ephemeralcontainerfs.limit"
)

// The kubelet's messages (pkg/kubelet/eviction/helpers.go), trailing space
// included: the kubelet prints them so.
const (
	emptyDirMessageFmt                  = "Usage of EmptyDir volume %q exceeds the limit %q. "
	podEphemeralStorageMessageFmt       = "Pod ephemeral local storage usage exceeds the total limit of containers %s. "
	containerEphemeralStorageMessageFmt = "Container %s exceeded its local ephemeral storage limit %q. "
)

// LocalStorageUsage is one pod's local storage use, in bytes, as the agent
// measured it. A map lacks what was not measured (a container not created
// yet, an emptyDir without a sizeLimit): that is never over a limit.
type LocalStorageUsage struct {
	// EmptyDirs are the disk-backed emptyDirs, by volume name.
	EmptyDirs map[string]int64
	// ContainerRootfs are the containers' writable layers, by container
	// name (the newest instance of each, as the kubelet's stats).
	ContainerRootfs map[string]int64
	// ContainerLogs are the containers' log directories, by container
	// name.
	ContainerLogs map[string]int64
	// Pod is the pod's total: the writable layers, the pod's log
	// directory and its pod directory on the node filesystem (disk
	// emptyDirs, configMap data, /etc/hosts, termination-message files).
	// PodMeasured says whether it was measured.
	Pod         int64
	PodMeasured bool
}

// LocalStorageViolation returns the first local storage limit the pod
// exceeds (see the file comment): the kubelet's signal name and message,
// or "", "" when it is within its limits. podLimit is the pod's
// ephemeral-storage limit (the containers' limits summed, init containers
// and sidecars as the scheduler counts them; nil when no container sets
// one). dedicatedImageFs is set when the runtime's image filesystem is not
// the node filesystem: then, as in the kubelet, a container's writable
// layer does not count against its own limit (it is not on nodefs).
func LocalStorageViolation(pod *v1.Pod, u *LocalStorageUsage, podLimit *resource.Quantity, dedicatedImageFs bool) (signal, message string) {
	if u == nil {
		return "", ""
	}
	// Step 1: emptyDir sizeLimit. The kubelet checks every emptyDir's
	// volume stats; a memory-backed one is a tmpfs the size of its
	// sizeLimit (or less), which cannot grow past it, and its pages are
	// memory, not disk: it is left out here explicitly (never measured).
	for i := range pod.Spec.Volumes {
		vol := &pod.Spec.Volumes[i]
		ed := vol.EmptyDir
		if ed == nil || ed.Medium == v1.StorageMediumMemory || ed.SizeLimit == nil || ed.SizeLimit.Sign() != 1 {
			continue
		}
		if used, ok := u.EmptyDirs[vol.Name]; ok && used > ed.SizeLimit.Value() {
			return SignalEmptyDirFsLimit, fmt.Sprintf(emptyDirMessageFmt, vol.Name, ed.SizeLimit.String())
		}
	}
	// Step 2: the pod's total against the sum of its containers' limits.
	if podLimit != nil && u.PodMeasured && u.Pod > podLimit.Value() {
		return SignalEphemeralPodFsLimit, fmt.Sprintf(podEphemeralStorageMessageFmt, podLimit.String())
	}
	// Step 3: each app container (the kubelet looks at spec.containers
	// only) against its own limit: logs, plus the writable layer when it
	// is on the node filesystem.
	for i := range pod.Spec.Containers {
		c := &pod.Spec.Containers[i]
		limit, ok := c.Resources.Limits[v1.ResourceEphemeralStorage]
		if !ok || limit.Value() == 0 {
			continue
		}
		logs, haveLogs := u.ContainerLogs[c.Name]
		rootfs, haveRootfs := u.ContainerRootfs[c.Name]
		if !haveLogs && !haveRootfs {
			continue // no stats: not started yet
		}
		used := logs
		if !dedicatedImageFs {
			used += rootfs
		}
		if used > limit.Value() {
			return SignalEphemeralContainerFsLimit, fmt.Sprintf(containerEphemeralStorageMessageFmt, c.Name, limit.String())
		}
	}
	return "", ""
}

// HasLocalStorageLimits reports whether the pod has a limit local storage
// eviction checks: a disk-backed emptyDir with a sizeLimit, or an
// ephemeral-storage limit on any container. Pods without are not
// measured at all.
func HasLocalStorageLimits(pod *v1.Pod) bool {
	for i := range pod.Spec.Volumes {
		ed := pod.Spec.Volumes[i].EmptyDir
		if ed != nil && ed.Medium != v1.StorageMediumMemory && ed.SizeLimit != nil && ed.SizeLimit.Sign() == 1 {
			return true
		}
	}
	for _, list := range [][]v1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for i := range list {
			if _, ok := list[i].Resources.Limits[v1.ResourceEphemeralStorage]; ok {
				return true
			}
		}
	}
	return false
}
