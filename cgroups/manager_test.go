package cgroups

import (
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/utils/ptr"
)

const testUID = "5f1c2a9e-0d1b-4c3e-8f00-1234567890ab"

// podResources is what a Burstable pod with limits would get.
func podResources() Resources {
	return Resources{
		CPUShares:   ptr.To[uint64](512),
		CPUQuota:    ptr.To[int64](50000),
		CPUPeriod:   ptr.To[uint64](100000),
		MemoryLimit: ptr.To[int64](256 << 20),
		PidsLimit:   ptr.To[int64](1024),
	}
}

func writeFile(t *testing.T, p, content string) {
	t.Helper()
	require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
	require.NoError(t, os.WriteFile(p, []byte(content), 0o644))
}

func readFile(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	require.NoError(t, err)
	return strings.TrimSpace(string(b))
}

// fakeProcs simulates processes in a fake tree: kill removes the pid from
// every cgroup.procs file unless it is immortal.
type fakeProcs struct {
	mu       sync.Mutex
	root     string
	immortal map[int]bool
	killed   []int
	slept    []time.Duration
}

func (f *fakeProcs) kill(pid int) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.killed = append(f.killed, pid)
	if f.immortal[pid] {
		return nil
	}
	return filepath.WalkDir(f.root, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || d.Name() != "cgroup.procs" {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		var keep []string
		for _, l := range strings.Fields(string(b)) {
			if l != strconv.Itoa(pid) {
				keep = append(keep, l)
			}
		}
		return os.WriteFile(p, []byte(strings.Join(keep, "\n")), 0o644)
	})
}

func (f *fakeProcs) sleep(d time.Duration) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.slept = append(f.slept, d)
}

// newFakeV1 lays out a cgroup v1 tree as the kernel would mount it.
func newFakeV1(t *testing.T) (string, *fakeProcs) {
	root := t.TempDir()
	for _, c := range []string{"cpu", "cpuacct", "cpuset", "memory", "pids", "freezer"} {
		writeFile(t, filepath.Join(root, c, "cgroup.procs"), "1\n")
	}
	writeFile(t, filepath.Join(root, "cpuset", "cpuset.cpus"), "0-1\n")
	writeFile(t, filepath.Join(root, "cpuset", "cpuset.mems"), "0\n")
	return root, &fakeProcs{root: root}
}

func newV1Manager(t *testing.T, root string, fp *fakeProcs, driver Driver) Manager {
	m, err := New(Config{Root: root, Mode: ModeV1, Driver: driver, kill: fp.kill, sleep: fp.sleep,
		systemdRunDir: t.TempDir(), units: &fakeUnits{}})
	require.NoError(t, err)
	return m
}

