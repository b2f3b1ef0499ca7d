package agent

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/minikubelet/minikubelet/agent/node"
	"github.com/minikubelet/minikubelet/agent/podcgroup"
	"github.com/minikubelet/minikubelet/agent/podspec"
	"github.com/minikubelet/minikubelet/cgroups"
	"github.com/minikubelet/minikubelet/cgroups/cgroupstest"
)

// Orphan collection removes the empty pod cgroups this agent made (its
// pod dir exists, unmarked or marked with its ID) of pods nobody wants,
// and leaves alone those of another agent on the machine (no pod dir
// here, or one a foreground run sharing the root dir marked: that pod may
// be starting, its sandbox not made yet), those with processes, and those
// of desired pods.
func TestCollectOrphans_PodCgroups(t *testing.T) {
	h := newHarness(t)
	cg := cgroupstest.NewFake()
	h.agent.cgroups = cg
	pod := func(uid string) *v1.Pod { return &v1.Pod{ObjectMeta: metav1.ObjectMeta{UID: types.UID(uid)}} }
	name := func(uid string) cgroups.Name { return podcgroup.Name(pod(uid), v1.PodQOSBestEffort) }
	for _, uid := range []string{"ours-orphan", "ours-marked", "ours-busy", "ours-desired", "foreign", "run-starting"} {
		require.NoError(t, cg.Ensure(name(uid), cgroups.Resources{}))
		if uid != "foreign" {
			require.NoError(t, os.MkdirAll(h.agent.podDir(pod(uid)), 0o750))
		}
	}
	require.NoError(t, h.agent.markPodDir(pod("ours-marked")))
	run := New(Config{RootDir: h.agent.cfg.RootDir, PodLogDir: h.agent.cfg.PodLogDir, ResolvConf: "/nonexistent",
		Network: h.agent.cfg.Network, HostIPs: h.agent.cfg.HostIPs, AgentID: node.ForegroundAgentID(4242)}, Deps{})
	require.NoError(t, run.markPodDir(pod("run-starting")))
	// What the stale subPath cleanup would take: the run's pins.
	runPins := filepath.Join(h.agent.podDir(pod("run-starting")), "volume-subpaths", "v", "c")
	require.NoError(t, os.MkdirAll(runPins, 0o750))
	cg.SetPids(name("ours-busy"), 42)

	require.NoError(t, h.agent.collectOrphans(context.Background(), map[types.UID]bool{"ours-desired": true}))

	for _, uid := range []string{"ours-orphan", "ours-marked"} {
		assert.False(t, cg.Exists(name(uid)), "our empty orphan %s goes", uid)
		assert.NoDirExists(t, h.agent.podDir(pod(uid)), "with its pod dir")
	}
	for _, uid := range []string{"ours-busy", "ours-desired", "foreign", "run-starting"} {
		assert.True(t, cg.Exists(name(uid)), uid)
	}
	assert.FileExists(t, filepath.Join(h.agent.podDir(pod("run-starting")), node.PodDirOwnerFile), "the run's pod dir stays")
	assert.DirExists(t, runPins, "and its subPath pins")
}

// The pod cgroup's creation marks the pod dir with the agent's ID.
func TestEnsurePodCgroup_MarksPodDir(t *testing.T) {
	h := newHarness(t)
	h.agent.cgroups = cgroupstest.NewFake()
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{UID: "u1"}}
	_, err := h.agent.ensurePodCgroup(pod)
	require.NoError(t, err)
	id, err := os.ReadFile(filepath.Join(h.agent.podDir(pod), node.PodDirOwnerFile))
	require.NoError(t, err)
	assert.Equal(t, h.agent.agentID(), string(id))
	assert.False(t, h.agent.foreignPodDir(pod.UID))
	other := New(Config{RootDir: h.agent.cfg.RootDir, PodLogDir: h.agent.cfg.PodLogDir, ResolvConf: "/nonexistent",
		Network: h.agent.cfg.Network, HostIPs: h.agent.cfg.HostIPs, AgentID: node.ForegroundAgentID(7)}, Deps{})
	assert.True(t, other.foreignPodDir(pod.UID), "another agent on the same root dir")
	_, err = other.ensurePodCgroup(pod) // no cgroups: nothing marked
	require.NoError(t, err)
	other.cgroups = cgroupstest.NewFake()
	_, err = other.ensurePodCgroup(pod) // the same pod, started by the other agent
	require.NoError(t, err)
	assert.True(t, h.agent.foreignPodDir(pod.UID), "the last to start the pod owns its dir")
}

