package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/minikubelet/minikubelet/agent/podevents"
)

// fakeEventSink is an API whose Events record every call; the next
// injected errors are returned by the next calls, in order.
type fakeEventSink struct {
	API // nil: only Events is used
	mu  sync.Mutex
	// calls are "create <name> count=<n>" and "patch <name> <body>".
	calls  []string
	events map[string]*v1.Event
	errs   []error
	rv     int
}

var _ EventClient = (*fakeEventSink)(nil)

func newFakeEventSink() *fakeEventSink { return &fakeEventSink{events: map[string]*v1.Event{}} }

func (f *fakeEventSink) Events(string) EventClient { return f }

func (f *fakeEventSink) nextErr() error {
	if len(f.errs) == 0 {
		return nil
	}
	err := f.errs[0]
	f.errs = f.errs[1:]
	return err
}

func (f *fakeEventSink) Create(_ context.Context, ev *v1.Event, _ metav1.CreateOptions) (*v1.Event, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, fmt.Sprintf("create %s count=%d", ev.Name, ev.Count))
	if err := f.nextErr(); err != nil {
		return nil, err
	}
	f.rv++
	c := ev.DeepCopy()
	c.ResourceVersion = fmt.Sprint(f.rv)
	f.events[c.Name] = c
	return c, nil
}

func (f *fakeEventSink) Patch(_ context.Context, name string, pt types.PatchType, data []byte, _ metav1.PatchOptions, _ ...string) (*v1.Event, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, fmt.Sprintf("patch %s %s", name, data))
	if pt != types.StrategicMergePatchType {
		return nil, fmt.Errorf("patch type %s", pt)
	}
	if err := f.nextErr(); err != nil {
		return nil, err
	}
	ev, ok := f.events[name]
	if !ok {
		return nil, apierrors.NewNotFound(schema.GroupResource{Resource: "events"}, name)
	}
	if err := json.Unmarshal(data, ev); err != nil {
		return nil, err
	}
	f.rv++
	ev.ResourceVersion = fmt.Sprint(f.rv)
	return ev.DeepCopy(), nil
}

func (f *fakeEventSink) snapshot() ([]string, []*v1.Event) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var evs []*v1.Event
	for _, e := range f.events {
		evs = append(evs, e.DeepCopy())
	}
	return append([]string(nil), f.calls...), evs
}

var evT0 = time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)

func testEvent(name, fieldPath, typ, reason, msg string) *v1.Event {
	return &v1.Event{
		ObjectMeta:     metav1.ObjectMeta{Name: name, Namespace: "shop"},
		InvolvedObject: v1.ObjectReference{Kind: "Pod", APIVersion: "v1", Namespace: "shop", Name: "web", UID: "uid-web", FieldPath: fieldPath},
		Type:           typ, Reason: reason, Message: msg, Count: 1,
		Source: v1.EventSource{Component: "kubelet", Host: "node-a"},
	}
}

