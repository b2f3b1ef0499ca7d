package agent

// The engine's side of eviction (issue #21): the manager itself lives in
// agent/eviction (its loop, thresholds, conditions, ranking, records);
// here the engine builds it and runs its loop (EnableEviction,
// RunEviction), implements what it asks of the engine (evictionPods: the
// pods it may rank, a way to evict one, whether an evicted one was
// cleaned up), builds the stats provider (agent/eviction/hoststats,
// NewEvictionStats) and implements what that asks (evictionHost), asks
// it one question at admission (admitPressure), and kills an evicted pod
// (syncEvicted): its containers with the eviction grace period, its
// volumes, and its status Failed/Evicted; it is never restarted (its
// worker keeps it evicted until its source drops it).

import (
	"cmp"
	"context"
	"errors"
	"path/filepath"
	"slices"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/minikubelet/minikubelet/agent/eviction"
	"github.com/minikubelet/minikubelet/agent/eviction/hoststats"
	"github.com/minikubelet/minikubelet/agent/podcgroup"
	"github.com/minikubelet/minikubelet/agent/safepath"
	"github.com/minikubelet/minikubelet/agent/termmsg"
	"github.com/minikubelet/minikubelet/agent/volume"
	"github.com/minikubelet/minikubelet/cgroups"
)

// EnableEviction sets up the eviction manager (eviction.NewManager over
// the agent's pods); RunEviction runs it. Call before the agent runs.
func (a *Agent) EnableEviction(cfg eviction.Config) error {
	if cfg.Stats == nil {
		return errors.New("eviction: no stats provider")
	}
	cfg = cfg.WithDefaults()
	if h, ok := cfg.Stats.(*hoststats.Provider); ok {
		if err := h.ConfigureWalks(cfg.VolumeStatsAggPeriod, cfg.Period, a.metrics.Registry); err != nil {
			return err
		}
	}
	m, err := eviction.NewManager(cfg, evictionPods{a}, a.clock, a.logger, a.metrics.Registry)
	if err != nil {
		return err
	}
	a.eviction = m
	return nil
}

// RunEviction runs the eviction loop until ctx ends (no-op unless
// EnableEviction was called).
func (a *Agent) RunEviction(ctx context.Context) {
	if a.eviction != nil {
		a.eviction.Run(ctx)
	}
}

// ContainerStatsLister is the CRI call pod stats need (cri.Instrumented
// has it).
type ContainerStatsLister = hoststats.ContainerStatsLister

// NewEvictionStats measures this host for the eviction manager
// (agent/eviction/hoststats over the engine's pods, cgroups and runtime).
func (a *Agent) NewEvictionStats(stats ContainerStatsLister) eviction.StatsProvider {
	return hoststats.New(hoststats.Config{
		RootDir:           a.cfg.RootDir,
		MemoryCapacity:    a.cfg.Node.Capacity.Memory().Value(),
		MemoryAllocatable: a.cfg.Node.Allocatable.Memory().Value(),
		Cgroups:           a.cgroups,
		RuntimeTimeout:    a.cfg.RuntimeTimeout,
		Stats:             stats,
		Statuses:          a.runtime,
		Images:            a.images,
		Logger:            a.logger,
	}, evictionHost{a})
}

// evictionHost is the engine as the stats provider sees it
// (hoststats.Engine).
type evictionHost struct{ a *Agent }

func (e evictionHost) Has(uid types.UID) bool {
	e.a.mu.Lock()
	defer e.a.mu.Unlock()
	return e.a.workers[uid] != nil
}
func (e evictionHost) PodDir(p *v1.Pod) string    { return e.a.podDir(p) }
func (e evictionHost) PodLogDir(p *v1.Pod) string { return podLogDir(e.a.cfg.PodLogDir, p) }
func (e evictionHost) EmptyDirPath(p *v1.Pod, vol string) string {
	return e.a.volumes().EmptyDirPath(p, vol)
}
func (e evictionHost) PodCgroup(p *v1.Pod) cgroups.Name { return podcgroup.Name(p, podQOSClass(p)) }

