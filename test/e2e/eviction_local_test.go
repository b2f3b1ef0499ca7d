package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// Local storage eviction on a real containerd: the kubelet's
// localStorageEviction, checked every monitoring cycle (1 s here) with the
// node far from disk pressure (the test daemons keep their usual disk
// thresholds, nodefs.available<1%: see serveHostFlags).

// storageLimits is ephemeral-storage limits of size (requests default to
// them).
func storageLimits(size string) v1.ResourceRequirements {
	return v1.ResourceRequirements{Limits: v1.ResourceList{v1.ResourceEphemeralStorage: resource.MustParse(size)}}
}

// requireEvictedEvent checks the pod's Evicted event carries msg.
func requireEvictedEvent(t *testing.T, d *daemon, pod, msg string) {
	t.Helper()
	waitFor(t, "the Evicted event of "+pod, 10*time.Second, func() string {
		ctx, cancel := shortCtx()
		defer cancel()
		evs, err := d.api().Events(ctx, "default", pod)
		if err != nil {
			return err.Error()
		}
		var seen []string
		for _, e := range evs.Items {
			if e.Reason == "Evicted" && e.Type == v1.EventTypeWarning && e.Message == msg {
				return ""
			}
			seen = append(seen, e.Reason+": "+e.Message)
		}
		return fmt.Sprintf("events: %q", seen)
	})
}

// requireNoDiskPressure checks that the node is not under disk pressure:
// a pod past its own limits changes nothing of the node.
func requireNoDiskPressure(t *testing.T, d *daemon) {
	t.Helper()
	nd, err := d.api().NodeDetails(context.Background(), e2eNode)
	require.NoError(t, err)
	for _, c := range nd.Conditions {
		if c.Type == v1.NodeDiskPressure {
			require.Equal(t, v1.ConditionFalse, c.Status, "a pod past its own limit puts the node under no disk pressure")
			return
		}
	}
	t.Fatalf("no DiskPressure condition in %+v", nd.Conditions)
}

// requireStillRunning checks pod runs, and still does a few eviction
// cycles later.
func requireStillRunning(t *testing.T, d *daemon, pod string) {
	t.Helper()
	time.Sleep(scaled(3 * time.Second))
	p, err := d.api().GetPod(context.Background(), "default", pod)
	require.NoError(t, err)
	require.True(t, isRunning(p), "the bystander runs on: %s", podSummary(p))
	require.NotEmpty(t, podContainersRunning(t, pod), "the bystander's container runs")
}

// TestEviction_EmptyDirSizeLimit: a pod that writes 16Mi into a disk
// emptyDir of sizeLimit 8Mi is evicted at the next check with the
// kubelet's message and an Evicted event, its emptyDir removed; a
// bystander within its own sizeLimit (and with ephemeral-storage requests
// and limits on an init and an app container, which are accepted and
// admitted) keeps running; the node shows no pressure.
func TestEviction_EmptyDirSizeLimit(t *testing.T) {
	d := newDaemon(t, []string{"sizelimit-filler", "sizelimit-bystander"}, "--eviction-monitoring-period", "1s")
	d.start(t)
	limit := resource.MustParse("8Mi")
	vols := []v1.Volume{{Name: "data", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{SizeLimit: &limit}}}}
	mounts := []v1.VolumeMount{{Name: "data", MountPath: "/data"}}
	filler := evictionTestPod("sizelimit-filler", "dd if=/dev/zero of=/data/fill bs=1048576 count=16 && exec sleep 3600", v1.ResourceRequirements{}, vols, mounts)
	by := evictionTestPod("sizelimit-bystander", "dd if=/dev/zero of=/data/fill bs=1048576 count=4 && exec sleep 3600", storageLimits("64Mi"), vols, mounts)
	initC := by.Spec.Containers[0]
	initC.Name, initC.Command = "init", []string{"true"}
	initC.Resources = v1.ResourceRequirements{
		Requests: v1.ResourceList{v1.ResourceEphemeralStorage: resource.MustParse("1Mi")},
		Limits:   v1.ResourceList{v1.ResourceEphemeralStorage: resource.MustParse("2Mi")},
	}
	by.Spec.InitContainers = []v1.Container{initC}
	created := map[string]*v1.Pod{}
	for _, p := range []*v1.Pod{by, filler} {
		ctx, cancel := shortCtx()
		c, err := d.api().CreatePod(ctx, p)
		cancel()
		require.NoError(t, err)
		created[p.Name] = c
	}
	d.waitPod(t, "sizelimit-bystander", "running", 60*time.Second, isRunning)

	start := time.Now()
	got := d.waitPod(t, "sizelimit-filler", "evicted", 60*time.Second, isEvicted)
	t.Logf("pod evicted %s after the bystander ran: %q", time.Since(start).Round(time.Millisecond), got.Status.Message)
	const msg = `Usage of EmptyDir volume "data" exceeds the limit "8Mi". `
	require.Equal(t, msg, got.Status.Message)
	requireEvictedEvent(t, d, "sizelimit-filler", msg)
	fill := filepath.Join(d.root, "pods", string(created["sizelimit-filler"].UID), "volumes", "kubernetes.io~empty-dir", "data", "fill")
	waitFor(t, "the evicted pod's emptyDir gone", 30*time.Second, func() string {
		if _, err := os.Stat(fill); !os.IsNotExist(err) {
			return fmt.Sprintf("%s: %v", fill, err)
		}
		return ""
	})
	require.Empty(t, podContainersRunning(t, "sizelimit-filler"), "the evicted pod's container was killed")
	requireStillRunning(t, d, "sizelimit-bystander")
	requireNoDiskPressure(t, d)
	_, metrics, err := d.get("/metrics")
	require.NoError(t, err)
	v, ok := metricValue(metrics, "kubelet_evictions", `eviction_signal="emptydirfs.limit"`)
	require.True(t, ok, "kubelet_evictions missing")
	require.Equal(t, 1.0, v)
}

