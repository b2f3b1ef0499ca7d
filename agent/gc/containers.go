package gc

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/utils/clock"

	"github.com/minikubelet/minikubelet/cri"
)

// ContainerGCPeriod is how often container GC runs (the kubelet's
// ContainerGCPeriod).
const ContainerGCPeriod = time.Minute

// strayLogMinAge is how old a log file must be before the sweep of a live
// pod's log directory removes it: a container being created now is listed
// after the scan that found its file (scan first, list second), and this
// is a second guard against a runtime that writes the file early.
const strayLogMinAge = time.Minute

// RuntimeService is the part of the CRI runtime service container GC uses
// (cri-api's signatures).
type RuntimeService interface {
	ListPodSandbox(ctx context.Context, filter *runtimeapi.PodSandboxFilter) ([]*runtimeapi.PodSandbox, error)
	ListContainers(ctx context.Context, filter *runtimeapi.ContainerFilter) ([]*runtimeapi.Container, error)
	ContainerStatus(ctx context.Context, containerID string, verbose bool) (*runtimeapi.ContainerStatusResponse, error)
	RemoveContainer(ctx context.Context, containerID string) error
	RemovePodSandbox(ctx context.Context, podSandboxID string) error
}

// PodLabels name the labels on sandboxes and containers that say whose
// they are (the agent's io.kubernetes.* keys).
type PodLabels struct {
	UID, Name, Namespace string
}

// ContainerGCConfig is what container GC needs from the agent.
type ContainerGCConfig struct {
	// Runtime is the CRI runtime service.
	Runtime RuntimeService
	// Selector is the label selector of the runtime lists (the agent's
	// managed-by label).
	Selector map[string]string
	// Owns reports, from an object's labels, whether it is this agent's:
	// the relister's test, so nothing another agent or tool made is ever
	// touched.
	Owns func(labels map[string]string) bool
	// Labels name the pod labels.
	Labels PodLabels
	// PodGone reports whether the pod is gone: the agent has no worker for
	// it (not wanted, not being torn down), and it knows its pods (after
	// the daemon's first orphan collection). Only a gone pod's objects are
	// collected (under disk pressure, a terminated pod's too:
	// PodTerminated); a live pod's dead instances are its worker's.
	PodGone func(uid string) bool
	// PodTerminated reports whether the pod, gone or not, is over: it
	// reached a terminal phase, nothing of it runs and nothing is started
	// again, and its status no longer depends on the runtime (the
	// kubelet's ShouldPodRuntimeBeRemoved). DeleteAllUnused collects such
	// a pod's dead containers, with their log files, and dead sandboxes
	// too; its pod log directory stays until the pod is gone. Nil: no
	// pod is.
	PodTerminated func(uid string) bool
	// LogFile is the log file a container writes, relative to its pod's
	// log directory (the agent's <container>/<restart>.log), from its
	// labels and annotations; "" if unknown. Files of a live pod's log
	// directory that no listed container writes (their container was
	// pruned) are removed. Nil turns that sweep off.
	LogFile func(c *runtimeapi.Container) string
	// RemoveContainer removes a container; nil is Runtime.RemoveContainer.
	// The agent passes its own, which deletes a task containerd left
	// behind.
	RemoveContainer func(ctx context.Context, id string) error
	// PodLogDir is the root of the pod log directories
	// (<PodLogDir>/<namespace>_<name>_<uid>).
	PodLogDir string
	// Clock, Logger and Registerer as in ImageManagerConfig.
	Clock      clock.WithTicker
	Logger     *slog.Logger
	Registerer prometheus.Registerer
	// RuntimeTimeout bounds each CRI call; 0 is 30 seconds.
	RuntimeTimeout time.Duration
}

// ContainerGC collects dead containers and sandboxes of gone pods and
// stray log files (kubelet kuberuntime_gc.go), and under disk pressure
// those of terminated pods too. Safe for concurrent use; collections
// never overlap.
type ContainerGC struct {
	cfg     ContainerGCConfig
	logger  *slog.Logger
	removed *prometheus.CounterVec

	// mu serialises collections and guards status.
	mu sync.Mutex
	// status is the loop's health (house style rule 18).
	status LoopStatus
}