// evictionPods is the engine as the eviction manager sees it
// (eviction.Pods).
type evictionPods struct{ a *Agent }

func (p evictionPods) Evictable() []*v1.Pod { return p.a.evictablePods() }
func (p evictionPods) Evict(uid types.UID, grace int64, message string, disruption bool) bool {
	return p.a.evictPod(uid, grace, message, disruption)
}
func (p evictionPods) CleanedUp(uid types.UID) (cleanedUp, gone <-chan struct{}) {
	return p.a.evictionCleanedUp(uid)
}

// isCritical reports whether the kubelet would treat pod as critical
// (eviction.IsCritical).
func isCritical(pod *v1.Pod) bool { return eviction.IsCritical(pod) }

// evictablePods are the pods eviction may pick: those with a worker that
// is neither terminating nor evicted, not in a terminal phase, and not
// critical.
func (a *Agent) evictablePods() []*v1.Pod {
	a.mu.Lock()
	workers := make([]*podWorker, 0, len(a.workers))
	for _, w := range a.workers {
		workers = append(workers, w)
	}
	a.mu.Unlock()
	var out []*v1.Pod
	for _, w := range workers {
		w.mu.Lock()
		pod, phase, skip := w.spec, w.status.Phase, w.terminating || w.evicted != nil
		w.mu.Unlock()
		if skip || phase == v1.PodSucceeded || phase == v1.PodFailed || isCritical(pod) {
			continue
		}
		out = append(out, pod)
	}
	slices.SortFunc(out, func(x, y *v1.Pod) int { return cmp.Compare(string(x.UID), string(y.UID)) })
	return out
}

// podEviction is what the eviction manager decided for a pod.
type podEviction struct {
	grace   int64
	message string
	at      time.Time
	// disruption adds the DisruptionTarget condition to the status: the
	// kubelet adds it for pressure evictions, not for local storage
	// limit evictions (its evictPod gets no condition there).
	disruption bool
}

// evictionCleanedUp reports whether the worker's pod was evicted and
// cleaned up (its containers dead, its volumes removed): syncEvicted
// finished it.
func (w *podWorker) evictionCleanedUp() bool {
	w.mu.Lock()
	ev := w.evicted
	w.mu.Unlock()
	return ev != nil && w.isFinished()
}

