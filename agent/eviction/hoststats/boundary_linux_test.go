//go:build linux

package hoststats

// Attacks on the eviction manager's measurement of pods' disk usage by a
// pod that controls every name in its volumes (issue #16's boundary): each
// test is what such a pod does to make the measurement read outside its
// tree, or to look smaller than it is so that the node evicts another pod
// in its place.

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/minikubelet/minikubelet/agent/eviction"
	"github.com/minikubelet/minikubelet/agent/volume"
	"github.com/minikubelet/minikubelet/cgroups/cgroupstest"
)

// boundaryPod is a pod with an emptyDir directory made under the agent's
// pod dir; it returns the pod and that directory.
func boundaryPod(t *testing.T, h *testEngine, name string) (*v1.Pod, string) {
	t.Helper()
	p := &v1.Pod{}
	p.Name, p.Namespace, p.UID = name, "default", types.UID("uid-"+name)
	p.Spec.Containers = []v1.Container{{Name: "c"}}
	vol := filepath.Join(h.PodDir(p), "volumes", "kubernetes.io~empty-dir", "data")
	require.NoError(t, os.MkdirAll(vol, 0o755))
	return p, vol
}

// fill writes n bytes of real (non-sparse) data to path.
func fill(t *testing.T, path string, n int) {
	t.Helper()
	require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
	require.NoError(t, os.WriteFile(path, make([]byte, n), 0o644))
}

// rankDisk ranks pods for signal as the eviction manager does, from the
// host measurement, and returns their names first to evict first.
func rankDisk(t *testing.T, h *testEngine, signal eviction.Signal, pods ...*v1.Pod) []string {
	t.Helper()
	s := h.provider(fakeStats{})
	// Every walk is waited for: the daemon's podFilesWait leaves a pod
	// whose first walk is still running without figures (ranked first,
	// as the kubelet ranks a pod without stats), which a loaded machine
	// made the honest pod here, not the one the test is about.
	s.files().wait = time.Minute
	stats := s.PodStats(context.Background(), pods, true)
	cands := make([]eviction.Candidate, 0, len(pods))
	for _, p := range pods {
		cands = append(cands, eviction.Candidate{Pod: p, Stats: stats[p.UID]})
	}
	eviction.Rank(signal, cands)
	var out []string
	for _, c := range cands {
		out = append(out, c.Pod.Name)
	}
	return out
}

// A pod flips a directory of its emptyDir with a symlink to a host
// directory (renameat2 RENAME_EXCHANGE, atomically, in a loop) while the
// agent measures it: a walk over path strings lists "d" as a directory
// and then opens it as the link, walking and counting the host's files as
// the pod's (and for as long as the host tree takes). Not once may the
// host directory's bytes be counted.
func TestEvictionStats_SwappedSymlinkNeverWalked(t *testing.T) {
	h := newTestEngine(t)
	p, vol := boundaryPod(t, h, "flipper")
	host := t.TempDir()
	for i := range 16 {
		fill(t, filepath.Join(host, fmt.Sprintf("secret-%d", i)), 256<<10) // 4 MiB in all
	}
	require.NoError(t, os.MkdirAll(filepath.Join(vol, "d", "sub"), 0o755))
	require.NoError(t, os.Symlink(host, filepath.Join(vol, "x")))

	var stop atomic.Bool
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		a, b := filepath.Join(vol, "d"), filepath.Join(vol, "x")
		for !stop.Load() {
			_ = unix.Renameat2(unix.AT_FDCWD, a, unix.AT_FDCWD, b, unix.RENAME_EXCHANGE)
		}
	}()
	defer func() { stop.Store(true); wg.Wait() }()

	s := h.provider(fakeStats{})
	deadline := time.Now().Add(3 * time.Second)
	runs := 0
	for time.Now().Before(deadline) || runs < 200 {
		runs++
		got := s.PodStats(context.Background(), []*v1.Pod{p}, true)[p.UID]
		require.NotNil(t, got)
		require.Less(t, got.Disk, int64(1<<20), "run %d: the host directory behind the swapped symlink was walked and counted as the pod's", runs)
	}
	t.Logf("%d measurements while the pod flipped the link", runs)
}

// A pod hides a file below PATH_MAX (a chain of 21 directories with
// 200-character names, made with mkdirat from the parent's descriptor, as
// a process inside the container can) and fills the disk with it: a walk
// over path strings never sees it, so the pod measures as empty and the
// node evicts a pod that uses less. The hidden pod must rank first.
func TestEvictionStats_TreeBelowPathMaxDoesNotHide(t *testing.T) {
	h := newTestEngine(t)
	hider, vol := boundaryPod(t, h, "hider")
	fd, err := unix.Open(vol, unix.O_RDONLY|unix.O_DIRECTORY, 0)
	require.NoError(t, err)
	long := strings.Repeat("d", 200)
	for range 21 {
		require.NoError(t, unix.Mkdirat(fd, long, 0o755))
		next, err := unix.Openat(fd, long, unix.O_RDONLY|unix.O_DIRECTORY, 0)
		require.NoError(t, err)
		require.NoError(t, unix.Close(fd))
		fd = next
	}
	big, err := unix.Openat(fd, "hidden", unix.O_WRONLY|unix.O_CREAT, 0o644)
	require.NoError(t, err)
	_, err = unix.Write(big, make([]byte, 4<<20))
	require.NoError(t, err)
	require.NoError(t, unix.Close(big))
	require.NoError(t, unix.Close(fd))

	honest, hvol := boundaryPod(t, h, "honest")
	fill(t, filepath.Join(hvol, "data"), 1<<20)

	assert.Equal(t, []string{"hider", "honest"}, rankDisk(t, h, eviction.SignalNodeFsAvailable, honest, hider),
		"the pod that hid 4 MiB below PATH_MAX is evicted before the one using 1 MiB")
}

