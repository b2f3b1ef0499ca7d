// Package stats builds the kubelet's Summary API (stats/v1alpha1, what
// /stats/summary serves and what metrics-server, `kubectl top` and eviction
// read) from the node's cgroups and /proc and the runtime's CRI stats calls.
//
// Sources, as the kubelet's CRI stats provider uses them:
//   - node CPU and memory: /proc/stat and /proc/meminfo (the kubelet reads
//     the root cgroup through cadvisor, which on cgroup v2 has no memory
//     files at the root either and falls back to the same counters);
//   - pod CPU and memory: the pod cgroup (pod<uid> under its QoS tier),
//     so the sandbox and exited containers' charge count too;
//   - container CPU, memory and writable layer: CRI ListContainerStats;
//   - pod network: CRI ListPodSandboxStats when the runtime answers it
//     (containerd 1.6 does not fill it on every platform: then omitted);
//   - image filesystem: CRI ImageFsInfo, with the capacity of its mount;
//   - node filesystem: statfs of the root directory; node network: the
//     host's /proc/net/dev.
//
// Provider is the small interface the kubelet server and the eviction
// manager read; Collector implements it.
package stats

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"sort"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"

	"github.com/minikubelet/minikubelet/cgroups"
)

// Provider returns the node's summary. With onlyCPUAndMemory (the
// ?only_cpu_and_memory=true that metrics-server asks for) only the CPU and
// memory of the node, its system containers, pods and containers are
// filled.
type Provider interface {
	Summary(ctx context.Context, onlyCPUAndMemory bool) (*statsapi.Summary, error)
}

// Runtime is the CRI stats calls (cri.Instrumented has them).
// ListPodSandboxStats and ImageFsInfo may fail as unimplemented: their
// fields are then left out.
type Runtime interface {
	ListContainerStats(ctx context.Context, filter *runtimeapi.ContainerStatsFilter) ([]*runtimeapi.ContainerStats, error)
	ListPodSandboxStats(ctx context.Context, filter *runtimeapi.PodSandboxStatsFilter) ([]*runtimeapi.PodSandboxStats, error)
	ImageFsInfo(ctx context.Context) (*runtimeapi.ImageFsInfoResponse, error)
}

// Pods lists the pods the summary reports, with their status, under the
// namespace, name and UID its reader knows them by. The kubelet server
// passes daemon.ClusterView (cmd's clusterSummary): the cluster's pods and
// the static pods under their mirror names, never the local API's.
type Pods interface {
	ListPods(namespace string) []*v1.Pod
}

// Usage is one reading of a cgroup (or of the whole node): cumulative CPU
// time and the memory counters, as the kubelet reports them.
type Usage struct {
	Time time.Time
	// CPUNanos is the cumulative CPU time in core-nanoseconds.
	CPUNanos uint64
	// MemoryUsage is all memory charged (page cache included); WorkingSet
	// is usage minus inactive file pages (what the OOM killer and the
	// kubelet's eviction look at).
	MemoryUsage, WorkingSet, RSS, PageFaults, MajorPageFaults uint64
	// MemoryLimit is the cgroup's limit (0: none; the node's: its RAM).
	MemoryLimit uint64
}

// Filesystem is a statfs reading.
type Filesystem struct {
	Capacity, Available, Used, Inodes, InodesFree uint64
}

// Host reads the node: its cgroups, /proc and filesystems. HostFS is the
// real one; tests pass a fake.
type Host interface {
	// Cgroup reads a cgroup by name; an error wrapping fs.ErrNotExist
	// when there is none.
	Cgroup(name cgroups.Name) (*Usage, error)
	// Node reads the whole machine.
	Node() (*Usage, error)
	// BootTime is when the node started.
	BootTime() (time.Time, error)
	// Statfs reads the filesystem holding path.
	Statfs(path string) (*Filesystem, error)
	// Interfaces reads the host network namespace's interfaces.
	Interfaces() ([]statsapi.InterfaceStats, error)
	// Processes is the number of processes (tasks) and the pid limit.
	Processes() (running, max int64, err error)
}

// Config is what a Collector reads from.
type Config struct {
	NodeName string
	Pods     Pods
	Runtime  Runtime
	Host     Host
	// RootDir is the node's root directory: its filesystem is the node's
	// fs, and the containers' logs' (they live under /var/log/pods, on
	// that filesystem on a default install).
	RootDir string
	// LogUsage is the bytes a container's current log takes (nil, or ok
	// false: no logs entry).
	LogUsage func(pod *v1.Pod, container string) (used uint64, ok bool)
	// QOSClass computes a pod's QoS class when its status has none.
	QOSClass func(*v1.Pod) v1.PodQOSClass
	Logger   *slog.Logger
}