// TestEviction_EphemeralStorageLimits: writes to the container's own
// filesystem (its writable layer, as the runtime's ContainerStats report
// it) count against its ephemeral-storage limit. A container limited to
// 8Mi writing 16Mi beside one limited to 64Mi (the pod's 72Mi not
// reached) is evicted with the kubelet's container message; a pod of one
// container limited to 8Mi writing 16Mi with the pod message (the pod's
// total is checked first, as in the kubelet); a bystander within its
// limit runs on.
func TestEviction_EphemeralStorageLimits(t *testing.T) {
	pods := []string{"ephemeral-container", "ephemeral-pod", "ephemeral-bystander"}
	d := newDaemon(t, pods, "--eviction-monitoring-period", "1s", "--container-gc-period", "2s")
	d.start(t)
	ctr := evictionTestPod("ephemeral-container", "dd if=/dev/zero of=/fill bs=1048576 count=16 && exec sleep 3600", storageLimits("8Mi"), nil, nil)
	side := ctr.Spec.Containers[0]
	side.Name, side.Command, side.Resources = "side", []string{"sleep", "3600"}, storageLimits("64Mi")
	ctr.Spec.Containers = append(ctr.Spec.Containers, side)
	pod := evictionTestPod("ephemeral-pod", "dd if=/dev/zero of=/fill bs=1048576 count=16 && exec sleep 3600", storageLimits("8Mi"), nil, nil)
	by := evictionTestPod("ephemeral-bystander", "dd if=/dev/zero of=/fill bs=1048576 count=4 && exec sleep 3600", storageLimits("64Mi"), nil, nil)
	for _, p := range []*v1.Pod{by, ctr, pod} {
		ctx, cancel := shortCtx()
		_, err := d.api().CreatePod(ctx, p)
		cancel()
		require.NoError(t, err)
	}
	d.waitPod(t, "ephemeral-bystander", "running", 60*time.Second, isRunning)

	// containerd refreshes its snapshot usage every 10 s or so.
	start := time.Now()
	got := d.waitPod(t, "ephemeral-container", "evicted", 90*time.Second, isEvicted)
	t.Logf("two-container pod evicted %s after the bystander ran: %q", time.Since(start).Round(time.Millisecond), got.Status.Message)
	const ctrMsg = `Container app exceeded its local ephemeral storage limit "8Mi". `
	require.Equal(t, ctrMsg, got.Status.Message)
	requireEvictedEvent(t, d, "ephemeral-container", ctrMsg)

	got = d.waitPod(t, "ephemeral-pod", "evicted", 90*time.Second, isEvicted)
	const podMsg = "Pod ephemeral local storage usage exceeds the total limit of containers 8Mi. "
	require.Equal(t, podMsg, got.Status.Message)
	requireEvictedEvent(t, d, "ephemeral-pod", podMsg)

	require.Empty(t, podContainersRunning(t, "ephemeral-container"), "the evicted pod's containers were killed")
	require.Empty(t, podContainersRunning(t, "ephemeral-pod"))
	// As the kubelet (ShouldPodContentBeRemoved), an evicted pod's content
	// goes though the pod is not deleted: container GC removes its dead
	// containers (the writable layer it was evicted for filling), its
	// sandbox and its log directory; its status keeps the containers'
	// terminated states.
	for _, name := range []string{"ephemeral-container", "ephemeral-pod"} {
		p, err := d.api().GetPod(context.Background(), "default", name)
		require.NoError(t, err)
		logs := filepath.Join(d.logDir, fmt.Sprintf("default_%s_%s", name, p.UID))
		waitFor(t, "the evicted pod "+name+"'s containers, sandbox and logs removed", 30*time.Second, func() string {
			ctx, cancel := shortCtx()
			defer cancel()
			sbs, err := suite.rt.ListPodSandbox(ctx, &runtimeapi.PodSandboxFilter{LabelSelector: map[string]string{"io.kubernetes.pod.name": name}})
			if err != nil {
				return err.Error()
			}
			if cs := podContainers(t, name); len(cs) > 0 || len(sbs) > 0 {
				return fmt.Sprintf("%d containers, %d sandboxes left", len(cs), len(sbs))
			}
			if _, err := os.Stat(logs); !os.IsNotExist(err) {
				return fmt.Sprintf("%s: %v", logs, err)
			}
			return ""
		})
		time.Sleep(scaled(2 * time.Second)) // a resync after the removal
		p, err = d.api().GetPod(context.Background(), "default", name)
		require.NoError(t, err)
		require.True(t, isEvicted(p), podSummary(p))
		for _, cs := range p.Status.ContainerStatuses {
			require.NotNil(t, cs.State.Terminated, "%s/%s keeps its terminated state after its container was removed: %+v", name, cs.Name, cs.State)
		}
	}
	requireStillRunning(t, d, "ephemeral-bystander")
	requireNoDiskPressure(t, d)
	_, metrics, err := d.get("/metrics")
	require.NoError(t, err)
	for _, sig := range []string{"ephemeralcontainerfs.limit", "ephemeralpodfs.limit"} {
		v, ok := metricValue(metrics, "kubelet_evictions", `eviction_signal="`+sig+`"`)
		require.True(t, ok, "kubelet_evictions %s missing", sig)
		require.Equal(t, 1.0, v, sig)
	}
}

