package agent

import (
	"context"
	"fmt"
	"os"
	"strings"

	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/utils/ptr"

	"github.com/minikubelet/minikubelet/cgroups"
)

// Sandbox annotations that carry what the QoS tiers are computed from, so
// the runtime stays the source of truth: any agent (a restarted one, or one
// of several foreground `run`s) sums them from a single ListPodSandbox.

// EnsureNodeCgroups creates the kubepods hierarchy with the node's
// allocatable CPU and memory (kubelet-facts §5.6): kubepods, then the
// burstable and besteffort tiers. It returns the kubepods path. Without a
// cgroup manager it does nothing.
func (a *Agent) EnsureNodeCgroups() (string, error) {
	if a.cgroups == nil {
		return "", nil
	}
	alloc := a.cfg.Node.Allocatable
	var milli, mem int64
	if alloc != nil {
		milli = alloc.Cpu().MilliValue()
		mem = alloc.Memory().Value()
	}
	if err := a.cgroups.Ensure(cgroups.Kubepods, kubepodsResources(milli, mem, a.cfg.NodePidsLimit)); err != nil {
		return "", fmt.Errorf("create the kubepods cgroup: %w", err)
	}
	// Created without touching its shares: other agents' pods may be
	// running; refreshBurstableTier sets them from the runtime.
	if err := a.cgroups.Ensure(cgroups.KubepodsBurstable, cgroups.Resources{}); err != nil {
		return "", fmt.Errorf("create the burstable QoS cgroup: %w", err)
	}
	if err := a.cgroups.Ensure(cgroups.KubepodsBestEffort, bestEffortTierResources()); err != nil {
		return "", fmt.Errorf("create the besteffort QoS cgroup: %w", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), a.cfg.RuntimeTimeout)
	defer cancel()
	a.refreshBurstableTier(ctx)
	return a.cgroups.Path(cgroups.Kubepods), nil
}

// refreshBurstableTier recomputes the burstable tier from the runtime's
// sandboxes now (after a pod was created or torn down), not only at the
// next relist.
func (a *Agent) refreshBurstableTier(ctx context.Context) {
	if a.cgroups == nil {
		return
	}
	sbs, err := a.runtime.ListPodSandbox(ctx, &runtimeapi.PodSandboxFilter{LabelSelector: map[string]string{labelManagedBy: managedByValue}})
	if err != nil {
		a.logger.Warn("Listing sandboxes for the burstable QoS cgroup failed", "err", err)
		return
	}
	a.updateBurstableTier(burstableMilli(sbs))
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
	qos := podQOSClass(pod)
	name := podCgroupName(pod, qos)
	if err := a.cgroups.Ensure(name, podCgroupResources(pod, qos, a.cfg.PodPidsLimit)); err != nil {
		return "", fmt.Errorf("create pod cgroup %s: %w", a.cgroups.Path(name), err)
	}
	return a.cgroups.Path(name), nil
}

// destroyPodCgroup removes the pod's cgroup once its processes are gone.
func (a *Agent) destroyPodCgroup(pod *v1.Pod) error {
	if a.cgroups == nil {
		return nil
	}
	name := podCgroupName(pod, podQOSClass(pod))
	if err := a.cgroups.Destroy(name); err != nil {
		return fmt.Errorf("remove pod cgroup %s: %w", a.cgroups.Path(name), err)
	}
	return nil
}

// podCgroupPath is the pod's cgroup as the user sees it ("" without a
// cgroup manager).
func (a *Agent) podCgroupPath(pod *v1.Pod) string {
	if a.cgroups == nil {
		return ""
	}
	return a.cgroups.Path(podCgroupName(pod, podQOSClass(pod)))
}

// updateBurstableTier sets kubepods/burstable's shares from the CPU
// requests of the Burstable pods whose sandboxes are ready (sum from their
// annotations), when it changed since the last write.
func (a *Agent) updateBurstableTier(burstableMilli int64) {
	if a.cgroups == nil {
		return
	}
	shares := milliCPUToShares(burstableMilli)
	a.mu.Lock()
	same := a.lastBurstableShares == shares
	a.lastBurstableShares = shares
	a.mu.Unlock()
	if same {
		return
	}
	if err := a.cgroups.Update(cgroups.KubepodsBurstable, cgroups.Resources{CPUShares: ptr.To(uint64(shares))}); err != nil {
		a.logger.Warn("Update of the burstable QoS cgroup failed", "err", err)
		a.mu.Lock()
		a.lastBurstableShares = -1
		a.mu.Unlock()
	}
}

// CheckOOMScoreAdj tries to give the agent the kubelet's own oom_score_adj
// (-999). Where that is refused (no CAP_SYS_RESOURCE, as in some VMs and
// containers), containerd must run with restrict_oom_score_adj and every
// negative score, Guaranteed pods' −997 included, is raised to the
// runtime's own; the returned notice says so, once.
func CheckOOMScoreAdj() string {
	if err := os.WriteFile("/proc/self/oom_score_adj", []byte("-999"), 0); err != nil {
		cur, _ := os.ReadFile("/proc/self/oom_score_adj")
		return fmt.Sprintf("negative OOM scores are refused on this machine (%v): Guaranteed pods get the runtime's floor (oom_score_adj %s) instead of -997",
			err, strings.TrimSpace(string(cur)))
	}
	return ""
}
