package agent

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/minikubelet/minikubelet/agent/podspec"
	"github.com/minikubelet/minikubelet/agent/source"
)

// A sandbox containerd finishes creating after its pod's teardown listed it
// (the RunPodSandbox of a daemon killed mid-start) has no worker and no
// source wants it. Once the daemon has collected its orphans, the relist
// tears it down, as the kubelet's housekeeping kills orphaned running
// pods. Before the collection such a pod may still be wanted; a NOTREADY
// sandbox is container GC's; another minikubelet's is left alone.
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
	assert.Equal(t, map[string]bool{late: true, stopped: true, foreign: true}, left(), "before the orphans were collected, every pod may be wanted")
	assert.False(t, h.agent.hasWorker("uid-late"))

	open()
	_, err = r.relist(ctx)
	require.NoError(t, err)
	require.Eventually(t, func() bool { return !left()[late] }, 10*time.Second, time.Millisecond, "the running sandbox no source wants is removed")
	require.Eventually(t, func() bool { return !h.agent.hasWorker("uid-late") && !h.agent.hasWorker("uid-stopped") }, 10*time.Second, time.Millisecond, "its teardown ends")
	assert.Equal(t, map[string]bool{stopped: true, foreign: true}, left(), "the NOTREADY one (container GC's) and another agent's stay")
	calls := h.fake.Calls()
	require.Contains(t, calls, "StopPodSandbox late", "stopped: CNI DEL releases its IP")
	assert.Less(t, slices.Index(calls, "StopPodSandbox late"), slices.Index(calls, "RemovePodSandbox late"), "stopped before it is removed")
	assert.NotContains(t, calls, "StopPodSandbox foreign")
}

// A pod that ran, then was refused admission when the daemon restarted
// (here its spec.os; in life memory pressure, a device plugin not yet
// back): the kubelet's cleanup kills the running pods of terminal ones,
// and so does the relist once the orphans were collected. The rejection
// stays the pod's status: the teardown publishes none of its own, is not
// what FindPod shows, and the pod sent again meanwhile is not started
// after it (a rejected pod never runs without admission).
func TestRelist_KillsWhatARejectedPodLeftRunning(t *testing.T) {
	h := newHarness(t)
	open := h.agent.gateOrphans()
	ctx := context.Background()
	pod := leftRunning(t, h, "rejected")
	var err error
	h.agent.SetPods([]*v1.Pod{pod})
	rejected := func(p *v1.Pod) bool { return p.Status.Phase == v1.PodFailed && p.Status.Reason == "PodOSNotSupported" }
	got, ok := h.agent.GetPod(pod.UID)
	require.True(t, ok)
	require.True(t, rejected(got), "rejected at admission: %+v", got.Status)

	var during []string
	h.fake.OnCall("StopPodSandbox", func(context.Context) {
		h.agent.SetPods([]*v1.Pod{pod}) // sent again while it is torn down
		h.agent.mu.Lock()
		_, queued := h.agent.restartAfterTeardown[pod.UID]
		h.agent.mu.Unlock()
		if queued {
			during = append(during, "queued to start after the teardown")
		}
		if w, rp := h.agent.findPod(pod.Namespace, pod.Name); w != nil || rp == nil || !rejected(rp) {
			during = append(during, "FindPod does not show the rejection")
		}
		if l := h.agent.listPods(); len(l) != 1 || !rejected(l[0]) {
			during = append(during, fmt.Sprintf("the pods listed are not the rejection alone: %d", len(l)))
		}
		h.agent.mu.Lock()
		if w := h.agent.workers[pod.UID]; w == nil || w.pod().Annotations[source.AnnotationConfigSource] != sourceCluster {
			during = append(during, "the teardown does not carry the pod's source (where its events go)")
		}
		h.agent.mu.Unlock()
	})
	r := newRelister(h.agent)
	open()
	_, err = r.relist(ctx)
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		sbs, err := h.fake.Runtime.ListPodSandbox(ctx, nil)
		return err == nil && len(sbs) == 0 && !h.agent.hasWorker(pod.UID)
	}, 10*time.Second, time.Millisecond, "what the rejected pod left is stopped and removed")
	h.fake.OnCall("StopPodSandbox", nil)
	assert.Contains(t, h.fake.Calls(), "StopPodSandbox rejected", "stopped: CNI DEL releases its IP")
	assert.Empty(t, during)
	got, ok = h.agent.GetPod(pod.UID)
	require.True(t, ok)
	assert.True(t, rejected(got), "the rejection is still the pod's status: %+v", got.Status)
	h.rec.mu.Lock()
	for _, st := range h.rec.statuses {
		assert.True(t, rejected(st), "a status other than the rejection was published: %+v", st.Status)
	}
	h.rec.mu.Unlock()
	_, err = r.relist(ctx)
	require.NoError(t, err)
	assert.False(t, h.agent.hasWorker(pod.UID), "nothing more to tear down")
}

// A pod wanted again while what a previous run left of it is torn down
// (its source answered after the orphans were collected, or the file of a
// static pod came back) starts after that teardown only if admission lets
// it: this run never admitted it. Here it is refused (its spec.os).
func TestOrphanTeardown_AdmitsThePodWantedAgain(t *testing.T) {
	h := newHarness(t)
	open := h.agent.gateOrphans()
	ctx := context.Background()
	pod := leftRunning(t, h, "back")
	var err error
	h.fake.OnCall("StopPodSandbox", func(context.Context) { h.agent.SetPods([]*v1.Pod{pod}) })
	open()
	_, err = newRelister(h.agent).relist(ctx)
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		got, ok := h.agent.GetPod(pod.UID)
		return ok && got.Status.Phase == v1.PodFailed && !h.agent.hasWorker(pod.UID)
	}, 10*time.Second, time.Millisecond, "after the teardown the pod wanted again is refused, not started")
	h.fake.OnCall("StopPodSandbox", nil)
	got, _ := h.agent.GetPod(pod.UID)
	assert.Equal(t, "PodOSNotSupported", got.Status.Reason)
	assert.Equal(t, 1, strings.Count(strings.Join(h.fake.Calls(), "\n"), "RunPodSandbox"), "no sandbox after the teardown: %v", h.fake.Calls())
}

// leftRunning makes a windows pod (admission refuses it) and a READY
// sandbox of it, of this agent's, as a previous run left it.
func leftRunning(t *testing.T, h *harness, name string) *v1.Pod {
	t.Helper()
	pod := clusterPod(t, name, "uid-"+name)
	pod.Spec.OS = &v1.PodOS{Name: v1.Windows}
	_, err := h.fake.Runtime.RunPodSandbox(context.Background(), &runtimeapi.PodSandboxConfig{
		Metadata: &runtimeapi.PodSandboxMetadata{Name: pod.Name, Namespace: pod.Namespace, Uid: string(pod.UID)},
		Labels: map[string]string{podspec.LabelManagedBy: podspec.ManagedByValue, podspec.LabelPodUID: string(pod.UID),
			podspec.LabelPodName: pod.Name, podspec.LabelPodNamespace: pod.Namespace, podspec.LabelAgent: h.agent.agentID()},
	}, "")
	require.NoError(t, err)
	return pod
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
