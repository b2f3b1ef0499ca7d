package agent

import (
	"context"
	"os"
	"testing"

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
