package podcgroup

import (
	"errors"
	"io"
	"log/slog"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"

	"github.com/minikubelet/minikubelet/cgroups"
	"github.com/minikubelet/minikubelet/cgroups/cgroupstest"
)

func testManager(f *cgroupstest.Fake) Manager {
	return Manager{Cgroups: f, Allocatable: v1.ResourceList{v1.ResourceCPU: resource.MustParse("2"), v1.ResourceMemory: resource.MustParse("1Gi")},
		Burstable: &BurstableTier{}, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
}

func updates(f *cgroupstest.Fake) int {
	n := 0
	for _, c := range f.Calls() {
		if c.Method == "Update" {
			n++
		}
	}
	return n
}

// The burstable tier is written only when its shares change, and written
// again after a failed write even if the value is the same (the tier
// forgets what it last wrote).
func TestManager_UpdateBurstableTier(t *testing.T) {
	f := cgroupstest.NewFake()
	m := testManager(f)
	_, err := m.EnsureNode()
	require.NoError(t, err)

	m.UpdateBurstableTier(500)
	m.UpdateBurstableTier(500)
	assert.Equal(t, 1, updates(f), "the same shares are written once")
	r, _ := f.Resources(cgroups.KubepodsBurstable)
	require.NotNil(t, r.CPUShares)
	assert.EqualValues(t, 512, *r.CPUShares, "500m is 512 shares")

	f.InjectError("Update", errors.New("EBUSY"))
	m.UpdateBurstableTier(1000)
	assert.Equal(t, 2, updates(f))
	m.UpdateBurstableTier(1000)
	assert.Equal(t, 3, updates(f), "after a failed write the same shares are written again")
	r, _ = f.Resources(cgroups.KubepodsBurstable)
	assert.EqualValues(t, 1024, *r.CPUShares)

	// A copy of the Manager (one is built per use) shares the tier's memory.
	m2 := testManager(f)
	m2.Burstable = m.Burstable
	m2.UpdateBurstableTier(1000)
	assert.Equal(t, 3, updates(f), "a new Manager over the same tier knows what was written")
}

// The node's cgroups, then a pod's under its QoS tier, and its removal.
func TestManager_NodeAndPod(t *testing.T) {
	f := cgroupstest.NewFake()
	m := testManager(f)
	path, err := m.EnsureNode()
	require.NoError(t, err)
	assert.Equal(t, f.Path(cgroups.Kubepods), path)
	for _, n := range []cgroups.Name{cgroups.Kubepods, cgroups.KubepodsBurstable, cgroups.KubepodsBestEffort} {
		assert.True(t, f.Exists(n), "%v", n)
	}
	pod := qosPod("uid1", nil, qctr("app", qosRes("100m", ""), nil))
	path, err = m.EnsurePod(pod)
	require.NoError(t, err)
	assert.Equal(t, m.Path(pod), path)
	assert.True(t, f.Exists(Name(pod, v1.PodQOSBurstable)))
	require.NoError(t, m.Destroy(pod))
	assert.False(t, f.Exists(Name(pod, v1.PodQOSBurstable)))

	// No driver (cgroups off): nothing to do, no error.
	off := Manager{}
	_, err = off.EnsurePod(pod)
	assert.NoError(t, err)
	assert.Equal(t, "", off.Path(pod))
}

// SweepOrphans removes only the pod cgroups keep does not claim and that
// hold no process, calls removed for each one it removed, and goes on
// after a failure.
func TestManager_SweepOrphans(t *testing.T) {
	f := cgroupstest.NewFake()
	m := testManager(f)
	_, err := m.EnsureNode()
	require.NoError(t, err)
	pod := func(uid string, qos v1.PodQOSClass) *v1.Pod {
		p := &v1.Pod{}
		p.UID = types.UID(uid)
		p.Status.QOSClass = qos
		_, err := m.EnsurePod(p)
		require.NoError(t, err)
		return p
	}
	kept := pod("kept", v1.PodQOSGuaranteed)
	busy := pod("busy", v1.PodQOSBurstable)
	orphan := pod("orphan", v1.PodQOSBestEffort)
	failing := pod("failing", v1.PodQOSBurstable)
	f.SetPids(Name(busy, v1.PodQOSBurstable), 42)

	var removed []types.UID
	err = m.SweepOrphans(
		func(uid types.UID) bool { return uid == kept.UID },
		func(uid types.UID) error {
			removed = append(removed, uid)
			if uid == failing.UID {
				return errors.New("pod dir busy")
			}
			return nil
		})
	require.ErrorContains(t, err, "pod dir busy")
	assert.ElementsMatch(t, []types.UID{orphan.UID, failing.UID}, removed)
	assert.True(t, f.Exists(Name(kept, v1.PodQOSGuaranteed)), "a pod keep claims stays")
	assert.True(t, f.Exists(Name(busy, v1.PodQOSBurstable)), "a cgroup with processes stays")
	assert.False(t, f.Exists(Name(orphan, v1.PodQOSBestEffort)))
	assert.False(t, f.Exists(Name(failing, v1.PodQOSBurstable)))

	assert.NoError(t, Manager{}.SweepOrphans(nil, nil), "no driver: nothing to sweep")
}
