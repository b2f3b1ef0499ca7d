package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
)

// TestEviction_ReclaimRemovesCompletedPodContainers: under disk pressure
// the reclaim removes the dead container and the stopped sandbox of a
// Completed pod that nobody deleted, with its log file, as the kubelet's
// DeleteAllUnusedContainers does, and that is enough: no pod is evicted.
// The root dir and the pod log directory are on a 100 MB loop-mounted
// filesystem with nodefs.available<40%; the Completed pod (restartPolicy
// Never) wrote 35Mi to its log, and a running pod then writes 30Mi into
// its emptyDir, which crosses the threshold. Afterwards the Completed
// pod's status still reports its terminated container with exit code 0
// (`get pods` shows Completed), and the running pod runs on.
func TestEviction_ReclaimRemovesCompletedPodContainers(t *testing.T) {
	mnt := loopFS(t, 100)
	d := newDaemon(t, []string{"done", "filler"}, "--root-dir", mnt,
		"--eviction-hard", "nodefs.available<40%",
		"--eviction-monitoring-period", "1s", "--eviction-pressure-transition-period", "1m")
	d.logDir = filepath.Join(mnt, "pod-logs") // the logs count on nodefs
	d.start(t)

	done := evictionTestPod("done", "dd if=/dev/zero bs=1048576 count=35 2>/dev/null", v1.ResourceRequirements{}, nil, nil)
	done.Spec.RestartPolicy = v1.RestartPolicyNever
	ctx, cancel := shortCtx()
	created, err := d.api().CreatePod(ctx, done)
	cancel()
	require.NoError(t, err)
	completed := func(p *v1.Pod) bool {
		if p.Status.Phase != v1.PodSucceeded || len(p.Status.ContainerStatuses) != 1 {
			return false
		}
		term := p.Status.ContainerStatuses[0].State.Terminated
		return term != nil && term.ExitCode == 0 && term.Reason == "Completed"
	}
	before := d.waitPod(t, "done", "Succeeded with its container terminated (exit code 0)", 2*time.Minute, completed)
	require.Len(t, podContainers(t, "done"), 1, "the Completed pod's dead container stays while there is no pressure")
	require.Len(t, podSandboxes(t, "done"), 1, "and its stopped sandbox")
	logFile := filepath.Join(d.logDir, "default_done_"+string(created.UID), "app", "0.log")
	info, err := os.Stat(logFile)
	require.NoError(t, err)
	require.Greater(t, info.Size(), int64(35<<20), "the Completed pod's log")
	usage, _, _ := fsUsage(t, mnt)
	t.Logf("nodefs %d%% used with the Completed pod's log", usage)
	require.Less(t, usage, 60, "no pressure yet")

	filler := evictionTestPod("filler", "dd if=/dev/zero of=/data/fill bs=1048576 count=30 && exec sleep 3600", v1.ResourceRequirements{},
		[]v1.Volume{{Name: "data", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}}},
		[]v1.VolumeMount{{Name: "data", MountPath: "/data"}})
	ctx, cancel = shortCtx()
	_, err = d.api().CreatePod(ctx, filler)
	cancel()
	require.NoError(t, err)
	start := time.Now()
	waitFor(t, "the Completed pod's container and sandbox removed under disk pressure", 90*time.Second, func() string {
		if c, s := podContainers(t, "done"), podSandboxes(t, "done"); len(c)+len(s) > 0 {
			return fmt.Sprintf("%d container(s), %d sandbox(es) left; nodefs %s", len(c), len(s), func() string {
				u, _, _ := fsUsage(t, mnt)
				return fmt.Sprintf("%d%% used", u)
			}())
		}
		return ""
	})
	t.Logf("reclaimed %s after the filler's creation", time.Since(start).Round(time.Millisecond))
	_, err = os.Stat(logFile)
	require.True(t, os.IsNotExist(err), "its log file removed with it: %v", err)
	// The reclaim's closing line follows the removal the wait saw by the
	// runtime's round trip that measured the space it freed.
	var out string
	waitFor(t, "the reclaim's closing log line", 30*time.Second, func() string {
		if out, _ = d.out.snapshot(); !strings.Contains(out, "Node-level resources reclaimed; no pod evicted") {
			return "not logged yet"
		}
		return ""
	})
	require.Contains(t, out, "Removed a dead container of a terminated pod")
	require.NotContains(t, out, "Evicted a pod")
	usage, _, _ = fsUsage(t, mnt)
	require.Less(t, usage, 60, "the filesystem has the log's space back")
	requireStillRunning(t, d, "filler")

	// The Completed pod's status is what it was.
	after, err := d.api().GetPod(context.Background(), "default", "done")
	require.NoError(t, err)
	require.True(t, completed(after), "the Completed pod's status after the reclaim: %s", podSummary(after))
	require.Equal(t, before.Status.ContainerStatuses, after.Status.ContainerStatuses)
	r := d.cli(t, "get", "pods")
	require.Equal(t, 0, r.code, "%s", r)
	var line string
	for _, l := range strings.Split(r.stdout, "\n") {
		if f := strings.Fields(l); len(f) > 0 && f[0] == "done" {
			line = l
		}
	}
	require.Contains(t, strings.Fields(line), "Completed", "get pods:\n%s", r.stdout)
}