// A teardown that could not remove a container or the sandbox keeps the
// pod cgroup and, with it, the pod dir that marks the cgroup as this
// agent's, and tries again until everything is gone.
func TestTeardownFailure_RetriedUntilGone(t *testing.T) {
	h := newHarness(t)
	h.agent.cfg.PodSecurity = node.PodSecurityPrivileged // twoContainers has a hostPort, which baseline refuses
	cg := cgroupstest.NewFake()
	h.agent.cgroups = cg
	pod := testPod(t, twoContainers)
	h.agent.SetPods([]*v1.Pod{pod})
	h.rec.waitStatus(t, "Running", phaseIs(v1.PodRunning))
	name := podcgroup.Name(pod, podspec.QOSClass(pod))
	require.True(t, cg.Exists(name), "the pod cgroup exists while it runs")

	done := h.agent.PodDone(pod.UID)
	require.NotNil(t, done)
	h.fake.InjectError("RemoveContainer", errors.New("runtime down"))
	h.fake.InjectError("RemovePodSandbox", errors.New("runtime down"))
	h.agent.SetPods(nil)
	require.Eventually(t, func() bool {
		return slices.Contains(h.fake.Calls(), "RemovePodSandbox "+pod.Name)
	}, 10*time.Second, time.Millisecond, "the teardown tried to remove the sandbox")
	assert.True(t, cg.Exists(name), "a failed teardown keeps the cgroup (its sandbox may still hold processes)")
	assert.DirExists(t, h.agent.podDir(pod), "and the pod dir that marks it as ours")
	select {
	case <-done:
		t.Fatal("the pod counted as gone after a failed teardown")
	default:
	}

	// The retry comes a second later (fake time): step until it happened,
	// whenever the worker armed its timer.
	retried := false
	for i := 0; i < 200 && !retried; i++ {
		select {
		case <-done:
			retried = true
		case <-time.After(20 * time.Millisecond):
			h.clock.Step(time.Second)
		}
	}
	require.True(t, retried, "the retried teardown did not finish")
	assert.False(t, cg.Exists(name), "the pod cgroup goes with the retry")
	assert.NoDirExists(t, h.agent.podDir(pod), "with its pod dir")
	sbs, err := h.fake.Runtime.ListPodSandbox(context.Background(), nil)
	require.NoError(t, err)
	assert.Empty(t, sbs)
}

// A container whose start containerd 2.x cut short keeps a task the CRI
// does not know about, and containerd refuses to remove it or its sandbox
// ("cannot delete running task") for good. The teardown deletes that task
// through containerd's task service and goes on, without waiting for a
// retry.
func TestTeardown_StuckTaskDeleted(t *testing.T) {
	h := newHarness(t)
	h.agent.cfg.PodSecurity = node.PodSecurityPrivileged // twoContainers has a hostPort, which baseline refuses
	pod := testPod(t, twoContainers)
	h.agent.SetPods([]*v1.Pod{pod})
	h.rec.waitStatus(t, "Running", phaseIs(v1.PodRunning))
	ctrs, err := h.fake.Runtime.ListContainers(context.Background(), nil)
	require.NoError(t, err)
	require.NotEmpty(t, ctrs)
	stuck := ctrs[0]
	h.fake.StickTask(stuck.Id)

	done := h.agent.PodDone(pod.UID)
	require.NotNil(t, done)
	h.agent.SetPods(nil)
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatalf("the pod was not torn down; calls: %v", h.fake.Calls())
	}
	calls := h.fake.Calls()
	name := stuck.GetMetadata().GetName()
	i := slices.Index(calls, "RemoveStuckTask "+name)
	require.GreaterOrEqual(t, i, 0, "the stuck task was deleted; calls: %v", calls)
	assert.Contains(t, calls[i+1:], "RemoveContainer "+name, "and the container removed after it")
	sbs, err := h.fake.Runtime.ListPodSandbox(context.Background(), nil)
	require.NoError(t, err)
	assert.Empty(t, sbs, "the sandbox is gone too")
	var m dto.Metric
	require.NoError(t, h.agent.metrics.StuckTasksRemoved.Write(&m))
	assert.Equal(t, 1.0, m.GetCounter().GetValue(), "minikubelet_runtime_stuck_tasks_removed_total")
}
