package agent

// Container log rotation, the kubelet's container log manager
// (pkg/kubelet/logs): the runtime writes each container's output to one CRI
// log file and never rotates it; the agent renames a file that grew too big
// and asks the runtime to reopen it (CRI ReopenContainerLog), then prunes
// the oldest rotated files.
//
//	0.log (> MaxSize) ──rename──> 0.log.20260102-030405.000000
//	                  ──ReopenContainerLog──> runtime creates a new 0.log
//	                     └─ fails: rename back, retry next period
//	                  ──prune──> keep the newest MaxFiles-1 rotated files
//
// Rotated files stay uncompressed (the kubelet gzips all but the newest):
// `minikubelet logs` reads them as they are.

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/minikubelet/minikubelet/cri"
)

// The kubelet's defaults (KubeletConfiguration containerLogMaxSize,
// containerLogMaxFiles, and its 10 s monitoring period).
const (
	DefaultContainerLogMaxSize  int64 = 10 << 20
	DefaultContainerLogMaxFiles       = 5
	DefaultLogRotationPeriod          = 10 * time.Second
)

// rotatedLogTimeFormat suffixes a rotated log's name (UTC). Its fixed width
// makes name order chronological order.
const rotatedLogTimeFormat = "20060102-150405.000000"

// rotatedSuffixRE matches what rotation appends to a log's name: this
// format, the kubelet's (without fraction), and a gzipped one.
var rotatedSuffixRE = regexp.MustCompile(`^\d{8}-\d{6}(\.\d{6})?(\.gz)?$`)

// LogRotationConfig is the container log policy. Zero fields take the
// kubelet's defaults.
type LogRotationConfig struct {
	// MaxSize is the size in bytes above which a log is rotated (10 MiB).
	MaxSize int64
	// MaxFiles is how many files one container's log may span, the live one
	// included (5); at least 2.
	MaxFiles int
	// Period is how often logs are checked (10 s).
	Period time.Duration
}

// WithDefaults returns c with zero fields set to the kubelet's defaults.
func (c LogRotationConfig) WithDefaults() LogRotationConfig {
	if c.MaxSize == 0 {
		c.MaxSize = DefaultContainerLogMaxSize
	}
	if c.MaxFiles == 0 {
		c.MaxFiles = DefaultContainerLogMaxFiles
	}
	if c.Period == 0 {
		c.Period = DefaultLogRotationPeriod
	}
	return c
}

// Validate refuses a policy the kubelet refuses too.
func (c LogRotationConfig) Validate() error {
	var errs []error
	if c.MaxSize < 0 {
		errs = append(errs, fmt.Errorf("container log max size %d: must be positive", c.MaxSize))
	}
	if c.MaxFiles < 2 && c.MaxFiles != 0 {
		errs = append(errs, fmt.Errorf("container log max files %d: must be at least 2 (the live file and one rotated)", c.MaxFiles))
	}
	if c.Period < 0 {
		errs = append(errs, fmt.Errorf("log rotation period %s: must be positive", c.Period))
	}
	return errors.Join(errs...)
}

// runLogRotation rotates container logs every cfg.Period on a.clock until
// ctx ends. A failed pass is logged here and retried at the next period.
func (a *Agent) runLogRotation(ctx context.Context, cfg LogRotationConfig) {
	logger := a.logger.With("component", "log-rotation")
	if err := cfg.Validate(); err != nil {
		logger.Error("Container log rotation is off", "err", err)
		return
	}
	cfg = cfg.WithDefaults()
	r := newLogRotator(a)
	ticker := a.clock.NewTicker(cfg.Period)
	defer ticker.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-ticker.C():
			if err := r.rotate(ctx, cfg); err != nil && ctx.Err() == nil {
				logger.Warn("Container log rotation failed", "err", err)
			}
		}
	}
}

// logRotator makes the rotation passes of one runLogRotation loop. It
// remembers each running container's log path: the runtime fixes a
// container's log path when the container is created (CRI
// ContainerConfig.LogPath under the sandbox's log directory) and never
// changes it, so ContainerStatus is asked once per container instead of
// once per container every period (100 CRI calls every 10 s with 100 pods).
// A restarted container is a new container with its own ID, so it gets its
// own entry; entries of containers no longer running are dropped at the
// next pass.
type logRotator struct {
	a *Agent
	// paths maps the ID of a running container of ours to its log path
	// ("" when it has none). Owned by the goroutine making the passes.
	paths map[string]string
}

func newLogRotator(a *Agent) *logRotator {
	return &logRotator{a: a, paths: map[string]string{}}
}

// rotateLogs makes one pass with a rotator of its own (nothing cached).
func (a *Agent) rotateLogs(ctx context.Context, cfg LogRotationConfig) error {
	return newLogRotator(a).rotate(ctx, cfg)
}

