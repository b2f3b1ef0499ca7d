package agent

// Wiring of the node's garbage collection (package agent/gc): the agent
// tells container GC which objects are its own (the relister's test),
// which pods are gone (no worker, and orphans already collected), and how
// its containers name their log files. Image GC needs nothing of the agent
// but its metrics registry.

import (
	"k8s.io/apimachinery/pkg/types"

	"github.com/minikubelet/minikubelet/agent/gc"
	"github.com/minikubelet/minikubelet/agent/podspec"
)

// NewContainerGC builds the garbage collector of this agent's dead
// containers and sandboxes of gone pods and their log files; the caller
// runs it (gc.ContainerGC.Run).
func (a *Agent) NewContainerGC() (*gc.ContainerGC, error) {
	return gc.NewContainerGC(gc.ContainerGCConfig{
		Runtime:  a.runtime,
		Selector: relistSelector(),
		Owns:     a.relistOwns,
		Labels:   gc.PodLabels{UID: podspec.LabelPodUID, Name: podspec.LabelPodName, Namespace: podspec.LabelPodNamespace},
		PodGone:  a.podGoneForGC,
		// Under disk pressure (DeleteAllUnused), also finished pods.
		PodTerminated: a.podTerminatedForGC,
		LogFile:       gc.ContainerLogFile(podspec.LabelContainerName, podspec.AnnotationRestartCount),
		// RemoveContainer stays the runtime's: the agent's removeContainer
		// (which deletes a task containerd left behind) needs a pod
		// worker. Such a container's removal fails and is tried again at
		// the next collection.
		PodLogDir:      a.cfg.PodLogDir,
		Clock:          a.clock,
		Logger:         a.logger,
		Registerer:     a.metrics.Registry,
		RuntimeTimeout: a.cfg.RuntimeTimeout,
	})
}

// podGoneForGC reports whether the pod uid is gone for container GC: the
// agent has collected the orphans of its previous run (a daemon: until
// then a pod unknown now may be wanted by a source that has not answered)
// and has no worker for the pod (neither running nor tearing it down), or
// its worker holds it evicted and cleaned up. The latter is the kubelet's
// ShouldPodContentBeRemoved (pod_workers.go: an evicted pod's content
// goes, deleted or not): without it an evicted pod's dead containers (the
// writable layer it was evicted for filling) and logs stayed on the node
// filesystem until the pod was deleted, which for a cluster pod is when
// someone deletes it, so a pod evicted for its ephemeral-storage limit
// (or ranked first under disk pressure) kept the disk it was evicted to
// free, and under disk pressure the next pod evicted was a bystander.
func (a *Agent) podGoneForGC(uid string) bool {
	w, ok := a.gcWorker(uid)
	return ok && (w == nil || w.evictionCleanedUp())
}

// podTerminatedForGC reports whether the pod uid's runtime may be removed
// although the pod is still wanted, as the kubelet's
// ShouldPodRuntimeBeRemoved (pod_workers.go: the pod worker terminated
// the pod), which its DeleteAllUnusedContainers adds under disk pressure:
// the pod is gone for GC, or its worker finished it (podWorker.finished:
// a terminal phase and nothing left to stop, or evicted and cleaned up).
// Its worker keeps the status it published when it finished, so the
// removal changes nothing it reports.
//
// The finished state lives in the worker; what outlives a restart is the
// final status the local API's pod store keeps for its pods
// (final_status.go): a restarted daemon starts such a pod's worker
// finished, so it is finished for GC too and never runs again, as the
// kubelet reads a terminal pod's phase back from the API server. A cluster
// pod in a terminal phase leaves the pod source.
//
// A manifest-directory (static) pod keeps no final status, as the kubelet
// keeps none for its static pods: a daemon restarted after the reclaim
// finds it with nothing left in the runtime and runs it again, as a
// restarted kubelet does.
func (a *Agent) podTerminatedForGC(uid string) bool {
	w, ok := a.gcWorker(uid)
	return ok && (w == nil || w.isFinished())
}

// gcWorker returns the worker of pod uid (nil: none) and whether GC may
// judge the pod at all: the agent collected the orphans of its previous
// run (see podGoneForGC) and is not stopping.
func (a *Agent) gcWorker(uid string) (*podWorker, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if !a.orphansCollectedLocked() {
		return nil, false
	}
	return a.workers[types.UID(uid)], true
}

// orphansCollectedLocked reports whether the daemon collected the orphans
// of its previous run and is not stopping: a pod of its own with no worker
// is then one no source wants. a.mu is held.
func (a *Agent) orphansCollectedLocked() bool {
	if a.orphanGate == nil || a.stopping {
		return false
	}
	select {
	case <-a.orphanGate:
		return true
	default:
		return false
	}
}
