package main

import (
	"testing"

	"github.com/stretchr/testify/assert"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// A foreground run does not evict: a pod with local storage limits is
// told so, one without is not, and a memory emptyDir's sizeLimit (a tmpfs
// size, enforced by the kernel) is no local storage limit.
func TestLocalStorageNotice(t *testing.T) {
	lim := resource.MustParse("8Mi")
	withLimit := &v1.Pod{Spec: v1.PodSpec{Containers: []v1.Container{{Name: "c", Resources: v1.ResourceRequirements{
		Limits: v1.ResourceList{v1.ResourceEphemeralStorage: lim}}}}}}
	withSizeLimit := &v1.Pod{Spec: v1.PodSpec{Containers: []v1.Container{{Name: "c"}},
		Volumes: []v1.Volume{{Name: "d", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{SizeLimit: &lim}}}}}}
	memory := &v1.Pod{Spec: v1.PodSpec{Containers: []v1.Container{{Name: "c"}},
		Volumes: []v1.Volume{{Name: "d", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{Medium: v1.StorageMediumMemory, SizeLimit: &lim}}}}}}
	assert.Contains(t, localStorageNotice(withLimit), "not enforced by a foreground run")
	assert.Contains(t, localStorageNotice(withSizeLimit), "minikubelet serve")
	assert.Empty(t, localStorageNotice(memory))
	assert.Empty(t, localStorageNotice(&v1.Pod{Spec: v1.PodSpec{Containers: []v1.Container{{Name: "c"}}}}))
}