// A pod writes its data into its termination-message file
// (/dev/termination-log, a writable bind mount of a file under the agent's
// pod dir, outside the pod's volumes): it is on the node filesystem and
// must count as the pod's.
func TestEvictionStats_TerminationMessageFileCounts(t *testing.T) {
	h := newTestEngine(t)
	writer, _ := boundaryPod(t, h, "writer")
	fill(t, filepath.Join(h.PodDir(writer), "containers", "c", "0123abcd"), 4<<20)
	honest, hvol := boundaryPod(t, h, "honest")
	fill(t, filepath.Join(hvol, "data"), 1<<20)

	assert.Equal(t, []string{"writer", "honest"}, rankDisk(t, h, eviction.SignalNodeFsAvailable, honest, writer),
		"4 MiB written through /dev/termination-log outrank 1 MiB in an emptyDir")
}

// A pod exhausts the node's inodes with empty files: under inode pressure
// the pod that uses the inodes is evicted (the kubelet ranks
// nodefs.inodesFree by inodes), not the pod with the most bytes.
func TestEvictionStats_InodePressureRanksByInodes(t *testing.T) {
	h := newTestEngine(t)
	many, vol := boundaryPod(t, h, "many")
	for i := range 3000 {
		f, err := os.Create(filepath.Join(vol, fmt.Sprintf("f%d", i)))
		require.NoError(t, err)
		require.NoError(t, f.Close())
	}
	big, bvol := boundaryPod(t, h, "big")
	fill(t, filepath.Join(bvol, "data"), 4<<20)

	assert.Equal(t, []string{"many", "big"}, rankDisk(t, h, eviction.SignalNodeFsInodesFree, big, many),
		"the pod with 3000 inodes goes first under inode pressure")
}

// A pod whose files cannot be measured whole (a tree deeper than the
// walk's limit) counts as using the whole disk: it is evicted first,
// never another pod in its place.
func TestEvictionStats_UnmeasurablePodRanksFirst(t *testing.T) {
	h := newTestEngine(t)
	deep, vol := boundaryPod(t, h, "deep")
	d := vol
	for range volume.DefaultUsageLimits.MaxDepth + 1 {
		d = filepath.Join(d, "d")
	}
	require.NoError(t, os.MkdirAll(d, 0o755))
	honest, hvol := boundaryPod(t, h, "honest")
	fill(t, filepath.Join(hvol, "data"), 4<<20)

	for _, sig := range []eviction.Signal{eviction.SignalNodeFsAvailable, eviction.SignalNodeFsInodesFree} {
		assert.Equal(t, []string{"deep", "honest"}, rankDisk(t, h, sig, honest, deep), "%s", sig)
	}
}

// A pod forks until the node runs out of PIDs: under PID pressure it is
// the pod evicted (the kubelet ranks by priority, then by process count),
// not whichever pod sorts first. Here the pod cgroup's pids.current is
// not readable (a fake cgroup tree), so its processes count.
func TestEvictionStats_PIDPressureRanksTheForker(t *testing.T) {
	h := newTestEngine(t)
	fake := cgroupstest.NewFake()
	h.cgroups = fake
	quiet, _ := boundaryPod(t, h, "aa-quiet")
	forker, _ := boundaryPod(t, h, "zz-forker")
	many := make([]int, 500)
	for i := range many {
		many[i] = 1000 + i
	}
	fake.SetPids(h.PodCgroup(forker), many...)
	fake.SetPids(h.PodCgroup(quiet), 1, 2)

	s := h.provider(fakeStats{
		ctrStats(string(quiet.UID), "c", 100, 0), ctrStats(string(forker.UID), "c", 100, 0),
	})
	s.cgroupRoot = t.TempDir()
	stats := s.PodStats(context.Background(), []*v1.Pod{quiet, forker}, false)
	require.NotNil(t, stats[forker.UID])
	assert.Equal(t, int64(500), stats[forker.UID].Processes)
	cands := []eviction.Candidate{{Pod: quiet, Stats: stats[quiet.UID]}, {Pod: forker, Stats: stats[forker.UID]}}
	eviction.Rank(eviction.SignalPIDAvailable, cands)
	assert.Equal(t, "zz-forker", cands[0].Pod.Name, "the pod with 500 processes is evicted first")

	// pids.current, where the kernel has it, counts threads too.
	writeFiles(t, s.cgroupRoot, map[string]string{
		filepath.Join("pids", fake.Path(h.PodCgroup(quiet)), "pids.current"): "4096\n",
	})
	stats = s.PodStats(context.Background(), []*v1.Pod{quiet}, false)
	assert.Equal(t, int64(4096), stats[quiet.UID].Processes)
}

// The walks are bounded by their own limits, not by the CRI call's
// deadline: one pod's tree that takes long to walk must not leave the
// next pods cut short, counted as unmeasurable and evicted first (here
// the deadline is spent before any walk starts).
func TestEvictionStats_SpentDeadlineDoesNotMakePodsUnmeasurable(t *testing.T) {
	h := newTestEngine(t)
	h.timeout = time.Nanosecond
	p, vol := boundaryPod(t, h, "innocent")
	fill(t, filepath.Join(vol, "data"), 1<<20)
	s := h.provider(fakeStats{})
	got := s.PodStats(context.Background(), []*v1.Pod{p}, true)[p.UID]
	require.NotNil(t, got)
	assert.GreaterOrEqual(t, got.Disk, int64(1<<20))
	assert.Less(t, got.Disk, int64(2<<20), "measured, not counted as the whole disk")
}
