package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Eviction on a real containerd (issue #21): thresholds set by flag
// against what the test's pods do, observed every second.

// kubepodsWorkingSet is the kubepods cgroup's working set (usage minus
// inactive file pages), as the eviction manager computes it; 0 when the
// cgroup does not exist yet.
func kubepodsWorkingSet(t *testing.T) int64 {
	t.Helper()
	for _, c := range []struct{ dir, usage, inactive string }{
		{"/sys/fs/cgroup/memory/kubepods", "memory.usage_in_bytes", "total_inactive_file"},
		{"/sys/fs/cgroup/memory/kubepods.slice", "memory.usage_in_bytes", "total_inactive_file"},
		{"/sys/fs/cgroup/kubepods", "memory.current", "inactive_file"},
		{"/sys/fs/cgroup/kubepods.slice", "memory.current", "inactive_file"},
	} {
		b, err := os.ReadFile(filepath.Join(c.dir, c.usage))
		if err != nil {
			continue
		}
		usage, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
		require.NoError(t, err)
		stat, err := os.ReadFile(filepath.Join(c.dir, "memory.stat"))
		require.NoError(t, err)
		for _, line := range strings.Split(string(stat), "\n") {
			if k, v, ok := strings.Cut(line, " "); ok && k == c.inactive {
				n, _ := strconv.ParseInt(v, 10, 64)
				usage -= n
			}
		}
		return max(usage, 0)
	}
	return 0
}

// evictionTestPod is a busybox pod running script, with the given
// resources and volumes.
func evictionTestPod(name, script string, res v1.ResourceRequirements, vols []v1.Volume, mounts []v1.VolumeMount) *v1.Pod {
	zero := int64(0)
	return &v1.Pod{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
		Spec: v1.PodSpec{
			TerminationGracePeriodSeconds: &zero,
			Volumes:                       vols,
			Containers: []v1.Container{{Name: "app", Image: suite.registry + "/minikubelet/busybox:1.36",
				Command: []string{"sh", "-c", script}, Resources: res, VolumeMounts: mounts}},
		},
	}
}

func isEvicted(p *v1.Pod) bool {
	return p.Status.Phase == v1.PodFailed && p.Status.Reason == "Evicted"
}

// TestEviction_BestEffortBeforeGuaranteed: with a threshold on
// allocatableMemory.available (node allocatable, set by --system-reserved
// to what the pods use now plus 250Mi, minus the kubepods cgroup's working
// set: the pods only, whatever else this machine runs), a BestEffort pod
// that fills a memory-backed emptyDir with 160Mi is evicted, not the
// Guaranteed pod beside it; the pressure then ends and the Guaranteed pod
// runs on.
func TestEviction_BestEffortBeforeGuaranteed(t *testing.T) {
	base := kubepodsWorkingSet(t)
	allocatable := base + 250<<20
	reserved := memTotal(t) - allocatable
	t.Logf("kubepods working set %dMi: allocatable %dMi, system-reserved %dMi", base>>20, allocatable>>20, reserved>>20)
	d := newDaemon(t, []string{"evict-be", "evict-g"},
		"--system-reserved", fmt.Sprintf("memory=%d", reserved),
		"--eviction-hard", "allocatableMemory.available<150Mi",
		"--eviction-monitoring-period", "1s", "--eviction-pressure-transition-period", "3s")
	d.start(t)

	g := evictionTestPod("evict-g", "exec sleep 3600", v1.ResourceRequirements{
		Requests: v1.ResourceList{v1.ResourceCPU: resource.MustParse("100m"), v1.ResourceMemory: resource.MustParse("64Mi")},
		Limits:   v1.ResourceList{v1.ResourceCPU: resource.MustParse("100m"), v1.ResourceMemory: resource.MustParse("64Mi")},
	}, nil, nil)
	limit := resource.MustParse("200Mi")
	be := evictionTestPod("evict-be", "dd if=/dev/zero of=/mem/fill bs=1048576 count=160 && exec sleep 3600", v1.ResourceRequirements{},
		[]v1.Volume{{Name: "mem", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{Medium: v1.StorageMediumMemory, SizeLimit: &limit}}}},
		[]v1.VolumeMount{{Name: "mem", MountPath: "/mem"}})
	// The Guaranteed pod runs before the BestEffort one fills memory: a
	// pod the eviction manager has no stats for yet is ranked first, as in
	// the kubelet (exceedMemoryRequests), so a Guaranteed pod still in its
	// sandbox when the pressure comes would rightly go first.
	for _, p := range []*v1.Pod{g, be} {
		ctx, cancel := shortCtx()
		_, err := d.api().CreatePod(ctx, p)
		cancel()
		require.NoError(t, err)
		if p == g {
			d.waitPod(t, "evict-g", "running", 90*time.Second, isRunning)
		}
	}
	start := time.Now()
	got := d.waitPod(t, "evict-be", "evicted", 90*time.Second, isEvicted)
	t.Logf("BestEffort pod evicted %s after its creation: %s", time.Since(start).Round(time.Millisecond), got.Status.Message)
	require.Contains(t, got.Status.Message, "The node was low on resource: memory. Threshold quantity: 150Mi, available: ")
	require.Contains(t, got.Status.Message, "Container app was using ")
	require.Equal(t, v1.PodQOSBestEffort, got.Status.QOSClass)
	// Its tmpfs went with it: the pressure ends (3 s after the last
	// crossing), and the Guaranteed pod was never touched.
	waitFor(t, "MemoryPressure to end", 30*time.Second, func() string {
		nd, err := d.api().NodeDetails(context.Background(), e2eNode)
		if err != nil {
			return err.Error()
		}
		for _, c := range nd.Conditions {
			if c.Type == v1.NodeMemoryPressure && c.Status != v1.ConditionFalse {
				return "MemoryPressure " + string(c.Status)
			}
		}
		return ""
	})
	p, err := d.api().GetPod(context.Background(), "default", "evict-g")
	require.NoError(t, err)
	require.True(t, isRunning(p), "the Guaranteed pod runs on: %s", podSummary(p))
	require.Empty(t, podContainersRunning(t, "evict-be"), "the evicted pod's container was killed")
	_, metrics, err := d.get("/metrics")
	require.NoError(t, err)
	v, ok := metricValue(metrics, "kubelet_evictions", `eviction_signal="allocatableMemory.available"`)
	require.True(t, ok, "kubelet_evictions missing")
	require.Equal(t, 1.0, v)
}

