package podspec

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
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
	ms, err := Mounts(c, map[string]string{"v": vol}, map[string]string{"POD_NAME": "web-1"}, pin)
	require.NoError(t, err)
	assert.Equal(t, []string{"0 v " + vol + " web/html", "1 v " + vol + " logs/web-1"}, pinned, "only subPaths are pinned")
	assert.Equal(t, "/pinned/0", ms[0].HostPath, "the CRI gets the pinned path")
	assert.Equal(t, runtimeapi.MountPropagation_PROPAGATION_PRIVATE, ms[0].Propagation)
	assert.Equal(t, "/pinned/1", ms[1].HostPath)
	assert.Equal(t, runtimeapi.MountPropagation_PROPAGATION_HOST_TO_CONTAINER, ms[1].Propagation)
	assert.Equal(t, vol, ms[2].HostPath)

	for _, sub := range []string{"../x", "/abs", "a/../../x"} {
		_, err = Mounts(&v1.Container{VolumeMounts: []v1.VolumeMount{{Name: "v", MountPath: "/c", SubPath: sub}}}, map[string]string{"v": vol}, nil, pin)
		require.ErrorContains(t, err, "relative path inside the volume", sub)
	}
	_, err = Mounts(&v1.Container{VolumeMounts: []v1.VolumeMount{{Name: "v", MountPath: "/d", SubPathExpr: "$(NOPE)"}}}, map[string]string{"v": vol}, nil, pin)
	require.ErrorContains(t, err, "undefined variable")
}
