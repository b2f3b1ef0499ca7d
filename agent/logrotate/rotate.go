package logrotate

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/utils/clock"

	"github.com/minikubelet/minikubelet/cri"
)

// rotatedTimeFormat suffixes a rotated log's name (UTC). Its fixed width
// makes name order chronological order.
const rotatedTimeFormat = "20060102-150405.000000"

// rotatedSuffixRE matches what rotation appends to a log's name: this
// format, the kubelet's (without fraction), and a gzipped one.
var rotatedSuffixRE = regexp.MustCompile(`^\d{8}-\d{6}(\.\d{6})?(\.gz)?$`)

// Runtime is the CRI calls rotation makes, with cri-api's signatures
// (cri.Runtime has them).
type Runtime interface {
	ListContainers(ctx context.Context, filter *runtimeapi.ContainerFilter) ([]*runtimeapi.Container, error)
	ContainerStatus(ctx context.Context, containerID string, verbose bool) (*runtimeapi.ContainerStatusResponse, error)
	ReopenContainerLog(ctx context.Context, containerID string) error
}

// Options are what a Rotator needs of its caller.
type Options struct {
	// Runtime is asked for the running containers, their log paths and
	// to reopen a rotated log.
	Runtime Runtime
	// Selector is the label selector of the containers to list (the
	// caller's managed-by label).
	Selector map[string]string
	// Owns reports whether a listed container, by its labels, is the
	// caller's: the filter is the runtime's to honour, and another
	// agent's containers are that agent's to rotate.
	Owns func(labels map[string]string) bool
	// Clock names rotated files and ticks Run (the real clock when nil).
	Clock clock.WithTicker
	// Logger is Run's (slog.Default when nil).
	Logger *slog.Logger
	// RuntimeTimeout bounds each CRI call.
	RuntimeTimeout time.Duration
}

// Rotator makes the rotation passes of one Run loop. It remembers each
// running container's log path: the runtime fixes a container's log path
// when the container is created (CRI ContainerConfig.LogPath under the
// sandbox's log directory) and never changes it, so ContainerStatus is
// asked once per container instead of once per container every period
// (100 CRI calls every 10 s with 100 pods). A restarted container is a new
// container with its own ID, so it gets its own entry; entries of
// containers no longer running are dropped at the next pass. Its passes
// are made by one goroutine at a time.
type Rotator struct {
	opts Options
	// paths maps the ID of a running container of ours to its log path
	// ("" when it has none). Owned by the goroutine making the passes.
	paths map[string]string
}

// New returns a Rotator with nothing remembered.
func New(o Options) *Rotator {
	if o.Clock == nil {
		o.Clock = clock.RealClock{}
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	return &Rotator{opts: o, paths: map[string]string{}}
}

// Run makes a pass every cfg.Period on the clock until ctx ends. A failed
// pass is logged here and retried at the next period; a policy Validate
// refuses turns rotation off, logged.
func (r *Rotator) Run(ctx context.Context, cfg Config) {
	logger := r.opts.Logger
	if err := cfg.Validate(); err != nil {
		logger.Error("Container log rotation is off", "err", err)
		return
	}
	cfg = cfg.WithDefaults()
	ticker := r.opts.Clock.NewTicker(cfg.Period)
	defer ticker.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-ticker.C():
			if err := r.Pass(ctx, cfg); err != nil && ctx.Err() == nil {
				logger.Warn("Container log rotation failed", "err", err)
			}
		}
	}
}

// Pass makes one pass over the running containers of the caller:
//
//  1. list them (Selector, state RUNNING, Owns), and forget the log paths
//     of containers no longer in that list;
//  2. for each, its log path: remembered, or read from ContainerStatus the
//     first time the container is seen running;
//  3. rotate the log if it is larger than cfg.MaxSize (rotateLog).
//
// One container's failure does not stop the others; the failures are joined.
func (r *Rotator) Pass(ctx context.Context, cfg Config) error {
	if err := cfg.Validate(); err != nil {
		return err
	}
	cfg = cfg.WithDefaults()
	rt := r.opts.Runtime

	// Step 1: the running containers that are ours.
	lctx, cancel := context.WithTimeout(ctx, r.opts.RuntimeTimeout)
	cs, err := rt.ListContainers(lctx, &runtimeapi.ContainerFilter{
		State:         &runtimeapi.ContainerStateValue{State: runtimeapi.ContainerState_CONTAINER_RUNNING},
		LabelSelector: r.opts.Selector,
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
		if r.opts.Owns(c.GetLabels()) && c.GetState() == runtimeapi.ContainerState_CONTAINER_RUNNING {
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
			sctx, cancel := context.WithTimeout(ctx, r.opts.RuntimeTimeout)
			resp, err := rt.ContainerStatus(sctx, id, false)
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
		if err := r.rotateLog(ctx, id, path, cfg); err != nil {
			errs = append(errs, fmt.Errorf("rotate log of container %s: %w", id, err))
		}
	}
	return errors.Join(errs...)
}

// rotateLog rotates the log at path of container id when it is larger than
// cfg.MaxSize: rename to path.<UTC time>, ReopenContainerLog (renaming back
// if that fails, so nothing is lost and the next pass tries again), then
// prune the rotated files to cfg.MaxFiles-1.
func (r *Rotator) rotateLog(ctx context.Context, id, path string, cfg Config) error {
	reopen := func() error {
		rctx, cancel := context.WithTimeout(ctx, r.opts.RuntimeTimeout)
		defer cancel()
		return r.opts.Runtime.ReopenContainerLog(rctx, id)
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

	rotated := path + "." + r.opts.Clock.Now().UTC().Format(rotatedTimeFormat)
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
	return pruneRotated(path, cfg.MaxFiles-1)
}

// pruneRotated removes the oldest rotated files of the log at path so that
// at most keep remain. Oldest first, so a reader following the logs loses
// as little as possible.
func pruneRotated(path string, keep int) error {
	rotated, err := rotatedFiles(path)
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

// rotatedFiles returns the rotated files of the log at path, oldest first.
func rotatedFiles(path string) ([]string, error) {
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
