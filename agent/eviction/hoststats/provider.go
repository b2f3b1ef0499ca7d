package hoststats

// The eviction manager's measurements of the real host
// (eviction.StatsProvider), as the kubelet's summary provider computes
// them:
//
//   - memory.available: node capacity minus the root cgroup's working set
//     (usage minus inactive file pages). cgroup v1: the memory
//     controller's root usage_in_bytes; v2 has no memory.current at the
//     root, where usage is MemTotal minus MemFree (/proc/meminfo), which is
//     what cadvisor reports for the root there.
//   - allocatableMemory.available: node allocatable minus the kubepods
//     cgroup's working set (only with --cgroups-per-qos).
//   - nodefs.available/inodesFree: statfs of the root dir's filesystem.
//   - imagefs.available/inodesFree: statfs of the runtime's image
//     filesystem (CRI ImageFsInfo's mountpoint).
//   - pid.available: kernel.pid_max minus the threads running
//     (/proc/loadavg), as the kubelet's rlimit stats.
//
// Pods (pods.go): memory is the sum of their containers' working sets (CRI
// ListContainerStats); disk (bytes and inodes) their writable layers, their
// log directory and their pod directory on the node filesystem (emptyDirs,
// termination-message files): volume.DiskUsageWithSubtrees, a walk by file
// descriptors that never follows a link, never enters a mount and never
// reads a pod-written name as a path, run per pod in the background
// (podfs.go).

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/minikubelet/minikubelet/agent/eviction"
	"github.com/minikubelet/minikubelet/agent/node"
	"github.com/minikubelet/minikubelet/agent/volume"
	"github.com/minikubelet/minikubelet/cgroups"
)

// Engine is what the provider asks of the engine (package agent
// implements it): whether it still runs a pod, where the pod's files are
// and which cgroup is the pod's.
type Engine interface {
	// Has reports whether the engine still runs the pod (it has its
	// worker): the measurements of a pod gone are dropped.
	Has(uid types.UID) bool
	// PodDir is the pod's directory (<root>/pods/<uid>: its volumes, its
	// termination-message files, its /etc/hosts); PodLogDir its log
	// directory; EmptyDirPath the host directory of its emptyDir volume.
	PodDir(p *v1.Pod) string
	PodLogDir(p *v1.Pod) string
	EmptyDirPath(p *v1.Pod, volume string) string
	// PodCgroup is the pod's cgroup, as Config.Cgroups names it.
	PodCgroup(p *v1.Pod) cgroups.Name
}

// EngineFuncs is Engine made of functions: the engine (package agent)
// fills it with its own methods instead of keeping an adapter type.
type EngineFuncs struct {
	HasFunc                   func(uid types.UID) bool
	PodDirFunc, PodLogDirFunc func(p *v1.Pod) string
	EmptyDirPathFunc          func(p *v1.Pod, volume string) string
	PodCgroupFunc             func(p *v1.Pod) cgroups.Name
}

// Has implements Engine.
func (f EngineFuncs) Has(uid types.UID) bool { return f.HasFunc(uid) }

// PodDir implements Engine.
func (f EngineFuncs) PodDir(p *v1.Pod) string { return f.PodDirFunc(p) }

// PodLogDir implements Engine.
func (f EngineFuncs) PodLogDir(p *v1.Pod) string { return f.PodLogDirFunc(p) }

// EmptyDirPath implements Engine.
func (f EngineFuncs) EmptyDirPath(p *v1.Pod, volume string) string {
	return f.EmptyDirPathFunc(p, volume)
}

// PodCgroup implements Engine.
func (f EngineFuncs) PodCgroup(p *v1.Pod) cgroups.Name { return f.PodCgroupFunc(p) }

// ContainerStatsLister is the CRI call pod stats need (cri.Instrumented
// has it).
type ContainerStatsLister interface {
	ListContainerStats(ctx context.Context, filter *runtimeapi.ContainerStatsFilter) ([]*runtimeapi.ContainerStats, error)
}

// ContainerStatuser is the CRI call that finds the runtime's per-sandbox
// files (sandboxfiles.go).
type ContainerStatuser interface {
	ContainerStatus(ctx context.Context, containerID string, verbose bool) (*runtimeapi.ContainerStatusResponse, error)
}

