package cluster

// Pod status to the API server: the agent reports every status change of
// every pod to its Observer; StatusWriter keeps the latest one of each
// cluster pod and patches pods/status with it, at most once per pod per
// MinInterval, so a busy node (a pod starting goes through several states
// within a second) sends the newest state instead of every step.
//
//	agent ──PodStatus(pod)──► latest[uid] ──(due: first change at once, then ≤ 1 per MinInterval)──► PATCH pods/status

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"

	"github.com/minikubelet/minikubelet/agent/podevents"
)

// DefaultStatusMinInterval is the shortest time between two status
// patches of one pod.
const DefaultStatusMinInterval = time.Second

// StatusWriter sends the statuses of cluster pods to the API server. It is
// a podevents.Observer; only pods annotated kubernetes.io/config.source=cluster
// are sent.
type StatusWriter struct {
	client API
	logger *slog.Logger
	clock  clock.WithTicker
	// minInterval is DefaultStatusMinInterval unless a test changes it.
	minInterval time.Duration

	// mu guards pods.
	mu sync.Mutex
	// pods holds one entry per cluster pod the agent reported.
	pods map[types.UID]*podStatusEntry
	// wake is signalled when an entry got a new status; capacity 1 so
	// PodStatus never blocks.
	wake chan struct{}
	// status is the writer loop's record; guarded by mu.
	status LoopStatus
}

// podStatusEntry is what the writer knows of one pod.
type podStatusEntry struct {
	namespace, name string
	// want is the newest status from the agent not yet accepted by the
	// API server; nil when there is nothing to send.
	want *v1.PodStatus
	// sent is the last status the API server accepted; nil before the
	// first (the patch then starts from an empty status, which keeps the
	// conditions others set, such as PodScheduled).
	sent *v1.PodStatus
	// lastPatch is when the last patch was attempted.
	lastPatch time.Time
}

var _ podevents.Observer = (*StatusWriter)(nil)

// NewStatusWriter returns a writer; nothing is sent before Run. clk may be
// nil (the real clock).
func NewStatusWriter(client API, logger *slog.Logger, clk clock.WithTicker) *StatusWriter {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	if clk == nil {
		clk = clock.RealClock{}
	}
	return &StatusWriter{
		client:      client,
		logger:      logger.With("component", "cluster-status"),
		clock:       clk,
		minInterval: DefaultStatusMinInterval,
		pods:        map[types.UID]*podStatusEntry{},
		wake:        make(chan struct{}, 1),
	}
}

// PodEvent implements podevents.Observer (events are not sent yet).
func (w *StatusWriter) PodEvent(*v1.Pod, podevents.Event) {}

// PodStep implements podevents.Observer.
func (w *StatusWriter) PodStep(*v1.Pod, podevents.Step) {}

// PodStatus records pod's new status (the agent's copy) to be sent, for a
// cluster pod (MirrorPods sends static pods' to their mirrors).
func (w *StatusWriter) PodStatus(pod *v1.Pod) {
	if pod.Annotations[annotationConfigSource] != SourceCluster {
		return
	}
	w.record(pod.UID, pod.Namespace, pod.Name, &pod.Status)
}