func TestV1Manager_EnsureUpdateDestroy(t *testing.T) {
	root, fp := newFakeV1(t)
	m := newV1Manager(t, root, fp, DriverCgroupfs)
	assert.Equal(t, ModeV1, m.Mode())
	assert.Equal(t, DriverCgroupfs, m.Driver())

	require.NoError(t, m.Ensure(Kubepods, Resources{CPUShares: ptr.To[uint64](2048), MemoryLimit: ptr.To[int64](8 << 30)}))
	require.NoError(t, m.Ensure(KubepodsBurstable, Resources{CPUShares: ptr.To[uint64](2)}))
	pod := PodName(KubepodsBurstable, testUID)
	assert.False(t, m.Exists(pod))
	require.NoError(t, m.Ensure(pod, podResources()))
	assert.True(t, m.Exists(pod))
	assert.Equal(t, "/kubepods/burstable/pod"+testUID, m.Path(pod))

	dir := func(ctrl string) string { return filepath.Join(root, ctrl, "kubepods", "burstable", "pod"+testUID) }
	assert.Equal(t, "2048", readFile(t, filepath.Join(root, "cpu", "kubepods", "cpu.shares")))
	assert.Equal(t, "8589934592", readFile(t, filepath.Join(root, "memory", "kubepods", "memory.limit_in_bytes")))
	assert.Equal(t, "2", readFile(t, filepath.Join(root, "cpu", "kubepods", "burstable", "cpu.shares")))
	assert.Equal(t, "512", readFile(t, filepath.Join(dir("cpu"), "cpu.shares")))
	assert.Equal(t, "50000", readFile(t, filepath.Join(dir("cpu"), "cpu.cfs_quota_us")))
	assert.Equal(t, "100000", readFile(t, filepath.Join(dir("cpu"), "cpu.cfs_period_us")))
	assert.Equal(t, "268435456", readFile(t, filepath.Join(dir("memory"), "memory.limit_in_bytes")))
	assert.Equal(t, "1024", readFile(t, filepath.Join(dir("pids"), "pids.max")))
	// cpuset: every level got the parent's cpus and mems.
	for _, d := range []string{filepath.Join(root, "cpuset", "kubepods"), filepath.Join(root, "cpuset", "kubepods", "burstable"), dir("cpuset")} {
		assert.Equal(t, "0-1", readFile(t, filepath.Join(d, "cpuset.cpus")), d)
		assert.Equal(t, "0", readFile(t, filepath.Join(d, "cpuset.mems")), d)
	}
	assert.DirExists(t, dir("cpuacct"))
	assert.DirExists(t, dir("freezer"))

	// Update: remove the limits.
	require.NoError(t, m.Update(pod, Resources{
		CPUQuota: ptr.To[int64](Unlimited), MemoryLimit: ptr.To[int64](Unlimited), PidsLimit: ptr.To[int64](Unlimited),
	}))
	assert.Equal(t, "-1", readFile(t, filepath.Join(dir("cpu"), "cpu.cfs_quota_us")))
	assert.Equal(t, "-1", readFile(t, filepath.Join(dir("memory"), "memory.limit_in_bytes")))
	assert.Equal(t, "max", readFile(t, filepath.Join(dir("pids"), "pids.max")))
	assert.Equal(t, "512", readFile(t, filepath.Join(dir("cpu"), "cpu.shares")), "nil fields are left alone")

	err := m.Update(PodName(KubepodsBurstable, "nope"), podResources())
	assert.ErrorIs(t, err, os.ErrNotExist)

	// Processes in the pod and in a container cgroup below it.
	writeFile(t, filepath.Join(dir("cpu"), "cgroup.procs"), "100\n101\n")
	writeFile(t, filepath.Join(dir("memory"), "ctr1", "cgroup.procs"), "102\n")
	writeFile(t, filepath.Join(dir("memory"), "cgroup.procs"), "100\n")
	pids, err := m.Pids(pod)
	require.NoError(t, err)
	assert.Equal(t, []int{100, 101, 102}, pids)

	require.NoError(t, m.Destroy(pod))
	assert.Equal(t, []int{100, 101, 102}, fp.killed)
	assert.False(t, m.Exists(pod))
	for _, c := range []string{"cpu", "cpuacct", "cpuset", "memory", "pids", "freezer"} {
		assert.NoDirExists(t, dir(c))
	}
	assert.DirExists(t, filepath.Join(root, "cpu", "kubepods", "burstable"), "parents stay")
	require.NoError(t, m.Destroy(pod), "destroying a missing cgroup is fine")
}

func TestV1Manager_DestroyGivesUp(t *testing.T) {
	root, fp := newFakeV1(t)
	fp.immortal = map[int]bool{42: true}
	m := newV1Manager(t, root, fp, DriverCgroupfs)
	pod := PodName(Kubepods, "g1")
	require.NoError(t, m.Ensure(pod, podResources()))
	writeFile(t, filepath.Join(root, "pids", "kubepods", "podg1", "cgroup.procs"), "42\n")

	err := m.Destroy(pod)
	require.ErrorIs(t, err, ErrBusy)
	assert.Contains(t, err.Error(), "[42]")
	assert.Len(t, fp.killed, killAttempts)
	assert.Equal(t, []time.Duration{100 * time.Millisecond, 200 * time.Millisecond, 300 * time.Millisecond,
		400 * time.Millisecond, 500 * time.Millisecond}, fp.slept)
	assert.True(t, m.Exists(pod), "a busy cgroup is left in place")
}