// ImageFsInfoer is the CRI call that names the image filesystem.
type ImageFsInfoer interface {
	ImageFsInfo(ctx context.Context) (*runtimeapi.ImageFsInfoResponse, error)
}

// Config is what the provider reads the host with.
type Config struct {
	// RootDir is the agent's root directory, on the node filesystem.
	RootDir string
	// MemoryCapacity and MemoryAllocatable are the node's memory in bytes
	// (0: the signal is not observed).
	MemoryCapacity, MemoryAllocatable int64
	// Cgroups manages the pods' cgroups (nil: none).
	Cgroups cgroups.Manager
	// RuntimeTimeout bounds one runtime call.
	RuntimeTimeout time.Duration
	// Stats, Statuses and Images are the runtime's calls (Stats nil: no
	// pod is measured; Statuses nil: no per-sandbox file is found; Images
	// nil: the image filesystem is not observed).
	Stats    ContainerStatsLister
	Statuses ContainerStatuser
	Images   ImageFsInfoer
	Logger   *slog.Logger
}

// Provider is the real eviction.StatsProvider: it reads the host's
// cgroups, /proc and filesystems, the runtime's stats and the pods' files.
type Provider struct {
	eng    Engine
	cfg    Config
	logger *slog.Logger
	stats  ContainerStatsLister
	// cgroupRoot and procRoot are /sys/fs/cgroup and /proc.
	cgroupRoot, procRoot string
	// measure measures one pod's files (nil: measurePodFiles; tests
	// replace it); filesCache runs it per pod in the background, made
	// on first use.
	measure func(ctx context.Context, p *v1.Pod, pace walkPacer) *podFiles
	// walkPeriod and walkBudget are filesCache's period and budget
	// (ConfigureWalks sets them; 0: a walk at every call, unbounded);
	// walkMetrics count its work (nil: not counted).
	walkPeriod, walkBudget time.Duration
	walkMetrics            *podFilesMetrics
	// sandboxFiles are the runtime's per-sandbox files of each container,
	// found through statuses.
	sandboxFiles sandboxFileCache
	statuses     ContainerStatuser
	// walk is measurePodFiles' walk (nil: volume.DiskUsageWithSubtrees).
	walk       func(ctx context.Context, dir string, lim volume.UsageLimits, subtrees []string) (volume.Usage, map[string]volume.Usage, error)
	filesOnce  sync.Once
	filesCache *podFilesCache
}

// New measures this host for the eviction manager, over the engine eng.
func New(cfg Config, eng Engine) *Provider {
	logger := cfg.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	return &Provider{eng: eng, cfg: cfg, logger: logger, stats: cfg.Stats, statuses: cfg.Statuses,
		cgroupRoot: cgroups.DefaultRoot, procRoot: "/proc"}
}

// files is the pods' file measurements.
func (h *Provider) files() *podFilesCache {
	h.filesOnce.Do(func() {
		measure := h.measure
		if measure == nil {
			measure = h.measurePodFiles
		}
		h.filesCache = newPodFilesCache(measure, h.eng.Has)
		h.filesCache.period, h.filesCache.budget = h.walkPeriod, h.walkBudget
		if m := h.walkMetrics; m != nil {
			h.filesCache.onWalk = m.walks.Inc
			h.filesCache.onPause = m.pauses.Inc
			h.filesCache.onWalkTime = func(d time.Duration) { m.seconds.Add(d.Seconds()) }
		}
	})
	return h.filesCache
}

// BeginCycle (eviction.CycleStats) gives the walks of the pods' files a new cycle's budget.
func (h *Provider) BeginCycle() {
	h.files().cycle()
}

// podFilesMetrics count the walks of the pods' files.
type podFilesMetrics struct {
	walks, pauses, seconds prometheus.Counter
}

// The manager configures the walks through this interface (a type
// assertion): the compiler holds Provider to it.
var _ eviction.WalkConfigurer = (*Provider)(nil)

