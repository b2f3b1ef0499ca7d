package node

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
// This file holds the identities, how they read, whose an object is by
// its labels and whose a pod directory is by its owner file; the engine
// (package agent, agent_identity.go) labels its objects and marks its pod
// directories with its own, and asks the runtime for the labels.

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/minikubelet/minikubelet/agent/podspec"
	"github.com/minikubelet/minikubelet/agent/safepath"
)

// Prefixes of agent IDs.
const (
	agentIDServe = "serve-"
	agentIDRun   = "run-"
)

// ServeAgentID is the identity of the daemon with root dir rootDir:
// "serve-" and a hash of the clean path, so a restarted daemon is the same
// agent and two daemons with different root dirs are not.
func ServeAgentID(rootDir string) string {
	sum := sha256.Sum256([]byte(filepath.Clean(rootDir)))
	return agentIDServe + hex.EncodeToString(sum[:6])
}

// AgentID is the agent's identity: the configured one, or by default the
// daemon's with root dir rootDir (an engine built as a struct literal in
// tests has no defaults applied).
func AgentID(configured, rootDir string) string {
	if configured == "" {
		return ServeAgentID(rootDir)
	}
	return configured
}

// ForegroundAgentID is the identity of a foreground `minikubelet run`
// with process ID pid.
func ForegroundAgentID(pid int) string {
	return agentIDRun + strconv.Itoa(pid)
}

// IsServeAgentID reports whether id is a daemon's (serve) identity.
func IsServeAgentID(id string) bool { return strings.HasPrefix(id, agentIDServe) }

// DescribeAgent names the owner of objects labelled with agent ID id.
func DescribeAgent(id string) string {
	switch {
	case id == "":
		return "an older minikubelet daemon, no agent label"
	case strings.HasPrefix(id, agentIDRun):
		return "foreground run, pid " + strings.TrimPrefix(id, agentIDRun)
	case strings.HasPrefix(id, agentIDServe):
		return "minikubelet serve " + id
	}
	return id
}

// ForeignPodNotices are one sentence per other minikubelet with pods on
// the runtime, in a stable order.
func ForeignPodNotices(byOwner map[string]int) []string {
	var out []string
	for _, id := range slices.Sorted(maps.Keys(byOwner)) {
		n := byOwner[id]
		what := "pods on this runtime belong"
		if n == 1 {
			what = "pod on this runtime belongs"
		}
		out = append(out, fmt.Sprintf("%d %s to another minikubelet (%s): left alone", n, what, DescribeAgent(id)))
	}
	return out
}

// OwnsObject reports whether a sandbox or container, by its labels, was
// created by the agent with ID self; objects without an agent label (older
// versions) are the daemon's.
func OwnsObject(self string, labels map[string]string) bool {
	if labels[podspec.LabelManagedBy] != podspec.ManagedByValue {
		return false
	}
	id := labels[podspec.LabelAgent]
	if id == "" {
		return IsServeAgentID(self)
	}
	return id == self
}

// ForeignPods counts, by owner, the pods (distinct UIDs) of the sandboxes
// with labels sandboxLabels that belong to another minikubelet than self.
func ForeignPods(self string, sandboxLabels []map[string]string) map[string]int {
	seen := map[string]bool{}
	byOwner := map[string]int{}
	for _, labels := range sandboxLabels {
		if labels[podspec.LabelManagedBy] != podspec.ManagedByValue || OwnsObject(self, labels) {
			continue
		}
		uid := labels[podspec.LabelPodUID]
		if seen[uid] {
			continue
		}
		seen[uid] = true
		byOwner[labels[podspec.LabelAgent]]++
	}
	return byOwner
}

// PodDirOwnerFile is the file in a pod's directory that names the agent
// that made it. A foreground run and the daemon share the default root dir
// (/var/lib/minikubelet): a pod dir alone does not say whose pod it is,
// and another agent's pod is between its pod dir and its sandbox while it
// starts, which is when the daemon's orphan collection would take it for
// a pod that exists nowhere.
const PodDirOwnerFile = "agent-id"

// MarkPodDir records the agent with ID id as the maker of the pod
// directory podDir (which exists). Two agents share a pod dir only when
// they run the same pod (same source, same UID); the last one to start it
// owns it.
func MarkPodDir(podDir, id string) error {
	path := filepath.Join(podDir, PodDirOwnerFile)
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

// ForeignPodDir reports whether the pod directory podDir names another
// agent than self as its maker. A directory without the file (made before
// it existed, or without pod cgroups) is self's, as objects without an
// agent label are the daemon's.
func ForeignPodDir(podDir, self string) bool {
	id, err := safepath.ReadFile(filepath.Join(podDir, PodDirOwnerFile), 256)
	return err == nil && len(id) > 0 && string(id) != self
}
