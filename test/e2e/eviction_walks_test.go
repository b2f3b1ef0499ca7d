package e2e

import (
	"context"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/minikubelet/minikubelet/agent/api"
)

// Issue 29 items 7 and 8: what the eviction manager measures of a pod, and
// what measuring it costs.

// TestEviction_SandboxFilesCount: containerd mounts its per-sandbox
// hostname and resolv.conf (<root>/io.containerd.grpc.v1.cri/sandboxes/
// <id>/) writable at /etc/hostname and /etc/resolv.conf. A pod limited to
// 5Mi of ephemeral storage that writes 80 MB into either is evicted with
// the kubelet's pod message; before, neither file was in any figure and
// both pods ran on holding 80 MB of the node's disk. A bystander that
// writes a line into its own /etc/resolv.conf (as images do) runs on.
func TestEviction_SandboxFilesCount(t *testing.T) {
	pods := []string{"sandbox-hostname", "sandbox-resolv", "sandbox-bystander"}
	d := newDaemon(t, pods, "--eviction-monitoring-period", "1s")
	d.start(t)
	for _, p := range []*v1.Pod{
		evictionTestPod("sandbox-bystander", "echo 'options ndots:2' >> /etc/resolv.conf && exec sleep 3600", storageLimits("5Mi"), nil, nil),
		evictionTestPod("sandbox-hostname", "dd if=/dev/zero of=/etc/hostname bs=1048576 count=80; exec sleep 3600", storageLimits("5Mi"), nil, nil),
		evictionTestPod("sandbox-resolv", "dd if=/dev/zero of=/etc/resolv.conf bs=1048576 count=80; exec sleep 3600", storageLimits("5Mi"), nil, nil),
	} {
		ctx, cancel := shortCtx()
		_, err := d.api().CreatePod(ctx, p)
		cancel()
		require.NoError(t, err)
	}
	d.waitPod(t, "sandbox-bystander", "running", 60*time.Second, isRunning)
	const msg = "Pod ephemeral local storage usage exceeds the total limit of containers 5Mi. "
	for _, name := range []string{"sandbox-hostname", "sandbox-resolv"} {
		start := time.Now()
		got := d.waitPod(t, name, "evicted", 60*time.Second, isEvicted)
		t.Logf("%s evicted %s after the bystander ran: %q", name, time.Since(start).Round(time.Millisecond), got.Status.Message)
		require.Equal(t, msg, got.Status.Message)
		requireEvictedEvent(t, d, name, msg)
	}
	requireStillRunning(t, d, "sandbox-bystander")
	requireNoDiskPressure(t, d)
	_, metrics, err := d.get("/metrics")
	require.NoError(t, err)
	v, ok := metricValue(metrics, "kubelet_evictions", `eviction_signal="ephemeralpodfs.limit"`)
	require.True(t, ok, "kubelet_evictions missing")
	require.Equal(t, 2.0, v)
}

// processCPU is the CPU time (user and system) the process pid used.
func processCPU(t *testing.T, pid int) time.Duration {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	require.NoError(t, err)
	// The fields after the command (which may hold spaces) start at the
	// last ')'; utime and stime are fields 14 and 15, in clock ticks
	// (USER_HZ, 100 on Linux).
	f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
	utime, err1 := strconv.ParseInt(f[11], 10, 64)
	stime, err2 := strconv.ParseInt(f[12], 10, 64)
	require.NoError(t, err1)
	require.NoError(t, err2)
	return time.Duration(utime+stime) * 10 * time.Millisecond
}

// TestEviction_WalksPacedPerPeriod: a pod with an ephemeral-storage limit
// that holds 300k empty files in an emptyDir is walked once per
// --volume-stats-agg-period at most (1 to 2 periods apart, 20 s here; the
// eviction cycle is the kubelet's 10 s), not at every cycle: over a minute
// the daemon's walk counter grows by 1 to 4 (before, 6: one per cycle,
// 3.9 s of CPU a minute). The daemon's CPU over the minute is logged, a
// measurement, not asserted (the machine's load decides it), as are the
// walk time and the walks paused for the cycle's budget.
func TestEviction_WalksPacedPerPeriod(t *testing.T) {
	const period = 20 * time.Second
	d := newDaemon(t, []string{"many-files"}, "--eviction-monitoring-period", "10s", "--volume-stats-agg-period", period.String())
	d.start(t)
	vols := []v1.Volume{{Name: "data", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}}}
	mounts := []v1.VolumeMount{{Name: "data", MountPath: "/data"}}
	// 300 directories of 1000 empty files: xargs touches them in big
	// batches (a shell loop would take minutes).
	script := `cd /data && for d in $(seq 300); do mkdir d$d; (cd d$d && seq 1000 | xargs touch); done; echo created; exec sleep 3600`
	p := evictionTestPod("many-files", script, v1.ResourceRequirements{Limits: v1.ResourceList{v1.ResourceEphemeralStorage: resource.MustParse("1Gi")}}, vols, mounts)
	ctx, cancel := shortCtx()
	_, err := d.api().CreatePod(ctx, p)
	cancel()
	require.NoError(t, err)
	d.waitPod(t, "many-files", "running", 60*time.Second, isRunning)
	waitFor(t, "300k files created", 5*time.Minute, func() string {
		ctx, cancel := shortCtx()
		defer cancel()
		rc, err := d.api().Logs(ctx, "default", "many-files", api.LogRequest{Container: "app"})
		if err != nil {
			return err.Error()
		}
		defer rc.Close()
		logs, err := io.ReadAll(rc)
		if err != nil {
			return err.Error()
		}
		if !strings.Contains(string(logs), "created") {
			return "still creating"
		}
		return ""
	})
	metric := func(name string) float64 {
		t.Helper()
		_, text, err := d.get("/metrics")
		require.NoError(t, err)
		v, ok := metricValue(text, name)
		require.True(t, ok, "%s missing from the daemon's metrics", name)
		return v
	}
	// One period for a walk of the full tree to start, then a minute.
	time.Sleep(period)
	walks0, secs0, pauses0 := metric("minikubelet_pod_files_measurements_total"), metric("minikubelet_pod_files_walk_seconds_total"), metric("minikubelet_pod_files_walk_pauses_total")
	cpu0, start := processCPU(t, d.cmd.Process.Pid), time.Now()
	time.Sleep(time.Minute)
	cpu1, took := processCPU(t, d.cmd.Process.Pid), time.Since(start)
	walks, secs, pauses := metric("minikubelet_pod_files_measurements_total")-walks0, metric("minikubelet_pod_files_walk_seconds_total")-secs0, metric("minikubelet_pod_files_walk_pauses_total")-pauses0
	t.Logf("over %s with 300k files: daemon CPU %s, %v walks taking %.2f s, %v pauses for the cycle budget",
		took.Round(time.Second), cpu1-cpu0, walks, secs, pauses)
	require.LessOrEqual(t, walks, float64(time.Minute/period)+1, "walked more than once per period")
	// Still measured: a walk finished, or one is under way (its time
	// counts as it goes; on a loaded machine a walk paused at every
	// cycle's budget can take longer than the minute).
	require.True(t, walks >= 1 || secs > 0, "the pod is still measured")
	p2, err := d.api().GetPod(context.Background(), "default", "many-files")
	require.NoError(t, err)
	require.True(t, isRunning(p2), "within its limit it runs on: %s", podSummary(p2))
}
