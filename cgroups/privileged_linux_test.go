package cgroups

import (
	"crypto/rand"
	"encoding/hex"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/utils/ptr"
)

// requiresPrivileged skips unless the test runs as root and is opted in
// with MINIKUBELET_PRIVILEGED=1 (the unit tier; make test opts in), and
// reports whether the host's cgroups are v1 (or hybrid). Every host runs
// one of the two privileged tests below: TestPrivileged_V1Cgroupfs on v1
// and hybrid hosts, TestPrivileged_V2Cgroupfs on pure v2 hosts; the other
// one is not applicable there and says so (issue #17: a pure v2 host used
// to skip the privileged cgroup suite altogether).
func requiresPrivileged(t *testing.T) (v1 bool) {
	t.Helper()
	if os.Getuid() != 0 || os.Getenv("MINIKUBELET_PRIVILEGED") != "1" {
		t.Skip("needs root and MINIKUBELET_PRIVILEGED=1")
	}
	switch mode := DetectMode(); mode {
	case ModeV1, ModeHybrid:
		return true
	case ModeV2:
		return false
	default:
		t.Fatalf("unknown cgroup mode %s at %s", mode, DefaultRoot)
		return false
	}
}

// requiresPrivilegedV1 is requiresPrivileged on a v1 or hybrid host.
func requiresPrivilegedV1(t *testing.T) {
	t.Helper()
	if !requiresPrivileged(t) {
		t.Skip("not applicable: a pure cgroup v2 host, which runs TestPrivileged_V2Cgroupfs instead")
	}
}

// TestPrivileged_V2Cgroupfs drives the real cgroup v2 filesystem as
// TestPrivileged_V1Cgroupfs drives v1: a private tree, real values read
// back, a sleep process moved in and killed by Destroy.
func TestPrivileged_V2Cgroupfs(t *testing.T) {
	if requiresPrivileged(t) {
		t.Skip("not applicable: a cgroup v1 host, which runs TestPrivileged_V1Cgroupfs instead")
	}
	m, err := New(Config{Driver: DriverCgroupfs})
	require.NoError(t, err)

	b := make([]byte, 4)
	_, _ = rand.Read(b)
	top := Name{"minikubelet-test-" + hex.EncodeToString(b)}
	t.Cleanup(func() { assert.NoError(t, m.Destroy(top)) })
	kubepods := append(top.Child("kubepods"), "burstable")
	pod := kubepods.Child("pod" + testUID)

	require.NoError(t, m.Ensure(top.Child("kubepods"), Resources{CPUShares: ptr.To[uint64](2048), MemoryLimit: ptr.To[int64](4 << 30)}))
	require.NoError(t, m.Ensure(kubepods, Resources{CPUShares: ptr.To[uint64](102)}))
	require.NoError(t, m.Ensure(pod, podResources()))
	require.True(t, m.Exists(pod))

	dir := filepath.Join(DefaultRoot, pod.ToCgroupfs())
	file := func(name string) string {
		b, err := os.ReadFile(filepath.Join(dir, name))
		require.NoError(t, err)
		return string(b)
	}
	assert.Equal(t, "50000 100000\n", file("cpu.max"))
	assert.Equal(t, "268435456\n", file("memory.max"))
	assert.Equal(t, "1024\n", file("pids.max"))
	assert.NotEqual(t, "100\n", file("cpu.weight"), "512 shares are not the default weight")

	require.NoError(t, m.Update(pod, Resources{CPUQuota: ptr.To[int64](Unlimited), MemoryLimit: ptr.To[int64](Unlimited), PidsLimit: ptr.To[int64](Unlimited)}))
	assert.Equal(t, "max 100000\n", file("cpu.max"))
	assert.Equal(t, "max\n", file("memory.max"))
	assert.Equal(t, "max\n", file("pids.max"))

	// A process in a child, as runc places a container below its pod
	// (v2 has no processes in inner nodes).
	ctr := filepath.Join(dir, "ctr")
	require.NoError(t, os.Mkdir(ctr, 0o755))
	cmd := exec.Command("sleep", "600")
	require.NoError(t, cmd.Start())
	waited := make(chan error, 1)
	go func() { waited <- cmd.Wait() }()
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	require.NoError(t, os.WriteFile(filepath.Join(ctr, "cgroup.procs"), []byte(strconv.Itoa(cmd.Process.Pid)), 0o644))
	pids, err := m.Pids(pod)
	require.NoError(t, err)
	assert.Equal(t, []int{cmd.Process.Pid}, pids)
	got, err := m.ListPods(kubepods)
	require.NoError(t, err)
	assert.Equal(t, []Name{pod}, got)

	require.NoError(t, m.Destroy(pod))
	select {
	case err := <-waited:
		assert.ErrorContains(t, err, "killed")
	case <-time.After(5 * time.Second):
		t.Fatal("sleep was not killed")
	}
	assert.False(t, m.Exists(pod))
	assert.NoDirExists(t, dir)
	got, err = m.ListPods(kubepods)
	require.NoError(t, err)
	assert.Empty(t, got)
}

