package agent

// The engine's side of agent identity (issue #30): several minikubelets
// may share one container runtime and one root dir, so the engine labels
// its objects and marks its pod dirs with its own ID and takes only its
// own. The identities, whose an object or a pod dir is, and why, are
// agent/node's (identity.go).

import (
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/minikubelet/minikubelet/agent/node"
)

// ownsObject reports whether a sandbox or container, by its labels, was
// created by this agent (node.OwnsObject).
func (a *Agent) ownsObject(labels map[string]string) bool {
	return node.OwnsObject(a.agentID(), labels)
}

// agentID is Config.AgentID, the daemon's by default (node.AgentID).
func (a *Agent) agentID() string { return node.AgentID(a.cfg.AgentID, a.cfg.RootDir) }

// foreignPods counts, by owner, the pods (distinct UIDs) of sbs that
// belong to another minikubelet (node.ForeignPods).
func (a *Agent) foreignPods(sbs []*runtimeapi.PodSandbox) map[string]int {
	labels := make([]map[string]string, len(sbs))
	for i, sb := range sbs {
		labels[i] = sb.Labels
	}
	return node.ForeignPods(a.agentID(), labels)
}

// markPodDir records this agent as the maker of the pod's directory
// (node.MarkPodDir).
func (a *Agent) markPodDir(pod *v1.Pod) error { return node.MarkPodDir(a.podDir(pod), a.agentID()) }

// foreignPodDir reports whether the pod directory of uid names another
// agent as its maker (node.ForeignPodDir).
func (a *Agent) foreignPodDir(uid types.UID) bool {
	return node.ForeignPodDir(a.podDir(&v1.Pod{ObjectMeta: metav1.ObjectMeta{UID: uid}}), a.agentID())
}