// ConfigureWalks sets how often the pods' files are walked (period) and
// how much walk time each eviction cycle of cyclePeriod may take, and
// registers the walks' metrics on reg. Call before the first measurement.
func (h *Provider) ConfigureWalks(period, cyclePeriod time.Duration, reg prometheus.Registerer) error {
	h.walkPeriod, h.walkBudget = period, cyclePeriod/podFilesBudgetShare
	m := &podFilesMetrics{
		walks: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "minikubelet_pod_files_measurements_total",
			Help: "Measurements of the pods' directories (pod and log directory walks) done, about one per pod per --volume-stats-agg-period.",
		}),
		pauses: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "minikubelet_pod_files_walk_pauses_total",
			Help: "Times a walk of a pod's files was paused until the next eviction cycle, the cycle's walk time budget spent.",
		}),
		seconds: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "minikubelet_pod_files_walk_seconds_total",
			Help: "Wall time spent walking the pods' files.",
		}),
	}
	for _, c := range []prometheus.Collector{m.walks, m.pauses, m.seconds} {
		if err := reg.Register(c); err != nil {
			return fmt.Errorf("register eviction metrics: %w", err)
		}
	}
	h.walkMetrics = m
	return nil
}

// StopMeasuring (eviction.CycleStats) ends the background measurements (the eviction loop
// stopped).
func (h *Provider) StopMeasuring() {
	h.files().stop()
}

// Observe implements eviction.StatsProvider.
func (h *Provider) Observe(ctx context.Context) eviction.NodeObservation {
	obs := eviction.NodeObservation{Signals: map[eviction.Signal]eviction.Observation{}, NodeFsPath: h.cfg.RootDir}
	fail := func(s eviction.Signal, err error) {
		obs.Errors = append(obs.Errors, fmt.Sprintf("%s: %v", s, err))
	}
	v2 := h.cfg.Cgroups != nil && h.cfg.Cgroups.Mode().IsV2() || h.cfg.Cgroups == nil && cgroups.DetectMode().IsV2()
	capacity := h.cfg.MemoryCapacity
	if capacity > 0 {
		if ws, err := h.rootWorkingSet(v2); err != nil {
			fail(eviction.SignalMemoryAvailable, err)
		} else {
			obs.Signals[eviction.SignalMemoryAvailable] = eviction.Observation{Available: max(capacity-ws, 0), Capacity: capacity}
		}
	}
	if alloc := h.cfg.MemoryAllocatable; alloc > 0 && h.cfg.Cgroups != nil {
		if ws, err := h.cgroupWorkingSet(h.cfg.Cgroups.Path(cgroups.Kubepods), v2); err != nil {
			fail(eviction.SignalAllocatableMemoryAvailable, err)
		} else {
			obs.Signals[eviction.SignalAllocatableMemoryAvailable] = eviction.Observation{Available: max(alloc-ws, 0), Capacity: alloc}
		}
	}
	nodeDev, err := statFs(h.cfg.RootDir, obs.Signals, eviction.SignalNodeFsAvailable, eviction.SignalNodeFsInodesFree)
	if err != nil {
		fail(eviction.SignalNodeFsAvailable, err)
	}
	if mp, err := h.imageFsMountpoint(ctx); err != nil {
		fail(eviction.SignalImageFsAvailable, err)
	} else {
		obs.ImageFsPath = mp
		imgDev, err := statFs(mp, obs.Signals, eviction.SignalImageFsAvailable, eviction.SignalImageFsInodesFree)
		if err != nil {
			fail(eviction.SignalImageFsAvailable, err)
		}
		obs.SameFs = err == nil && nodeDev == imgDev
	}
	if used, limit, err := h.pids(); err != nil {
		fail(eviction.SignalPIDAvailable, err)
	} else {
		obs.Signals[eviction.SignalPIDAvailable] = eviction.Observation{Available: max(limit-used, 0), Capacity: limit}
	}
	return obs
}

