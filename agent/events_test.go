package agent

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
)

func TestEventRing_FoldsRepeats(t *testing.T) {
	var r eventRing
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	r.add("Warning", "BackOff", "Back-off restarting failed container", "", t0)
	ev := r.add("Warning", "BackOff", "Back-off restarting failed container", "", t0.Add(time.Second))
	assert.Equal(t, 2, ev.Count)
	r.add("Normal", "Pulled", "x", "", t0.Add(2*time.Second))
	r.add("Warning", "BackOff", "Back-off restarting failed container", "", t0.Add(3*time.Second))
	got := r.list()
	require.Len(t, got, 3, "only consecutive repeats fold")
	assert.Equal(t, 2, got[0].Count)
	assert.Equal(t, t0, got[0].FirstTimestamp)
	assert.Equal(t, t0.Add(time.Second), got[0].LastTimestamp)
	assert.Equal(t, 1, got[2].Count)
}

func TestEventRing_Bounded(t *testing.T) {
	var r eventRing
	for i := 0; i < maxEventsPerPod+10; i++ {
		r.add("Normal", "Started", fmt.Sprint(i), "", time.Unix(int64(i), 0))
	}
	got := r.list()
	require.Len(t, got, maxEventsPerPod)
	assert.Equal(t, "10", got[0].Message, "the oldest are dropped")
	assert.Equal(t, fmt.Sprint(maxEventsPerPod+9), got[len(got)-1].Message)
}

// countingObserver counts the calls it gets.
type countingObserver struct{ events, steps, statuses int }

func (c *countingObserver) PodEvent(*v1.Pod, Event) { c.events++ }
func (c *countingObserver) PodStep(*v1.Pod, Step)   { c.steps++ }
func (c *countingObserver) PodStatus(*v1.Pod)       { c.statuses++ }

func TestObservers_FanOut(t *testing.T) {
	_, isNop := Observers(nil, nopObserver{}).(nopObserver)
	require.True(t, isNop, "no observer left must observe nothing")

	one := &countingObserver{}
	require.Same(t, one, Observers(nil, one, nopObserver{}), "a single observer is used as is")

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

	ag := New(Config{RootDir: t.TempDir(), PodLogDir: t.TempDir(), ResolvConf: "/nonexistent", Network: testNetwork(t), HostIPs: []string{"192.0.2.1"}}, Deps{})
	ag.AddObserver(a)
	ag.AddObserver(b)
	ag.observer.PodStatus(pod)
	require.Equal(t, 3, a.statuses)
	require.Equal(t, 3, b.statuses)
}

// TestContainerFieldPath checks the kubelet's involvedObject.fieldPath of
// each kind of container.
func TestContainerFieldPath(t *testing.T) {
	pod := &v1.Pod{Spec: v1.PodSpec{
		InitContainers:      []v1.Container{{Name: "init"}},
		Containers:          []v1.Container{{Name: "app"}},
		EphemeralContainers: []v1.EphemeralContainer{{EphemeralContainerCommon: v1.EphemeralContainerCommon{Name: "debug"}}},
	}}
	assert.Equal(t, "spec.containers{app}", containerFieldPath(pod, "app"))
	assert.Equal(t, "spec.initContainers{init}", containerFieldPath(pod, "init"))
	assert.Equal(t, "spec.ephemeralContainers{debug}", containerFieldPath(pod, "debug"))
	assert.Equal(t, "", containerFieldPath(pod, "gone"))
	assert.Equal(t, "", containerFieldPath(pod, ""), "the pod itself")
}