// rotate makes one pass over the running containers minikubelet manages:
//
//  1. list them (managed-by label, state RUNNING), and forget the log
//     paths of containers no longer in that list;
//  2. for each, its log path: remembered, or read from ContainerStatus the
//     first time the container is seen running;
//  3. rotate the log if it is larger than cfg.MaxSize (rotateContainerLog).
//
// One container's failure does not stop the others; the failures are joined.
func (r *logRotator) rotate(ctx context.Context, cfg LogRotationConfig) error {
	if err := cfg.Validate(); err != nil {
		return err
	}
	cfg = cfg.WithDefaults()
	a := r.a

	// Step 1: the running containers that are ours.
	lctx, cancel := context.WithTimeout(ctx, a.cfg.RuntimeTimeout)
	cs, err := a.runtime.ListContainers(lctx, &runtimeapi.ContainerFilter{
		State:         &runtimeapi.ContainerStateValue{State: runtimeapi.ContainerState_CONTAINER_RUNNING},
		LabelSelector: map[string]string{labelManagedBy: managedByValue},
	})
	cancel()
	if err != nil {
		return fmt.Errorf("list containers: %w", err)
	}
	running := make(map[string]bool, len(cs))
	for _, c := range cs {
		// The filter is the runtime's to honour; never touch what is not ours.
		// Another minikubelet's containers are rotated by that one; those of
		// a pod this agent adopted are its own now.
		if a.relistOwns(c.GetLabels()) && c.GetState() == runtimeapi.ContainerState_CONTAINER_RUNNING {
			running[c.GetId()] = true
		}
	}
	for id := range r.paths {
		if !running[id] {
			delete(r.paths, id) // exited or removed: its ID never runs again
		}
	}
	var errs []error
	for _, c := range cs {
		if ctx.Err() != nil {
			break
		}
		id := c.GetId()
		if !running[id] {
			continue
		}
		// Step 2: where its log is.
		path, ok := r.paths[id]
		if !ok {
			sctx, cancel := context.WithTimeout(ctx, a.cfg.RuntimeTimeout)
			resp, err := a.runtime.ContainerStatus(sctx, id, false)
			cancel()
			if cri.IsNotFound(err) {
				continue // gone since the list
			}
			if err != nil {
				errs = append(errs, fmt.Errorf("status of container %s: %w", id, err))
				continue
			}
			if resp.GetStatus().GetState() != runtimeapi.ContainerState_CONTAINER_RUNNING {
				continue // stopped since the list: not remembered
			}
			path = resp.GetStatus().GetLogPath()
			r.paths[id] = path
		}
		if path == "" {
			continue
		}
		// Step 3: rotate when too big.
		if err := a.rotateContainerLog(ctx, id, path, cfg); err != nil {
			errs = append(errs, fmt.Errorf("rotate log of container %s: %w", id, err))
		}
	}
	return errors.Join(errs...)
}

// rotateContainerLog rotates the log at path of container id when it is
// larger than cfg.MaxSize: rename to path.<UTC time>, ReopenContainerLog
// (renaming back if that fails, so nothing is lost and the next pass tries
// again), then prune the rotated files to cfg.MaxFiles-1.
func (a *Agent) rotateContainerLog(ctx context.Context, id, path string, cfg LogRotationConfig) error {
	reopen := func() error {
		rctx, cancel := context.WithTimeout(ctx, a.cfg.RuntimeTimeout)
		defer cancel()
		return a.runtime.ReopenContainerLog(rctx, id)
	}
	fi, err := os.Stat(path)
	if errors.Is(err, fs.ErrNotExist) {
		// Lost (a rename back failed, or someone removed it): have the
		// runtime create it again, as the kubelet does.
		if err := reopen(); err != nil {
			return fmt.Errorf("reopen missing log %s: %w", path, err)
		}
		return nil
	}
	if err != nil {
		return err
	}
	if fi.Size() <= cfg.MaxSize {
		return nil
	}

	rotated := path + "." + a.clock.Now().UTC().Format(rotatedLogTimeFormat)
	if _, err := os.Lstat(rotated); err == nil {
		// Rotated twice within one microsecond: never overwrite a log.
		return fmt.Errorf("rotate %s: %s already exists", path, rotated)
	}
	if err := os.Rename(path, rotated); err != nil {
		return fmt.Errorf("rotate %s: %w", path, err)
	}
	if err := reopen(); err != nil {
		// The runtime still writes to the renamed file: give it its name
		// back so nothing is lost, and try again next period.
		if rerr := os.Rename(rotated, path); rerr != nil {
			return errors.Join(fmt.Errorf("reopen log: %w", err), fmt.Errorf("rename %s back: %w", rotated, rerr))
		}
		return fmt.Errorf("reopen log: %w", err)
	}
	return pruneRotatedLogs(path, cfg.MaxFiles-1)
}

// pruneRotatedLogs removes the oldest rotated files of the log at path so
// that at most keep remain. Oldest first, so a reader following the logs
// loses as little as possible.
func pruneRotatedLogs(path string, keep int) error {
	rotated, err := rotatedLogs(path)
	if err != nil {
		return err
	}
	var errs []error
	for i := 0; i < len(rotated)-keep; i++ {
		if err := os.Remove(rotated[i]); err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, fmt.Errorf("remove rotated log: %w", err))
		}
	}
	return errors.Join(errs...)
}

// rotatedLogs returns the rotated files of the log at path, oldest first.
func rotatedLogs(path string) ([]string, error) {
	dir, base := filepath.Split(path)
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("list rotated logs: %w", err)
	}
	var out []string
	for _, e := range entries {
		suffix, ok := strings.CutPrefix(e.Name(), base+".")
		if !ok || e.IsDir() || !rotatedSuffixRE.MatchString(suffix) {
			continue
		}
		out = append(out, filepath.Join(dir, e.Name()))
	}
	sort.Strings(out) // fixed-width timestamps: name order is age order
	return out, nil
}