// podContainersRunning lists the running containers of pod name on the
// suite's runtime.
func podContainersRunning(t *testing.T, pod string) []string {
	t.Helper()
	ctx, cancel := shortCtx()
	defer cancel()
	cs, err := suite.rt.ListContainers(ctx, nil)
	require.NoError(t, err)
	var out []string
	for _, c := range cs {
		if c.Labels["io.kubernetes.pod.name"] == pod && c.State.String() == "CONTAINER_RUNNING" {
			out = append(out, c.Id)
		}
	}
	return out
}

// TestEviction_EmptyDirFillsNodeFs: with the root dir on a small
// loop-mounted filesystem and nodefs.available<40%, a pod that writes 70Mi
// into its emptyDir is evicted, ends Failed/Evicted, its files are gone
// and the filesystem has its space back; describe node shows the pressure
// and the eviction.
func TestEviction_EmptyDirFillsNodeFs(t *testing.T) {
	mnt := loopFS(t, 100)
	d := newDaemon(t, []string{"filler"}, "--root-dir", mnt,
		"--eviction-hard", "nodefs.available<40%",
		"--eviction-monitoring-period", "1s", "--eviction-pressure-transition-period", "1m")
	d.start(t)
	p := evictionTestPod("filler", "dd if=/dev/zero of=/data/fill bs=1048576 count=70 && exec sleep 3600", v1.ResourceRequirements{},
		[]v1.Volume{{Name: "data", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}}},
		[]v1.VolumeMount{{Name: "data", MountPath: "/data"}})
	ctx, cancel := shortCtx()
	created, err := d.api().CreatePod(ctx, p)
	cancel()
	require.NoError(t, err)
	start := time.Now()
	got := d.waitPod(t, "filler", "evicted", 90*time.Second, isEvicted)
	t.Logf("pod evicted %s after its creation: %s", time.Since(start).Round(time.Millisecond), got.Status.Message)
	require.Contains(t, got.Status.Message, "The node was low on resource: ephemeral-storage. Threshold quantity: 40%, available: ")
	fill := filepath.Join(mnt, "pods", string(created.UID), "volumes", "kubernetes.io~empty-dir", "data", "fill")
	waitFor(t, "the evicted pod's files gone", 30*time.Second, func() string {
		if _, err := os.Stat(fill); !os.IsNotExist(err) {
			return fmt.Sprintf("%s: %v", fill, err)
		}
		return ""
	})
	usage, _, _ := fsUsage(t, mnt)
	require.Less(t, usage, 60, "the filesystem has its space back")

	// describe node: DiskPressure (held for the 1 m transition period),
	// the node filesystem, and the eviction.
	r := d.cli(t, "describe", "node")
	require.Equal(t, 0, r.code, "%s", r)
	out := strings.Join(strings.Fields(r.stdout), " ")
	t.Logf("describe node:\n%s", r.stdout)
	require.Contains(t, out, "DiskPressure True")
	require.Contains(t, out, "KubeletHasDiskPressure")
	require.Contains(t, out, "nodefs "+mnt+" ")
	require.Contains(t, out, "default/filler nodefs.available")
	require.Contains(t, out, "The node was low on resource: ephemeral-storage.")
	require.Contains(t, out, "Eviction Thresholds: nodefs.available<40%")
	// Under disk pressure a new pod is refused, as by the kubelet.
	ctx, cancel = shortCtx()
	_, err = d.api().CreatePod(ctx, evictionTestPod("filler-2", "exec sleep 3600", v1.ResourceRequirements{}, nil, nil))
	cancel()
	require.NoError(t, err)
	late := d.waitPod(t, "filler-2", "refused", 30*time.Second, isEvicted)
	require.Contains(t, late.Status.Message, "The node had condition: [DiskPressure].")
}