func TestV1Manager_ListPods(t *testing.T) {
	root, fp := newFakeV1(t)
	m := newV1Manager(t, root, fp, DriverCgroupfs)
	for _, n := range []Name{PodName(Kubepods, "g1"), PodName(KubepodsBurstable, "b2"), PodName(KubepodsBurstable, "b1"), PodName(KubepodsBestEffort, "e1")} {
		require.NoError(t, m.Ensure(n, Resources{}))
	}
	// A half-created orphan only in memory is still found.
	require.NoError(t, os.MkdirAll(filepath.Join(root, "memory", "kubepods", "burstable", "podb3"), 0o755))

	got, err := m.ListPods(Kubepods)
	require.NoError(t, err)
	assert.Equal(t, []Name{PodName(Kubepods, "g1")}, got, "tiers are not pods")
	got, err = m.ListPods(KubepodsBurstable)
	require.NoError(t, err)
	assert.Equal(t, []Name{PodName(KubepodsBurstable, "b1"), PodName(KubepodsBurstable, "b2"), PodName(KubepodsBurstable, "b3")}, got)
	got, err = m.ListPods(Name{"nothing"})
	require.NoError(t, err)
	assert.Empty(t, got)
}

func TestNew_Errors(t *testing.T) {
	_, err := New(Config{Root: t.TempDir()})
	assert.ErrorContains(t, err, "cgroup mode must be given")

	_, err = New(Config{Root: t.TempDir(), Mode: ModeV1})
	assert.ErrorContains(t, err, `cgroup v1 controller "cpu" is not mounted`)

	root := t.TempDir()
	writeFile(t, filepath.Join(root, "cgroup.controllers"), "cpu pids\n")
	_, err = New(Config{Root: root, Mode: ModeV2})
	assert.ErrorContains(t, err, `cgroup v2 controller "memory" is not available`)

	v1root, _ := newFakeV1(t)
	_, err = New(Config{Root: v1root, Mode: ModeV1, Driver: DriverSystemd, systemdRunDir: filepath.Join(t.TempDir(), "missing")})
	assert.ErrorContains(t, err, "cgroup driver systemd needs a running systemd")
	assert.ErrorContains(t, err, "--cgroup-driver=cgroupfs")

	_, err = New(Config{Root: v1root, Mode: ModeV1, Driver: "docker"})
	assert.ErrorContains(t, err, "unknown cgroup driver")

	m, err := New(Config{Root: v1root, Mode: ModeV1})
	require.NoError(t, err)
	assert.ErrorIs(t, m.Ensure(Name{}, Resources{}), ErrInvalidName, "the root is not ours")
	assert.ErrorIs(t, m.Ensure(Name{"kubepods", "pod_x"}, Resources{}), ErrInvalidName)
}

// fakeKernelV2 creates a cgroup directory the way the kernel would: with
// cgroup.controllers taken from the parent's subtree_control and default
// interface files.
func fakeKernelV2(dir string) error {
	if err := os.Mkdir(dir, 0o755); err != nil {
		return err
	}
	parent, err := os.ReadFile(filepath.Join(filepath.Dir(dir), "cgroup.subtree_control"))
	if err != nil {
		return err
	}
	files := map[string]string{
		"cgroup.controllers":     strings.ReplaceAll(string(parent), "+", ""),
		"cgroup.subtree_control": "",
		"cgroup.procs":           "",
		"cgroup.type":            "domain",
		"cpu.weight":             "100",
		"cpu.max":                "max 100000",
		"memory.max":             "max",
		"pids.max":               "max",
	}
	for f, v := range files {
		if err := os.WriteFile(filepath.Join(dir, f), []byte(v), 0o644); err != nil {
			return err
		}
	}
	return nil
}

