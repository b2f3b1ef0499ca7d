package agent

// In-place pod resize: the engine's glue around agent/resize, which holds
// the resources, the checkpoint, the admission, the plan and the state
// machine (its doc.go draws it). Here: the worker's resize state under its
// lock, the checkpoint's place in the pod's directory, and the actuation:
// CRI UpdateContainerResources and the pod cgroup.

import (
	"context"
	"fmt"
	"slices"
	"strings"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/minikubelet/minikubelet/agent/podcgroup"
	"github.com/minikubelet/minikubelet/agent/podspec"
	"github.com/minikubelet/minikubelet/agent/resize"
	"github.com/minikubelet/minikubelet/cgroups"
)

// initResize sets a new worker's allocation: the checkpoint's when the pod
// ran before (a restarted daemon), otherwise its spec's.
func (a *Agent) initResize(w *podWorker) {
	pod := w.spec
	cp, ok, err := resize.LoadCheckpoint(a.podDir(pod))
	if err != nil {
		a.logger.Warn("Ignoring an unreadable resources checkpoint", "pod", pod.Namespace+"/"+pod.Name, "err", err)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.resize.Init(pod, cp, ok)
}

// saveResize writes the worker's checkpoint, logging a failure (the state
// in memory stays right; only a daemon restart could lose it).
func (a *Agent) saveResize(w *podWorker) {
	// The snapshot and its write under one lock: a later snapshot is
	// never overwritten by an earlier one.
	w.saveMu.Lock()
	defer w.saveMu.Unlock()
	w.mu.Lock()
	pod := w.spec
	cp := w.resize.Checkpoint()
	w.mu.Unlock()
	if err := resize.SaveCheckpoint(a.podDir(pod), cp); err != nil {
		w.logger.Warn("Saving the resources checkpoint failed", "err", err)
	}
}

// handleResizeLocked runs when the source hands a worker a changed spec p
// (a.mu held): a change of resources is admitted (allocated) or left
// pending, as the kubelet's handlePodResourcesResize. others are the other
// admitted pods, as admission counts them. It reports whether it admitted
// a new allocation.
func (a *Agent) handleResizeLocked(w *podWorker, p *v1.Pod, others func() []*v1.Pod) bool {
	if w.isTerminating() || w.isFinished() {
		return false
	}
	desired := resize.Of(p)
	w.mu.Lock()
	wants := w.resize.Wants(desired)
	w.mu.Unlock()
	if !wants {
		return false
	}
	v := resize.Admit(a.cfg.Node, p, others())
	w.mu.Lock()
	ev := w.resize.Decide(p, desired, v, metav1.NewTime(a.clock.Now()))
	if v.Fit {
		w.refreshAllocatedLocked()
	}
	w.mu.Unlock()
	if v.Fit {
		a.saveResize(w)
	}
	w.resizeEvent(ev)
	return v.Fit
}

// retryDeferredResizesLocked admits the deferred resizes that fit now (a
// pod left, or another shrank), decreases first as the kubelet sorts them
// (a.mu held). Infeasible ones wait for a new spec.
func (a *Agent) retryDeferredResizesLocked() {
	var deferred []*podWorker
	for _, w := range a.workers {
		w.mu.Lock()
		if w.resize.Deferred() {
			deferred = append(deferred, w)
		}
		w.mu.Unlock()
	}
	slices.SortFunc(deferred, func(x, y *podWorker) int {
		return strings.Compare(string(x.desired().UID), string(y.desired().UID))
	})
	for _, w := range deferred {
		before := w.pod()
		p := w.desired()
		a.handleResizeLocked(w, p, a.othersLocked(p.UID))
		if w.pod() != before {
			w.trigger()
		}
	}
}

// planResize computes the sync's resize (resize.Plan) and merges the
// restarts it asks for into act: the container is killed ("Container X
// resize requires restart", as the kubelet says) and started again with
// its new resources. Nothing is resized while the pod is killed or its
// sandbox recreated: everything then starts with the allocated resources.
func (a *Agent) planResize(w *podWorker, pod *v1.Pod, st *podState, act *podActions) resize.Actions {
	if act.KillPod || act.CreateSandbox {
		return resize.Actions{}
	}
	w.mu.Lock()
	ra := resize.Plan(pod, w.resize.Actuated, runningIn(st))
	w.mu.Unlock()
	for id, name := range ra.Restart {
		if _, ok := act.ContainersToKill[id]; ok {
			continue // killed anyway (a probe, a new definition)
		}
		act.ContainersToKill[id] = killReason{Name: name, Message: fmt.Sprintf("Container %s resize requires restart", name)}
	}
	for _, i := range ra.RestartApp {
		if !slices.Contains(act.ContainersToStart, i) {
			act.ContainersToStart = append(act.ContainersToStart, i)
		}
	}
	for _, i := range ra.RestartSidecar {
		if !slices.Contains(act.InitContainersToStart, i) {
			act.InitContainersToStart = append(act.InitContainersToStart, i)
		}
	}
	return ra
}

// runningIn is, for resize.Plan, the ID of a container's running instance
// in the pod's newest sandbox ("" when none).
func runningIn(st *podState) func(name string) string {
	return func(name string) string {
		if len(st.sandboxes) == 0 {
			return ""
		}
		cur := st.latestIn(name, st.sandboxes[0].id)
		if cur == nil || cur.state != runtimeapi.ContainerState_CONTAINER_RUNNING {
			return ""
		}
		return cur.id
	}
}

// doResize applies the in-place updates of ra to the pod's containers and
// pod cgroup, as the kubelet's doPodResizeAction: memory first, then cpu;
// for each, the pod cgroup before the containers when its limit or
// request grows, after them when it shrinks. A memory limit decreased below
// what a container uses now is refused (resize.CheckMemoryDecrease); the
// resize then stays in progress with the error, and is retried. Each
// container updated is recorded as actuated at once, so a failure part-way
// leaves the record true.
func (a *Agent) doResize(ctx context.Context, w *podWorker, pod *v1.Pod, ra resize.Actions) error {
	w.mu.Lock()
	actuated := w.resize.Actuated.Clone()
	w.mu.Unlock()
	if sl, ok := a.runtime.(ContainerStatsLister); ok {
		usage := func(id string) (uint64, bool) {
			stats, err := sl.ListContainerStats(ctx, &runtimeapi.ContainerStatsFilter{Id: id})
			if err != nil || len(stats) == 0 || stats[0].GetMemory().GetUsageBytes() == nil {
				return 0, false
			}
			return stats[0].GetMemory().GetUsageBytes().GetValue(), true
		}
		if err := resize.CheckMemoryDecrease(pod, actuated, ra.Update[v1.ResourceMemory], usage); err != nil {
			return err
		}
	}
	defer a.saveResize(w)
	for _, n := range resize.UpdateOrder {
		list := ra.Update[n]
		if len(list) == 0 {
			continue
		}
		// The pod cgroup's values before and after this pass.
		before := podcgroup.Resources(resize.WithResources(pod, actuated), podQOSClass(pod), a.cfg.PodPidsLimit)
		next := actuated.Clone()
		for _, u := range list {
			r := next[u.Name]
			resize.Set(&r, n, resize.Requirements(pod, u))
			next[u.Name] = r
		}
		after := podcgroup.Resources(resize.WithResources(pod, next), podQOSClass(pod), a.cfg.PodPidsLimit)
		grow, shrink := podCgroupSteps(n, before, after)
		if err := a.updatePodCgroup(pod, grow); err != nil {
			return err
		}
		for _, u := range list {
			// This pass's resource at its new value, the other one as
			// actuated (the kubelet's updatePodContainerResources).
			r := actuated[u.Name]
			resize.Set(&r, n, resize.Requirements(pod, u))
			c := resize.ContainerWith(pod, u, r)
			lr := podspec.ContainerResources(resize.WithResources(pod, actuated), c, a.memoryCapacity())
			if err := a.runtime.UpdateContainerResources(ctx, u.ID, &runtimeapi.ContainerResources{Linux: lr}); err != nil {
				return fmt.Errorf("%w: update resources of container %q: %v", resize.ErrResize, u.Name, err)
			}
			actuated[u.Name] = r
			w.mu.Lock()
			w.resize.Actuated[u.Name] = *r.DeepCopy()
			w.mu.Unlock()
		}
		if err := a.updatePodCgroup(pod, shrink); err != nil {
			return err
		}
	}
	return nil
}

// podCgroupSteps is resize.PodCgroupSteps over the pod cgroup's values.
func podCgroupSteps(n v1.ResourceName, before, after cgroups.Resources) (grow, shrink cgroups.Resources) {
	in := func(r cgroups.Resources) resize.PodCgroup {
		return resize.PodCgroup{CPUShares: r.CPUShares, CPUQuota: r.CPUQuota, CPUPeriod: r.CPUPeriod, MemoryLimit: r.MemoryLimit}
	}
	out := func(p resize.PodCgroup) cgroups.Resources {
		return cgroups.Resources{CPUShares: p.CPUShares, CPUQuota: p.CPUQuota, CPUPeriod: p.CPUPeriod, MemoryLimit: p.MemoryLimit}
	}
	g, s := resize.PodCgroupSteps(n, in(before), in(after))
	return out(g), out(s)
}

// updatePodCgroup writes r (only what is set) to the pod's cgroup.
func (a *Agent) updatePodCgroup(pod *v1.Pod, r cgroups.Resources) error {
	if a.cgroups == nil || (r.CPUShares == nil && r.CPUQuota == nil && r.MemoryLimit == nil) {
		return nil
	}
	name := podcgroup.Name(pod, podQOSClass(pod))
	if err := a.cgroups.Update(name, r); err != nil {
		return fmt.Errorf("%w: update pod cgroup %s (%s): %v", resize.ErrResize, a.cgroups.Path(name), r, err)
	}
	return nil
}

// finishResize updates the PodResizeInProgress condition after a sync's
// resize step (resize.State.Finish).
func (a *Agent) finishResize(w *podWorker, pod *v1.Pod, st *podState, err error) {
	now := metav1.NewTime(a.clock.Now())
	w.mu.Lock()
	ev := w.resize.Finish(pod, runningIn(st), err, now)
	w.mu.Unlock()
	w.resizeEvent(ev)
}

// recordActuated notes that c's new instance was created with its
// (allocated) resources, and checkpoints it when that is news.
func (a *Agent) recordActuated(w *podWorker, c *v1.Container) {
	w.mu.Lock()
	changed := w.resize.RecordActuated(c)
	w.mu.Unlock()
	if changed {
		a.saveResize(w)
	}
}

// resizeEvent records ev, if any.
func (w *podWorker) resizeEvent(ev *resize.Event) {
	if ev != nil {
		w.event(ev.Type, ev.Reason, "%s", ev.Message)
	}
}

// resizeConditions are the pod's resize conditions now.
func (w *podWorker) resizeConditions(phase v1.PodPhase) []v1.PodCondition {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.resize.Conditions(phase)
}

// containerStatusResources is what status.containerStatuses[*] reports of
// c's resources (resize.State.StatusResources).
func (w *podWorker) containerStatusResources(c *v1.Container, running bool) (v1.ResourceList, *v1.ResourceRequirements) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.resize.StatusResources(c.Name, running)
}

// refreshAllocatedLocked recomputes the allocated view of the spec (w.mu
// held).
func (w *podWorker) refreshAllocatedLocked() { w.resize.Refresh(w.spec) }

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
