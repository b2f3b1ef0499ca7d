package podevents

import (
	"fmt"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestEventRing_FoldsRepeats(t *testing.T) {
	var r Ring
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	r.Add("Warning", "BackOff", "Back-off restarting failed container", "", t0)
	ev := r.Add("Warning", "BackOff", "Back-off restarting failed container", "", t0.Add(time.Second))
	assert.Equal(t, 2, ev.Count)
	r.Add("Normal", "Pulled", "x", "", t0.Add(2*time.Second))
	r.Add("Warning", "BackOff", "Back-off restarting failed container", "", t0.Add(3*time.Second))
	got := r.List()
	require.Len(t, got, 3, "only consecutive repeats fold")
	assert.Equal(t, 2, got[0].Count)
	assert.Equal(t, t0, got[0].FirstTimestamp)
	assert.Equal(t, t0.Add(time.Second), got[0].LastTimestamp)
	assert.Equal(t, 1, got[2].Count)
}

func TestEventRing_Bounded(t *testing.T) {
	var r Ring
	for i := 0; i < maxEventsPerPod+10; i++ {
		r.Add("Normal", "Started", fmt.Sprint(i), "", time.Unix(int64(i), 0))
	}
	got := r.List()
	require.Len(t, got, maxEventsPerPod)
	assert.Equal(t, "10", got[0].Message, "the oldest are dropped")
	assert.Equal(t, fmt.Sprint(maxEventsPerPod+9), got[len(got)-1].Message)
}

// countingObserver counts the calls it gets.
type countingObserver struct{ events, steps, statuses int }

func (c *countingObserver) PodEvent(*v1.Pod, Event) { c.events++ }
func (c *countingObserver) PodStep(*v1.Pod, Step)   { c.steps++ }
func (c *countingObserver) PodStatus(*v1.Pod)       { c.statuses++ }

// The engine's part (Agent.AddObserver) is agent's TestAgent_AddObserver.
func TestObservers_FanOut(t *testing.T) {
	_, isNop := Observers(nil, Nop{}).(Nop)
	require.True(t, isNop, "no observer left must observe nothing")

	one := &countingObserver{}
	require.Same(t, one, Observers(nil, one, Nop{}), "a single observer is used as is")

	a, b := &countingObserver{}, &countingObserver{}
	o := Observers(Observers(a), b)
	pod := &v1.Pod{}
	o.PodEvent(pod, Event{})
	o.PodStep(pod, Step{})
	o.PodStatus(pod)
	o.PodStatus(pod)
	for _, c := range []*countingObserver{a, b} {
		require.Equal(t, countingObserver{events: 1, steps: 1, statuses: 2}, *c)
	}
}

// TestContainerFieldPath checks the kubelet's involvedObject.fieldPath of
// each kind of container.
func TestContainerFieldPath(t *testing.T) {
	pod := &v1.Pod{Spec: v1.PodSpec{
		InitContainers:      []v1.Container{{Name: "init"}},
		Containers:          []v1.Container{{Name: "app"}},
		EphemeralContainers: []v1.EphemeralContainer{{EphemeralContainerCommon: v1.EphemeralContainerCommon{Name: "debug"}}},
	}}
	assert.Equal(t, "spec.containers{app}", ContainerFieldPath(pod, "app"))
	assert.Equal(t, "spec.initContainers{init}", ContainerFieldPath(pod, "init"))
	assert.Equal(t, "spec.ephemeralContainers{debug}", ContainerFieldPath(pod, "debug"))
	assert.Equal(t, "", ContainerFieldPath(pod, "gone"))
	assert.Equal(t, "", ContainerFieldPath(pod, ""), "the pod itself")
}

// Issue #29, finding 3: every event message is bounded, on a character
// boundary (the engine's TestEvents_EveryMessageBounded checks the ring and
// the observers get it so).
func TestTruncateMessage_CharacterBoundary(t *testing.T) {
	for _, r := range []string{"a", "é", "€", "😀"} {
		s := strings.Repeat(r, 2000)
		for _, limit := range []int{1024, 1025, 1026, 1027, 100} {
			got := TruncateMessage(s, limit)
			assert.LessOrEqual(t, len(got), limit, "%q limit %d", r, limit)
			assert.Greater(t, len(got), limit-len(" ...")-utf8.UTFMax, "%q limit %d: cut no more than a character", r, limit)
			assert.True(t, utf8.ValidString(got), "%q limit %d: no character cut in two", r, limit)
			assert.True(t, strings.HasSuffix(got, " ..."), "%q limit %d", r, limit)
		}
	}
	assert.Equal(t, "short", TruncateMessage("short", 1024), "a short message is kept as it is")
	// Bytes that are no characters are cut where the limit falls.
	junk := strings.Repeat("\x80", 3000)
	assert.Len(t, TruncateMessage(junk, 1024), 1024)
	assert.Equal(t, "", ClipUTF8("abc", 0))
}

// A rejected pod's one event carries its status's reason and message,
// bounded, at its start time.
func TestRejected(t *testing.T) {
	at := time.Date(2026, 11, 29, 17, 0, 0, 0, time.UTC)
	p := &v1.Pod{}
	p.Status.Reason = "OutOfmemory"
	p.Status.Message = strings.Repeat("m", MaxMessageBytes+10)
	p.Status.StartTime = &metav1.Time{Time: at}
	ev := Rejected(p)
	assert.Equal(t, v1.EventTypeWarning, ev.Type)
	assert.Equal(t, "OutOfmemory", ev.Reason)
	assert.LessOrEqual(t, len(ev.Message), MaxMessageBytes)
	assert.True(t, strings.HasPrefix(ev.Message, "mmm"))
	assert.Equal(t, 1, ev.Count)
	assert.Equal(t, at, ev.FirstTimestamp)
	assert.Equal(t, at, ev.LastTimestamp)
}