// NewContainerGC builds a container GC. Nothing runs until Run or Collect.
func NewContainerGC(cfg ContainerGCConfig) (*ContainerGC, error) {
	if cfg.Owns == nil || cfg.PodGone == nil || cfg.Runtime == nil {
		return nil, errors.New("container GC needs a runtime, an ownership test and a gone-pod test")
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.RealClock{}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.RuntimeTimeout == 0 {
		cfg.RuntimeTimeout = 30 * time.Second
	}
	if cfg.RemoveContainer == nil {
		cfg.RemoveContainer = cfg.Runtime.RemoveContainer
	}
	g := &ContainerGC{
		cfg:    cfg,
		logger: cfg.Logger.With("component", "container-gc"),
		removed: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "minikubelet_garbage_collected_total",
			Help: "Dead containers and sandboxes of gone pods (under disk pressure, of terminated pods too), and log files, removed by container garbage collection, by kind (container, sandbox, log).",
		}, []string{"kind"}),
	}
	if cfg.Registerer != nil {
		if err := cfg.Registerer.Register(g.removed); err != nil {
			return nil, fmt.Errorf("register container GC metrics: %w", err)
		}
		if err := registerStatus(cfg.Registerer, "container", g.Status); err != nil {
			return nil, fmt.Errorf("register container GC metrics: %w", err)
		}
	}
	return g, nil
}

// Status returns the loop's health.
func (g *ContainerGC) Status() LoopStatus {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.status
}

// Run collects every period (ContainerGCPeriod if 0) until ctx ends.
func (g *ContainerGC) Run(ctx context.Context, period time.Duration) {
	if period <= 0 {
		period = ContainerGCPeriod
	}
	t := g.cfg.Clock.NewTicker(period)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C():
		}
		start := time.Now() // wall time: the cost, whatever the clock
		if _, err := g.Collect(ctx); err != nil && ctx.Err() == nil {
			g.logger.Warn("Container garbage collection incomplete", "err", err)
		}
		g.mu.Lock()
		g.status.Busy += time.Since(start)
		g.mu.Unlock()
	}
}

// ContainerGCResult is what one collection removed, by ID or path.
type ContainerGCResult struct {
	Containers, Sandboxes, LogDirs, LogFiles []string
}

// podObjects are one pod's objects of this agent, from one listing.
type podObjects struct {
	uid, name, namespace string
	sandboxes            []*runtimeapi.PodSandbox
	containers           []*runtimeapi.Container
}

// Collect makes one pass:
//
//  1. scan the log directories of this agent's pods (before listing, so a
//     container created meanwhile is in the listing);
//  2. list this agent's sandboxes and containers, by pod;
//  3. for each gone pod: remove its containers that do not run, each with
//     its log file; then its sandboxes that are not ready and hold no
//     container; then, once nothing of the pod is left, its log directory;
//  4. for each live pod: remove the log files in its directory that no
//     listed container writes (instances its worker pruned).
//
// It is the kubelet's periodic GarbageCollect (evictNonDeletedPods false).
func (g *ContainerGC) Collect(ctx context.Context) (ContainerGCResult, error) {
	return g.collect(ctx, false)
}

// DeleteAllUnused is Collect under disk pressure, the kubelet's
// DeleteAllUnusedContainers (GarbageCollect with evictNonDeletedPods): a
// terminated pod (PodTerminated) that is not gone has step 3 done too,
// except its log directory, which stays until the pod is deleted (its
// teardown removes it), as the kubelet's evictPodLogsDirectories removes
// only deleted pods' directories. A live pod keeps what its worker
// keeps (the newest dead instance of each container, for its restart
// count and `logs --previous`): the kubelet's MaxPerPodContainer, 1,
// which its reclaim enforces on live pods as its periodic GC does.
//
// Where it differs from the kubelet: there is no minimum age (the
// kubelet's MinAge defaults to 0 and minikubelet has no flag for it), and
// a live pod's surplus dead instances are its worker's to prune at its
// next sync (pruneContainers), not this pass's.
func (g *ContainerGC) DeleteAllUnused(ctx context.Context) (ContainerGCResult, error) {
	return g.collect(ctx, true)
}