// TestPrivileged_V1Cgroupfs drives the real cgroup v1 filesystem: a private
// minikubelet-test-<rand>/kubepods/burstable/pod<uid> tree, real values read
// back, a sleep process moved in and killed by Destroy.
func TestPrivileged_V1Cgroupfs(t *testing.T) {
	requiresPrivilegedV1(t)
	m, err := New(Config{})
	require.NoError(t, err)
	require.Equal(t, DriverCgroupfs, m.Driver())

	b := make([]byte, 4)
	_, _ = rand.Read(b)
	top := Name{"minikubelet-test-" + hex.EncodeToString(b)}
	t.Cleanup(func() { assert.NoError(t, m.Destroy(top)) })
	kubepods := append(top.Child("kubepods"), "burstable")
	pod := kubepods.Child("pod" + testUID)

	require.NoError(t, m.Ensure(top.Child("kubepods"), Resources{CPUShares: ptr.To[uint64](2048), MemoryLimit: ptr.To[int64](4 << 30)}))
	require.NoError(t, m.Ensure(kubepods, Resources{CPUShares: ptr.To[uint64](102)}))
	require.NoError(t, m.Ensure(pod, podResources()))
	require.True(t, m.Exists(pod))

	rel := pod.ToCgroupfs()
	file := func(ctrl, name string) string {
		b, err := os.ReadFile(filepath.Join(DefaultRoot, ctrl, rel, name))
		require.NoError(t, err)
		return string(b)
	}
	assert.Equal(t, "512\n", file("cpu", "cpu.shares"))
	assert.Equal(t, "50000\n", file("cpu", "cpu.cfs_quota_us"))
	assert.Equal(t, "100000\n", file("cpu", "cpu.cfs_period_us"))
	assert.Equal(t, "268435456\n", file("memory", "memory.limit_in_bytes"))
	assert.Equal(t, "1024\n", file("pids", "pids.max"))
	parentCpus, err := os.ReadFile(filepath.Join(DefaultRoot, "cpuset", "cpuset.cpus"))
	require.NoError(t, err)
	assert.Equal(t, string(parentCpus), file("cpuset", "cpuset.cpus"))
	assert.NotEqual(t, "\n", file("cpuset", "cpuset.mems"))

	require.NoError(t, m.Update(pod, Resources{CPUQuota: ptr.To[int64](Unlimited), MemoryLimit: ptr.To[int64](Unlimited), PidsLimit: ptr.To[int64](Unlimited)}))
	assert.Equal(t, "-1\n", file("cpu", "cpu.cfs_quota_us"))
	assert.Equal(t, "9223372036854771712\n", file("memory", "memory.limit_in_bytes"))
	assert.Equal(t, "max\n", file("pids", "pids.max"))

	// A process in every controller, as runc would place a container.
	cmd := exec.Command("sleep", "600")
	require.NoError(t, cmd.Start())
	waited := make(chan error, 1)
	go func() { waited <- cmd.Wait() }()
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	for _, ctrl := range []string{"cpu", "cpuacct", "cpuset", "memory", "pids", "freezer", "devices", "blkio"} {
		p := filepath.Join(DefaultRoot, ctrl, rel, "cgroup.procs")
		if _, err := os.Stat(p); err == nil {
			require.NoError(t, os.WriteFile(p, []byte(strconv.Itoa(cmd.Process.Pid)), 0o644), ctrl)
		}
	}
	// In hybrid mode runc also places a container in the unified hierarchy,
	// creating the pod path there.
	hybrid := DetectMode() == ModeHybrid
	unifiedCtr := filepath.Join(DefaultRoot, "unified", rel, "ctr")
	if hybrid {
		require.NoError(t, os.MkdirAll(unifiedCtr, 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(unifiedCtr, "cgroup.procs"), []byte(strconv.Itoa(cmd.Process.Pid)), 0o644))
	}
	pids, err := m.Pids(pod)
	require.NoError(t, err)
	assert.Equal(t, []int{cmd.Process.Pid}, pids)
	got, err := m.ListPods(kubepods)
	require.NoError(t, err)
	assert.Equal(t, []Name{pod}, got)

	require.NoError(t, m.Destroy(pod))
	select {
	case err := <-waited:
		assert.ErrorContains(t, err, "killed")
	case <-time.After(5 * time.Second):
		t.Fatal("sleep was not killed")
	}
	assert.False(t, m.Exists(pod))
	if hybrid {
		assert.NoDirExists(t, filepath.Dir(unifiedCtr))
	}
	for _, ctrl := range []string{"cpu", "cpuacct", "cpuset", "memory", "pids", "freezer", "devices", "blkio", "systemd"} {
		assert.NoDirExists(t, filepath.Join(DefaultRoot, ctrl, rel))
	}
	got, err = m.ListPods(kubepods)
	require.NoError(t, err)
	assert.Empty(t, got)
}
