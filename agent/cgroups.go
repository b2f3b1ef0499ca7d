package agent

import (
	"context"
	"fmt"
	"os"

	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/minikubelet/minikubelet/agent/node"
	"github.com/minikubelet/minikubelet/agent/podcgroup"
)

// Sandbox annotations that carry what the QoS tiers are computed from, so
// the runtime stays the source of truth: any agent (a restarted one, or one
// of several foreground `run`s) sums them from a single ListPodSandbox.

// podCgroups is the pod and QoS-tier cgroups (agent/podcgroup) over the
// agent's driver and config, built per use: tests swap both after New.
func (a *Agent) podCgroups() podcgroup.Manager {
	return podcgroup.Manager{Cgroups: a.cgroups, Allocatable: a.cfg.Node.Allocatable, NodePidsLimit: a.cfg.NodePidsLimit,
		PodPidsLimit: a.cfg.PodPidsLimit, Burstable: &a.burstableTier, Logger: a.logger}
}

// EnsureNodeCgroups creates the kubepods hierarchy with the node's
// allocatable CPU and memory (podcgroup.Manager.EnsureNode), then sets the
// burstable tier's shares from the runtime's sandboxes. It returns the
// kubepods path ("" without a cgroup manager) and, from the same list, one
// sentence per other minikubelet owning pods there (node.ForeignPodNotices):
// `run` prints them at start, the daemon logs them at orphan collection.
// A failed list is logged: neither needs it to go on.
func (a *Agent) EnsureNodeCgroups() (path string, foreign []string, err error) {
	if path, err = a.podCgroups().EnsureNode(); err != nil {
		return path, nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), a.cfg.RuntimeTimeout)
	defer cancel()
	sbs, err := a.runtime.ListPodSandbox(ctx, &runtimeapi.PodSandboxFilter{LabelSelector: relistSelector()})
	if err != nil {
		a.logger.Warn("Listing sandboxes at start failed", "err", err)
		return path, nil, nil
	}
	if a.cgroups != nil {
		a.podCgroups().UpdateBurstableTier(podcgroup.BurstableMilli(sbs))
	}
	return path, node.ForeignPodNotices(a.foreignPods(sbs)), nil
}

// refreshBurstableTier recomputes the burstable tier from the runtime's
// sandboxes now (after a pod was created or torn down), not only at the
// next relist.
func (a *Agent) refreshBurstableTier(ctx context.Context) {
	if a.cgroups == nil {
		return
	}
	sbs, err := a.runtime.ListPodSandbox(ctx, &runtimeapi.PodSandboxFilter{LabelSelector: relistSelector()})
	if err != nil {
		a.logger.Warn("Listing sandboxes for the burstable QoS cgroup failed", "err", err)
		return
	}
	a.podCgroups().UpdateBurstableTier(podcgroup.BurstableMilli(sbs))
}

// ensurePodCgroup creates (or updates) the pod's pod<uid> cgroup under its
// QoS tier and returns what goes into the sandbox's CgroupParent.
func (a *Agent) ensurePodCgroup(pod *v1.Pod) (string, error) {
	if a.cgroups == nil {
		return "", nil
	}
	// The pod dir first, with this agent's ID in it: it marks the pod
	// cgroup as this agent's for orphan collection (collectOrphans), which
	// must not remove the empty pod cgroup of a pod another agent on the
	// machine is creating (with another root dir, or the same one).
	if err := os.MkdirAll(a.podDir(pod), 0o750); err != nil {
		return "", fmt.Errorf("create pod dir: %w", err)
	}
	if err := a.markPodDir(pod); err != nil {
		return "", err
	}
	return a.podCgroups().EnsurePod(pod)
}