// collect is Collect, and with terminated DeleteAllUnused.
func (g *ContainerGC) collect(ctx context.Context, terminated bool) (ContainerGCResult, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	res, err := g.collectLocked(ctx, terminated)
	g.status.Runs++
	g.status.Removed += len(res.Containers) + len(res.Sandboxes) + len(res.LogFiles) + len(res.LogDirs)
	if err != nil {
		g.status.Failures++
		g.status.ConsecutiveFailures++
		g.status.LastError = err.Error()
	} else {
		g.status.ConsecutiveFailures = 0
		g.status.LastSuccess = g.cfg.Clock.Now()
	}
	return res, err
}

func (g *ContainerGC) collectLocked(ctx context.Context, terminated bool) (ContainerGCResult, error) {
	var res ContainerGCResult
	// Step 1: the log files there are, by pod log directory name.
	scanned := g.scanLogs()

	// Step 2: this agent's objects, by pod.
	lctx, cancel := context.WithTimeout(ctx, g.cfg.RuntimeTimeout)
	sbs, err := g.cfg.Runtime.ListPodSandbox(lctx, &runtimeapi.PodSandboxFilter{LabelSelector: g.cfg.Selector})
	if err != nil {
		cancel()
		return res, fmt.Errorf("list sandboxes: %w", err)
	}
	ctrs, err := g.cfg.Runtime.ListContainers(lctx, &runtimeapi.ContainerFilter{LabelSelector: g.cfg.Selector})
	cancel()
	if err != nil {
		return res, fmt.Errorf("list containers: %w", err)
	}
	pods := map[string]*podObjects{}
	pod := func(labels map[string]string) *podObjects {
		uid := labels[g.cfg.Labels.UID]
		if uid == "" || !g.cfg.Owns(labels) {
			return nil
		}
		p := pods[uid]
		if p == nil {
			p = &podObjects{uid: uid, name: labels[g.cfg.Labels.Name], namespace: labels[g.cfg.Labels.Namespace]}
			pods[uid] = p
		}
		return p
	}
	for _, sb := range sbs {
		if p := pod(sb.GetLabels()); p != nil {
			p.sandboxes = append(p.sandboxes, sb)
		}
	}
	for _, c := range ctrs {
		if p := pod(c.GetLabels()); p != nil {
			p.containers = append(p.containers, c)
		}
	}
	uids := slices.Sorted(func(yield func(string) bool) {
		for uid := range pods {
			if !yield(uid) {
				return
			}
		}
	})

	var errs []error
	for _, uid := range uids {
		if ctx.Err() != nil {
			errs = append(errs, ctx.Err())
			break
		}
		p := pods[uid]
		if g.cfg.PodGone(uid) {
			// Step 3.
			errs = append(errs, g.collectPod(ctx, p, true, &res))
			continue
		}
		if terminated && g.cfg.PodTerminated != nil && g.cfg.PodTerminated(uid) {
			// Step 3 for a terminated pod, under disk pressure; its
			// containers' log files go with them.
			errs = append(errs, g.collectPod(ctx, p, false, &res))
			continue
		}
		// Step 4.
		errs = append(errs, g.sweepLogs(p, scanned[podLogDirName(p.namespace, p.name, p.uid)], &res))
	}
	return res, errors.Join(errs...)
}

