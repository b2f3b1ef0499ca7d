package agent

// Several minikubelets may share one container runtime: the daemon
// (`serve`) and foreground `run`s, or daemons with different root dirs.
// Every sandbox and container carries the creating agent's identity
// (labelAgent); orphan collection, relist (and the metrics it feeds) and
// log rotation take only this agent's own objects, and each agent reports
// what the others own instead of removing it.
//
// Objects from versions before the label (managed-by only) are the
// daemon's, as they always were: a `serve` adopts and collects them as
// before, a foreground run leaves them alone. Shared node state stays
// shared: the burstable QoS tier sums every minikubelet's pods, and IP
// leak repair and pod cgroup cleanup treat every sandbox on the runtime
// as live.
//
// Adoption of a wanted pod is by pod UID (state.go), not by agent: UIDs
// derive from a pod's source (the file path, api:<ns>/<name>, the API
// server's UID), so two agents want one UID only when given the same
// source, and then it is the same pod (a `run` of the same file again
// takes over what an earlier, killed `run` left).
//
// The identities (ServeAgentID, ForegroundAgentID), how they read and
// whose an object is by its labels are agent/node's (identity.go).

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/minikubelet/minikubelet/agent/node"
	"github.com/minikubelet/minikubelet/agent/safepath"
)

// ownsObject reports whether a sandbox or container, by its labels, was
// created by this agent (node.OwnsObject).
func (a *Agent) ownsObject(labels map[string]string) bool {
	return node.OwnsObject(a.agentID(), labels)
}

// agentID is Config.AgentID, the daemon's by default (an Agent built as a
// struct literal in tests has no defaults applied).
func (a *Agent) agentID() string {
	if a.cfg.AgentID == "" {
		return node.ServeAgentID(a.cfg.RootDir)
	}
	return a.cfg.AgentID
}

// foreignPods counts, by owner, the pods (distinct UIDs) of sbs that
// belong to another minikubelet (node.ForeignPods).
func (a *Agent) foreignPods(sbs []*runtimeapi.PodSandbox) map[string]int {
	labels := make([]map[string]string, len(sbs))
	for i, sb := range sbs {
		labels[i] = sb.Labels
	}
	return node.ForeignPods(a.agentID(), labels)
}

// ForeignPods lists the pods of other minikubelets on the runtime, one
// sentence per owner, for `run` to print at start (the daemon logs them
// at orphan collection).
func (a *Agent) ForeignPods(ctx context.Context) ([]string, error) {
	ctx, cancel := context.WithTimeout(ctx, a.cfg.RuntimeTimeout)
	defer cancel()
	sbs, err := a.runtime.ListPodSandbox(ctx, &runtimeapi.PodSandboxFilter{LabelSelector: map[string]string{labelManagedBy: managedByValue}})
	if err != nil {
		return nil, fmt.Errorf("list sandboxes: %w", err)
	}
	return node.ForeignPodNotices(a.foreignPods(sbs)), nil
}

// podDirOwnerFile is the file in a pod's directory that names the agent
// that made it. A foreground run and the daemon share the default root dir
// (/var/lib/minikubelet): a pod dir alone does not say whose pod it is,
// and another agent's pod is between its pod dir and its sandbox while it
// starts, which is when the daemon's orphan collection would take it for
// a pod that exists nowhere.
const podDirOwnerFile = "agent-id"

// markPodDir records this agent as the maker of the pod's directory
// (which exists). Two agents share a pod dir only when they run the same
// pod (same source, same UID); the last one to start it owns it.
func (a *Agent) markPodDir(pod *v1.Pod) error {
	path := filepath.Join(a.podDir(pod), podDirOwnerFile)
	id := a.agentID()
	if old, err := safepath.ReadFile(path, 256); err == nil && string(old) == id {
		return nil
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(id), 0o644); err != nil {
		return fmt.Errorf("mark pod dir: %w", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("mark pod dir: %w", err)
	}
	return nil
}

// foreignPodDir reports whether the pod directory of uid names another
// agent as its maker. A directory without the file (made before it
// existed, or without pod cgroups) is this agent's, as objects without an
// agent label are the daemon's.
func (a *Agent) foreignPodDir(uid types.UID) bool {
	p := &v1.Pod{ObjectMeta: metav1.ObjectMeta{UID: uid}}
	id, err := safepath.ReadFile(filepath.Join(a.podDir(p), podDirOwnerFile), 256)
	return err == nil && len(id) > 0 && string(id) != a.agentID()
}
