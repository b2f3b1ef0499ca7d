package stats

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/minikubelet/minikubelet/cgroups"
)

func writeFiles(t *testing.T, root string, files map[string]string) {
	t.Helper()
	for p, c := range files {
		p = filepath.Join(root, p)
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte(c), 0o644))
	}
}

func TestHostFS_CgroupV1(t *testing.T) {
	root := t.TempDir()
	writeFiles(t, root, map[string]string{
		"cpuacct/kubepods/burstable/podu1/cpuacct.usage":        "1234567890\n",
		"memory/kubepods/burstable/podu1/memory.usage_in_bytes": "10485760\n",
		"memory/kubepods/burstable/podu1/memory.limit_in_bytes": "9223372036854771712\n",
		"memory/kubepods/burstable/podu1/memory.stat":           "cache 1\ntotal_inactive_file 2097152\ntotal_rss 7340032\ntotal_pgfault 42\ntotal_pgmajfault 2\n",
	})
	h := &HostFS{Root: root, Path: cgroups.Name.ToCgroupfs, now: func() time.Time { return t0 }}
	u, err := h.Cgroup(cgroups.PodName(cgroups.KubepodsBurstable, "u1"))
	require.NoError(t, err)
	require.Equal(t, &Usage{Time: t0, CPUNanos: 1234567890, MemoryUsage: 10 << 20, WorkingSet: 8 << 20, RSS: 7 << 20, PageFaults: 42, MajorPageFaults: 2}, u)
	_, err = h.Cgroup(cgroups.PodName(cgroups.KubepodsBurstable, "gone"))
	require.ErrorIs(t, err, os.ErrNotExist)
}

func TestHostFS_CgroupV2(t *testing.T) {
	root := t.TempDir()
	writeFiles(t, root, map[string]string{
		"kubepods/podu1/cpu.stat":       "usage_usec 2500\nuser_usec 2000\n",
		"kubepods/podu1/memory.current": "10485760\n",
		"kubepods/podu1/memory.max":     "67108864\n",
		"kubepods/podu1/memory.stat":    "anon 7340032\ninactive_file 2097152\npgfault 42\npgmajfault 2\n",
	})
	h := &HostFS{Root: root, V2: true, Path: cgroups.Name.ToCgroupfs, now: func() time.Time { return t0 }}
	u, err := h.Cgroup(cgroups.PodName(cgroups.Kubepods, "u1"))
	require.NoError(t, err)
	require.Equal(t, &Usage{Time: t0, CPUNanos: 2_500_000, MemoryUsage: 10 << 20, WorkingSet: 8 << 20, RSS: 7 << 20, PageFaults: 42, MajorPageFaults: 2, MemoryLimit: 64 << 20}, u)
}

func TestHostFS_NodeFromProc(t *testing.T) {
	proc := t.TempDir()
	writeFiles(t, proc, map[string]string{
		"stat":    "cpu  100 5 50 1000 7 1 2 3 0 0\ncpu0 1 2 3 4 5 6 7 8 0 0\nbtime 1700000000\n",
		"meminfo": "MemTotal:       8000 kB\nMemFree:        3000 kB\nMemAvailable:   5000 kB\nInactive(file):  1000 kB\nAnonPages:       2000 kB\n",
		"vmstat":  "pgfault 99\npgmajfault 9\n",
		"net/dev": "Inter-|   Receive                                                |  Transmit\n face |bytes    packets errs drop fifo frame compressed multicast|bytes    packets errs drop fifo colls carrier compressed\n    lo: 5 1 0 0 0 0 0 0 5 1 0 0 0 0 0 0\n  eth0: 1000 10 1 0 0 0 0 0 2000 20 2 0 0 0 0 0\nveth12: 7 1 0 0 0 0 0 0 7 1 0 0 0 0 0 0\n",
	})
	h := &HostFS{Proc: proc, now: func() time.Time { return t0 }}
	u, err := h.Node()
	require.NoError(t, err)
	// busy ticks: user 100 + nice 5 + system 50 + irq 1 + softirq 2 + steal 3 = 161 → 1.61 s.
	require.Equal(t, &Usage{Time: t0, CPUNanos: 1_610_000_000, MemoryUsage: 5000 << 10, WorkingSet: 4000 << 10, MemoryLimit: 8000 << 10, RSS: 2000 << 10, PageFaults: 99, MajorPageFaults: 9}, u)
	bt, err := h.BootTime()
	require.NoError(t, err)
	require.Equal(t, time.Unix(1700000000, 0), bt)
	ifs, err := h.Interfaces()
	require.NoError(t, err)
	require.Len(t, ifs, 1, "lo and veth left out")
	require.Equal(t, "eth0", ifs[0].Name)
	require.Equal(t, uint64(1000), *ifs[0].RxBytes)
	require.Equal(t, uint64(2), *ifs[0].TxErrors)
}
