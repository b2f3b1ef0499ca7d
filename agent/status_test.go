package agent

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
)

// A new pod's Pending status, with the kubelet's conditions, is published
// before its sandbox and image pulls: a pull of minutes must not leave the
// API server without a Ready condition (a ClusterTrustBundle
// [Conformance] spec reads ContainersNotReady within 10 s while the node
// still pulls). The failing pull makes the second status; the first must
// come before it.
func TestAgent_PendingStatusBeforeSandboxAndPull(t *testing.T) {
	h := newHarness(t)
	h.fake.FailPull("reg.local/slow:1", assert.AnError)
	pod := testPod(t, `
apiVersion: v1
kind: Pod
metadata: {name: slow}
spec:
  containers: [{name: app, image: reg.local/slow:1}]
`)
	h.agent.SetPods([]*v1.Pod{pod})
	h.rec.waitStatus(t, "ErrImagePull", func(p *v1.Pod) bool {
		w := p.Status.ContainerStatuses[0].State.Waiting
		return w != nil && w.Reason == "ErrImagePull"
	})
	h.rec.mu.Lock()
	first := h.rec.statuses[0].DeepCopy()
	h.rec.mu.Unlock()
	require.Len(t, first.Status.ContainerStatuses, 1)
	w := first.Status.ContainerStatuses[0].State.Waiting
	require.NotNil(t, w)
	assert.Equal(t, "ContainerCreating", w.Reason, "the first status is published before the pull")
	assert.Equal(t, v1.PodPending, first.Status.Phase)
	var ready *v1.PodCondition
	for i := range first.Status.Conditions {
		if first.Status.Conditions[i].Type == v1.PodReady {
			ready = &first.Status.Conditions[i]
		}
	}
	require.NotNil(t, ready, "the first status has the Ready condition")
	assert.Equal(t, v1.ConditionFalse, ready.Status)
	assert.Equal(t, "ContainersNotReady", ready.Reason)
	assert.Equal(t, "containers with unready status: [app]", ready.Message)
}

// PodReadyToStartContainers follows the sandbox the engine observed
// (podstatus.Conditions gets it as a bool since issue #30): False in the
// status published before the sandbox exists, True once the pod runs in
// a ready sandbox with its IP.
func TestAgent_ReadyToStartContainersFollowsTheSandbox(t *testing.T) {
	h := newHarness(t)
	pod := testPod(t, `
apiVersion: v1
kind: Pod
metadata: {name: sandboxcond}
spec:
  containers: [{name: app, image: busybox}]
`)
	cond := func(p *v1.Pod) v1.ConditionStatus {
		for _, c := range p.Status.Conditions {
			if c.Type == v1.PodReadyToStartContainers {
				return c.Status
			}
		}
		return ""
	}
	h.agent.SetPods([]*v1.Pod{pod})
	running := h.rec.waitStatus(t, "Running", func(p *v1.Pod) bool { return p.Status.Phase == v1.PodRunning })
	assert.Equal(t, v1.ConditionTrue, cond(running), "running in a ready sandbox")
	h.rec.mu.Lock()
	first := h.rec.statuses[0].DeepCopy()
	h.rec.mu.Unlock()
	assert.Equal(t, v1.ConditionFalse, cond(first), "published before the sandbox")
}
