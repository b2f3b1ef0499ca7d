package agent

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/minikubelet/minikubelet/agent/podspec"
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
