package e2e

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
)

// TestEviction_TerminationLogFillerEvictedNotBystander: on a 100 MB node
// filesystem (the root dir on a loop mount), a bystander pod writes 10 MiB
// into its emptyDir; then a pod fills the filesystem with 60 MiB written
// through /dev/termination-log, a file under the agent's pod directory
// outside the pod's volumes. The filler is the pod evicted (its writes
// count as its usage), the space comes back with its eviction (its message
// file is cut to the message), and the bystander runs on: before, the
// filler measured as empty and the bystander was evicted in its place.
func TestEviction_TerminationLogFillerEvictedNotBystander(t *testing.T) {
	mnt := loopFS(t, 100)
	d := newDaemon(t, []string{"bystander", "tlog-filler"}, "--root-dir", mnt,
		"--eviction-hard", "nodefs.available<40%",
		"--eviction-monitoring-period", "1s", "--eviction-pressure-transition-period", "1m")
	d.start(t)
	vols := []v1.Volume{{Name: "data", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}}}
	mounts := []v1.VolumeMount{{Name: "data", MountPath: "/data"}}

	ctx, cancel := shortCtx()
	by, err := d.api().CreatePod(ctx, evictionTestPod("bystander",
		"dd if=/dev/zero of=/data/fill bs=1048576 count=10 && exec sleep 3600", v1.ResourceRequirements{}, vols, mounts))
	cancel()
	require.NoError(t, err)
	byFill := filepath.Join(mnt, "pods", string(by.UID), "volumes", "kubernetes.io~empty-dir", "data", "fill")
	waitFor(t, "the bystander's 10 MiB written", 60*time.Second, func() string {
		if st, err := os.Stat(byFill); err != nil || st.Size() < 10<<20 {
			return "not yet"
		}
		return ""
	})

	ctx, cancel = shortCtx()
	_, err = d.api().CreatePod(ctx, evictionTestPod("tlog-filler",
		"dd if=/dev/zero of=/dev/termination-log bs=1048576 count=60; echo done >> /dev/termination-log; exec sleep 3600",
		v1.ResourceRequirements{}, nil, nil))
	cancel()
	require.NoError(t, err)
	start := time.Now()
	got := d.waitPod(t, "tlog-filler", "evicted", 90*time.Second, isEvicted)
	t.Logf("filler evicted %s after its creation: %s", time.Since(start).Round(time.Millisecond), got.Status.Message)
	require.Contains(t, got.Status.Message, "The node was low on resource: ephemeral-storage.")
	waitFor(t, "the node filesystem has its space back", 30*time.Second, func() string {
		if usage, _, _ := fsUsage(t, mnt); usage >= 60 {
			return "still full"
		}
		return ""
	})
	// Several more cycles: the bystander is never picked.
	time.Sleep(5 * time.Second)
	ctx, cancel = shortCtx()
	p, err := d.api().GetPod(ctx, "default", "bystander")
	cancel()
	require.NoError(t, err)
	require.False(t, isEvicted(p), "the bystander was evicted: %s", p.Status.Message)
	require.Equal(t, v1.PodRunning, p.Status.Phase)
}
