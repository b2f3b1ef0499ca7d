package eviction

import (
	"testing"

	"github.com/stretchr/testify/assert"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// localPod has a disk emptyDir "scratch" (sizeLimit 100Mi), a memory
// emptyDir "shm" (sizeLimit 10Mi), an emptyDir "nolimit", an init
// container "init" limited to 1Gi, and app containers "app" (limit 200Mi)
// and "free" (no limit).
func localPod() *v1.Pod {
	q := func(s string) *resource.Quantity { v := resource.MustParse(s); return &v }
	lim := func(s string) v1.ResourceRequirements {
		return v1.ResourceRequirements{Limits: v1.ResourceList{v1.ResourceEphemeralStorage: resource.MustParse(s)}}
	}
	p := &v1.Pod{}
	p.Name, p.Namespace = "p", "default"
	p.Spec.Volumes = []v1.Volume{
		{Name: "scratch", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{SizeLimit: q("100Mi")}}},
		{Name: "shm", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{Medium: v1.StorageMediumMemory, SizeLimit: q("10Mi")}}},
		{Name: "nolimit", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}},
	}
	p.Spec.InitContainers = []v1.Container{{Name: "init", Resources: lim("1Gi")}}
	p.Spec.Containers = []v1.Container{{Name: "app", Resources: lim("200Mi")}, {Name: "free"}}
	return p
}

// TestLocalStorageViolation: each limit evicts with the kubelet's message
// once exceeded, not at or below it; the checks go emptyDir, pod,
// container; a memory emptyDir and an emptyDir without a sizeLimit are
// never checked; a dedicated image filesystem takes the writable layer out
// of the container check only.
func TestLocalStorageViolation(t *testing.T) {
	const mi = 1 << 20
	podLimit := resource.MustParse("1Gi") // max(app 200Mi, init 1Gi)
	within := func() *LocalStorageUsage {
		return &LocalStorageUsage{
			EmptyDirs:       map[string]int64{"scratch": 100 * mi, "nolimit": 900 * mi},
			ContainerRootfs: map[string]int64{"app": 150 * mi, "free": 5 * mi},
			ContainerLogs:   map[string]int64{"app": 50 * mi, "free": 700 * mi},
			Pod:             1024 * mi, PodMeasured: true,
		}
	}
	tests := []struct {
		name       string
		mutate     func(u *LocalStorageUsage)
		podLimit   *resource.Quantity
		dedicated  bool
		wantSignal string
		wantMsg    string
	}{
		{name: "every use at its limit: nothing", mutate: func(*LocalStorageUsage) {}, podLimit: &podLimit},
		{name: "emptyDir one byte past its sizeLimit", mutate: func(u *LocalStorageUsage) { u.EmptyDirs["scratch"]++ }, podLimit: &podLimit,
			wantSignal: SignalEmptyDirFsLimit, wantMsg: `Usage of EmptyDir volume "scratch" exceeds the limit "100Mi". `},
		{name: "memory emptyDir is not checked", mutate: func(u *LocalStorageUsage) { u.EmptyDirs["shm"] = 500 * mi }, podLimit: &podLimit},
		{name: "pod total past the containers' limits", mutate: func(u *LocalStorageUsage) { u.Pod++ }, podLimit: &podLimit,
			wantSignal: SignalEphemeralPodFsLimit, wantMsg: "Pod ephemeral local storage usage exceeds the total limit of containers 1Gi. "},
		{name: "pod total not measured: not checked", mutate: func(u *LocalStorageUsage) { u.Pod, u.PodMeasured = 1<<40, false }, podLimit: &podLimit},
		{name: "no pod limit: pod total not checked", mutate: func(u *LocalStorageUsage) { u.Pod = 1 << 40 }},
		{name: "container writable layer and logs past its limit", mutate: func(u *LocalStorageUsage) { u.ContainerRootfs["app"]++ }, podLimit: &podLimit,
			wantSignal: SignalEphemeralContainerFsLimit, wantMsg: `Container app exceeded its local ephemeral storage limit "200Mi". `},
		{name: "container logs alone past its limit", mutate: func(u *LocalStorageUsage) { u.ContainerRootfs["app"] = 0; u.ContainerLogs["app"] = 201 * mi },
			podLimit: &podLimit, wantSignal: SignalEphemeralContainerFsLimit, wantMsg: `Container app exceeded its local ephemeral storage limit "200Mi". `},
		{name: "dedicated imagefs: writable layer not counted for the container", mutate: func(u *LocalStorageUsage) { u.ContainerRootfs["app"] = 500 * mi },
			podLimit: &podLimit, dedicated: true},
		{name: "container without a limit is not checked", mutate: func(u *LocalStorageUsage) { u.ContainerLogs["free"] = 1 << 40 }},
		{name: "emptyDir is reported before the pod and the container",
			mutate: func(u *LocalStorageUsage) {
				u.EmptyDirs["scratch"], u.Pod, u.ContainerLogs["app"] = 101*mi, 2048*mi, 300*mi
			}, podLimit: &podLimit,
			wantSignal: SignalEmptyDirFsLimit, wantMsg: `Usage of EmptyDir volume "scratch" exceeds the limit "100Mi". `},
		{name: "pod is reported before the container",
			mutate:   func(u *LocalStorageUsage) { u.Pod, u.ContainerLogs["app"] = 2048*mi, 300*mi },
			podLimit: &podLimit, wantSignal: SignalEphemeralPodFsLimit,
			wantMsg: "Pod ephemeral local storage usage exceeds the total limit of containers 1Gi. "},
		{name: "container not started yet: no stats, not checked", mutate: func(u *LocalStorageUsage) {
			delete(u.ContainerRootfs, "app")
			delete(u.ContainerLogs, "app")
		}, podLimit: &podLimit},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			u := within()
			tc.mutate(u)
			sig, msg := LocalStorageViolation(localPod(), u, tc.podLimit, tc.dedicated)
			assert.Equal(t, tc.wantSignal, sig)
			assert.Equal(t, tc.wantMsg, msg)
		})
	}
	sig, msg := LocalStorageViolation(localPod(), nil, &podLimit, false)
	assert.Empty(t, sig+msg, "no stats: nothing")
}

func TestHasLocalStorageLimits(t *testing.T) {
	assert.True(t, HasLocalStorageLimits(localPod()))
	p := &v1.Pod{}
	p.Spec.Containers = []v1.Container{{Name: "c"}}
	p.Spec.Volumes = []v1.Volume{
		{Name: "a", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}},
		{Name: "m", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{Medium: v1.StorageMediumMemory, SizeLimit: resource.NewQuantity(1, resource.BinarySI)}}},
	}
	assert.False(t, HasLocalStorageLimits(p), "no disk sizeLimit, no ephemeral-storage limit")
	p.Spec.InitContainers = []v1.Container{{Name: "i", Resources: v1.ResourceRequirements{Limits: v1.ResourceList{v1.ResourceEphemeralStorage: resource.MustParse("1Gi")}}}}
	assert.True(t, HasLocalStorageLimits(p), "an init container's limit counts in the pod's")
}
