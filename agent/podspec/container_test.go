package podspec

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/proto"
	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

func TestMountsFor_SubPath(t *testing.T) {
	vol := t.TempDir()
	hc := v1.MountPropagationHostToContainer
	c := &v1.Container{VolumeMounts: []v1.VolumeMount{
		{Name: "v", MountPath: "/a", SubPath: "web/html"},
		{Name: "v", MountPath: "/b", SubPathExpr: "logs/$(POD_NAME)", MountPropagation: &hc},
		{Name: "v", MountPath: "/c"},
	}}
	var pinned []string
	pin := func(i int, volume, root, sub string) (string, error) {
		pinned = append(pinned, fmt.Sprintf("%d %s %s %s", i, volume, root, sub))
		return fmt.Sprintf("/pinned/%d", i), nil
	}
	ms, err := Mounts(c, map[string]string{"v": vol}, nil, map[string]string{"POD_NAME": "web-1"}, pin)
	require.NoError(t, err)
	assert.Equal(t, []string{"0 v " + vol + " web/html", "1 v " + vol + " logs/web-1"}, pinned, "only subPaths are pinned")
	assert.Equal(t, "/pinned/0", ms[0].HostPath, "the CRI gets the pinned path")
	assert.Equal(t, runtimeapi.MountPropagation_PROPAGATION_PRIVATE, ms[0].Propagation)
	assert.Equal(t, "/pinned/1", ms[1].HostPath)
	assert.Equal(t, runtimeapi.MountPropagation_PROPAGATION_HOST_TO_CONTAINER, ms[1].Propagation)
	assert.Equal(t, vol, ms[2].HostPath)

	for _, sub := range []string{"../x", "/abs", "a/../../x"} {
		_, err = Mounts(&v1.Container{VolumeMounts: []v1.VolumeMount{{Name: "v", MountPath: "/c", SubPath: sub}}}, map[string]string{"v": vol}, nil, nil, pin)
		require.ErrorContains(t, err, "relative path inside the volume", sub)
	}
	_, err = Mounts(&v1.Container{VolumeMounts: []v1.VolumeMount{{Name: "v", MountPath: "/d", SubPathExpr: "$(NOPE)"}}}, map[string]string{"v": vol}, nil, nil, pin)
	require.ErrorContains(t, err, "undefined variable")
}

// TestMounts_ImageVolume: a mount of an image volume names the pulled image
// (CRI Mount.Image) with no host path, is read-only even when the
// volumeMount says readOnly: false, and carries its subPath (or expanded
// subPathExpr) as ImageSubPath for the runtime to resolve inside the
// image: nothing is pinned on the host. A climbing subPath is refused.
func TestMounts_ImageVolume(t *testing.T) {
	hc := v1.MountPropagationHostToContainer
	img := ImageVolumeSpec("reg/data:1", "sha256:abc")
	images := map[string]*runtimeapi.ImageSpec{"data": img}
	pin := func(i int, volume, root, sub string) (string, error) {
		t.Fatalf("pinned %s %s in an image volume", volume, sub)
		return "", nil
	}
	c := &v1.Container{VolumeMounts: []v1.VolumeMount{
		{Name: "data", MountPath: "/a"},
		{Name: "data", MountPath: "/b", ReadOnly: false, SubPath: "etc/conf"},
		{Name: "data", MountPath: "/c", SubPathExpr: "per/$(POD_NAME)", MountPropagation: &hc},
		{Name: "other", MountPath: "/d"},
	}}
	ms, err := Mounts(c, map[string]string{"other": "/volumes/other"}, images, map[string]string{"POD_NAME": "web-1"}, pin)
	require.NoError(t, err)
	want := []*runtimeapi.Mount{
		{ContainerPath: "/a", Image: &runtimeapi.ImageSpec{Image: "sha256:abc", UserSpecifiedImage: "reg/data:1"}, Readonly: true},
		{ContainerPath: "/b", Image: img, ImageSubPath: "etc/conf", Readonly: true},
		{ContainerPath: "/c", Image: img, ImageSubPath: "per/web-1", Readonly: true, Propagation: runtimeapi.MountPropagation_PROPAGATION_HOST_TO_CONTAINER},
		{ContainerPath: "/d", HostPath: "/volumes/other"},
	}
	require.Len(t, ms, len(want))
	for i := range want {
		assert.True(t, proto.Equal(want[i], ms[i]), "mount %d: got %v, want %v", i, ms[i], want[i])
	}
	for _, sub := range []string{"../x", "/abs", "a/../../x"} {
		_, err = Mounts(&v1.Container{VolumeMounts: []v1.VolumeMount{{Name: "data", MountPath: "/c", SubPath: sub}}}, nil, images, nil, pin)
		require.ErrorContains(t, err, "relative path inside the volume", sub)
	}
	_, err = Mounts(&v1.Container{VolumeMounts: []v1.VolumeMount{{Name: "gone", MountPath: "/c"}}}, nil, images, nil, pin)
	require.ErrorContains(t, err, `volumeMount "gone": no such volume`)
}
