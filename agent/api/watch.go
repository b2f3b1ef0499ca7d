package api

// This file is the pod watch's fan-out: a PodWatchHub is told every change
// of every pod (its backend calls Update and Delete) and hands each to the
// watchers that want it, through a bounded buffer per watcher, never
// blocking the caller (the agent's pod workers).
//
// Resource versions, as much of the API server's semantics as is honest
// here:
//   - Every change the hub is told gets the next resource version; the
//     objects of watch events carry theirs in metadata.resourceVersion.
//     A GET object carries the version of its pod's latest change
//     (PodResourceVersion), which a PUT may name as its precondition (409
//     Conflict once the pod changed: a status change counts, as on the API
//     server); LIST items carry none; a list carries the hub's current
//     version (PodList.metadata.resourceVersion), so list-then-watch works.
//   - The counter starts at the daemon's start time in microseconds, so a
//     version from an earlier run of the daemon is older than any of this
//     run's (and is answered 410 Gone), never mistaken for one of them.
//   - Watch with resourceVersion "" or "0": synthetic ADDED events for
//     every current pod the watch selects, then the changes ("get state
//     and start at most recent"; both mean the same here: there is no
//     cache older than the present).
//   - Watch with resourceVersion N: every change after N, replayed from a
//     short history (PodWatchHistory events); N older than the history, or
//     not issued by this run, is 410 Gone (Expired), as for a compacted
//     version: list again and watch from the list's version.
//   - sendInitialEvents=true (watch-list): the initial ADDED events, then,
//     with allowWatchBookmarks, a BOOKMARK annotated
//     k8s.io/initial-events-end. Bookmarks are sent at no other time
//     (they are optional in the API).
//   - A watcher that falls PodWatchBuffer events behind is closed with an
//     ERROR event (410 Expired) after what it was sent, like the API
//     server's cacher dropping an unresponsive watcher: its client watches
//     again from a new list.

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
)

// Defaults of a PodWatchHub.
const (
	// PodWatchBuffer is how many events a watcher may fall behind before
	// it is closed (on top of its initial events).
	PodWatchBuffer = 1024
	// PodWatchHistory is how many of the latest events a watch from a
	// resource version can be replayed from.
	PodWatchHistory = 256
)

// PodEvent is one change of a pod. Pod is shared between watchers and must
// not be modified; it carries its type meta and resource version. For
// watch.Error, Status says why the watch ended.
type PodEvent struct {
	Type   watch.EventType
	Pod    *v1.Pod
	Status *metav1.Status
}

// PodWatchOptions selects what a watch sees.
type PodWatchOptions struct {
	// Namespace ("" = all) and Name ("" = all; fieldSelector
	// metadata.name) select pods.
	Namespace, Name string
	// Labels selects pods by label (nil = all).
	Labels labels.Selector
	// Fields selects pods by the other fields the API server knows for
	// pods (podFields; nil = all): kubectl describe node asks for
	// spec.nodeName=NODE,status.phase!=Succeeded,status.phase!=Failed.
	Fields fields.Selector
	// ResourceVersion is where the watch starts (see the file comment).
	ResourceVersion string
	// InitialEventsEnd asks for the BOOKMARK that ends the initial events
	// (sendInitialEvents with allowWatchBookmarks).
	InitialEventsEnd bool
}

// PodWatch is one watcher's stream.
type PodWatch interface {
	// Events delivers the events in order. It is closed when the watch
	// ends: after Stop, or when the watcher fell too far behind, which the
	// last event (watch.Error) says.
	Events() <-chan PodEvent
	// Stop ends the watch; Events is closed. It may be called more than
	// once.
	Stop()
}

// podKey identifies one pod object: a pod deleted and created again under
// the same name is another object (DELETED, then ADDED).
type podKey struct {
	namespace, name string
	uid             types.UID
}

func keyOf(p *v1.Pod) podKey { return podKey{p.Namespace, p.Name, p.UID} }

// PodWatchHub fans pod changes out to watchers. The zero value is not
// usable: use NewPodWatchHub.
type PodWatchHub struct {
	buffer, historyLen int

	// mu guards every field below; events are numbered and sent under it,
	// so every watcher sees them in the same order.
	mu sync.Mutex
	// rv is the resource version of the latest change.
	rv uint64
	// pods is the latest state of every pod the hub was told about and
	// not told gone.
	pods map[podKey]*v1.Pod
	// history is a ring of the latest events: history[next] is the oldest
	// once the ring is full.
	history []PodEvent
	next    int
	// watchers are the open watches.
	watchers map[*podWatcher]struct{}
}