// collectPod removes a gone or terminated pod's dead objects and, if gone
// and once none is left, its log directory.
func (g *ContainerGC) collectPod(ctx context.Context, p *podObjects, gone bool, res *ContainerGCResult) error {
	whose := "a terminated pod"
	if gone {
		whose = "a gone pod"
	}
	logger := g.logger.With("pod", p.namespace+"/"+p.name, "podUID", p.uid)
	var errs []error
	left := 0
	holds := map[string]int{} // sandbox ID → containers left in it
	// Oldest first, as the kubelet evicts.
	slices.SortFunc(p.containers, func(a, b *runtimeapi.Container) int { return cmp.Compare(a.GetCreatedAt(), b.GetCreatedAt()) })
	for _, c := range p.containers {
		if c.GetState() == runtimeapi.ContainerState_CONTAINER_RUNNING {
			left++
			holds[c.GetPodSandboxId()]++
			continue
		}
		logPath, err := g.removeContainer(ctx, c.GetId())
		if err != nil {
			errs = append(errs, err)
			left++
			holds[c.GetPodSandboxId()]++
			continue
		}
		res.Containers = append(res.Containers, c.GetId())
		g.removed.WithLabelValues("container").Inc()
		logger.Info("Removed a dead container of "+whose, "container", c.GetMetadata().GetName(),
			"containerID", c.GetId(), "attempt", c.GetMetadata().GetAttempt(), "logPath", logPath)
		if logPath != "" {
			files, err := g.removeLogFile(logPath)
			if err != nil {
				errs = append(errs, err)
			}
			res.LogFiles = append(res.LogFiles, files...)
		}
	}
	for _, sb := range p.sandboxes {
		if sb.GetState() == runtimeapi.PodSandboxState_SANDBOX_READY || holds[sb.GetId()] > 0 {
			left++
			continue
		}
		rctx, cancel := context.WithTimeout(ctx, g.cfg.RuntimeTimeout)
		err := g.cfg.Runtime.RemovePodSandbox(rctx, sb.GetId())
		cancel()
		if err != nil && !cri.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("remove sandbox %s of %s %s/%s: %w", sb.GetId(), whose, p.namespace, p.name, err))
			left++
			continue
		}
		res.Sandboxes = append(res.Sandboxes, sb.GetId())
		g.removed.WithLabelValues("sandbox").Inc()
		logger.Info("Removed a dead sandbox of "+whose, "sandboxID", sb.GetId(), "attempt", sb.GetMetadata().GetAttempt())
	}
	if gone && left == 0 && g.cfg.PodLogDir != "" {
		dir, ok := g.podLogDir(p.namespace, p.name, p.uid)
		if ok {
			if _, err := os.Lstat(dir); err == nil {
				if err := os.RemoveAll(dir); err != nil {
					errs = append(errs, fmt.Errorf("remove log directory of gone pod: %w", err))
				} else {
					res.LogDirs = append(res.LogDirs, dir)
					g.removed.WithLabelValues("log").Inc()
					logger.Info("Removed the log directory of a gone pod", "path", dir)
				}
			}
		}
	}
	return errors.Join(errs...)
}

// removeContainer removes one container and returns the log path it had.
func (g *ContainerGC) removeContainer(ctx context.Context, id string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, g.cfg.RuntimeTimeout)
	defer cancel()
	var logPath string
	st, err := g.cfg.Runtime.ContainerStatus(ctx, id, false)
	switch {
	case cri.IsNotFound(err):
		return "", nil
	case err != nil:
		return "", fmt.Errorf("status of container %s: %w", id, err)
	default:
		logPath = st.GetStatus().GetLogPath()
	}
	if err := g.cfg.RemoveContainer(ctx, id); err != nil && !cri.IsNotFound(err) {
		return "", fmt.Errorf("remove container %s: %w", id, err)
	}
	return logPath, nil
}

// removeLogFile removes a container's log file and its rotated files
// (path.<time>), but only under PodLogDir: a log path is the runtime's
// word, and GC never removes files elsewhere.
func (g *ContainerGC) removeLogFile(path string) ([]string, error) {
	if !g.underLogDir(path) {
		return nil, nil
	}
	matches, err := filepath.Glob(globEscape(path) + ".*")
	if err != nil {
		return nil, err
	}
	var removed []string
	var errs []error
	for _, f := range append([]string{path}, matches...) {
		if err := os.Remove(f); err != nil {
			if !errors.Is(err, fs.ErrNotExist) {
				errs = append(errs, err)
			}
			continue
		}
		removed = append(removed, f)
		g.removed.WithLabelValues("log").Inc()
	}
	return removed, errors.Join(errs...)
}

// underLogDir reports whether path is strictly inside PodLogDir.
func (g *ContainerGC) underLogDir(path string) bool {
	if g.cfg.PodLogDir == "" || !filepath.IsAbs(path) {
		return false
	}
	rel, err := filepath.Rel(filepath.Clean(g.cfg.PodLogDir), filepath.Clean(path))
	return err == nil && rel != "." && !strings.HasPrefix(rel, "..")
}