// TestEventCorrelator checks client-go's correlation rules on a fake
// clock: repeats fold into one event by patches, each container's events
// are their own, the 11th distinct message of a reason within 10 minutes
// is combined, and an object gets 25 events at once, then one per 5
// minutes.
func TestEventCorrelator(t *testing.T) {
	at := func(ev *v1.Event, now time.Time) *v1.Event {
		ev.FirstTimestamp, ev.LastTimestamp = metav1.NewTime(now), metav1.NewTime(now)
		return ev
	}
	t.Run("repeats fold into one event", func(t *testing.T) {
		c := newEventCorrelator()
		r1 := c.correlate(at(testEvent("web.1", "spec.containers{c}", "Warning", "BackOff", "Back-off restarting failed container c"), evT0), evT0)
		require.False(t, r1.skip)
		require.Nil(t, r1.patch, "the first occurrence is created")
		c.written(r1.key, &v1.Event{ObjectMeta: metav1.ObjectMeta{Name: "web.1", ResourceVersion: "7"}, Count: 1})

		later := evT0.Add(30 * time.Second)
		r2 := c.correlate(at(testEvent("web.2", "spec.containers{c}", "Warning", "BackOff", "Back-off restarting failed container c"), later), later)
		require.NotNil(t, r2.patch, "a repeat patches the first")
		assert.Equal(t, "web.1", r2.event.Name)
		assert.Equal(t, int32(2), r2.event.Count)
		assert.Equal(t, evT0, r2.event.FirstTimestamp.Time.UTC())
		assert.JSONEq(t, `{"count":2,"lastTimestamp":"2026-11-25T12:00:30Z","message":"Back-off restarting failed container c"}`, string(r2.patch))

		r3 := c.correlate(at(testEvent("web.3", "spec.containers{other}", "Warning", "BackOff", "Back-off restarting failed container c"), later), later)
		assert.Nil(t, r3.patch, "another container's event is its own")
	})

	t.Run("the 11th distinct message of a reason is combined, and later ones fold into it", func(t *testing.T) {
		c := newEventCorrelator()
		for i := range eventAggregateMax {
			r := c.correlate(at(testEvent(fmt.Sprintf("web.%d", i), "spec.containers{c}", "Warning", "Unhealthy", fmt.Sprintf("Liveness probe failed: %d", i)), evT0), evT0)
			require.Nil(t, r.patch)
			require.NotContains(t, r.event.Message, "combined")
		}
		r := c.correlate(at(testEvent("web.10", "spec.containers{c}", "Warning", "Unhealthy", "Liveness probe failed: 10"), evT0), evT0)
		assert.Equal(t, "(combined from similar events): Liveness probe failed: 10", r.event.Message)
		assert.Nil(t, r.patch)
		c.written(r.key, r.event)
		r = c.correlate(at(testEvent("web.11", "spec.containers{c}", "Warning", "Unhealthy", "Liveness probe failed: 11"), evT0), evT0)
		assert.Equal(t, "(combined from similar events): Liveness probe failed: 11", r.event.Message)
		require.NotNil(t, r.patch, "later similar events fold into the combined one")
		assert.Equal(t, "web.10", r.event.Name)
		assert.Equal(t, int32(2), r.event.Count)

		// Ten minutes of quiet start a new window.
		quiet := evT0.Add(eventAggregateWindow + time.Second)
		r = c.correlate(at(testEvent("web.12", "spec.containers{c}", "Warning", "Unhealthy", "Liveness probe failed: 12"), quiet), quiet)
		assert.Equal(t, "Liveness probe failed: 12", r.event.Message)
	})

	t.Run("spam filter: 25 at once per object, then one per 5 minutes", func(t *testing.T) {
		c := newEventCorrelator()
		passed := 0
		for i := range 40 {
			r := c.correlate(at(testEvent(fmt.Sprintf("web.%d", i), "", "Normal", fmt.Sprintf("R%d", i), "m"), evT0), evT0)
			if !r.skip {
				passed++
			}
		}
		assert.Equal(t, eventSpamBurst, passed)
		r := c.correlate(at(testEvent("web.x", "", "Normal", "Rx", "m"), evT0.Add(299*time.Second)), evT0.Add(299*time.Second))
		assert.True(t, r.skip, "no token yet after 299 s")
		r = c.correlate(at(testEvent("web.y", "", "Normal", "Ry", "m"), evT0.Add(300*time.Second)), evT0.Add(300*time.Second))
		assert.False(t, r.skip, "one token every 5 minutes")

		other := testEvent("db.1", "", "Normal", "R", "m")
		other.InvolvedObject.Name, other.InvolvedObject.UID = "db", "uid-db"
		assert.False(t, c.correlate(at(other, evT0), evT0).skip, "each object has its own bucket")
	})
}

// TestTokenBucket_Take checks the write limiter's waits.
func TestTokenBucket_Take(t *testing.T) {
	b := newTokenBucket(50, 100, evT0)
	for range 100 {
		require.Zero(t, b.take(evT0))
	}
	assert.Equal(t, 20*time.Millisecond, b.take(evT0), "the 101st waits one token's time")
	assert.Equal(t, 40*time.Millisecond, b.take(evT0))
	assert.Zero(t, b.take(evT0.Add(time.Second)), "a second later there are tokens again")
}