func newFakeV2(t *testing.T) string {
	root := t.TempDir()
	writeFile(t, filepath.Join(root, "cgroup.controllers"), "cpuset cpu io memory hugetlb pids rdma misc\n")
	writeFile(t, filepath.Join(root, "cgroup.subtree_control"), "")
	writeFile(t, filepath.Join(root, "cgroup.procs"), "1\n")
	return root
}

func TestV2Manager_EnsureUpdateDestroy(t *testing.T) {
	root := newFakeV2(t)
	fp := &fakeProcs{root: root}
	m, err := New(Config{Root: root, Mode: ModeV2, mkdir: fakeKernelV2, kill: fp.kill, sleep: fp.sleep})
	require.NoError(t, err)

	pod := PodName(KubepodsBurstable, testUID)
	require.NoError(t, m.Ensure(pod, podResources()))
	dir := filepath.Join(root, "kubepods", "burstable", "pod"+testUID)
	// Each ancestor delegates every controller it has.
	const all = "+cpuset +cpu +io +memory +hugetlb +pids +rdma +misc"
	assert.Equal(t, all, readFile(t, filepath.Join(root, "cgroup.subtree_control")))
	assert.Equal(t, all, readFile(t, filepath.Join(root, "kubepods", "cgroup.subtree_control")))
	assert.Equal(t, all, readFile(t, filepath.Join(root, "kubepods", "burstable", "cgroup.subtree_control")))
	assert.Equal(t, "", readFile(t, filepath.Join(dir, "cgroup.subtree_control")), "the leaf is left to runc")

	assert.Equal(t, "20", readFile(t, filepath.Join(dir, "cpu.weight")), "512 shares, linear formula")
	assert.Equal(t, "50000 100000", readFile(t, filepath.Join(dir, "cpu.max")))
	assert.Equal(t, "268435456", readFile(t, filepath.Join(dir, "memory.max")))
	assert.Equal(t, "1024", readFile(t, filepath.Join(dir, "pids.max")))

	require.NoError(t, m.Update(pod, Resources{
		CPUShares: ptr.To[uint64](2), CPUQuota: ptr.To[int64](Unlimited),
		MemoryLimit: ptr.To[int64](Unlimited), PidsLimit: ptr.To[int64](Unlimited),
	}))
	assert.Equal(t, "1", readFile(t, filepath.Join(dir, "cpu.weight")))
	assert.Equal(t, "max 100000", readFile(t, filepath.Join(dir, "cpu.max")))
	assert.Equal(t, "max", readFile(t, filepath.Join(dir, "memory.max")))
	assert.Equal(t, "max", readFile(t, filepath.Join(dir, "pids.max")))
	assert.ErrorIs(t, m.Update(PodName(Kubepods, "x"), Resources{}), os.ErrNotExist)

	got, err := m.ListPods(KubepodsBurstable)
	require.NoError(t, err)
	assert.Equal(t, []Name{pod}, got)

	writeFile(t, filepath.Join(dir, "cgroup.procs"), "7\n")
	require.NoError(t, fakeKernelV2(filepath.Join(dir, "ctr")))
	writeFile(t, filepath.Join(dir, "ctr", "cgroup.procs"), "8\n9\n")
	pids, err := m.Pids(pod)
	require.NoError(t, err)
	assert.Equal(t, []int{7, 8, 9}, pids)
	require.NoError(t, m.Destroy(pod))
	assert.Equal(t, []int{7, 8, 9}, fp.killed)
	assert.NoDirExists(t, dir)
	assert.DirExists(t, filepath.Join(root, "kubepods", "burstable"))
}

func TestV2Manager_NonLinearWeight(t *testing.T) {
	root := newFakeV2(t)
	m, err := New(Config{Root: root, Mode: ModeV2, CPUWeight: WeightNonLinear, mkdir: fakeKernelV2})
	require.NoError(t, err)
	require.NoError(t, m.Ensure(Kubepods, Resources{CPUShares: ptr.To[uint64](1024)}))
	assert.Equal(t, "100", readFile(t, filepath.Join(root, "kubepods", "cpu.weight")))
}

// fakeUnits records systemd unit calls.
type fakeUnits struct {
	mu      sync.Mutex
	started map[string][]unitProperty
	updated map[string][]unitProperty
	stopped []string
}