// NewPodWatchHub returns a hub; buffer and history 0 take PodWatchBuffer
// and PodWatchHistory.
func NewPodWatchHub(buffer, history int) *PodWatchHub {
	if buffer <= 0 {
		buffer = PodWatchBuffer
	}
	if history <= 0 {
		history = PodWatchHistory
	}
	return &PodWatchHub{
		buffer: buffer, historyLen: history,
		rv:       uint64(time.Now().UnixMicro()),
		pods:     map[podKey]*v1.Pod{},
		watchers: map[*podWatcher]struct{}{},
	}
}

// ResourceVersion is the version of the latest change: a watch from it
// sees every change made after it was read.
func (h *PodWatchHub) ResourceVersion() string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return strconv.FormatUint(h.rv, 10)
}

// PodResourceVersion is the resource version of the latest change of pod
// (its namespace, name and UID) the hub recorded: what GET answers in
// metadata.resourceVersion, and what a PUT's precondition must name ("" for
// a pod the hub does not know).
func (h *PodWatchHub) PodResourceVersion(pod *v1.Pod) string {
	h.mu.Lock()
	defer h.mu.Unlock()
	if p, ok := h.pods[keyOf(pod)]; ok {
		return p.ResourceVersion
	}
	return ""
}

// Update records a pod's new state: ADDED for a pod the hub does not know,
// else MODIFIED. pod is not modified and not kept (a shallow copy is).
func (h *PodWatchHub) Update(pod *v1.Pod) {
	h.mu.Lock()
	defer h.mu.Unlock()
	k := keyOf(pod)
	typ := watch.Modified
	if _, ok := h.pods[k]; !ok {
		typ = watch.Added
	}
	p := h.stampLocked(pod)
	h.pods[k] = p
	h.publishLocked(PodEvent{Type: typ, Pod: p})
}

// Modify records a pod's new state as Update does, but only for a pod the
// hub knows: a change noticed outside the pod's own reports (its deletion
// mark) must not bring back a pod whose DELETED was sent meanwhile.
func (h *PodWatchHub) Modify(pod *v1.Pod) {
	h.mu.Lock()
	defer h.mu.Unlock()
	k := keyOf(pod)
	if _, ok := h.pods[k]; !ok {
		return
	}
	p := h.stampLocked(pod)
	h.pods[k] = p
	h.publishLocked(PodEvent{Type: watch.Modified, Pod: p})
}

// Delete tells the watchers the pod is gone (DELETED, with its last state);
// a pod the hub never announced is ignored.
func (h *PodWatchHub) Delete(pod *v1.Pod) {
	h.mu.Lock()
	defer h.mu.Unlock()
	k := keyOf(pod)
	last, ok := h.pods[k]
	if !ok {
		return
	}
	delete(h.pods, k)
	h.publishLocked(PodEvent{Type: watch.Deleted, Pod: h.stampLocked(last)})
}

// stampLocked returns a shallow copy of pod with its type meta and the next
// resource version.
func (h *PodWatchHub) stampLocked(pod *v1.Pod) *v1.Pod {
	h.rv++
	p := *pod
	p.APIVersion, p.Kind = "v1", "Pod"
	p.ResourceVersion = strconv.FormatUint(h.rv, 10)
	return &p
}

// publishLocked records ev in the history and queues it for every watcher
// that selects it; a watcher whose buffer is full is closed.
func (h *PodWatchHub) publishLocked(ev PodEvent) {
	if len(h.history) < h.historyLen {
		h.history = append(h.history, ev)
	} else {
		h.history[h.next] = ev
		h.next = (h.next + 1) % h.historyLen
	}
	for w := range h.watchers {
		if !w.selects(ev.Pod) {
			continue
		}
		// Only the hub sends, under mu: a free slot stays free.
		if len(w.ch) >= cap(w.ch)-1 {
			h.dropLocked(w)
			continue
		}
		w.ch <- ev
	}
}

// dropLocked closes a watcher that fell behind, with an Expired error as
// its last event (its buffer keeps one slot free for it).
func (h *PodWatchHub) dropLocked(w *podWatcher) {
	w.ch <- PodEvent{Type: watch.Error, Status: &metav1.Status{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Status"},
		Status:   metav1.StatusFailure, Code: 410, Reason: metav1.StatusReasonExpired,
		Message: fmt.Sprintf("the watcher fell %d events behind and was closed: watch again from a new list", h.buffer),
	}}
	h.closeLocked(w)
}

func (h *PodWatchHub) closeLocked(w *podWatcher) {
	if _, ok := h.watchers[w]; !ok {
		return
	}
	delete(h.watchers, w)
	close(w.ch)
}

// historyLocked returns the recorded events, oldest first.
func (h *PodWatchHub) historyLocked() []PodEvent {
	return append(slices.Clone(h.history[h.next:]), h.history[:h.next]...)
}

