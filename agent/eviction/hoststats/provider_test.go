package hoststats

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/minikubelet/minikubelet/agent/eviction"
	"github.com/minikubelet/minikubelet/agent/podspec"
	"github.com/minikubelet/minikubelet/agent/volume"
)

func writeFiles(t *testing.T, root string, files map[string]string) {
	t.Helper()
	for p, c := range files {
		full := filepath.Join(root, p)
		require.NoError(t, os.MkdirAll(filepath.Dir(full), 0o755))
		require.NoError(t, os.WriteFile(full, []byte(c), 0o644))
	}
}

// The working set is usage minus inactive file pages, from a cgroup v1
// memory controller or a v2 cgroup; the v2 root's usage comes from
// meminfo.
func TestHostEvictionStats_WorkingSets(t *testing.T) {
	root, proc := t.TempDir(), t.TempDir()
	writeFiles(t, root, map[string]string{
		"memory/memory.usage_in_bytes":          "1000000\n",
		"memory/memory.stat":                    "cache 5\ntotal_inactive_file 300000\ninactive_file 1\n",
		"memory/kubepods/memory.usage_in_bytes": "500000\n",
		"memory/kubepods/memory.stat":           "total_inactive_file 100000\n",
		"kubepods.slice/memory.current":         "700000\n",
		"kubepods.slice/memory.stat":            "anon 5\ninactive_file 200000\n",
		"memory.stat":                           "inactive_file 1048576\n",
	})
	writeFiles(t, proc, map[string]string{
		"meminfo":            "MemTotal:       8192 kB\nMemFree:        2048 kB\nMemAvailable:   4096 kB\n",
		"loadavg":            "0.10 0.20 0.30 2/345 6789\n",
		"sys/kernel/pid_max": "4096\n",
	})
	h := &Provider{cgroupRoot: root, procRoot: proc}
	ws, err := h.rootWorkingSet(false)
	require.NoError(t, err)
	assert.Equal(t, int64(700000), ws)
	ws, err = h.cgroupWorkingSet("/kubepods", false)
	require.NoError(t, err)
	assert.Equal(t, int64(400000), ws)
	ws, err = h.cgroupWorkingSet("/kubepods.slice", true)
	require.NoError(t, err)
	assert.Equal(t, int64(500000), ws)
	ws, err = h.rootWorkingSet(true)
	require.NoError(t, err)
	assert.Equal(t, int64((8192-2048)*1024-1048576), ws)
	used, limit, err := h.pids()
	require.NoError(t, err)
	assert.Equal(t, []int64{345, 4096}, []int64{used, limit})
	_, err = h.cgroupWorkingSet("/missing", false)
	assert.Error(t, err)
}

// fakeStats lists fixed container stats.
type fakeStats []*runtimeapi.ContainerStats

func (f fakeStats) ListContainerStats(context.Context, *runtimeapi.ContainerStatsFilter) ([]*runtimeapi.ContainerStats, error) {
	return f, nil
}

func ctrStats(uid, name string, ws, layer uint64) *runtimeapi.ContainerStats {
	return &runtimeapi.ContainerStats{
		Attributes:    &runtimeapi.ContainerAttributes{Labels: map[string]string{podspec.LabelPodUID: uid, podspec.LabelContainerName: name}},
		Memory:        &runtimeapi.MemoryUsage{WorkingSetBytes: &runtimeapi.UInt64Value{Value: ws}},
		WritableLayer: &runtimeapi.FilesystemUsage{UsedBytes: &runtimeapi.UInt64Value{Value: layer}},
	}
}

// Pod stats: memory summed over the pod's containers; disk adds the
// writable layers, the volumes on the node filesystem (a link the pod left
// is not followed) and the pod's logs.
func TestHostEvictionStats_PodStats(t *testing.T) {
	h := newTestEngine(t)
	p := &v1.Pod{}
	p.Name, p.Namespace, p.UID = "p", "default", types.UID("uid-1")
	vol := filepath.Join(h.PodDir(p), "volumes", "kubernetes.io~empty-dir", "data")
	require.NoError(t, os.MkdirAll(vol, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(vol, "fill"), make([]byte, 64<<10), 0o644))
	outside := filepath.Join(t.TempDir(), "big")
	require.NoError(t, os.WriteFile(outside, make([]byte, 1<<20), 0o644))
	require.NoError(t, os.Symlink(outside, filepath.Join(vol, "link")))
	s := h.provider(fakeStats{
		ctrStats("uid-1", "a", 100, 10), ctrStats("uid-1", "b", 50, 5), ctrStats("other", "c", 999, 999),
	})
	got := s.PodStats(context.Background(), []*v1.Pod{p}, false)
	require.Contains(t, got, p.UID)
	assert.Equal(t, int64(150), got[p.UID].Memory)
	assert.Equal(t, map[string]int64{"a": 100, "b": 50}, got[p.UID].ContainerMemory)
	assert.Zero(t, got[p.UID].Disk, "disk only when asked")
	got = s.PodStats(context.Background(), []*v1.Pod{p}, true)
	disk := got[p.UID].Disk
	assert.GreaterOrEqual(t, disk, int64(15+64<<10))
	assert.Less(t, disk, int64(1<<20), "the link's target is not counted")
}

