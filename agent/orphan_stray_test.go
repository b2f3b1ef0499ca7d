package agent

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/minikubelet/minikubelet/agent/podspec"
)

// A sandbox containerd finishes creating after its pod's teardown listed it
// (the RunPodSandbox of a daemon killed mid-start) has no worker and no
// source wants it. Once the daemon has collected its orphans, the relist
// tears it down, as the kubelet's housekeeping kills orphaned running
// pods. Before the collection such a pod may still be wanted; a NOTREADY
// sandbox is container GC's; another minikubelet's is left alone, and so
// is one of a pod admission rejected (as before the relist did this).
func TestRelist_TearsDownARunningSandboxNoSourceWants(t *testing.T) {
	h := newHarness(t)
	open := h.agent.gateOrphans()
	ctx := context.Background()
	sandbox := func(name, agent string) string {
		t.Helper()
		uid := "uid-" + name
		id, err := h.fake.Runtime.RunPodSandbox(ctx, &runtimeapi.PodSandboxConfig{
			Metadata: &runtimeapi.PodSandboxMetadata{Name: name, Namespace: "default", Uid: uid},
			Labels: map[string]string{podspec.LabelManagedBy: podspec.ManagedByValue, podspec.LabelPodUID: uid,
				podspec.LabelPodName: name, podspec.LabelPodNamespace: "default", podspec.LabelAgent: agent},
		}, "")
		require.NoError(t, err)
		return id
	}
	late := sandbox("late", h.agent.agentID())
	stopped := sandbox("stopped", h.agent.agentID())
	require.NoError(t, h.fake.Runtime.StopPodSandbox(ctx, stopped))
	foreign := sandbox("foreign", "another-agent")
	rejected := sandbox("rejected", h.agent.agentID())
	h.agent.mu.Lock()
	h.agent.rejected["uid-rejected"] = clusterPod(t, "rejected", "uid-rejected")
	h.agent.mu.Unlock()
	left := func() map[string]bool {
		sbs, err := h.fake.Runtime.ListPodSandbox(ctx, nil)
		require.NoError(t, err)
		ids := map[string]bool{}
		for _, sb := range sbs {
			ids[sb.Id] = true
		}
		return ids
	}

	r := newRelister(h.agent)
	_, err := r.relist(ctx)
	require.NoError(t, err)
	h.waitCallsSettle(t)
	assert.Equal(t, map[string]bool{late: true, stopped: true, foreign: true, rejected: true}, left(), "before the orphans were collected, every pod may be wanted")
	assert.False(t, h.agent.hasWorker("uid-late"))

	open()
	_, err = r.relist(ctx)
	require.NoError(t, err)
	require.Eventually(t, func() bool { return !left()[late] }, 10*time.Second, time.Millisecond, "the running sandbox no source wants is removed")
	require.Eventually(t, func() bool { return !h.agent.hasWorker("uid-late") && !h.agent.hasWorker("uid-stopped") }, 10*time.Second, time.Millisecond, "its teardown ends")
	assert.Equal(t, map[string]bool{stopped: true, foreign: true, rejected: true}, left(), "the NOTREADY one (container GC's), another agent's and the rejected pod's stay")
	calls := h.fake.Calls()
	require.Contains(t, calls, "StopPodSandbox late", "stopped: CNI DEL releases its IP")
	assert.Less(t, slices.Index(calls, "StopPodSandbox late"), slices.Index(calls, "RemovePodSandbox late"), "stopped before it is removed")
	assert.NotContains(t, calls, "StopPodSandbox foreign")
}

// relistCtx marks the relister's own runtime calls in
// TestRelist_LeavesThePodOfAWorkerThatEndedWhileItListed.
type relistCtx struct{}

// A pod deleted while the relist lists: its sandbox is READY in the
// sandbox list, and its worker has torn it down and ended by the time the
// relist looks for workers. That is no stray: no second teardown starts
// (in the daemon it would bring the deleted pod back into the API).
func TestRelist_LeavesThePodOfAWorkerThatEndedWhileItListed(t *testing.T) {
	h := newHarness(t)
	h.agent.gateOrphans()()
	pod := testPod(t, "apiVersion: v1\nkind: Pod\nmetadata:\n  name: gone\nspec:\n  terminationGracePeriodSeconds: 0\n  containers:\n  - name: c\n    image: busybox\n")
	h.agent.SetPods([]*v1.Pod{pod})
	require.Eventually(t, func() bool {
		got, ok := h.agent.GetPod(pod.UID)
		return ok && got.Status.Phase == v1.PodRunning
	}, 10*time.Second, time.Millisecond)
	ctx := context.Background()
	h.fake.OnCall("ListContainers", func(c context.Context) {
		if c.Value(relistCtx{}) == nil {
			return
		}
		h.agent.SetPods(nil)
		require.Eventually(t, func() bool { return !h.agent.hasWorker(pod.UID) }, 10*time.Second, time.Millisecond, "the deleted pod's teardown ends")
	})
	r := newRelister(h.agent)
	_, err := r.relist(context.WithValue(ctx, relistCtx{}, true))
	require.NoError(t, err)
	h.fake.OnCall("ListContainers", nil)
	assert.False(t, h.agent.hasWorker(pod.UID), "no teardown of a pod whose worker ended during the lists")
	sbs, err := h.fake.Runtime.ListPodSandbox(ctx, nil)
	require.NoError(t, err)
	assert.Empty(t, sbs, "its own teardown removed it")
	_, err = r.relist(ctx)
	require.NoError(t, err)
	assert.False(t, h.agent.hasWorker(pod.UID), "nor at the next relist")
}
