package agent

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
)

// A running pod whose activeDeadlineSeconds is set by an update fails with
// the kubelet's reason, message and event once the deadline passes; its
// container is killed and, although its restartPolicy is Always, never
// started again (conformance: "Pods should allow activeDeadlineSeconds to
// be updated").
func TestAgent_ActiveDeadlineUpdated(t *testing.T) {
	h := newHarness(t)
	pod := testPod(t, `
apiVersion: v1
kind: Pod
metadata: {name: deadline}
spec:
  terminationGracePeriodSeconds: 1
  containers: [{name: app, image: reg.local/x:1}]
`)
	h.agent.SetPods([]*v1.Pod{pod})
	h.rec.waitStatus(t, "Running", phaseIs(v1.PodRunning))
	// Well past a deadline that did not exist: it counts from the start.
	h.clock.Step(10 * time.Second)
	h.waitCallsSettle(t)
	creates := countCall(h.fake.Calls(), "CreateContainer")
	require.Equal(t, 1, creates)

	updated := pod.DeepCopy()
	updated.Spec.ActiveDeadlineSeconds = ptr.To[int64](30)
	h.agent.SetPods([]*v1.Pod{updated})
	took := h.stepUntil(t, "Failed DeadlineExceeded", time.Minute, func(p *v1.Pod) bool {
		return p.Status.Phase == v1.PodFailed && p.Status.Reason == "DeadlineExceeded"
	})
	assert.InDelta(t, 20*time.Second, took, float64(2*time.Second), "due 30s after the start, woken by the deadline itself")
	got, ok := h.agent.GetPod(pod.UID)
	require.True(t, ok)
	assert.Equal(t, "Pod was active on the node longer than the specified deadline", got.Status.Message)
	assert.Contains(t, h.rec.reasons(), "DeadlineExceeded")
	h.stepUntil(t, "the container killed", time.Minute, func(p *v1.Pod) bool {
		return len(p.Status.ContainerStatuses) == 1 && p.Status.ContainerStatuses[0].State.Terminated != nil
	})
	h.clock.Step(time.Minute)
	h.waitCallsSettle(t)
	assert.Equal(t, creates, countCall(h.fake.Calls(), "CreateContainer"), "a failed pod is never restarted")
	got, _ = h.agent.GetPod(pod.UID)
	assert.Equal(t, v1.PodFailed, got.Status.Phase, "Failed stays")
}

// countCall counts verb in a call log.
func countCall(calls []string, verb string) int {
	n := 0
	for _, c := range calls {
		if c == verb || strings.HasPrefix(c, verb+" ") {
			n++
		}
	}
	return n
}
