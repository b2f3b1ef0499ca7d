package agent

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
)

// A restarted agent adopting a running pod keeps its status.startTime and
// (for a pod no API server stamps: a manifest-dir pod) its
// creationTimestamp: the pod started when its sandbox was created, an
// hour before this process (issue #28: AGE 0s and Start Time the restart's
// time, while the container said it started long before).
func TestAgent_RestartKeepsPodStart(t *testing.T) {
	h := newHarness(t)
	pod := testPod(t, "apiVersion: v1\nkind: Pod\nmetadata: {name: web}\nspec:\n  containers: [{name: app, image: reg/app:1}]\n")
	h.agent.SetPods([]*v1.Pod{pod})
	var before *v1.Pod
	require.Eventually(t, func() bool {
		before, _ = h.agent.GetPod(pod.UID)
		return before != nil && before.Status.Phase == v1.PodRunning
	}, 10*time.Second, time.Millisecond, "the pod runs")
	require.NotNil(t, before.Status.StartTime)
	h.agent.stopWorkers() // the agent stops; its pods keep running

	h.clock.Step(time.Hour)
	a2 := New(h.agent.cfg, Deps{Runtime: h.fake.Runtime, Images: h.fake.Images, Clock: h.clock})
	t.Cleanup(a2.stopWorkers)
	a2.SetPods([]*v1.Pod{pod})
	var after *v1.Pod
	require.Eventually(t, func() bool {
		after, _ = a2.GetPod(pod.UID)
		return after != nil && after.Status.Phase == v1.PodRunning
	}, 10*time.Second, time.Millisecond, "the pod is adopted")
	assert.Equal(t, before.Status.StartTime.Unix(), after.Status.StartTime.Unix(), "status.startTime after the restart")
	assert.Equal(t, before.CreationTimestamp.Unix(), after.CreationTimestamp.Unix(), "creationTimestamp after the restart")
	assert.Equal(t, before.Status.ContainerStatuses[0].ContainerID, after.Status.ContainerStatuses[0].ContainerID, "adopted, not restarted")

	// A pod new to the runtime starts now.
	other := testPod(t, "apiVersion: v1\nkind: Pod\nmetadata: {name: other}\nspec:\n  containers: [{name: app, image: reg/app:1}]\n")
	a2.SetPods([]*v1.Pod{pod, other})
	require.Eventually(t, func() bool {
		p, _ := a2.GetPod(other.UID)
		return p != nil && p.Status.Phase == v1.PodRunning
	}, 10*time.Second, time.Millisecond, "the new pod runs")
	p, _ := a2.GetPod(other.UID)
	assert.Equal(t, h.clock.Now().Unix(), p.Status.StartTime.Unix())
}
