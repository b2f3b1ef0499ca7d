package agent

// The final status of the pods accepted through the local API, kept by the
// pod store (source/store_status.go). The local API plays the API server's
// part for its pods: the kubelet writes a terminal pod's status to the API
// server, and a restarted kubelet reads the terminal phase back and never
// starts the pod again (its pod workers start such a pod terminated). So
// once a worker finishes a local-API pod (podWorker.finished), its final
// status is stored beside the pod; a restarted daemon starts that pod's
// worker finished, with that status: nothing of it runs again, even when GC
// has since removed its containers and sandbox (evicted pods at once, other
// finished pods under disk pressure).
//
// Manifest-directory (static) pods keep no final status, as in the kubelet
// (as we understand it; not traced line by line through its source):
// a file-source pod arrives with an empty status and the kubelet stores no
// status of its own on the node, so a restarted kubelet works from what the
// runtime still holds, and a static pod whose containers were reclaimed
// runs again. minikubelet keeps that behaviour for its manifest directory.
// Cluster pods need nothing: a terminal pod leaves the cluster source.

import (
	"errors"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/minikubelet/minikubelet/agent/eviction"
	"github.com/minikubelet/minikubelet/agent/source"
)

// finalStatusStore keeps the final status of the local API's pods (the
// daemon's source.PodStore).
type finalStatusStore interface {
	FinalStatus(uid types.UID) (v1.PodStatus, bool)
	SaveFinalStatus(pod *v1.Pod, st v1.PodStatus) error
}

var _ finalStatusStore = (*source.PodStore)(nil)

// keepsFinalStatus reports whether p's final status is stored: a pod of the
// local API, with a store to keep it.
func (a *Agent) keepsFinalStatus(p *v1.Pod) bool {
	return a.finalStatus != nil && p.Annotations[source.AnnotationConfigSource] == source.SourceAPI
}

// storedFinalStatus returns the stored final status of p, if it is a
// local-API pod that finished before (its UID: a replaced pod's is new).
func (a *Agent) storedFinalStatus(p *v1.Pod) (v1.PodStatus, bool) {
	if !a.keepsFinalStatus(p) {
		return v1.PodStatus{}, false
	}
	return a.finalStatus.FinalStatus(p.UID)
}

// finishPod finishes the worker's pod (podWorker.finish) and, the first
// time, removes its volumes (an evicted pod's are gone already), as the
// kubelet's SyncTerminatedPod unmounts a terminated pod's volumes before it
// is deleted (a memory-backed emptyDir gives its memory back), and stores
// the status it published for a local-API pod. The worker's goroutine
// calls it, so the store's write (an fsync) delays only this pod.
func (a *Agent) finishPod(w *podWorker, asEvicted bool) {
	if !w.finish(asEvicted) {
		return
	}
	if !asEvicted {
		if err := a.removePodVolumes(w.pod()); err != nil {
			w.logger.Warn("Remove the finished pod's volumes failed; its deletion removes them", "err", err)
		}
	}
	if a.keepsFinalStatus(w.pod()) {
		a.storeFinalStatus(w)
	}
}

// storeFinalStatus stores the finished pod's status. A write that failed
// (a full disk: pods are evicted under disk pressure) is tried again at
// the worker's next syncs (syncPod) until it succeeds or the pod is gone.
func (a *Agent) storeFinalStatus(w *podWorker) {
	pod := w.pod()
	w.mu.Lock()
	st := *w.status.DeepCopy()
	w.mu.Unlock()
	err := a.finalStatus.SaveFinalStatus(pod, st)
	switch {
	case errors.Is(err, source.ErrPodNotFound):
		// Deleted meanwhile: nothing to keep.
		err = nil
	case err != nil:
		w.logger.Warn("Storing the pod's final status failed; trying again at the next sync (a daemon restarted meanwhile would run the pod again)", "err", err)
	}
	w.mu.Lock()
	w.finalUnsaved = err != nil
	w.mu.Unlock()
}

// retryFinalStatus stores the final status of a finished pod whose first
// write failed (storeFinalStatus).
func (a *Agent) retryFinalStatus(w *podWorker) {
	w.mu.Lock()
	unsaved := w.finalUnsaved
	w.mu.Unlock()
	if unsaved {
		a.storeFinalStatus(w)
	}
}

// startFinishedWorkerLocked starts the worker of a local-API pod that
// finished before the daemon restarted, finished from the start with its
// stored status: its syncs do nothing, so nothing is started, and GC
// treats its remains as a finished pod's (an evicted pod's at once). It is
// not admitted: it will not run (the kubelet does not admit a terminal pod
// either). a.mu is held.
func (a *Agent) startFinishedWorkerLocked(p *v1.Pod, st v1.PodStatus) {
	w := newPodWorker(a, p)
	w.status = st
	if st.StartTime != nil && !st.StartTime.IsZero() {
		// Its start as published (status.startTime; the creationTimestamp
		// of a pod no API server stamps), not this process's.
		w.startTime = st.StartTime.Time
	}
	if st.Reason == eviction.Reason {
		// Evicted and cleaned up (syncEvicted stored it): GC removes its
		// dead containers at once (podGoneForGC), as before the restart.
		w.evicted = &podEviction{Message: st.Message, At: a.clock.Now()}
	}
	w.finish(true)
	w.logger.Info("Pod finished before the restart; keeping its final status", "phase", st.Phase, "reason", st.Reason)
	a.workers[p.UID] = w
	if a.lifecycle != nil {
		a.lifecycle.podAdded(w.snapshot())
	}
	a.startWorkerGoroutineLocked(w)
}