// Collector builds summaries on demand. The CPU rate (usageNanoCores) is
// the change since the previous summary (at least minRateWindow earlier)
// that saw the same cgroup or container, so it appears from the second
// request on, as the kubelet's does once cadvisor has two samples.
type Collector struct {
	cfg Config
	mu  sync.Mutex
	// last is each CPU counter's previous reading, by key.
	last map[string]cpuSample
}

type cpuSample struct {
	nanos uint64
	at    time.Time
	// rate is the rate computed when this sample was taken (nil: none).
	rate *uint64
}

// minRateWindow is the shortest interval a CPU rate is computed over: the
// CFS quota is enforced per 100 ms period, so over a few milliseconds a
// pod capped at 100m can show several cores. Summaries closer together
// repeat the last rate (cadvisor, which the kubelet reads, samples every
// 10 s or so).
const minRateWindow = time.Second

var _ Provider = (*Collector)(nil)

// New returns a Collector over cfg.
func New(cfg Config) *Collector {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	return &Collector{cfg: cfg, last: map[string]cpuSample{}}
}

// CRI label keys of a container's pod and name (the kubelet's).
const (
	labelPodName       = "io.kubernetes.pod.name"
	labelPodNamespace  = "io.kubernetes.pod.namespace"
	labelPodUID        = "io.kubernetes.pod.uid"
	labelContainerName = "io.kubernetes.container.name"
)

// Summary implements Provider. A failing source is logged and its fields
// left out, as the kubelet leaves out what cadvisor or the runtime cannot
// say; only a node that cannot be read at all is an error.
func (c *Collector) Summary(ctx context.Context, onlyCPUAndMemory bool) (*statsapi.Summary, error) {
	seen := map[string]bool{}
	node, err := c.nodeStats(ctx, onlyCPUAndMemory, seen)
	if err != nil {
		return nil, err
	}
	pods := c.podStats(ctx, onlyCPUAndMemory, node, seen)
	c.mu.Lock()
	for k := range c.last {
		if !seen[k] {
			delete(c.last, k)
		}
	}
	c.mu.Unlock()
	return &statsapi.Summary{Node: *node, Pods: pods}, nil
}

func (c *Collector) nodeStats(ctx context.Context, only bool, seen map[string]bool) (*statsapi.NodeStats, error) {
	h := c.cfg.Host
	u, err := h.Node()
	if err != nil {
		return nil, fmt.Errorf("read the node's usage: %w", err)
	}
	n := &statsapi.NodeStats{NodeName: c.cfg.NodeName}
	if boot, err := h.BootTime(); err == nil {
		n.StartTime = metav1.NewTime(boot)
	}
	n.CPU, n.Memory = c.cpuMemory("node", u, seen)
	if pu, err := h.Cgroup(cgroups.Kubepods); err == nil {
		sc := statsapi.ContainerStats{Name: statsapi.SystemContainerPods, StartTime: n.StartTime}
		sc.CPU, sc.Memory = c.cpuMemory("pods", pu, seen)
		n.SystemContainers = append(n.SystemContainers, sc)
	} else if !errors.Is(err, fs.ErrNotExist) {
		c.cfg.Logger.Warn("Reading the kubepods cgroup failed", "err", err)
	}
	if only {
		return n, nil
	}
	now := metav1.NewTime(u.Time)
	if ifs, err := h.Interfaces(); err != nil {
		c.cfg.Logger.Warn("Reading the node's network interfaces failed", "err", err)
	} else if len(ifs) > 0 {
		n.Network = &statsapi.NetworkStats{Time: now, Interfaces: ifs, InterfaceStats: defaultInterface(ifs)}
	}
	if f, err := h.Statfs(c.cfg.RootDir); err != nil {
		c.cfg.Logger.Warn("Reading the root directory's filesystem failed", "err", err, "path", c.cfg.RootDir)
	} else {
		n.Fs = fsStats(now, f)
	}
	if img := c.imageFs(ctx, now); img != nil {
		n.Runtime = &statsapi.RuntimeStats{ImageFs: img}
	}
	if running, maxPID, err := h.Processes(); err != nil {
		c.cfg.Logger.Warn("Reading the process count failed", "err", err)
	} else {
		n.Rlimit = &statsapi.RlimitStats{Time: now, NumOfRunningProcesses: &running, MaxPID: &maxPID}
	}
	return n, nil
}