// statFs records the bytes and inodes of path's filesystem under the two
// signals and returns its device.
func statFs(path string, out map[eviction.Signal]eviction.Observation, bytesSig, inodesSig eviction.Signal) (uint64, error) {
	var st syscall.Statfs_t
	if err := syscall.Statfs(path, &st); err != nil {
		return 0, err
	}
	bs := int64(st.Bsize)
	out[bytesSig] = eviction.Observation{Available: int64(st.Bavail) * bs, Capacity: int64(st.Blocks) * bs}
	if st.Files > 0 {
		out[inodesSig] = eviction.Observation{Available: int64(st.Ffree), Capacity: int64(st.Files)}
	}
	var s syscall.Stat_t
	if err := syscall.Stat(path, &s); err != nil {
		return 0, err
	}
	return uint64(s.Dev), nil
}

// imageFsMountpoint asks the runtime where its images are.
func (h *Provider) imageFsMountpoint(ctx context.Context) (string, error) {
	if h.cfg.Images == nil {
		return "", fmt.Errorf("no image service to ask")
	}
	ctx, cancel := context.WithTimeout(ctx, h.cfg.RuntimeTimeout)
	defer cancel()
	info, err := h.cfg.Images.ImageFsInfo(ctx)
	if err != nil {
		return "", err
	}
	fss := info.GetImageFilesystems()
	if len(fss) == 0 || fss[0].GetFsId().GetMountpoint() == "" {
		return "", fmt.Errorf("the runtime names no image filesystem")
	}
	return fss[0].GetFsId().GetMountpoint(), nil
}

// rootWorkingSet is the root cgroup's working set (see the file comment).
func (h *Provider) rootWorkingSet(v2 bool) (int64, error) {
	if !v2 {
		return h.cgroupWorkingSet("/", false)
	}
	mi, err := node.MeminfoFile(filepath.Join(h.procRoot, "meminfo"))()
	if err != nil {
		return 0, err
	}
	total, free := node.MeminfoField(mi, "MemTotal"), node.MeminfoField(mi, "MemFree")
	if total <= 0 {
		return 0, fmt.Errorf("no MemTotal in meminfo")
	}
	stat, err := os.ReadFile(filepath.Join(h.cgroupRoot, "memory.stat"))
	if err != nil {
		return 0, err
	}
	return max(total-free-statField(stat, "inactive_file"), 0), nil
}

// cgroupWorkingSet is usage minus inactive file pages of the cgroup at
// path (as the runtime names it), the kubelet's working set.
func (h *Provider) cgroupWorkingSet(path string, v2 bool) (int64, error) {
	dir, usageFile, inactive := filepath.Join(h.cgroupRoot, "memory", path), "memory.usage_in_bytes", "total_inactive_file"
	if v2 {
		dir, usageFile, inactive = filepath.Join(h.cgroupRoot, path), "memory.current", "inactive_file"
	}
	b, err := os.ReadFile(filepath.Join(dir, usageFile))
	if err != nil {
		return 0, err
	}
	usage, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", filepath.Join(dir, usageFile), err)
	}
	stat, err := os.ReadFile(filepath.Join(dir, "memory.stat"))
	if err != nil {
		return 0, err
	}
	return max(usage-statField(stat, inactive), 0), nil
}

// statField is a "key value" line's value of a memory.stat.
func statField(b []byte, key string) int64 {
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), " ")
		if ok && k == key {
			n, _ := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			return n
		}
	}
	return 0
}

// pids is the threads running and kernel.pid_max.
func (h *Provider) pids() (used, limit int64, err error) {
	b, err := os.ReadFile(filepath.Join(h.procRoot, "loadavg"))
	if err != nil {
		return 0, 0, err
	}
	f := strings.Fields(string(b))
	if len(f) < 4 {
		return 0, 0, fmt.Errorf("malformed loadavg %q", b)
	}
	_, total, _ := strings.Cut(f[3], "/")
	if used, err = strconv.ParseInt(total, 10, 64); err != nil {
		return 0, 0, fmt.Errorf("malformed loadavg %q", b)
	}
	b, err = os.ReadFile(filepath.Join(h.procRoot, "sys/kernel/pid_max"))
	if err != nil {
		return 0, 0, err
	}
	if limit, err = strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64); err != nil {
		return 0, 0, fmt.Errorf("malformed pid_max %q", b)
	}
	return used, limit, nil
}
