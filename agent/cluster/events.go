package cluster

// Events on the API server: the agent's pod events (podevents.Observer's
// PodEvent) become core/v1 Events, as the kubelet's recorder posts them
// (client-go's record.EventBroadcaster writing to the core/v1 EventSink;
// `kubectl describe pod` and `kubectl get events` read those). client-go's
// record package itself is not used: it links the full clientset's scheme
// and strategicpatch, which the binary refuses (issue #8). What it does is
// redone here, small, with its constants:
//
//   - aggregation: the 11th event of an object with the same type and
//     reason but yet another message within 10 minutes becomes one event
//     "(combined from similar events): <message>" that later ones fold into;
//   - folding: a repeat (same object, fieldPath, type, reason, message)
//     patches the existing event's count, lastTimestamp and message;
//   - the spam filter: per object, a token bucket of 25 refilled at one
//     event per 5 minutes; an event over it is dropped;
//   - the write rate: at most 50 writes per second, bursts of 100 (the
//     kubelet's eventRecordQPS and eventBurst);
//   - a queue of 1000 events: when the API server is slow or away, newer
//     events are dropped rather than blocking a pod worker; a write that
//     fails on the connection is retried up to 12 times, 10 s apart.
//
// Source is component "kubelet", host the node name (ReportingController
// and ReportingInstance alike), as `kubectl get events` shows for a kubelet.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync/atomic"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
	"k8s.io/utils/lru"

	"github.com/minikubelet/minikubelet/agent/podevents"
)

// client-go's record package constants (events_cache.go, event.go).
const (
	eventCacheSize        = 4096
	eventSpamBurst        = 25
	eventSpamQPS          = 1.0 / 300
	eventAggregateMax     = 10
	eventAggregateWindow  = 10 * time.Minute
	eventQueueLength      = 1000
	eventMaxTries         = 12
	eventRetryPause       = 10 * time.Second
	eventWriteQPS         = 50
	eventWriteBurst       = 100
	eventWriteTimeout     = 15 * time.Second
	eventSourceComponent  = "kubelet"
	eventCombinedPrefix   = "(combined from similar events): "
	localAPISourceValue   = "api"
	nodeEventObjectKind   = "Node"
	podEventObjectKind    = "Pod"
	eventObjectAPIVersion = "v1"
)

// EventRecorder sends the node's events to the API server. It is an
// podevents.Observer (only PodEvent does anything); Run writes the queue.
type EventRecorder struct {
	client API
	node   string
	clock  clock.WithTicker
	logger *slog.Logger
	// queue holds events for Run, capacity eventQueueLength; PodEvent
	// drops an event when it is full.
	queue chan *v1.Event
	// dropping is set while events are being dropped, so that only the
	// first drop of a run of them is logged.
	dropping atomic.Bool
	// correlator and writes belong to Run's goroutine.
	correlator *eventCorrelator
	writes     *tokenBucket
}

var _ podevents.Observer = (*EventRecorder)(nil)

// NewEventRecorder builds the recorder of node nodeName; clk nil is the
// real clock.
func NewEventRecorder(api API, nodeName string, logger *slog.Logger, clk clock.WithTicker) *EventRecorder {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	if clk == nil {
		clk = clock.RealClock{}
	}
	return &EventRecorder{
		client: api, node: nodeName, clock: clk,
		logger:     logger.With("component", "events"),
		queue:      make(chan *v1.Event, eventQueueLength),
		correlator: newEventCorrelator(),
		writes:     newTokenBucket(eventWriteQPS, eventWriteBurst, clk.Now()),
	}
}

// SetLogger replaces the logger given to NewEventRecorder; call it before
// Run and before any event.
func (r *EventRecorder) SetLogger(logger *slog.Logger) {
	if logger != nil {
		r.logger = logger.With("component", "events")
	}
}

// PodEvent queues one occurrence of ev about pod. Pods of the local API
// exist only on this node: their events stay there.
func (r *EventRecorder) PodEvent(pod *v1.Pod, ev podevents.Event) {
	if r == nil || pod == nil || pod.Annotations[annotationConfigSource] == localAPISourceValue {
		return
	}
	ref := v1.ObjectReference{Kind: podEventObjectKind, APIVersion: eventObjectAPIVersion, Namespace: pod.Namespace,
		Name: pod.Name, UID: pod.UID, ResourceVersion: pod.ResourceVersion, FieldPath: ev.FieldPath}
	r.record(ref, ev.Type, ev.Reason, ev.Message)
}

// PodStep does nothing: steps are not events.
func (r *EventRecorder) PodStep(*v1.Pod, podevents.Step) {}

