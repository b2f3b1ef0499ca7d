package cgroupstest

import (
	"errors"
	"os"
	"testing"

	"github.com/minikubelet/minikubelet/cgroups"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/utils/ptr"
)

func TestFake(t *testing.T) {
	f := NewFake()
	pod := cgroups.PodName(cgroups.KubepodsBurstable, "u1")
	require.NoError(t, f.Ensure(pod, cgroups.Resources{CPUShares: ptr.To[uint64](2)}))
	assert.True(t, f.Exists(cgroups.KubepodsBurstable))
	require.NoError(t, f.Update(pod, cgroups.Resources{PidsLimit: ptr.To[int64](5)}))
	r, ok := f.Resources(pod)
	require.True(t, ok)
	assert.Equal(t, uint64(2), *r.CPUShares)
	assert.ErrorIs(t, f.Update(cgroups.PodName(cgroups.Kubepods, "x"), cgroups.Resources{}), os.ErrNotExist)
	pods, err := f.ListPods(cgroups.KubepodsBurstable)
	require.NoError(t, err)
	assert.Equal(t, []cgroups.Name{pod}, pods)

	boom := errors.New("boom")
	f.InjectError("Destroy", boom)
	assert.ErrorIs(t, f.Destroy(pod), boom)
	require.NoError(t, f.Destroy(pod))
	assert.False(t, f.Exists(pod))
	assert.Len(t, f.Calls(), 5)
}