// record notes status to be sent to the pod namespace/name whose UID on
// the API server is uid (a cluster pod's own, or a static pod's mirror's).
func (w *StatusWriter) record(uid types.UID, namespace, name string, status *v1.PodStatus) {
	w.mu.Lock()
	e := w.pods[uid]
	if e == nil {
		e = &podStatusEntry{namespace: namespace, name: name}
		w.pods[uid] = e
	}
	if e.sent != nil && apiequality.Semantic.DeepEqual(*e.sent, *status) {
		e.want = nil
	} else {
		e.want = status.DeepCopy()
	}
	w.mu.Unlock()
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

// Forget drops what the writer knows of a pod (it left the node).
func (w *StatusWriter) Forget(uid types.UID) {
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(w.pods, uid)
}

// LoopStatus returns the writer's record of its patches.
func (w *StatusWriter) LoopStatus() LoopStatus {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.status
}

// Run sends statuses until ctx ends.
func (w *StatusWriter) Run(ctx context.Context) {
	for {
		next := w.sendDue(ctx)
		var (
			t     clock.Timer
			timer <-chan time.Time
		)
		if next > 0 {
			t = w.clock.NewTimer(next)
			timer = t.C()
		}
		select {
		case <-ctx.Done():
		case <-w.wake:
		case <-timer:
		}
		if t != nil {
			t.Stop()
		}
		if ctx.Err() != nil {
			return
		}
	}
}

// sendDue patches every pod whose status is due and returns how long until
// the next one is (0: none waiting).
func (w *StatusWriter) sendDue(ctx context.Context) time.Duration {
	type job struct {
		uid   types.UID
		entry podStatusEntry
	}
	now := w.clock.Now()
	var jobs []job
	var next time.Duration
	w.mu.Lock()
	for uid, e := range w.pods {
		if e.want == nil {
			continue
		}
		if wait := e.lastPatch.Add(w.minInterval).Sub(now); !e.lastPatch.IsZero() && wait > 0 {
			if next == 0 || wait < next {
				next = wait
			}
			continue
		}
		jobs = append(jobs, job{uid: uid, entry: *e})
		e.lastPatch = now
	}
	w.mu.Unlock()

	for _, j := range jobs {
		if err := w.send(ctx, j.uid, j.entry); err != nil && (next == 0 || w.minInterval < next) {
			next = w.minInterval
		}
	}
	return next
}

// send patches one pod's status and records the outcome; an error left
// the status to be sent again.
func (w *StatusWriter) send(ctx context.Context, uid types.UID, entry podStatusEntry) error {
	err := w.patch(ctx, uid, entry)
	w.mu.Lock()
	w.status.record(err, w.clock.Now())
	e := w.pods[uid]
	gone := apierrors.IsNotFound(err) || apierrors.IsConflict(err)
	switch {
	case e == nil:
	case err == nil:
		e.sent = entry.want
		// A newer status may have arrived meanwhile; keep that one.
		if e.want == entry.want {
			e.want = nil
		}
	case gone:
		// Gone, or another pod of that name (the UID precondition
		// failed): nothing to send any more.
		delete(w.pods, uid)
	}
	failures := w.status.ConsecutiveFailures
	w.mu.Unlock()
	if gone {
		return nil
	}
	if err != nil && failures%30 == 1 {
		w.logger.Warn("Cannot send a pod status to the API server; retrying", "pod", entry.namespace+"/"+entry.name, "err", err)
	}
	return err
}

// Flush sends the pod's newest status now if it has not been sent, whatever
// MinInterval says, and returns once the API server took it (or the pod is
// gone, or the patch failed: Run sends it again). The node deletes a
// finished pod's object only after its final status, as the kubelet's
// status manager does: a watcher sees the terminal phase before the pod
// goes.
func (w *StatusWriter) Flush(ctx context.Context, uid types.UID) {
	w.mu.Lock()
	e := w.pods[uid]
	if e == nil || e.want == nil {
		w.mu.Unlock()
		return
	}
	entry := *e
	e.lastPatch = w.clock.Now()
	w.mu.Unlock()
	_ = w.send(ctx, uid, entry)
}

// patch sends one status as a strategic merge patch of pods/status, from
// the status last sent to the new one, with the pod's UID as precondition
// (a pod deleted and created again under the same name is not ours).
func (w *StatusWriter) patch(ctx context.Context, uid types.UID, e podStatusEntry) error {
	old := v1.PodStatus{}
	if e.sent != nil {
		old = *e.sent
	}
	data, err := podStatusPatch(uid, old, *e.want)
	if err != nil {
		return err
	}
	rctx, cancel := context.WithTimeout(ctx, requestTimeout)
	defer cancel()
	_, err = w.client.Pods(e.namespace).Patch(rctx, e.name, types.StrategicMergePatchType, data, metav1.PatchOptions{}, "status")
	if err != nil {
		return fmt.Errorf("patch status of pod %s/%s: %w", e.namespace, e.name, err)
	}
	return nil
}

// podStatusPatch is the strategic merge patch from old to want, with
// metadata.uid = uid as precondition (the kubelet's PatchPodStatus).
func podStatusPatch(uid types.UID, old, want v1.PodStatus) ([]byte, error) {
	oldJSON, err := json.Marshal(v1.Pod{Status: old})
	if err != nil {
		return nil, fmt.Errorf("encode pod status: %w", err)
	}
	newJSON, err := json.Marshal(v1.Pod{Status: want})
	if err != nil {
		return nil, fmt.Errorf("encode pod status: %w", err)
	}
	patch, err := twoWayMergePatch(oldJSON, newJSON, v1.Pod{})
	if err != nil {
		return nil, fmt.Errorf("compute pod status patch: %w", err)
	}
	var m map[string]any
	if err := json.Unmarshal(patch, &m); err != nil {
		return nil, fmt.Errorf("compute pod status patch: %w", err)
	}
	m["metadata"] = map[string]any{"uid": uid}
	return json.Marshal(m)
}