// defaultInterface is eth0 when there is one (the kubelet's default
// interface name), else the first.
func defaultInterface(ifs []statsapi.InterfaceStats) statsapi.InterfaceStats {
	for _, i := range ifs {
		if i.Name == "eth0" {
			return i
		}
	}
	return ifs[0]
}

// imageFs is the runtime's image filesystem: its usage from ImageFsInfo,
// its capacity from statfs of the mount ImageFsInfo names.
func (c *Collector) imageFs(ctx context.Context, now metav1.Time) *statsapi.FsStats {
	resp, err := c.cfg.Runtime.ImageFsInfo(ctx)
	if err != nil {
		c.cfg.Logger.Debug("ImageFsInfo failed", "err", err)
		return nil
	}
	fss := resp.GetImageFilesystems()
	if len(fss) == 0 {
		return nil
	}
	u := fss[0]
	out := &statsapi.FsStats{Time: now}
	if m := u.GetFsId().GetMountpoint(); m != "" {
		if f, err := c.cfg.Host.Statfs(m); err == nil {
			out = fsStats(now, f)
		}
	}
	if u.GetUsedBytes() != nil {
		out.UsedBytes = ptr(u.GetUsedBytes().GetValue())
	}
	if u.GetInodesUsed() != nil {
		out.InodesUsed = ptr(u.GetInodesUsed().GetValue())
	}
	return out
}

func fsStats(now metav1.Time, f *Filesystem) *statsapi.FsStats {
	return &statsapi.FsStats{Time: now, CapacityBytes: ptr(f.Capacity), AvailableBytes: ptr(f.Available), UsedBytes: ptr(f.Used),
		Inodes: ptr(f.Inodes), InodesFree: ptr(f.InodesFree), InodesUsed: ptr(f.Inodes - min(f.Inodes, f.InodesFree))}
}

// cpuMemory converts a reading, with the CPU rate since key's last one.
func (c *Collector) cpuMemory(key string, u *Usage, seen map[string]bool) (*statsapi.CPUStats, *statsapi.MemoryStats) {
	t := metav1.NewTime(u.Time)
	cpu := &statsapi.CPUStats{Time: t, UsageCoreNanoSeconds: ptr(u.CPUNanos), UsageNanoCores: c.rate(key, u.CPUNanos, u.Time, seen)}
	mem := &statsapi.MemoryStats{Time: t, UsageBytes: ptr(u.MemoryUsage), WorkingSetBytes: ptr(u.WorkingSet),
		RSSBytes: ptr(u.RSS), PageFaults: ptr(u.PageFaults), MajorPageFaults: ptr(u.MajorPageFaults)}
	if u.MemoryLimit > 0 {
		mem.AvailableBytes = ptr(u.MemoryLimit - min(u.MemoryLimit, u.WorkingSet))
	}
	return cpu, mem
}

// rate records key's counter and returns its rate in nanocores since the
// previous reading at least minRateWindow older (nil for the first, or
// when the counter went back: a new cgroup or container under the same
// key); a reading closer to the previous one gets the previous rate and
// does not move the base.
func (c *Collector) rate(key string, nanos uint64, at time.Time, seen map[string]bool) *uint64 {
	seen[key] = true
	c.mu.Lock()
	defer c.mu.Unlock()
	prev, ok := c.last[key]
	if ok && at.Sub(prev.at) < minRateWindow && nanos >= prev.nanos {
		return prev.rate
	}
	cur := cpuSample{nanos: nanos, at: at}
	if ok && nanos >= prev.nanos {
		r := uint64(float64(nanos-prev.nanos) / at.Sub(prev.at).Seconds())
		cur.rate = &r
	}
	c.last[key] = cur
	return cur.rate
}

