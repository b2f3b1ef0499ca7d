package agent

import (
	"testing"

	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"

	"github.com/minikubelet/minikubelet/agent/podevents"
)

// countingObserver counts the calls it gets.
type countingObserver struct{ events, steps, statuses int }

func (c *countingObserver) PodEvent(*v1.Pod, podevents.Event) { c.events++ }
func (c *countingObserver) PodStep(*v1.Pod, podevents.Step)   { c.steps++ }
func (c *countingObserver) PodStatus(*v1.Pod)                 { c.statuses++ }

// The engine's part of TestObservers_FanOut (agent/podevents): the
// observers added to an agent are each told.
func TestAgent_AddObserver(t *testing.T) {
	a, b := &countingObserver{}, &countingObserver{}
	pod := &v1.Pod{}
	ag := New(Config{RootDir: t.TempDir(), PodLogDir: t.TempDir(), ResolvConf: "/nonexistent", Network: testNetwork(t), HostIPs: []string{"192.0.2.1"}}, Deps{})
	ag.AddObserver(a)
	ag.AddObserver(b)
	ag.observer.PodStatus(pod)
	require.Equal(t, 1, a.statuses)
	require.Equal(t, 1, b.statuses)
}
