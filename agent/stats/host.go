package stats

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"

	"github.com/minikubelet/minikubelet/cgroups"
)

// HostFS is the real Host: cgroup files under Root (v1: a directory per
// controller; v2: one unified tree), /proc and statfs(2). The files read
// are the kernel's (cgroup control files, /proc), never pod-written ones.
type HostFS struct {
	// Root is where the cgroup filesystems are mounted (/sys/fs/cgroup).
	Root string
	// V2 says the tree is unified (cgroups.Mode.IsV2).
	V2 bool
	// Path maps a cgroup name to its path under Root (cgroups.Manager.Path:
	// the cgroupfs or the systemd slice layout).
	Path func(cgroups.Name) string
	// Proc is /proc (a test may point it elsewhere).
	Proc string
	// now is the clock (nil: time.Now).
	now func() time.Time
}

// NewHostFS reads the cgroups m manages (nil m: node-level readings only;
// every Cgroup call then says not found).
func NewHostFS(m cgroups.Manager) *HostFS {
	h := &HostFS{Root: cgroups.DefaultRoot, Proc: "/proc"}
	if m != nil {
		h.V2, h.Path = m.Mode().IsV2(), m.Path
	}
	return h
}

func (h *HostFS) time() time.Time {
	if h.now != nil {
		return h.now()
	}
	return time.Now()
}

// Cgroup implements Host: v1 cpuacct.usage and memory.{usage_in_bytes,
// limit_in_bytes,stat} (hierarchical total_* counters); v2 cpu.stat's
// usage_usec and memory.{current,max,stat}.
func (h *HostFS) Cgroup(name cgroups.Name) (*Usage, error) {
	if h.Path == nil {
		return nil, fmt.Errorf("cgroup %s: %w", name, os.ErrNotExist)
	}
	p := h.Path(name)
	u := &Usage{Time: h.time()}
	var stat map[string]uint64
	if h.V2 {
		dir := filepath.Join(h.Root, p)
		cpu, err := readKeyed(filepath.Join(dir, "cpu.stat"))
		if err != nil {
			return nil, err
		}
		u.CPUNanos = cpu["usage_usec"] * 1000
		if u.MemoryUsage, err = readUint(filepath.Join(dir, "memory.current")); err != nil {
			return nil, err
		}
		if stat, err = readKeyed(filepath.Join(dir, "memory.stat")); err != nil {
			return nil, err
		}
		u.WorkingSet = u.MemoryUsage - min(u.MemoryUsage, stat["inactive_file"])
		u.RSS, u.PageFaults, u.MajorPageFaults = stat["anon"], stat["pgfault"], stat["pgmajfault"]
		if lim, err := readUint(filepath.Join(dir, "memory.max")); err == nil { // "max": no limit
			u.MemoryLimit = lim
		}
		return u, nil
	}
	var err error
	if u.CPUNanos, err = readUint(filepath.Join(h.Root, "cpuacct", p, "cpuacct.usage")); err != nil {
		return nil, err
	}
	mem := filepath.Join(h.Root, "memory", p)
	if u.MemoryUsage, err = readUint(filepath.Join(mem, "memory.usage_in_bytes")); err != nil {
		return nil, err
	}
	if stat, err = readKeyed(filepath.Join(mem, "memory.stat")); err != nil {
		return nil, err
	}
	u.WorkingSet = u.MemoryUsage - min(u.MemoryUsage, stat["total_inactive_file"])
	u.RSS, u.PageFaults, u.MajorPageFaults = stat["total_rss"], stat["total_pgfault"], stat["total_pgmajfault"]
	// v1 reports "no limit" as a huge page-aligned number.
	if lim, err := readUint(filepath.Join(mem, "memory.limit_in_bytes")); err == nil && lim < 1<<62 {
		u.MemoryLimit = lim
	}
	return u, nil
}

// Node implements Host: busy CPU time from /proc/stat (USER_HZ is 100 on
// Linux), memory from /proc/meminfo: usage MemTotal-MemFree, working set
// usage minus Inactive(file), limit MemTotal.
func (h *HostFS) Node() (*Usage, error) {
	at := h.time()
	stat, err := os.ReadFile(filepath.Join(h.Proc, "stat"))
	if err != nil {
		return nil, err
	}
	meminfo, err := os.ReadFile(filepath.Join(h.Proc, "meminfo"))
	if err != nil {
		return nil, err
	}
	u := &Usage{Time: at}
	if u.CPUNanos, err = procStatBusyNanos(stat); err != nil {
		return nil, err
	}
	m := map[string]uint64{}
	for line := range strings.Lines(string(meminfo)) {
		f := strings.Fields(line)
		if len(f) >= 2 {
			if n, err := strconv.ParseUint(f[1], 10, 64); err == nil {
				m[strings.TrimSuffix(f[0], ":")] = n * 1024
			}
		}
	}
	if m["MemTotal"] == 0 {
		return nil, errors.New("/proc/meminfo has no MemTotal")
	}
	u.MemoryLimit = m["MemTotal"]
	u.MemoryUsage = m["MemTotal"] - min(m["MemTotal"], m["MemFree"])
	u.WorkingSet = u.MemoryUsage - min(u.MemoryUsage, m["Inactive(file)"])
	u.RSS = m["AnonPages"]
	if vm, err := readKeyed(filepath.Join(h.Proc, "vmstat")); err == nil {
		u.PageFaults, u.MajorPageFaults = vm["pgfault"], vm["pgmajfault"]
	}
	return u, nil
}