// podStats lists the pods that have a pod cgroup or running containers.
func (c *Collector) podStats(ctx context.Context, only bool, node *statsapi.NodeStats, seen map[string]bool) []statsapi.PodStats {
	cstats, err := c.cfg.Runtime.ListContainerStats(ctx, &runtimeapi.ContainerStatsFilter{})
	if err != nil {
		c.cfg.Logger.Warn("ListContainerStats failed", "err", err)
	}
	byPod := map[string][]*runtimeapi.ContainerStats{}
	for _, s := range cstats {
		if uid := s.GetAttributes().GetLabels()[labelPodUID]; uid != "" {
			byPod[uid] = append(byPod[uid], s)
		}
	}
	sandboxes := map[string]*runtimeapi.PodSandboxStats{}
	if !only {
		sbs, err := c.cfg.Runtime.ListPodSandboxStats(ctx, &runtimeapi.PodSandboxStatsFilter{})
		if err != nil {
			c.cfg.Logger.Debug("ListPodSandboxStats failed", "err", err)
		}
		for _, s := range sbs {
			if uid := s.GetAttributes().GetMetadata().GetUid(); uid != "" {
				sandboxes[uid] = s
			}
		}
	}
	var rootfsBase *statsapi.FsStats
	if node.Runtime != nil {
		rootfsBase = node.Runtime.ImageFs
	}
	var out []statsapi.PodStats
	for _, pod := range c.cfg.Pods.ListPods("") {
		uid := string(pod.UID)
		ps := statsapi.PodStats{PodRef: statsapi.PodReference{Name: pod.Name, Namespace: pod.Namespace, UID: uid}}
		if pod.Status.StartTime != nil {
			ps.StartTime = *pod.Status.StartTime
		}
		pu, err := c.cfg.Host.Cgroup(cgroups.PodName(c.tier(pod), uid))
		switch {
		case err == nil:
			ps.CPU, ps.Memory = c.cpuMemory("pod/"+uid, pu, seen)
		case !errors.Is(err, fs.ErrNotExist):
			c.cfg.Logger.Warn("Reading the pod cgroup failed", "err", err, "pod", pod.Namespace+"/"+pod.Name)
		}
		var ephemeral uint64
		var ephemeralTime metav1.Time
		for _, s := range byPod[uid] {
			cs := c.containerStats(pod, s, only, rootfsBase, node.Fs, seen)
			if cs.Rootfs != nil && cs.Rootfs.UsedBytes != nil {
				ephemeral += *cs.Rootfs.UsedBytes
				ephemeralTime = cs.Rootfs.Time
			}
			if cs.Logs != nil && cs.Logs.UsedBytes != nil {
				ephemeral += *cs.Logs.UsedBytes
			}
			ps.Containers = append(ps.Containers, cs)
		}
		sort.Slice(ps.Containers, func(i, j int) bool { return ps.Containers[i].Name < ps.Containers[j].Name })
		if ps.CPU == nil && len(ps.Containers) == 0 {
			continue // not running here (yet, or any more)
		}
		if !only {
			if sb := sandboxes[uid]; sb != nil && sb.GetLinux().GetNetwork() != nil {
				ps.Network = network(sb.GetLinux().GetNetwork())
			}
			// Volumes are not measured: walking a pod's emptyDir as root
			// means following pod-controlled paths; the kubelet's du-based
			// measurement is left for the eviction work.
			if len(ps.Containers) > 0 {
				ps.EphemeralStorage = &statsapi.FsStats{Time: ephemeralTime, UsedBytes: ptr(ephemeral)}
				if node.Fs != nil {
					ps.EphemeralStorage.CapacityBytes, ps.EphemeralStorage.AvailableBytes = node.Fs.CapacityBytes, node.Fs.AvailableBytes
				}
			}
		}
		out = append(out, ps)
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i].PodRef, out[j].PodRef
		if a.Namespace != b.Namespace {
			return a.Namespace < b.Namespace
		}
		return a.Name < b.Name
	})
	return out
}

// tier is the QoS cgroup the pod's cgroup lives under.
func (c *Collector) tier(pod *v1.Pod) cgroups.Name {
	q := pod.Status.QOSClass
	if q == "" && c.cfg.QOSClass != nil {
		q = c.cfg.QOSClass(pod)
	}
	switch q {
	case v1.PodQOSGuaranteed:
		return cgroups.Kubepods
	case v1.PodQOSBestEffort:
		return cgroups.KubepodsBestEffort
	}
	return cgroups.KubepodsBurstable
}