// podLogDir is <PodLogDir>/<namespace>_<name>_<uid> if its parts are
// plain names.
func (g *ContainerGC) podLogDir(namespace, name, uid string) (string, bool) {
	for _, s := range []string{namespace, name, uid} {
		if s == "" || s == "." || s == ".." || strings.ContainsRune(s, '/') {
			return "", false
		}
	}
	return filepath.Join(g.cfg.PodLogDir, podLogDirName(namespace, name, uid)), true
}

func podLogDirName(namespace, name, uid string) string {
	return namespace + "_" + name + "_" + uid
}

// scannedFile is a log file found by scanLogs.
type scannedFile struct {
	rel     string // <container>/<file>, relative to the pod log directory
	modTime time.Time
}

// scanLogs lists the files one level down in every pod log directory
// (<dir>/<container>/<file>), by directory name; nil if LogFile is unset.
func (g *ContainerGC) scanLogs() map[string][]scannedFile {
	if g.cfg.LogFile == nil || g.cfg.PodLogDir == "" {
		return nil
	}
	dirs, err := os.ReadDir(g.cfg.PodLogDir)
	if err != nil {
		return nil
	}
	out := map[string][]scannedFile{}
	for _, d := range dirs {
		if !d.IsDir() {
			continue
		}
		ctrs, err := os.ReadDir(filepath.Join(g.cfg.PodLogDir, d.Name()))
		if err != nil {
			continue
		}
		for _, c := range ctrs {
			if !c.IsDir() {
				continue
			}
			files, err := os.ReadDir(filepath.Join(g.cfg.PodLogDir, d.Name(), c.Name()))
			if err != nil {
				continue
			}
			for _, f := range files {
				info, err := f.Info()
				if err != nil || !info.Mode().IsRegular() {
					continue
				}
				out[d.Name()] = append(out[d.Name()], scannedFile{rel: filepath.Join(c.Name(), f.Name()), modTime: info.ModTime()})
			}
		}
	}
	return out
}

// sweepLogs removes the files of a live pod's log directory that no
// listed container of the pod writes: the logs of instances its worker
// pruned. A file is kept if it is a listed container's log file or one of
// its rotations (<file>.<suffix>), or if it is younger than a minute.
func (g *ContainerGC) sweepLogs(p *podObjects, files []scannedFile, res *ContainerGCResult) error {
	if len(files) == 0 {
		return nil
	}
	dir, ok := g.podLogDir(p.namespace, p.name, p.uid)
	if !ok {
		return nil
	}
	keep := make([]string, 0, len(p.containers))
	for _, c := range p.containers {
		if f := g.cfg.LogFile(c); f != "" {
			keep = append(keep, filepath.Clean(f))
		} else {
			return nil // a container whose file is unknown: touch nothing
		}
	}
	now := g.cfg.Clock.Now()
	var errs []error
	for _, f := range files {
		if !instanceLog.MatchString(filepath.Base(f.rel)) {
			continue // not named as the runtime names instance logs
		}
		kept := slices.ContainsFunc(keep, func(k string) bool { return f.rel == k || strings.HasPrefix(f.rel, k+".") })
		if kept || now.Sub(f.modTime) < strayLogMinAge {
			continue
		}
		path := filepath.Join(dir, f.rel)
		if err := os.Remove(path); err != nil {
			if !errors.Is(err, fs.ErrNotExist) {
				errs = append(errs, err)
			}
			continue
		}
		res.LogFiles = append(res.LogFiles, path)
		g.removed.WithLabelValues("log").Inc()
		g.logger.Info("Removed the log file of a removed container", "pod", p.namespace+"/"+p.name, "podUID", p.uid, "path", path)
	}
	return errors.Join(errs...)
}

// instanceLog matches the names of container instance logs and their
// rotations (<restart>.log, <restart>.log.<suffix>): the sweep removes
// nothing else, whatever it finds in a pod's log directory.
var instanceLog = regexp.MustCompile(`^[0-9]+\.log(\..+)?$`)

// globEscape escapes the glob metacharacters of a literal path.
func globEscape(s string) string {
	var b strings.Builder
	for _, r := range s {
		if strings.ContainsRune(`*?[\`, r) {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}