// evictionCleanedUp returns the channels closed once the evicted pod uid
// was cleaned up, and once its worker is gone (deleted meanwhile); nil if
// it has no worker or was not evicted.
func (a *Agent) evictionCleanedUp(uid types.UID) (cleanedUp, gone <-chan struct{}) {
	a.mu.Lock()
	w := a.workers[uid]
	a.mu.Unlock()
	if w == nil {
		return nil, nil
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.evicted == nil {
		return nil, nil
	}
	return w.finished, w.done
}

// evictPod marks the pod's worker evicted and wakes it: its next sync
// kills the pod with grace and publishes Failed/Evicted (with the
// DisruptionTarget condition when disruption is set). False if the pod
// has no worker (gone meanwhile), is already evicted, or is over
// (finished: its phase turned terminal after the eviction manager
// ranked it).
func (a *Agent) evictPod(uid types.UID, grace int64, message string, disruption bool) bool {
	a.mu.Lock()
	w := a.workers[uid]
	a.mu.Unlock()
	if w == nil {
		return false
	}
	w.mu.Lock()
	if w.evicted != nil || w.terminating || w.isFinished() {
		w.mu.Unlock()
		return false
	}
	w.evicted = &podEviction{grace: grace, message: message, at: a.clock.Now(), disruption: disruption}
	// A sync in flight (a hook, a pull) must not hold the kill up: the
	// next sync kills the pod (syncEvicted).
	w.cancelSyncLocked(errPodEvicted)
	w.mu.Unlock()
	w.event(v1.EventTypeWarning, eviction.Reason, "%s", message)
	w.trigger()
	return true
}

// syncEvicted is syncPod for an evicted pod: kill whatever runs with the
// eviction grace period, remove the pod's volumes (an evicted pod's
// emptyDirs are what disk pressure wants back; the kubelet's volume
// manager tears a terminated pod's volumes down), and publish
// Failed/Evicted. Nothing is ever started again.
//
// Once cleaned up, the pod is finished (podWorker.finished): a sync does
// nothing, container GC removes the pod's dead containers and logs
// (podGoneForGC), and the status published at the cleanup (the
// containers' last states) stays as it was, as the kubelet's status of a
// terminated pod does, instead of being computed again from a runtime
// that no longer has them.
func (a *Agent) syncEvicted(ctx context.Context, w *podWorker, ev *podEviction) time.Duration {
	pod := w.pod()
	// Nothing of it runs again: no probe either.
	a.probes.RemovePod(pod.UID)
	st, err := a.observePod(ctx, pod)
	if err != nil {
		w.logger.Warn("Observe pod failed", "err", err)
		return a.cfg.ErrorBackoff
	}
	if podKillChanges(w, st) {
		if err := a.killPod(ctx, w, st, ev.grace); err != nil {
			w.logger.Warn("Kill evicted pod failed", "err", err)
			return a.cfg.ErrorBackoff
		}
		if st, err = a.observePod(ctx, pod); err != nil {
			w.logger.Warn("Observe pod failed", "err", err)
			return a.cfg.ErrorBackoff
		}
	}
	w.setObserved(st)
	if err := a.removePodVolumes(pod); err != nil {
		w.logger.Warn("Remove the evicted pod's volumes failed", "err", err)
		w.setStatus(eviction.EvictedStatus(a.computePodStatus(w, pod, st), ev.message, ev.at, ev.disruption))
		return a.cfg.ErrorBackoff
	}
	w.setStatus(eviction.EvictedStatus(a.computePodStatus(w, pod, st), ev.message, ev.at, ev.disruption))
	a.finishPod(w, true) // final_status.go: kept for a local-API pod
	return a.cfg.ResyncPeriod
}

// admitPressure asks the eviction manager whether pod may start under the
// node's pressure conditions (eviction.Manager.Admit). a.mu may be held.
func (a *Agent) admitPressure(pod *v1.Pod) (reason, message string) {
	if a.eviction == nil {
		return "", ""
	}
	return a.eviction.Admit(pod)
}

// NodePressure reports the pressure conditions, for the cluster's Node
// status; ok is false without an eviction manager.
func (a *Agent) NodePressure() (memory, disk, pid, ok bool) {
	m := a.eviction
	if m == nil {
		return false, false, false, false
	}
	return m.UnderPressure(v1.NodeMemoryPressure), m.UnderPressure(v1.NodeDiskPressure), m.UnderPressure(v1.NodePIDPressure), true
}

// removePodVolumes unmounts and removes the pod's volume directories
// (emptyDirs, projected data) once its containers are dead, and trims its
// termination-message files (eviction.TrimTerminationMessageFiles); the pod dir itself
// stays until the pod goes (it marks the pod cgroup as this agent's).
// safepath.RemoveAll removes symlinks a pod left, never their targets, and
// stops at a mount still there instead of emptying it.
func (a *Agent) removePodVolumes(pod *v1.Pod) error {
	if err := eviction.TrimTerminationMessageFiles(filepath.Join(a.podDir(pod), "containers"), termmsg.MaxMessageBytes); err != nil {
		return err
	}
	if err := a.volumes().UnmountPodVolumes(pod); err != nil {
		return err
	}
	dir := filepath.Join(a.podDir(pod), "volumes")
	if err := volume.UnmountUnder(dir); err != nil {
		return err
	}
	return safepath.RemoveAll(dir)
}