// TestEviction_DeletedOpenFileCounts: a container limited to 8Mi that
// writes 32Mi into a file it removed but keeps open (fd 3, kept across
// exec) is evicted with the pod message: no walk and no writable-layer
// figure sees such a file, its processes' descriptors do. A bystander
// holding 2Mi so, within its 64Mi, runs on.
func TestEviction_DeletedOpenFileCounts(t *testing.T) {
	d := newDaemon(t, []string{"held-open", "held-bystander"}, "--eviction-monitoring-period", "1s")
	d.start(t)
	held := evictionTestPod("held-open", "exec 3>/fill && rm /fill && dd if=/dev/zero bs=1048576 count=32 >&3 && exec sleep 3600", storageLimits("8Mi"), nil, nil)
	by := evictionTestPod("held-bystander", "exec 3>/fill && rm /fill && dd if=/dev/zero bs=1048576 count=2 >&3 && exec sleep 3600", storageLimits("64Mi"), nil, nil)
	for _, p := range []*v1.Pod{by, held} {
		ctx, cancel := shortCtx()
		_, err := d.api().CreatePod(ctx, p)
		cancel()
		require.NoError(t, err)
	}
	d.waitPod(t, "held-bystander", "running", 60*time.Second, isRunning)
	start := time.Now()
	got := d.waitPod(t, "held-open", "evicted", 60*time.Second, isEvicted)
	t.Logf("pod evicted %s after the bystander ran: %q", time.Since(start).Round(time.Millisecond), got.Status.Message)
	const msg = "Pod ephemeral local storage usage exceeds the total limit of containers 8Mi. "
	require.Equal(t, msg, got.Status.Message)
	requireEvictedEvent(t, d, "held-open", msg)
	requireStillRunning(t, d, "held-bystander")
	requireNoDiskPressure(t, d)
}