// PodStatus does nothing: the StatusWriter sends statuses.
func (r *EventRecorder) PodStatus(*v1.Pod) {}

// NodeEvent queues an event about the node (the kubelet's node reference:
// kind Node, the node's name as name and UID, no namespace).
func (r *EventRecorder) NodeEvent(typ, reason, message string) {
	if r == nil {
		return
	}
	r.record(v1.ObjectReference{Kind: nodeEventObjectKind, Name: r.node, UID: types.UID(r.node)}, typ, reason, message)
}

// record builds the event as client-go's recorder does and queues it. A
// nil recorder records nothing.
func (r *EventRecorder) record(ref v1.ObjectReference, typ, reason, message string) {
	if r == nil {
		return
	}
	now := metav1.NewTime(r.clock.Now())
	ns := ref.Namespace
	if ns == "" {
		ns = metav1.NamespaceDefault
	}
	ev := &v1.Event{
		ObjectMeta:          metav1.ObjectMeta{Name: fmt.Sprintf("%s.%x", ref.Name, now.UnixNano()), Namespace: ns},
		InvolvedObject:      ref,
		Reason:              reason,
		Message:             message,
		Type:                typ,
		FirstTimestamp:      now,
		LastTimestamp:       now,
		Count:               1,
		Source:              v1.EventSource{Component: eventSourceComponent, Host: r.node},
		ReportingController: eventSourceComponent,
		ReportingInstance:   r.node,
	}
	select {
	case r.queue <- ev:
		r.dropping.Store(false)
	default:
		if !r.dropping.Swap(true) {
			r.logger.Warn("Event queue full; events are dropped until it drains", "object", ref.Namespace+"/"+ref.Name, "reason", reason)
		}
	}
}

// Run writes the queued events until ctx ends.
func (r *EventRecorder) Run(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case ev := <-r.queue:
			r.write(ctx, ev)
		}
	}
}

// write correlates one event and creates or patches it on the API server.
func (r *EventRecorder) write(ctx context.Context, ev *v1.Event) {
	res := r.correlator.correlate(ev, r.clock.Now())
	if res.skip {
		return
	}
	for try := 1; ; try++ {
		if wait := r.writes.take(r.clock.Now()); wait > 0 && !r.sleep(ctx, wait) {
			return
		}
		written, err := r.send(ctx, res)
		if err == nil {
			r.correlator.written(res.key, written)
			return
		}
		var status apierrors.APIStatus
		if errors.As(err, &status) || try == eventMaxTries {
			// The server refused it, or it is not reachable for long: the
			// kubelet gives up too.
			r.logger.Warn("Event not written", "object", ev.InvolvedObject.Namespace+"/"+ev.InvolvedObject.Name,
				"reason", ev.Reason, "tries", try, "err", err)
			return
		}
		if !r.sleep(ctx, eventRetryPause) {
			return
		}
	}
}

// send does one write: a patch of the event this one folds into, or a
// create (also when the folded-into event expired meanwhile).
func (r *EventRecorder) send(ctx context.Context, res correlated) (*v1.Event, error) {
	ctx, cancel := context.WithTimeout(ctx, eventWriteTimeout)
	defer cancel()
	events := r.client.Events(res.event.Namespace)
	if res.patch != nil {
		got, err := events.Patch(ctx, res.event.Name, types.StrategicMergePatchType, res.patch, metav1.PatchOptions{})
		if !apierrors.IsNotFound(err) {
			return got, err
		}
		// Events live an hour (the API server's --event-ttl).
		ev := res.event.DeepCopy()
		ev.ResourceVersion = ""
		res.event = ev
	}
	got, err := events.Create(ctx, res.event, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		return res.event, nil
	}
	return got, err
}

// sleep waits d on the recorder's clock; false when ctx ended first.
func (r *EventRecorder) sleep(ctx context.Context, d time.Duration) bool {
	t := r.clock.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C():
		return true
	case <-ctx.Done():
		return false
	}
}

// correlated is what to write for one event.
type correlated struct {
	// event is the event to create, or the folded one (name, count,
	// timestamps) when patch is set.
	event *v1.Event
	// patch is the strategic merge patch of an existing event; nil to
	// create.
	patch []byte
	// key is the event's folding key, for written.
	key string
	// skip is set when the spam filter dropped the event.
	skip bool
}

// eventCorrelator is client-go's EventCorrelator redone: aggregation of
// similar events, folding of repeats, and the per-object spam filter.
// Not safe for concurrent use (Run's goroutine owns it).
type eventCorrelator struct {
	// similar maps an aggregate key (object, type, reason) to its
	// *similarEvents.
	similar *lru.Cache
	// seen maps a folding key to the *seenEvent last written.
	seen *lru.Cache
	// spam maps an object key to its *tokenBucket.
	spam *lru.Cache
}

