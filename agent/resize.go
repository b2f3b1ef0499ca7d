package agent

// In-place pod resize: the engine's glue around agent/resize, which holds
// the rules and each pod's resize.Tracker (its doc.go draws it). Here: the
// actuation, CRI UpdateContainerResources and the pod cgroup.

import (
	"context"
	"fmt"
	"slices"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/minikubelet/minikubelet/agent/podcgroup"
	"github.com/minikubelet/minikubelet/agent/podspec"
	"github.com/minikubelet/minikubelet/agent/resize"
	"github.com/minikubelet/minikubelet/cgroups"
)

// handleResizeLocked runs when the source hands a worker a changed spec p
// (a.mu held): resize.Tracker.Handle against others, the other admitted
// pods. It reports whether it admitted a new allocation.
func (a *Agent) handleResizeLocked(w *podWorker, p *v1.Pod, others func() []*v1.Pod) bool {
	if w.isTerminating() || w.isFinished() {
		return false
	}
	return w.resize.Handle(p, w.desired(), a.cfg.Node, others, a.clock.Now)
}

// retryDeferredResizesLocked admits the deferred resizes that fit now (a
// pod left, or another shrank), in the order of the pods' UIDs (a.mu
// held). Infeasible ones wait for a new spec.
func (a *Agent) retryDeferredResizesLocked() {
	var deferred []types.UID
	for uid, w := range a.workers {
		if w.resize.Deferred() {
			deferred = append(deferred, uid)
		}
	}
	slices.Sort(deferred)
	for _, uid := range deferred {
		w := a.workers[uid]
		before := w.pod()
		a.handleResizeLocked(w, w.desired(), a.othersLocked(uid))
		if w.pod() != before {
			w.trigger()
		}
	}
}

// planResize computes the sync's resize (resize.Plan) and merges its
// restarts into act: killed ("Container X resize requires restart", the
// kubelet's words) and started again with the new resources. Nothing is
// resized while the pod is killed or its sandbox recreated: all then
// starts with the allocated resources.
func (a *Agent) planResize(w *podWorker, pod *v1.Pod, st *podState, act *podActions) resize.Actions {
	if act.KillPod || act.CreateSandbox {
		return resize.Actions{}
	}
	ra := w.resize.Plan(pod, runningIn(st))
	for id, name := range ra.Restart {
		if _, ok := act.ContainersToKill[id]; !ok { // else killed anyway (a probe, a new definition)
			act.ContainersToKill[id] = killReason{Name: name, Message: fmt.Sprintf("Container %s resize requires restart", name)}
		}
	}
	act.ContainersToStart, act.InitContainersToStart = ra.Starts(act.ContainersToStart, act.InitContainersToStart)
	return ra
}

// runningIn is, for resize.Plan, the ID of a container's running instance
// in the pod's newest sandbox ("" when none).
func runningIn(st *podState) func(name string) string {
	return func(name string) string {
		if len(st.sandboxes) == 0 {
			return ""
		}
		if cur := st.latestIn(name, st.sandboxes[0].id); cur != nil && cur.state == runtimeapi.ContainerState_CONTAINER_RUNNING {
			return cur.id
		}
		return ""
	}
}

// doResize applies the in-place updates of ra to the pod's containers and
// pod cgroup in the order of resize.Steps. A memory limit decreased below
// what a container uses now is refused (resize.CheckMemoryDecrease); the
// resize then stays in progress with the error, and is retried. Each
// container updated is recorded as actuated at once, so a failure part-way
// leaves the record true.
func (a *Agent) doResize(ctx context.Context, w *podWorker, pod *v1.Pod, ra resize.Actions) error {
	if sl, ok := a.runtime.(ContainerStatsLister); ok {
		usage := func(id string) (uint64, bool) {
			stats, err := sl.ListContainerStats(ctx, &runtimeapi.ContainerStatsFilter{Id: id})
			if err != nil || len(stats) == 0 || stats[0].GetMemory().GetUsageBytes() == nil {
				return 0, false
			}
			return stats[0].GetMemory().GetUsageBytes().GetValue(), true
		}
		if err := w.resize.CheckMemoryDecrease(pod, ra, usage); err != nil {
			return err
		}
	}
	defer w.resize.Save()
	for _, s := range w.resize.Steps(pod, ra, a.podCgroupOf(podspec.QOSClass(pod))) {
		if s.Container == "" {
			if err := a.updatePodCgroup(pod, s.PodCgroup); err != nil {
				return err
			}
			continue
		}
		lr := podspec.ContainerResources(s.Pod, s.Spec, a.memoryCapacity())
		if err := a.runtime.UpdateContainerResources(ctx, s.ID, &runtimeapi.ContainerResources{Linux: lr}); err != nil {
			return fmt.Errorf("%w: update resources of container %q: %v", resize.ErrResize, s.Container, err)
		}
		w.resize.SetActuated(s.Container, s.Resources)
	}
	return nil
}

// podCgroupOf is, for resize.Steps, the values a resize changes of the
// cgroup of a pod of QoS class qos.
func (a *Agent) podCgroupOf(qos v1.PodQOSClass) func(*v1.Pod) resize.PodCgroup {
	return func(p *v1.Pod) resize.PodCgroup {
		r := podcgroup.Resources(p, qos, a.cfg.PodPidsLimit)
		return resize.PodCgroup{CPUShares: r.CPUShares, CPUQuota: r.CPUQuota, CPUPeriod: r.CPUPeriod, MemoryLimit: r.MemoryLimit}
	}
}

// updatePodCgroup writes p (only what is set) to the pod's cgroup.
func (a *Agent) updatePodCgroup(pod *v1.Pod, p resize.PodCgroup) error {
	if a.cgroups == nil {
		return nil
	}
	r := cgroups.Resources{CPUShares: p.CPUShares, CPUQuota: p.CPUQuota, CPUPeriod: p.CPUPeriod, MemoryLimit: p.MemoryLimit}
	name := podcgroup.Name(pod, podspec.QOSClass(pod))
	if err := a.cgroups.Update(name, r); err != nil {
		return fmt.Errorf("%w: update pod cgroup %s (%s): %v", resize.ErrResize, a.cgroups.Path(name), r, err)
	}
	return nil
}

// desired is the spec as the source handed it over, resources as the user
// asked for them (pod returns the allocated view).
func (w *podWorker) desired() *v1.Pod {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.spec
}

// othersLocked returns the admitted pods other than uid, as admission
// counts them (a.mu held; built when called).
func (a *Agent) othersLocked(uid types.UID) func() []*v1.Pod {
	return func() []*v1.Pod {
		out := make([]*v1.Pod, 0, len(a.workers))
		for id, o := range a.workers {
			if id != uid {
				out = append(out, o.admissionView())
			}
		}
		return out
	}
}