// TestEventRecorder_WritesKubeletEvents runs pod events through the
// recorder into a fake sink: the kubelet's source, the pod reference with
// its UID and the container's fieldPath; a repeat is a patch; an expired
// event is created again; local API pods' events stay on the node; a
// connection error is retried 10 s later, a refusal is not.
func TestEventRecorder_WritesKubeletEvents(t *testing.T) {
	clk := clocktesting.NewFakeClock(evT0)
	sink := newFakeEventSink()
	r := NewEventRecorder(sink, "node-a", nil, clk)
	ctx := context.Background()
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web", UID: "uid-web", ResourceVersion: "42",
		Annotations: map[string]string{annotationConfigSource: SourceCluster}},
		Spec: v1.PodSpec{Containers: []v1.Container{{Name: "c"}}}}
	started := podevents.Event{Type: v1.EventTypeNormal, Reason: "Started", Message: "Started container c", FieldPath: "spec.containers{c}"}
	drain := func() {
		t.Helper()
		for {
			select {
			case ev := <-r.queue:
				r.write(ctx, ev)
			default:
				return
			}
		}
	}

	r.PodEvent(pod, started)
	drain()
	calls, evs := sink.snapshot()
	require.Equal(t, []string{fmt.Sprintf("create web.%x count=1", evT0.UnixNano())}, calls)
	require.Len(t, evs, 1)
	ev := evs[0]
	assert.Equal(t, "shop", ev.Namespace)
	assert.Equal(t, v1.ObjectReference{Kind: "Pod", APIVersion: "v1", Namespace: "shop", Name: "web", UID: "uid-web",
		ResourceVersion: "42", FieldPath: "spec.containers{c}"}, ev.InvolvedObject)
	assert.Equal(t, v1.EventSource{Component: "kubelet", Host: "node-a"}, ev.Source)
	assert.Equal(t, "kubelet", ev.ReportingController)
	assert.Equal(t, "node-a", ev.ReportingInstance)
	assert.Equal(t, "Started", ev.Reason)
	assert.Equal(t, "Started container c", ev.Message)
	assert.Equal(t, v1.EventTypeNormal, ev.Type)
	assert.Equal(t, evT0, ev.FirstTimestamp.Time.UTC())

	clk.Step(time.Minute)
	r.PodEvent(pod, started)
	drain()
	_, evs = sink.snapshot()
	require.Len(t, evs, 1, "the repeat folded into the first")
	assert.Equal(t, int32(2), evs[0].Count)
	assert.Equal(t, evT0, evs[0].FirstTimestamp.Time.UTC())
	assert.Equal(t, evT0.Add(time.Minute), evs[0].LastTimestamp.Time.UTC())

	// The event expired on the server: the next repeat creates it again.
	sink.mu.Lock()
	sink.events = map[string]*v1.Event{}
	sink.mu.Unlock()
	r.PodEvent(pod, started)
	drain()
	calls, evs = sink.snapshot()
	require.Len(t, evs, 1)
	assert.Equal(t, int32(3), evs[0].Count)
	assert.Contains(t, calls[len(calls)-2], "patch ")
	assert.Contains(t, calls[len(calls)-1], "create ")

	local := pod.DeepCopy()
	local.Annotations[annotationConfigSource] = "api"
	r.PodEvent(local, started)
	require.Empty(t, r.queue, "a local API pod's events stay on the node")

	// A refusal is not retried.
	sink.mu.Lock()
	sink.errs = []error{apierrors.NewForbidden(schema.GroupResource{Resource: "events"}, "x", errors.New("no"))}
	sink.mu.Unlock()
	r.PodEvent(pod, podevents.Event{Type: v1.EventTypeWarning, Reason: "Failed", Message: "refused"})
	drain()
	calls, _ = sink.snapshot()
	n := len(calls)

	// A connection error is retried after 10 s.
	sink.mu.Lock()
	sink.errs = []error{errors.New("connection refused")}
	sink.mu.Unlock()
	r.PodEvent(pod, podevents.Event{Type: v1.EventTypeNormal, Reason: "Killing", Message: "Stopping container c", FieldPath: "spec.containers{c}"})
	done := make(chan struct{})
	go func() { defer close(done); drain() }()
	require.Eventually(t, clk.HasWaiters, 10*time.Second, time.Millisecond)
	calls, _ = sink.snapshot()
	require.Len(t, calls, n+1, "one failed try so far")
	clk.Step(eventRetryPause)
	<-done
	calls, evs = sink.snapshot()
	require.Len(t, calls, n+2)
	assert.Contains(t, calls[n+1], "create ")
	var killing *v1.Event
	for _, e := range evs {
		if e.Reason == "Killing" {
			killing = e
		}
	}
	require.NotNil(t, killing, "the retried event reached the server")
}

// TestEventRecorder_NodeEvent checks the kubelet's node reference.
func TestEventRecorder_NodeEvent(t *testing.T) {
	r := NewEventRecorder(newFakeEventSink(), "node-a", nil, clocktesting.NewFakeClock(evT0))
	r.NodeEvent(v1.EventTypeNormal, "Starting", "Starting kubelet.")
	ev := <-r.queue
	assert.Equal(t, "default", ev.Namespace)
	assert.Equal(t, v1.ObjectReference{Kind: "Node", Name: "node-a", UID: "node-a"}, ev.InvolvedObject)
}

// TestEventRecorder_QueueFullDrops checks that a pod worker never blocks
// on a slow API server.
func TestEventRecorder_QueueFullDrops(t *testing.T) {
	r := NewEventRecorder(newFakeEventSink(), "node-a", nil, clocktesting.NewFakeClock(evT0))
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web", UID: "u"}}
	for i := range eventQueueLength + 10 {
		r.PodEvent(pod, podevents.Event{Type: v1.EventTypeNormal, Reason: "R", Message: fmt.Sprint(i)})
	}
	assert.Len(t, r.queue, eventQueueLength)
}
