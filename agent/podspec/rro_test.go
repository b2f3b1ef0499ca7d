package podspec

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

func rroMode(m v1.RecursiveReadOnlyMode) *v1.RecursiveReadOnlyMode { return &m }

func TestResolveRecursiveReadOnly(t *testing.T) {
	hostToContainer := v1.MountPropagationHostToContainer
	for name, tc := range map[string]struct {
		m         v1.VolumeMount
		supported bool
		want      bool
		err       string
	}{
		"unset":                     {m: v1.VolumeMount{Name: "v", ReadOnly: true}, supported: true},
		"Disabled":                  {m: v1.VolumeMount{Name: "v", ReadOnly: true, RecursiveReadOnly: rroMode(v1.RecursiveReadOnlyDisabled)}, supported: true},
		"IfPossible, supported":     {m: v1.VolumeMount{Name: "v", ReadOnly: true, RecursiveReadOnly: rroMode(v1.RecursiveReadOnlyIfPossible)}, supported: true, want: true},
		"IfPossible, not supported": {m: v1.VolumeMount{Name: "v", ReadOnly: true, RecursiveReadOnly: rroMode(v1.RecursiveReadOnlyIfPossible)}},
		"Enabled, supported":        {m: v1.VolumeMount{Name: "v", ReadOnly: true, RecursiveReadOnly: rroMode(v1.RecursiveReadOnlyEnabled)}, supported: true, want: true},
		"Enabled, not supported":    {m: v1.VolumeMount{Name: "mnt", ReadOnly: true, RecursiveReadOnly: rroMode(v1.RecursiveReadOnlyEnabled)}, err: `volume "mnt" requested recursive read-only mode, but it is not supported by the runtime`},
		"Enabled without readOnly":  {m: v1.VolumeMount{Name: "v", RecursiveReadOnly: rroMode(v1.RecursiveReadOnlyEnabled)}, supported: true, err: "it is not read-only"},
		"Enabled with propagation":  {m: v1.VolumeMount{Name: "v", ReadOnly: true, MountPropagation: &hostToContainer, RecursiveReadOnly: rroMode(v1.RecursiveReadOnlyEnabled)}, supported: true, err: "not compatible with propagation"},
		"an unknown mode":           {m: v1.VolumeMount{Name: "v", ReadOnly: true, RecursiveReadOnly: rroMode("Sometimes")}, supported: true, err: `unknown recursive read-only mode "Sometimes"`},
	} {
		t.Run(name, func(t *testing.T) {
			got, err := ResolveRecursiveReadOnly(tc.m, tc.supported)
			if tc.err != "" {
				require.ErrorContains(t, err, tc.err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
		})
	}
}

func TestSetRecursiveReadOnlyAndStatuses(t *testing.T) {
	c := &v1.Container{Name: "test", VolumeMounts: []v1.VolumeMount{
		{Name: "mnt", MountPath: "/mnt-rro", ReadOnly: true, RecursiveReadOnly: rroMode(v1.RecursiveReadOnlyEnabled)},
		{Name: "mnt", MountPath: "/mnt-rro-if-possible", ReadOnly: true, RecursiveReadOnly: rroMode(v1.RecursiveReadOnlyIfPossible)},
		{Name: "mnt", MountPath: "/mnt-ro", ReadOnly: true},
		{Name: "mnt", MountPath: "/mnt-rw"},
	}}
	mounts := func() []*runtimeapi.Mount {
		var out []*runtimeapi.Mount
		for _, m := range c.VolumeMounts {
			out = append(out, &runtimeapi.Mount{ContainerPath: m.MountPath, Readonly: m.ReadOnly})
		}
		return out
	}
	yes, no := func() bool { return true }, func() bool { return false }

	ms := mounts()
	require.NoError(t, SetRecursiveReadOnly(c, ms, yes))
	assert.Equal(t, []bool{true, true, false, false}, []bool{ms[0].RecursiveReadOnly, ms[1].RecursiveReadOnly, ms[2].RecursiveReadOnly, ms[3].RecursiveReadOnly})
	enabled, disabled := v1.RecursiveReadOnlyEnabled, v1.RecursiveReadOnlyDisabled
	assert.Equal(t, []v1.VolumeMountStatus{
		{Name: "mnt", MountPath: "/mnt-rro", ReadOnly: true, RecursiveReadOnly: &enabled},
		{Name: "mnt", MountPath: "/mnt-rro-if-possible", ReadOnly: true, RecursiveReadOnly: &enabled},
		{Name: "mnt", MountPath: "/mnt-ro", ReadOnly: true, RecursiveReadOnly: &disabled},
		{Name: "mnt", MountPath: "/mnt-rw"},
	}, VolumeMountStatuses(c, yes))

	// A runtime without it: Enabled is the container's config error.
	err := SetRecursiveReadOnly(c, mounts(), no)
	require.EqualError(t, err, `failed to resolve recursive read-only mode: volume "mnt" requested recursive read-only mode, but it is not supported by the runtime`)
	c.VolumeMounts = c.VolumeMounts[1:]
	ms = mounts()
	require.NoError(t, SetRecursiveReadOnly(c, ms, no))
	assert.False(t, ms[0].RecursiveReadOnly, "IfPossible: plain read-only")
	assert.Equal(t, &disabled, VolumeMountStatuses(c, no)[0].RecursiveReadOnly)
	// No mount wants it: the runtime is not asked.
	plain := &v1.Container{VolumeMounts: []v1.VolumeMount{{Name: "v", MountPath: "/v", ReadOnly: true}}}
	require.NoError(t, SetRecursiveReadOnly(plain, []*runtimeapi.Mount{{}}, func() bool { t.Fatal("asked"); return false }))
	VolumeMountStatuses(plain, func() bool { t.Fatal("asked"); return false })
}

func TestRecursiveReadOnlySupport(t *testing.T) {
	calls := 0
	status := func(resp *runtimeapi.StatusResponse, err error) func(context.Context) (*runtimeapi.StatusResponse, error) {
		return func(context.Context) (*runtimeapi.StatusResponse, error) { calls++; return resp, err }
	}
	var r RecursiveReadOnlySupport
	assert.False(t, r.Get(t.Context(), status(nil, errors.New("down"))), "a failed call: not supported")
	yes := &runtimeapi.StatusResponse{RuntimeHandlers: []*runtimeapi.RuntimeHandler{
		{Name: "runc", Features: &runtimeapi.RuntimeHandlerFeatures{}},
		{Name: "", Features: &runtimeapi.RuntimeHandlerFeatures{RecursiveReadOnlyMounts: true}},
	}}
	assert.True(t, r.Get(t.Context(), status(yes, nil)), "asked again after a failure")
	assert.True(t, r.Get(t.Context(), status(nil, errors.New("down"))), "kept once answered")
	assert.Equal(t, 2, calls)
	var old RecursiveReadOnlySupport // containerd 1.6: no runtime handlers
	assert.False(t, old.Get(t.Context(), status(&runtimeapi.StatusResponse{}, nil)))
}