var _ unitManager = (*fakeUnits)(nil)

func (f *fakeUnits) start(unit string, props []unitProperty) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.started == nil {
		f.started = map[string][]unitProperty{}
	}
	f.started[unit] = props
	return nil
}

func (f *fakeUnits) set(unit string, props []unitProperty) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.updated == nil {
		f.updated = map[string][]unitProperty{}
	}
	f.updated[unit] = props
	return nil
}

func (f *fakeUnits) stop(unit string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.stopped = append(f.stopped, unit)
	return nil
}

func TestSystemdManager_V2(t *testing.T) {
	root := newFakeV2(t)
	units := &fakeUnits{}
	m, err := New(Config{Root: root, Mode: ModeV2, Driver: DriverSystemd, mkdir: fakeKernelV2,
		systemdRunDir: t.TempDir(), units: units})
	require.NoError(t, err)
	pod := PodName(KubepodsBurstable, testUID)
	const unit = "kubepods-burstable-pod5f1c2a9e_0d1b_4c3e_8f00_1234567890ab.slice"
	const slicePath = "/kubepods.slice/kubepods-burstable.slice/" + unit
	assert.Equal(t, slicePath, m.Path(pod), "CgroupParent: the expanded slice path, as the kubelet sends it")

	require.NoError(t, m.Ensure(pod, podResources()))
	require.Contains(t, units.started, unit)
	assert.Equal(t, []unitProperty{
		{"CPUWeight", uint64(20)},
		{"CPUQuotaPerSecUSec", uint64(500000)},
		{"CPUQuotaPeriodUSec", uint64(100000)},
		{"MemoryMax", uint64(256 << 20)},
		{"TasksMax", uint64(1024)},
	}, units.started[unit])
	dir := filepath.Join(root, slicePath)
	assert.Equal(t, "50000 100000", readFile(t, filepath.Join(dir, "cpu.max")))

	// An update goes to the unit first (systemd re-applies its properties
	// to the files), then to the files.
	require.NoError(t, m.Update(pod, Resources{CPUShares: ptr.To[uint64](1024), CPUQuota: ptr.To[int64](Unlimited)}))
	assert.Equal(t, []unitProperty{
		{"CPUWeight", uint64(39)},
		{"CPUQuotaPerSecUSec", usecInfinity},
		{"CPUQuotaPeriodUSec", uint64(100000)},
	}, units.updated[unit])
	assert.Equal(t, "max 100000", readFile(t, filepath.Join(dir, "cpu.max")))
	assert.Equal(t, "39", readFile(t, filepath.Join(dir, "cpu.weight")))

	got, err := m.ListPods(KubepodsBurstable)
	require.NoError(t, err)
	assert.Equal(t, []Name{pod}, got)

	require.NoError(t, m.Destroy(pod))
	assert.Equal(t, []string{unit}, units.stopped)
	assert.NoDirExists(t, dir)
}

func TestSystemdManager_V1StartsBareSlices(t *testing.T) {
	root, fp := newFakeV1(t)
	units := &fakeUnits{}
	m, err := New(Config{Root: root, Mode: ModeHybrid, Driver: DriverSystemd, systemdRunDir: t.TempDir(),
		units: units, kill: fp.kill, sleep: fp.sleep})
	require.NoError(t, err)
	pod := PodName(Kubepods, "g1")
	require.NoError(t, m.Ensure(pod, podResources()))
	assert.Empty(t, units.started["kubepods-podg1.slice"])
	require.Contains(t, units.started, "kubepods-podg1.slice")
	assert.Equal(t, "512", readFile(t, filepath.Join(root, "cpu", "kubepods.slice", "kubepods-podg1.slice", "cpu.shares")))
	got, err := m.ListPods(Kubepods)
	require.NoError(t, err)
	assert.Equal(t, []Name{pod}, got)
	require.NoError(t, m.Destroy(pod))
	assert.True(t, slices.Equal([]string{"kubepods-podg1.slice"}, units.stopped))
}