// procStatBusyNanos is the busy time of /proc/stat's "cpu" line (user,
// nice, system, irq, softirq, steal) in nanoseconds.
func procStatBusyNanos(stat []byte) (uint64, error) {
	for line := range strings.Lines(string(stat)) {
		f := strings.Fields(line)
		if len(f) < 9 || f[0] != "cpu" {
			continue
		}
		var ticks uint64
		for _, i := range []int{1, 2, 3, 6, 7, 8} {
			n, err := strconv.ParseUint(f[i], 10, 64)
			if err != nil {
				return 0, fmt.Errorf("/proc/stat: %q: %w", f[i], err)
			}
			ticks += n
		}
		return ticks * 10_000_000, nil
	}
	return 0, errors.New("/proc/stat has no cpu line")
}

// BootTime implements Host: /proc/stat's btime.
func (h *HostFS) BootTime() (time.Time, error) {
	stat, err := readKeyed(filepath.Join(h.Proc, "stat"))
	if err != nil {
		return time.Time{}, err
	}
	if stat["btime"] == 0 {
		return time.Time{}, errors.New("/proc/stat has no btime")
	}
	return time.Unix(int64(stat["btime"]), 0), nil
}

// Statfs implements Host.
func (h *HostFS) Statfs(path string) (*Filesystem, error) {
	var st unix.Statfs_t
	if err := unix.Statfs(path, &st); err != nil {
		return nil, fmt.Errorf("statfs %s: %w", path, err)
	}
	bs := uint64(st.Bsize)
	return &Filesystem{Capacity: st.Blocks * bs, Available: st.Bavail * bs, Used: (st.Blocks - st.Bfree) * bs,
		Inodes: st.Files, InodesFree: st.Ffree}, nil
}

// Interfaces implements Host: the host network namespace's interfaces from
// /proc/net/dev, without loopback and the pods' veth ends (cadvisor leaves
// those out too), sorted by name.
func (h *HostFS) Interfaces() ([]statsapi.InterfaceStats, error) {
	b, err := os.ReadFile(filepath.Join(h.Proc, "net", "dev"))
	if err != nil {
		return nil, err
	}
	return parseNetDev(b), nil
}

func parseNetDev(b []byte) []statsapi.InterfaceStats {
	var out []statsapi.InterfaceStats
	for line := range strings.Lines(string(b)) {
		name, rest, ok := strings.Cut(line, ":")
		name = strings.TrimSpace(name)
		if !ok || name == "lo" || strings.HasPrefix(name, "veth") {
			continue
		}
		f := strings.Fields(rest)
		if len(f) < 16 {
			continue
		}
		n := func(i int) *uint64 {
			v, err := strconv.ParseUint(f[i], 10, 64)
			if err != nil {
				return nil
			}
			return &v
		}
		out = append(out, statsapi.InterfaceStats{Name: name, RxBytes: n(0), RxErrors: n(2), TxBytes: n(8), TxErrors: n(10)})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// Processes implements Host: sysinfo(2)'s task count and kernel.pid_max.
func (h *HostFS) Processes() (int64, int64, error) {
	var si unix.Sysinfo_t
	if err := unix.Sysinfo(&si); err != nil {
		return 0, 0, err
	}
	maxPID, err := readUint(filepath.Join(h.Proc, "sys", "kernel", "pid_max"))
	if err != nil {
		return 0, 0, err
	}
	return int64(si.Procs), int64(maxPID), nil
}

// readUint reads a file holding one unsigned number.
func readUint(path string) (uint64, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	n, err := strconv.ParseUint(string(bytes.TrimSpace(b)), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", path, err)
	}
	return n, nil
}

// readKeyed reads a "key value" per line file (memory.stat, cpu.stat,
// vmstat, /proc/stat's single-number lines).
func readKeyed(path string) (map[string]uint64, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	out := map[string]uint64{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), " ")
		if !ok {
			continue
		}
		if n, err := strconv.ParseUint(strings.TrimSpace(v), 10, 64); err == nil {
			out[k] = n
		}
	}
	return out, sc.Err()
}
