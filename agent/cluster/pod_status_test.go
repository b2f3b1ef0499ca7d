package cluster

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	clocktesting "k8s.io/utils/clock/testing"
)

// statusHarness is a StatusWriter against a fake clientset holding the
// pod "web", driven step by step (sendDue) with a fake clock.
type statusHarness struct {
	client *fake.Clientset
	clock  *clocktesting.FakeClock
	w      *StatusWriter
	pod    *v1.Pod // the agent's copy
}

func newStatusHarness(t *testing.T) *statusHarness {
	t.Helper()
	server := nodePod("web", "node-a")
	server.Status.Conditions = []v1.PodCondition{{Type: v1.PodScheduled, Status: v1.ConditionTrue}}
	h := &statusHarness{client: fake.NewClientset(server), clock: clocktesting.NewFakeClock(t0)}
	h.w = NewStatusWriter(fromClientset(h.client), nil, h.clock)
	p, err := PreparePod(server, "node-a")
	require.NoError(t, err)
	h.pod = p
	return h
}

// report hands the agent's pod with phase and ready to the writer.
func (h *statusHarness) report(phase v1.PodPhase, ready bool) {
	p := h.pod.DeepCopy()
	st := v1.ConditionFalse
	if ready {
		st = v1.ConditionTrue
	}
	p.Status = v1.PodStatus{Phase: phase, PodIP: "10.89.0.7", Conditions: []v1.PodCondition{{Type: v1.PodReady, Status: st}},
		ContainerStatuses: []v1.ContainerStatus{{Name: "c", Ready: ready, Image: "busybox"}}}
	h.w.PodStatus(p)
}

func (h *statusHarness) patches() (out []map[string]any) {
	for _, a := range h.client.Actions() {
		if pa, ok := a.(k8stesting.PatchAction); ok && a.GetResource().Resource == "pods" && a.GetSubresource() == "status" {
			var m map[string]any
			if json.Unmarshal(pa.GetPatch(), &m) == nil {
				out = append(out, m)
			}
		}
	}
	return out
}

func (h *statusHarness) server(t *testing.T) *v1.Pod {
	t.Helper()
	p, err := h.client.CoreV1().Pods("default").Get(context.Background(), "web", metav1.GetOptions{})
	require.NoError(t, err)
	return p
}

func TestStatusWriter_DebouncesPerPod(t *testing.T) {
	h := newStatusHarness(t)
	ctx := context.Background()

	// The first status goes out at once, with the UID precondition.
	h.report(v1.PodPending, false)
	require.Zero(t, h.w.sendDue(ctx))
	ps := h.patches()
	require.Len(t, ps, 1)
	require.Equal(t, map[string]any{"uid": string(h.pod.UID)}, ps[0]["metadata"])
	require.Equal(t, v1.PodPending, h.server(t).Status.Phase)

	// Three changes within the interval: nothing now, then only the last.
	h.clock.Step(100 * time.Millisecond)
	h.report(v1.PodRunning, false)
	h.report(v1.PodRunning, true)
	require.Equal(t, 900*time.Millisecond, h.w.sendDue(ctx), "due one interval after the last patch")
	require.Len(t, h.patches(), 1)
	h.clock.Step(900 * time.Millisecond)
	require.Zero(t, h.w.sendDue(ctx))
	require.Len(t, h.patches(), 2)
	got := h.server(t)
	require.Equal(t, v1.PodRunning, got.Status.Phase)
	require.Equal(t, "10.89.0.7", got.Status.PodIP)
	require.True(t, got.Status.ContainerStatuses[0].Ready)
	var types []v1.PodConditionType
	for _, c := range got.Status.Conditions {
		types = append(types, c.Type)
	}
	require.ElementsMatch(t, []v1.PodConditionType{v1.PodScheduled, v1.PodReady}, types, "the scheduler's condition stays")

	// The same status again: nothing to send.
	h.clock.Step(time.Hour)
	h.report(v1.PodRunning, true)
	require.Zero(t, h.w.sendDue(ctx))
	require.Len(t, h.patches(), 2)
	require.Equal(t, 2, h.w.LoopStatus().Successes)
}

func TestStatusWriter_OnlyClusterPods(t *testing.T) {
	h := newStatusHarness(t)
	h.pod.Annotations[annotationConfigSource] = "file"
	h.report(v1.PodRunning, true)
	require.Zero(t, h.w.sendDue(context.Background()))
	require.Empty(t, h.patches())
}

func TestStatusWriter_Failures(t *testing.T) {
	t.Run("the API server fails: retried after the interval", func(t *testing.T) {
		h := newStatusHarness(t)
		fail := true
		h.client.PrependReactor("patch", "pods", func(k8stesting.Action) (bool, runtime.Object, error) {
			if fail {
				return true, nil, apierrors.NewServiceUnavailable("etcd down")
			}
			return false, nil, nil
		})
		h.report(v1.PodRunning, true)
		require.Equal(t, DefaultStatusMinInterval, h.w.sendDue(context.Background()))
		require.Equal(t, 1, h.w.LoopStatus().ConsecutiveFailures)
		require.Contains(t, h.w.LoopStatus().LastError, "patch status of pod default/web: etcd down")
		fail = false
		h.clock.Step(DefaultStatusMinInterval)
		require.Zero(t, h.w.sendDue(context.Background()))
		require.Equal(t, v1.PodRunning, h.server(t).Status.Phase)
	})
	t.Run("the pod is gone: dropped", func(t *testing.T) {
		h := newStatusHarness(t)
		require.NoError(t, h.client.CoreV1().Pods("default").Delete(context.Background(), "web", metav1.DeleteOptions{}))
		h.report(v1.PodRunning, true)
		require.Zero(t, h.w.sendDue(context.Background()))
		h.clock.Step(time.Minute)
		require.Zero(t, h.w.sendDue(context.Background()))
		require.Len(t, h.patches(), 1, "no retry for a deleted pod")
		require.Empty(t, h.w.pods)
	})
}

// TestStatusWriter_Run drives Run: a status reported while it waits is
// sent without delay.
func TestStatusWriter_Run(t *testing.T) {
	h := newStatusHarness(t)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		h.w.Run(ctx)
	}()
	h.report(v1.PodRunning, true)
	require.Eventually(t, func() bool { return len(h.patches()) == 1 }, 10*time.Second, time.Millisecond)
	// Two more within the interval: sent once the fake clock passes it.
	h.report(v1.PodRunning, false)
	require.Eventually(t, func() bool { return h.clock.HasWaiters() }, 10*time.Second, time.Millisecond)
	h.clock.Step(DefaultStatusMinInterval)
	require.Eventually(t, func() bool { return len(h.patches()) == 2 }, 10*time.Second, time.Millisecond)
	require.False(t, h.server(t).Status.ContainerStatuses[0].Ready)
	cancel()
	<-done
}