// Local storage: a disk emptyDir with a sizeLimit measured by descriptor
// (a link the pod left to a big file outside is not followed), the
// newest instance's writable layer per container, the log directory of a
// container with a limit, and the pod's total; an emptyDir without a
// sizeLimit is not measured on its own, a pod without containers not at
// all.
func TestHostEvictionStats_LocalStorage(t *testing.T) {
	h := newTestEngine(t)
	size := resource.MustParse("1Mi")
	lim := v1.ResourceList{v1.ResourceEphemeralStorage: resource.MustParse("10Mi")}
	p := &v1.Pod{}
	p.Name, p.Namespace, p.UID = "p", "default", types.UID("uid-1")
	p.Spec.Volumes = []v1.Volume{
		{Name: "data", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{SizeLimit: &size}}},
		{Name: "other", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}},
	}
	p.Spec.Containers = []v1.Container{{Name: "a", Resources: v1.ResourceRequirements{Limits: lim}}, {Name: "b"}}
	empty := p.DeepCopy()
	empty.Name, empty.UID = "empty", "uid-2"

	data := filepath.Join(h.PodDir(p), "volumes", "kubernetes.io~empty-dir", "data")
	other := filepath.Join(h.PodDir(p), "volumes", "kubernetes.io~empty-dir", "other")
	logs := filepath.Join(h.PodLogDir(p), "a")
	for _, d := range []string{data, other, logs} {
		require.NoError(t, os.MkdirAll(d, 0o755))
	}
	require.NoError(t, os.WriteFile(filepath.Join(data, "fill"), bytes.Repeat([]byte("x"), 256<<10), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(other, "fill"), bytes.Repeat([]byte("x"), 512<<10), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(logs, "0.log"), bytes.Repeat([]byte("x"), 128<<10), 0o644))
	outside := filepath.Join(t.TempDir(), "big")
	require.NoError(t, os.WriteFile(outside, bytes.Repeat([]byte("x"), 4<<20), 0o644))
	require.NoError(t, os.Symlink(outside, filepath.Join(data, "link")))

	old := ctrStats("uid-1", "a", 0, 9<<20)
	old.Attributes.Metadata = &runtimeapi.ContainerMetadata{Name: "a", Attempt: 0}
	cur := ctrStats("uid-1", "a", 0, 1<<20)
	cur.Attributes.Metadata = &runtimeapi.ContainerMetadata{Name: "a", Attempt: 1}
	s := h.provider(fakeStats{old, cur, ctrStats("uid-1", "b", 0, 2<<20), ctrStats("other", "c", 0, 999)})

	got := s.LocalStorage(context.Background(), []*v1.Pod{p, empty})
	require.NotContains(t, got, empty.UID, "no container: not checked")
	u := got[p.UID]
	require.NotNil(t, u)
	assert.Equal(t, map[string]int64{"a": 1 << 20, "b": 2 << 20}, u.ContainerRootfs, "the newest attempt's layer")
	require.Contains(t, u.EmptyDirs, "data")
	assert.NotContains(t, u.EmptyDirs, "other", "no sizeLimit: not measured on its own")
	assert.GreaterOrEqual(t, u.EmptyDirs["data"], int64(256<<10))
	assert.Less(t, u.EmptyDirs["data"], int64(1<<20), "the link's target is not counted")
	assert.GreaterOrEqual(t, u.ContainerLogs["a"], int64(128<<10))
	assert.NotContains(t, u.ContainerLogs, "b", "no limit: logs not measured")
	require.True(t, u.PodMeasured)
	assert.GreaterOrEqual(t, u.Pod, int64(3<<20+(256+512+128)<<10), "layers, volumes and logs")
	assert.Less(t, u.Pod, int64(4<<20+3<<20))
}

// A pod that builds an emptyDir tree the walk cannot measure whole (deeper
// than volume.DefaultUsageLimits) counts as over its sizeLimit, however
// large: hiding usage from the measurement does not let it past the limit.
func TestHostEvictionStats_LocalStorageUnmeasurable(t *testing.T) {
	h := newTestEngine(t)
	size := resource.MustParse("1Gi")
	p := &v1.Pod{}
	p.Name, p.Namespace, p.UID = "deep", "default", types.UID("uid-deep")
	p.Spec.Volumes = []v1.Volume{{Name: "data", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{SizeLimit: &size}}}}
	p.Spec.Containers = []v1.Container{{Name: "a"}}
	dir := filepath.Join(h.PodDir(p), "volumes", "kubernetes.io~empty-dir", "data")
	deep := dir + strings.Repeat("/d", volume.DefaultUsageLimits.MaxDepth+2)
	require.NoError(t, os.MkdirAll(deep, 0o755))
	s := h.provider(fakeStats{ctrStats("uid-deep", "a", 0, 0)})
	got := s.LocalStorage(context.Background(), []*v1.Pod{p})
	require.Contains(t, got, p.UID)
	assert.Equal(t, unmeasurableUsage, got[p.UID].EmptyDirs["data"])
	sig, msg := eviction.LocalStorageViolation(p, got[p.UID], nil, false)
	assert.Equal(t, eviction.SignalEmptyDirFsLimit, sig)
	assert.Equal(t, `Usage of EmptyDir volume "data" exceeds the limit "1Gi". `, msg)
}
