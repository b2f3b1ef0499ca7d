package agent

// The engine's side of eviction (issues #21 and #30); the manager, its
// rules and the host's stats provider are agent/eviction's (and
// hoststats'). The engine builds them over its pods, cgroups and runtime
// and kills an evicted pod (syncEvicted); it is never restarted (its
// worker keeps it evicted until its source drops it).

import (
	"context"
	"maps"
	"path/filepath"
	"slices"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/minikubelet/minikubelet/agent/eviction"
	"github.com/minikubelet/minikubelet/agent/eviction/hoststats"
	"github.com/minikubelet/minikubelet/agent/podcgroup"
	"github.com/minikubelet/minikubelet/agent/podspec"
	"github.com/minikubelet/minikubelet/agent/safepath"
	"github.com/minikubelet/minikubelet/agent/termmsg"
	"github.com/minikubelet/minikubelet/agent/volume"
	"github.com/minikubelet/minikubelet/cgroups"
)

// EnableEviction sets up the eviction manager (eviction.NewManager over
// the agent's pods); RunEviction runs it. Call before the agent runs.
func (a *Agent) EnableEviction(cfg eviction.Config) error {
	pods := eviction.PodsFuncs{EvictableFunc: a.evictablePods, EvictFunc: a.evictPod, CleanedUpFunc: a.evictionCleanedUp}
	m, err := eviction.NewManager(cfg, pods, a.clock, a.logger, a.metrics.Registry)
	if err == nil {
		a.eviction = m
	}
	return err
}

// RunEviction runs the eviction loop until ctx ends (no-op unless
// EnableEviction was called).
func (a *Agent) RunEviction(ctx context.Context) { a.eviction.Run(ctx) }

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
	}, hoststats.EngineFuncs{HasFunc: a.hasWorker, PodDirFunc: a.podDir,
		PodLogDirFunc:    func(p *v1.Pod) string { return podspec.LogDir(a.cfg.PodLogDir, p) },
		EmptyDirPathFunc: func(p *v1.Pod, vol string) string { return a.volumes().EmptyDirPath(p, vol) },
		PodCgroupFunc:    func(p *v1.Pod) cgroups.Name { return podcgroup.Name(p, podspec.QOSClass(p)) }})
}

// evictablePods are the pods eviction may pick (eviction.Evictable over
// the workers' states).
func (a *Agent) evictablePods() []*v1.Pod {
	a.mu.Lock()
	workers := slices.Collect(maps.Values(a.workers))
	a.mu.Unlock()
	states := make([]eviction.PodState, len(workers))
	for i, w := range workers {
		w.mu.Lock()
		states[i] = eviction.PodState{Pod: w.spec, Phase: w.status.Phase, Stopping: w.terminating || w.evicted != nil}
		w.mu.Unlock()
	}
	return eviction.Evictable(states)
}

// podEviction is what the eviction manager decided for a pod.
type podEviction = eviction.Decision

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
	w.evicted = &podEviction{Grace: grace, Message: message, At: a.clock.Now(), Disruption: disruption}
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
	if err == nil && podKillChanges(w, st) {
		if err := a.killPod(ctx, w, st, ev.Grace); err != nil {
			w.logger.Warn("Kill evicted pod failed", "err", err)
			return a.cfg.ErrorBackoff
		}
		st, err = a.observePod(ctx, pod)
	}
	if err != nil {
		w.logger.Warn("Observe pod failed", "err", err)
		return a.cfg.ErrorBackoff
	}
	w.setObserved(st)
	// Published whether or not the volumes are gone: the pod is dead.
	err = a.removePodVolumes(pod)
	w.setStatus(eviction.EvictedStatus(a.computePodStatus(w, pod, st), ev.Message, ev.At, ev.Disruption))
	if err != nil {
		w.logger.Warn("Remove the evicted pod's volumes failed", "err", err)
		return a.cfg.ErrorBackoff
	}
	a.finishPod(w, true) // final_status.go: kept for a local-API pod
	return a.cfg.ResyncPeriod
}

// NodePressure reports the pressure conditions, for the cluster's Node
// status; ok is false without an eviction manager.
func (a *Agent) NodePressure() (memory, disk, pid, ok bool) { return a.eviction.NodePressure() }

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