// containerStats converts the runtime's stats of one container.
func (c *Collector) containerStats(pod *v1.Pod, s *runtimeapi.ContainerStats, only bool, imageFs, nodeFs *statsapi.FsStats, seen map[string]bool) statsapi.ContainerStats {
	name := s.GetAttributes().GetLabels()[labelContainerName]
	cs := statsapi.ContainerStats{Name: name}
	for _, st := range pod.Status.ContainerStatuses {
		if st.Name == name && st.State.Running != nil {
			cs.StartTime = st.State.Running.StartedAt
		}
	}
	if cpu := s.GetCpu(); cpu != nil {
		t := time.Unix(0, cpu.GetTimestamp())
		cs.CPU = &statsapi.CPUStats{Time: metav1.NewTime(t)}
		if v := cpu.GetUsageCoreNanoSeconds(); v != nil {
			cs.CPU.UsageCoreNanoSeconds = ptr(v.GetValue())
			cs.CPU.UsageNanoCores = c.rate("container/"+s.GetAttributes().GetId(), v.GetValue(), t, seen)
		}
		if v := cpu.GetUsageNanoCores(); v != nil && v.GetValue() > 0 {
			cs.CPU.UsageNanoCores = ptr(v.GetValue()) // the runtime's own rate wins
		}
	}
	if m := s.GetMemory(); m != nil {
		cs.Memory = &statsapi.MemoryStats{Time: metav1.NewTime(time.Unix(0, m.GetTimestamp()))}
		set := func(dst **uint64, v *runtimeapi.UInt64Value) {
			if v != nil {
				*dst = ptr(v.GetValue())
			}
		}
		set(&cs.Memory.UsageBytes, m.GetUsageBytes())
		set(&cs.Memory.WorkingSetBytes, m.GetWorkingSetBytes())
		set(&cs.Memory.RSSBytes, m.GetRssBytes())
		set(&cs.Memory.PageFaults, m.GetPageFaults())
		set(&cs.Memory.MajorPageFaults, m.GetMajorPageFaults())
		set(&cs.Memory.AvailableBytes, m.GetAvailableBytes())
	}
	if only {
		return cs
	}
	if wl := s.GetWritableLayer(); wl != nil {
		t := metav1.NewTime(time.Unix(0, wl.GetTimestamp()))
		cs.Rootfs = &statsapi.FsStats{Time: t}
		if imageFs != nil {
			cs.Rootfs.CapacityBytes, cs.Rootfs.AvailableBytes, cs.Rootfs.Inodes, cs.Rootfs.InodesFree =
				imageFs.CapacityBytes, imageFs.AvailableBytes, imageFs.Inodes, imageFs.InodesFree
		}
		if v := wl.GetUsedBytes(); v != nil {
			cs.Rootfs.UsedBytes = ptr(v.GetValue())
		}
		if v := wl.GetInodesUsed(); v != nil {
			cs.Rootfs.InodesUsed = ptr(v.GetValue())
		}
	}
	if c.cfg.LogUsage != nil {
		if used, ok := c.cfg.LogUsage(pod, name); ok {
			cs.Logs = &statsapi.FsStats{UsedBytes: ptr(used)}
			if nodeFs != nil {
				cs.Logs.Time, cs.Logs.CapacityBytes, cs.Logs.AvailableBytes = nodeFs.Time, nodeFs.CapacityBytes, nodeFs.AvailableBytes
			}
		}
	}
	return cs
}

// network converts a sandbox's network stats.
func network(n *runtimeapi.NetworkUsage) *statsapi.NetworkStats {
	conv := func(i *runtimeapi.NetworkInterfaceUsage) statsapi.InterfaceStats {
		out := statsapi.InterfaceStats{Name: i.GetName()}
		for _, p := range []struct {
			dst **uint64
			v   *runtimeapi.UInt64Value
		}{{&out.RxBytes, i.GetRxBytes()}, {&out.RxErrors, i.GetRxErrors()}, {&out.TxBytes, i.GetTxBytes()}, {&out.TxErrors, i.GetTxErrors()}} {
			if p.v != nil {
				*p.dst = ptr(p.v.GetValue())
			}
		}
		return out
	}
	out := &statsapi.NetworkStats{Time: metav1.NewTime(time.Unix(0, n.GetTimestamp()))}
	if d := n.GetDefaultInterface(); d != nil {
		out.InterfaceStats = conv(d)
		out.Interfaces = append(out.Interfaces, out.InterfaceStats)
	}
	for _, i := range n.GetInterfaces() {
		if d := n.GetDefaultInterface(); d != nil && i.GetName() == d.GetName() {
			continue
		}
		out.Interfaces = append(out.Interfaces, conv(i))
	}
	return out
}

func ptr[T any](v T) *T { return &v }
