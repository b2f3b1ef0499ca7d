package node

import (
	"testing"

	"github.com/stretchr/testify/assert"

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
