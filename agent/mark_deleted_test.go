package agent

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// marked is p with the API server's deletion mark and grace period.
func marked(h *harness, p *v1.Pod, grace int64) *v1.Pod {
	m := p.DeepCopy()
	now := metav1.NewTime(h.clock.Now())
	m.DeletionTimestamp, m.DeletionGracePeriodSeconds = &now, &grace
	return m
}

// statusCount is how many statuses the recorder has.
func (r *recorder) statusCount() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.statuses)
}

// waitDone waits for the channel PodDone returned.
func waitDone(t *testing.T, done <-chan struct{}, what string) {
	t.Helper()
	require.NotNil(t, done, "%s: PodDone has nothing to wait for", what)
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatalf("%s: the teardown did not finish", what)
	}
}

// A cluster pod first seen already marked deleted (created and deleted
// before its source delivered it: the kubelet's "deleted while pending"
// node-conformance spec) gets a worker that only tears down, as on the
// kubelet: nothing is created in the runtime, and its terminal phase
// (Failed, no reason) is published before PodDone's channel closes, which
// the node's final delete waits for. Otherwise the API server's pod, kept
// by a finalizer, would stay Pending. That happens once while the pod
// stays in the deleting list, and never for a pod whose own worker tore
// it down already.
func TestMarkDeleted_PodFirstSeenMarkedGetsItsTerminalPhase(t *testing.T) {
	h := newHarness(t)
	p := marked(h, clusterPod(t, "pending", "uid-pending"), 30)
	h.agent.MarkDeleted([]*v1.Pod{p})
	// Its worker ends by itself: it is terminating from the start, before
	// SetPods (which the daemon calls next) would tell it.
	waitDone(t, h.agent.PodDone(p.UID), "first seen marked")
	h.agent.SetPods(nil)
	n := h.rec.statusCount()
	require.NotZero(t, n, "no status published")
	h.rec.mu.Lock()
	last := h.rec.statuses[n-1]
	h.rec.mu.Unlock()
	assert.Equal(t, p.UID, last.UID)
	assert.Equal(t, v1.PodFailed, last.Status.Phase, "%+v", last.Status)
	assert.Empty(t, last.Status.Reason, "the spec waits for Failed with no reason")
	for _, c := range h.fake.Calls() {
		for _, create := range []string{"RunPodSandbox", "PullImage", "CreateContainer", "StartContainer"} {
			assert.False(t, strings.HasPrefix(c, create), "a pod first seen deleted created something: %s", c)
		}
	}

	// The same list again (a finalizer keeps the pod): no second worker.
	h.agent.MarkDeleted([]*v1.Pod{p})
	h.agent.SetPods(nil)
	assert.False(t, h.agent.hasWorker(p.UID), "a second teardown started")
	assert.Equal(t, n, h.rec.statusCount(), "the terminal phase was published again")

	// A pod that ran and whose own worker tore it down: seen in the
	// deleting list afterwards, nothing starts again.
	q := clusterPod(t, "ran", "uid-ran")
	h.agent.SetPods([]*v1.Pod{q})
	h.rec.waitStatus(t, "ran Running", func(s *v1.Pod) bool { return s.UID == q.UID && s.Status.Phase == v1.PodRunning })
	mq := marked(h, q, 0)
	h.agent.MarkDeleted([]*v1.Pod{p, mq})
	h.agent.SetPods(nil)
	waitDone(t, h.agent.PodDone(q.UID), "ran")
	sandboxes := slices.DeleteFunc(h.fake.Calls(), func(c string) bool { return !strings.HasPrefix(c, "RunPodSandbox") })
	n = h.rec.statusCount()
	h.agent.MarkDeleted([]*v1.Pod{p, mq})
	h.agent.SetPods(nil)
	assert.False(t, h.agent.hasWorker(q.UID), "a second teardown of a pod torn down already")
	assert.False(t, h.agent.hasWorker(p.UID))
	assert.Equal(t, n, h.rec.statusCount(), "a status was published again")
	assert.Len(t, sandboxes, 1, "one sandbox, the running pod's")
}