// Watch starts a watch (see the file comment for resource versions). Its
// initial or replayed events are queued before Watch returns.
func (h *PodWatchHub) Watch(opts PodWatchOptions) (PodWatch, error) {
	var from uint64
	initial := opts.ResourceVersion == "" || opts.ResourceVersion == "0"
	if !initial {
		n, err := strconv.ParseUint(opts.ResourceVersion, 10, 64)
		if err != nil {
			return nil, apierrors.NewBadRequest(fmt.Sprintf("resourceVersion %q is not a resource version: use one from a list or a watch event, or leave it out", opts.ResourceVersion))
		}
		from = n
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	var queued []PodEvent
	if initial {
		for _, p := range h.pods {
			queued = append(queued, PodEvent{Type: watch.Added, Pod: p})
		}
		slices.SortFunc(queued, func(a, b PodEvent) int {
			return cmp.Or(strings.Compare(a.Pod.Namespace, b.Pod.Namespace), strings.Compare(a.Pod.Name, b.Pod.Name))
		})
		if opts.InitialEventsEnd {
			queued = append(queued, PodEvent{Type: watch.Bookmark, Pod: &v1.Pod{
				TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
				ObjectMeta: metav1.ObjectMeta{ResourceVersion: strconv.FormatUint(h.rv, 10),
					Annotations: map[string]string{metav1.InitialEventsAnnotationKey: "true"}},
			}})
		}
	} else {
		hist := h.historyLocked()
		// The history holds every event after oldest-1: from must be in
		// [oldest-1, rv].
		oldest := h.rv + 1
		if len(hist) > 0 {
			oldest = h.rv - uint64(len(hist)) + 1
		}
		var msg string
		switch {
		case from > h.rv:
			msg = fmt.Sprintf("resource version %d was not issued by this run of the daemon (its latest is %d)", from, h.rv)
		case from+1 < oldest:
			msg = fmt.Sprintf("too old resource version: %d (the oldest this daemon can replay from is %d)", from, oldest-1)
		}
		if msg != "" {
			return nil, &apierrors.StatusError{ErrStatus: metav1.Status{
				Status: metav1.StatusFailure, Code: 410, Reason: metav1.StatusReasonExpired,
				Message: msg + ": list again and watch from the list's resourceVersion",
			}}
		}
		queued = append(queued, hist[len(hist)-int(h.rv-from):]...)
	}
	w := &podWatcher{hub: h, opts: opts}
	var kept []PodEvent
	for _, ev := range queued {
		if ev.Type == watch.Bookmark || w.selects(ev.Pod) {
			kept = append(kept, ev)
		}
	}
	// One slot more for the error that closes a watcher that fell behind.
	w.ch = make(chan PodEvent, len(kept)+h.buffer+1)
	for _, ev := range kept {
		w.ch <- ev
	}
	h.watchers[w] = struct{}{}
	return w, nil
}

// Watchers is the number of open watches.
func (h *PodWatchHub) Watchers() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.watchers)
}

// podWatcher is one watch of a hub.
type podWatcher struct {
	hub  *PodWatchHub
	opts PodWatchOptions
	// ch is written and closed under hub.mu; its capacity leaves one slot
	// for the closing error.
	ch chan PodEvent
}

func (w *podWatcher) Events() <-chan PodEvent { return w.ch }

func (w *podWatcher) Stop() {
	w.hub.mu.Lock()
	defer w.hub.mu.Unlock()
	w.hub.closeLocked(w)
}

// selects reports whether the watch wants the pod's events.
func (w *podWatcher) selects(p *v1.Pod) bool { return w.opts.selects(p) }

// selects reports whether the options select the pod.
func (o PodWatchOptions) selects(p *v1.Pod) bool {
	if (o.Namespace != "" && p.Namespace != o.Namespace) || (o.Name != "" && p.Name != o.Name) {
		return false
	}
	if o.Fields != nil && !o.Fields.Matches(podFields(p)) {
		return false
	}
	return o.Labels == nil || o.Labels.Matches(labels.Set(p.Labels))
}

// podFields are a pod's selectable fields, those of the API server's pod
// registry.
func podFields(p *v1.Pod) fields.Set {
	return fields.Set{
		"metadata.name":            p.Name,
		"metadata.namespace":       p.Namespace,
		"spec.nodeName":            p.Spec.NodeName,
		"spec.restartPolicy":       string(p.Spec.RestartPolicy),
		"spec.schedulerName":       p.Spec.SchedulerName,
		"spec.serviceAccountName":  p.Spec.ServiceAccountName,
		"spec.hostNetwork":         strconv.FormatBool(p.Spec.HostNetwork),
		"status.phase":             string(p.Status.Phase),
		"status.podIP":             p.Status.PodIP,
		"status.nominatedNodeName": p.Status.NominatedNodeName,
	}
}