// similarEvents are the distinct messages of an aggregate key seen in the
// current window.
type similarEvents struct {
	messages map[string]bool
	last     time.Time
}

// seenEvent is the state of an event on the API server.
type seenEvent struct {
	count           int32
	firstTimestamp  metav1.Time
	name            string
	resourceVersion string
}

func newEventCorrelator() *eventCorrelator {
	return &eventCorrelator{similar: lru.New(eventCacheSize), seen: lru.New(eventCacheSize), spam: lru.New(eventCacheSize)}
}

// correlate decides what to write for ev at now (client-go's
// EventCorrelate: aggregate, fold, then filter).
func (c *eventCorrelator) correlate(ev *v1.Event, now time.Time) correlated {
	ev = ev.DeepCopy()
	obj := objectKey(ev)
	// Aggregation by type and reason.
	aggKey := strings.Join([]string{obj, ev.Type, ev.Reason}, "\x00")
	sim := &similarEvents{messages: map[string]bool{}}
	if v, ok := c.similar.Get(aggKey); ok {
		if s := v.(*similarEvents); now.Sub(s.last) <= eventAggregateWindow {
			sim = s
		}
	}
	sim.messages[ev.Message] = true
	sim.last = now
	c.similar.Add(aggKey, sim)
	key := strings.Join([]string{obj, ev.InvolvedObject.FieldPath, ev.Type, ev.Reason, ev.Message}, "\x00")
	if len(sim.messages) > eventAggregateMax {
		ev.Message = eventCombinedPrefix + ev.Message
		key = aggKey
	}

	// Folding of repeats.
	out := correlated{event: ev, key: key}
	if v, ok := c.seen.Get(key); ok {
		s := v.(*seenEvent)
		s.count++
		ev.Name, ev.ResourceVersion = s.name, s.resourceVersion
		ev.Count, ev.FirstTimestamp = s.count, s.firstTimestamp
		out.patch, _ = json.Marshal(map[string]any{"count": ev.Count, "lastTimestamp": ev.LastTimestamp, "message": ev.Message})
	} else {
		c.seen.Add(key, &seenEvent{count: 1, firstTimestamp: ev.FirstTimestamp, name: ev.Name})
	}

	// The spam filter, per object.
	var bucket *tokenBucket
	if v, ok := c.spam.Get(obj); ok {
		bucket = v.(*tokenBucket)
	} else {
		bucket = newTokenBucket(eventSpamQPS, eventSpamBurst, now)
		c.spam.Add(obj, bucket)
	}
	out.skip = !bucket.tryTake(now)
	return out
}

// written records the server's copy of a written event: later repeats
// patch it.
func (c *eventCorrelator) written(key string, ev *v1.Event) {
	if ev == nil {
		return
	}
	if v, ok := c.seen.Get(key); ok {
		s := v.(*seenEvent)
		s.name, s.resourceVersion = ev.Name, ev.ResourceVersion
		if ev.Count > s.count {
			s.count = ev.Count
		}
	}
}

// objectKey names an event's source and object (client-go's spam key).
func objectKey(ev *v1.Event) string {
	o := ev.InvolvedObject
	return strings.Join([]string{ev.Source.Component, ev.Source.Host, o.Kind, o.Namespace, o.Name, string(o.UID), o.APIVersion}, "\x00")
}

// tokenBucket is a token bucket on an explicit clock: rate tokens a
// second, at most burst, full at the start.
type tokenBucket struct {
	rate   float64
	burst  float64
	tokens float64
	last   time.Time
}

func newTokenBucket(rate float64, burst int, now time.Time) *tokenBucket {
	return &tokenBucket{rate: rate, burst: float64(burst), tokens: float64(burst), last: now}
}

// refill adds the tokens earned since the last call.
func (b *tokenBucket) refill(now time.Time) {
	if now.After(b.last) {
		b.tokens = min(b.burst, b.tokens+now.Sub(b.last).Seconds()*b.rate)
		b.last = now
	}
}

// tryTake takes a token if there is one.
func (b *tokenBucket) tryTake(now time.Time) bool {
	b.refill(now)
	if b.tokens < 1 {
		return false
	}
	b.tokens--
	return true
}

// take takes a token, going into debt when there is none, and returns how
// long to wait before using it (0: at once).
func (b *tokenBucket) take(now time.Time) time.Duration {
	b.refill(now)
	b.tokens--
	if b.tokens >= 0 {
		return 0
	}
	return time.Duration(-b.tokens / b.rate * float64(time.Second))
}
