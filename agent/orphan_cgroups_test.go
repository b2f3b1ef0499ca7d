package agent

import (
	"context"
	"errors"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/minikubelet/minikubelet/cgroups"
	"github.com/minikubelet/minikubelet/cgroups/cgroupstest"
)

// Orphan collection removes the empty pod cgroups this agent made (its
// pod dir exists) of pods nobody wants, and leaves alone those of another
// agent on the machine (no pod dir here: that pod may be starting), those
// with processes, and those of desired pods.
func TestCollectOrphans_PodCgroups(t *testing.T) {
	h := newHarness(t)
	cg := cgroupstest.NewFake()
	h.agent.cgroups = cg
	pod := func(uid string) *v1.Pod { return &v1.Pod{ObjectMeta: metav1.ObjectMeta{UID: types.UID(uid)}} }
	name := func(uid string) cgroups.Name { return podCgroupName(pod(uid), v1.PodQOSBestEffort) }
	for _, uid := range []string{"ours-orphan", "ours-busy", "ours-desired", "foreign"} {
		require.NoError(t, cg.Ensure(name(uid), cgroups.Resources{}))
		if uid != "foreign" {
			require.NoError(t, os.MkdirAll(h.agent.podDir(pod(uid)), 0o750))
		}
	}
	cg.SetPids(name("ours-busy"), 42)

	require.NoError(t, h.agent.collectOrphans(context.Background(), map[types.UID]bool{"ours-desired": true}))

	assert.False(t, cg.Exists(name("ours-orphan")), "our empty orphan goes")
	assert.NoDirExists(t, h.agent.podDir(pod("ours-orphan")), "with its pod dir")
	for _, uid := range []string{"ours-busy", "ours-desired", "foreign"} {
		assert.True(t, cg.Exists(name(uid)), uid)
	}
}

// A teardown that could not remove the sandbox keeps the pod cgroup and,
// with it, the pod dir that marks the cgroup as this agent's: the next
// orphan collection removes both once the sandbox is gone, instead of
// leaving a cgroup nobody will ever claim.
func TestTeardownFailure_OrphanCgroupCollectedLater(t *testing.T) {
	h := newHarness(t)
	cg := cgroupstest.NewFake()
	h.agent.cgroups = cg
	pod := testPod(t, twoContainers)
	h.agent.SetPods([]*v1.Pod{pod})
	h.rec.waitStatus(t, "Running", phaseIs(v1.PodRunning))
	name := podCgroupName(pod, podQOSClass(pod))
	require.True(t, cg.Exists(name), "the pod cgroup exists while it runs")

	done := h.agent.PodDone(pod.UID)
	require.NotNil(t, done)
	h.fake.InjectError("RemovePodSandbox", errors.New("runtime down"))
	h.agent.SetPods(nil)
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("teardown did not finish")
	}
	assert.True(t, cg.Exists(name), "a failed teardown keeps the cgroup (its sandbox may still hold processes)")
	assert.DirExists(t, h.agent.podDir(pod), "and the pod dir that marks it as ours")

	// The sandbox goes (the runtime came back; orphan collection removes
	// the leftover sandbox first), then the cgroup is collected.
	sbs, err := h.fake.Runtime.ListPodSandbox(context.Background(), nil)
	require.NoError(t, err)
	for _, sb := range sbs {
		require.NoError(t, h.fake.Runtime.RemovePodSandbox(context.Background(), sb.Id))
	}
	require.NoError(t, h.agent.collectOrphans(context.Background(), nil))
	assert.False(t, cg.Exists(name), "the orphan cgroup is collected")
	assert.NoDirExists(t, h.agent.podDir(pod), "with its pod dir")
}
