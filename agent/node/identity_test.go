package node

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/minikubelet/minikubelet/agent/podspec"
)

// ForeignPods counts each other agent's pods once, however many sandboxes
// a pod has, and leaves out this agent's and objects minikubelet did not
// make. (The engine's TestOwnsObject checks OwnsObject through the agent.)
func TestForeignPods(t *testing.T) {
	self := ServeAgentID("/var/lib/minikubelet")
	run := ForegroundAgentID(7)
	sb := func(agent, uid string) map[string]string {
		l := map[string]string{podspec.LabelManagedBy: podspec.ManagedByValue, podspec.LabelPodUID: uid}
		if agent != "" {
			l[podspec.LabelAgent] = agent
		}
		return l
	}
	got := ForeignPods(self, []map[string]string{
		sb(self, "a"), sb("", "b"), // this daemon's, and an older version's
		sb(run, "c"), sb(run, "c"), sb(run, "d"), // a run's two pods, one of them twice
		{podspec.LabelAgent: run, podspec.LabelPodUID: "e"}, // not minikubelet's
	})
	assert.Equal(t, map[string]int{run: 2}, got)
	assert.Equal(t, map[string]int{"": 1, self: 1}, ForeignPods(run, []map[string]string{sb(self, "a"), sb("", "b"), sb(run, "c")}))
}

// The configured ID wins; without one, the agent is the daemon of its
// root dir.
func TestAgentID(t *testing.T) {
	assert.Equal(t, ServeAgentID("/var/lib/minikubelet"), AgentID("", "/var/lib/minikubelet"))
	assert.Equal(t, ForegroundAgentID(7), AgentID(ForegroundAgentID(7), "/var/lib/minikubelet"))
}

// A pod dir is foreign only when its owner file names another agent: an
// unmarked one is nobody else's, and the last agent to mark it owns it.
// (The engine's TestEnsurePodCgroup_MarksPodDir checks it through the
// agent.)
func TestMarkPodDir(t *testing.T) {
	dir := t.TempDir()
	serve, run := ServeAgentID(dir), ForegroundAgentID(7)
	assert.False(t, ForeignPodDir(dir, serve), "no owner file")
	require.NoError(t, MarkPodDir(dir, run))
	assert.True(t, ForeignPodDir(dir, serve))
	assert.False(t, ForeignPodDir(dir, run))
	require.NoError(t, MarkPodDir(dir, serve))
	id, err := os.ReadFile(filepath.Join(dir, PodDirOwnerFile))
	require.NoError(t, err)
	assert.Equal(t, serve, string(id))
	assert.True(t, ForeignPodDir(dir, run))
	assert.NoFileExists(t, filepath.Join(dir, PodDirOwnerFile+".tmp"))
}
