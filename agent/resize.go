package agent

// Over 600 lines: in-place resize is one flow (admission against the node,
// the checkpoint, the planner, the actuation through CRI and cgroups, the
// status it reports); splitting it would scatter one state machine. It is
// the next room to leave the engine package (issue #30).

// In-place pod resize (InPlacePodVerticalScaling, GA in v1.35), as the
// kubelet's allocation manager and kuberuntime do it (ideas, not code):
//
//	API spec (desired) ──SetPods: fits the node?──► allocated ──syncPod──► actuated
//	                         │ no: PodResizePending            (CRI UpdateContainerResources,
//	                         │ (Deferred, or Infeasible)        pod cgroup; or a restart)
//
//   - desired: the cpu and memory requests and limits of the pod's spec as
//     the source hands it over (cluster mode: the pods/resize subresource);
//   - allocated: what the node admitted. The worker syncs the pod with these
//     resources (podWorker.pod), so a resize that does not fit is never
//     applied, and admission counts them for the other pods;
//   - actuated: what the running containers were created or updated with.
//
// Allocated and actuated live in a checkpoint in the pod's directory
// (<root>/pods/<uid>/resources.json; the kubelet's allocated_pods_state and
// actuated_pods_state), so a restarted daemon neither forgets an admitted
// resize nor takes a resize that arrived while it was down for an applied
// one. The checkpoint goes with the pod's directory.
//
// Resizable are the app containers and native sidecars; other init
// containers are not (they ran to completion; the kubelet's
// InPlacePodVerticalScalingInitContainers beta is not implemented).

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/utils/ptr"

	"github.com/minikubelet/minikubelet/agent/node"
	"github.com/minikubelet/minikubelet/agent/podspec"
	"github.com/minikubelet/minikubelet/agent/safepath"
	"github.com/minikubelet/minikubelet/cgroups"
)

// Resize event reasons (the kubelet's pkg/kubelet/events).
const (
	eventResizeStarted    = "ResizeStarted"
	eventResizeCompleted  = "ResizeCompleted"
	eventResizeError      = "ResizeError"
	eventResizeDeferred   = "ResizeDeferred"
	eventResizeInfeasible = "ResizeInfeasible"
)

// resizeCheckpointFile is the checkpoint's name in the pod's directory.
const resizeCheckpointFile = "resources.json"

// podResources maps a resizable container's name to its cpu and memory
// requests and limits.
type podResources map[string]v1.ResourceRequirements

// resizableResources is r's cpu and memory requests and limits only.
func resizableResources(r v1.ResourceRequirements) v1.ResourceRequirements {
	pick := func(l v1.ResourceList) v1.ResourceList {
		var out v1.ResourceList
		for _, n := range []v1.ResourceName{v1.ResourceCPU, v1.ResourceMemory} {
			if q, ok := l[n]; ok {
				if out == nil {
					out = v1.ResourceList{}
				}
				out[n] = q.DeepCopy()
			}
		}
		return out
	}
	return v1.ResourceRequirements{Requests: pick(r.Requests), Limits: pick(r.Limits)}
}

// resizableContainers calls fn for each resizable container of pod: app
// containers and native sidecars.
func resizableContainers(spec *v1.PodSpec, fn func(c *v1.Container, sidecar bool)) {
	for i := range spec.InitContainers {
		if isSidecar(&spec.InitContainers[i]) {
			fn(&spec.InitContainers[i], true)
		}
	}
	for i := range spec.Containers {
		fn(&spec.Containers[i], false)
	}
}

// resourcesOf is the pod's resizable resources.
func resourcesOf(pod *v1.Pod) podResources {
	out := podResources{}
	resizableContainers(&pod.Spec, func(c *v1.Container, _ bool) { out[c.Name] = resizableResources(c.Resources) })
	return out
}

// sameRequirements compares two cpu/memory requirements semantically
// (100m equals 0.1).
func sameRequirements(a, b v1.ResourceRequirements) bool {
	return equality.Semantic.DeepEqual(resizableResources(a), resizableResources(b))
}

// equal reports whether both hold the same requirements for every
// container of either.
func (p podResources) equal(o podResources) bool {
	if len(p) != len(o) {
		return false
	}
	for name, r := range p {
		or, ok := o[name]
		if !ok || !sameRequirements(r, or) {
			return false
		}
	}
	return true
}

// withResources returns pod with the resizable containers' resources taken
// from res (the allocated view); pod itself when nothing differs. The copy
// shares everything but the container lists.
func withResources(pod *v1.Pod, res podResources) *v1.Pod {
	differs := false
	resizableContainers(&pod.Spec, func(c *v1.Container, _ bool) {
		if r, ok := res[c.Name]; ok && !sameRequirements(c.Resources, r) {
			differs = true
		}
	})
	if !differs {
		return pod
	}
	out := *pod
	out.Spec.Containers = slices.Clone(pod.Spec.Containers)
	out.Spec.InitContainers = slices.Clone(pod.Spec.InitContainers)
	resizableContainers(&out.Spec, func(c *v1.Container, _ bool) {
		r, ok := res[c.Name]
		if !ok {
			return
		}
		// Other resources (ephemeral-storage) stay as the spec has them.
		c.Resources = *c.Resources.DeepCopy()
		for _, n := range []v1.ResourceName{v1.ResourceCPU, v1.ResourceMemory} {
			setOrDelete(&c.Resources.Requests, n, r.Requests)
			setOrDelete(&c.Resources.Limits, n, r.Limits)
		}
	})
	return &out
}

// setOrDelete sets (*into)[n] to from[n], or removes it when from has none.
func setOrDelete(into *v1.ResourceList, n v1.ResourceName, from v1.ResourceList) {
	q, ok := from[n]
	switch {
	case ok && *into == nil:
		*into = v1.ResourceList{n: q.DeepCopy()}
	case ok:
		(*into)[n] = q.DeepCopy()
	default:
		delete(*into, n)
	}
}

// resizeCheckpoint is the checkpoint's content.
type resizeCheckpoint struct {
	Allocated podResources `json:"allocated"`
	Actuated  podResources `json:"actuated,omitempty"`
}

// loadResizeCheckpoint reads the pod's checkpoint (ok false: none, or
// unreadable; the pod then starts from its spec).
func (a *Agent) loadResizeCheckpoint(pod *v1.Pod) (resizeCheckpoint, bool) {
	b, err := safepath.ReadFile(filepath.Join(a.podDir(pod), resizeCheckpointFile), 1<<20)
	if err != nil {
		return resizeCheckpoint{}, false
	}
	var cp resizeCheckpoint
	if err := json.Unmarshal(b, &cp); err != nil || cp.Allocated == nil {
		a.logger.Warn("Ignoring an unreadable resources checkpoint", "pod", pod.Namespace+"/"+pod.Name, "err", err)
		return resizeCheckpoint{}, false
	}
	return cp, true
}

// saveResizeCheckpoint writes the checkpoint atomically (a temporary file
// renamed over it). The pod's directory is the agent's own (root dir), not
// a path the pod controls.
func (a *Agent) saveResizeCheckpoint(pod *v1.Pod, cp resizeCheckpoint) error {
	dir := a.podDir(pod)
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return fmt.Errorf("save resources checkpoint: %w", err)
	}
	b, err := json.Marshal(cp)
	if err != nil {
		return fmt.Errorf("save resources checkpoint: %w", err)
	}
	// A temporary file of its own: two writers of one name could rename
	// each other's half-written file into place.
	f, err := os.CreateTemp(dir, resizeCheckpointFile+".*.tmp")
	if err != nil {
		return fmt.Errorf("save resources checkpoint: %w", err)
	}
	_, werr := f.Write(b)
	if cerr := f.Close(); werr == nil {
		werr = cerr
	}
	if werr == nil {
		werr = os.Rename(f.Name(), filepath.Join(dir, resizeCheckpointFile))
	}
	if werr != nil {
		_ = os.Remove(f.Name())
		return fmt.Errorf("save resources checkpoint: %w", werr)
	}
	return nil
}

// initResize sets a new worker's allocation: the checkpoint's when the pod
// ran before (a restarted daemon), otherwise its spec's.
func (a *Agent) initResize(w *podWorker) {
	pod := w.spec
	cp, ok := a.loadResizeCheckpoint(pod)
	w.mu.Lock()
	defer w.mu.Unlock()
	if ok {
		w.allocated, w.actuated = cp.Allocated, cp.Actuated
	} else {
		w.allocated = resourcesOf(pod)
	}
	if w.actuated == nil {
		w.actuated = podResources{}
	}
	w.refreshAllocatedLocked()
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
	cp := resizeCheckpoint{Allocated: clonePodResources(w.allocated), Actuated: clonePodResources(w.actuated)}
	w.mu.Unlock()
	if err := a.saveResizeCheckpoint(pod, cp); err != nil {
		w.logger.Warn("Saving the resources checkpoint failed", "err", err)
	}
}

func clonePodResources(p podResources) podResources {
	out := make(podResources, len(p))
	for k, v := range p {
		out[k] = *v.DeepCopy()
	}
	return out
}

// resizeVerdict is the outcome of admitting a resize.
type resizeVerdict struct {
	fit bool
	// reason is v1.PodReasonDeferred or v1.PodReasonInfeasible when not fit.
	reason, message string
}

// admitResize decides whether desired, the new spec of an admitted pod,
// fits the node next to the other admitted pods (their allocated
// resources), as the kubelet's canAdmitPod with the ResizeOperation.
//
// Where it deviates from the kubelet v1.37: a resize whose requests alone
// exceed the node's allocatable is Infeasible (the kubelet up to v1.33 did
// the same); v1.37 reports it Deferred and retries it. minikubelet's
// allocatable is fixed while it runs, so such a resize can never fit:
// Infeasible tells the user (or an autoscaler) to stop waiting. (The
// v1.37 API server itself refuses such a resize of a pod bound to a node,
// "node didn't have enough allocatable resources", so in cluster mode it
// only reaches a node behind an older API server.)
func admitResize(info node.Info, desired *v1.Pod, others []*v1.Pod) resizeVerdict {
	if info.Allocatable == nil {
		return resizeVerdict{fit: true}
	}
	reqs, _ := podRequestsAndLimits(desired)
	for _, n := range []v1.ResourceName{v1.ResourceCPU, v1.ResourceMemory} {
		want, ok := reqs[n]
		alloc, has := info.Allocatable[n]
		if !ok || !has {
			continue
		}
		if want.Cmp(alloc) > 0 {
			w, c := want.Value(), alloc.Value()
			if n == v1.ResourceCPU {
				w, c = want.MilliValue(), alloc.MilliValue()
			}
			return resizeVerdict{reason: v1.PodReasonInfeasible,
				message: fmt.Sprintf("Node didn't have enough capacity: %s, requested: %d, capacity: %d", n, w, c)}
		}
	}
	if ok, _, msg := node.Admit(info, desired, others); !ok {
		return resizeVerdict{reason: v1.PodReasonDeferred, message: msg}
	}
	return resizeVerdict{fit: true}
}

// handleResizeLocked runs when the source hands a worker a changed spec p
// (a.mu held): a change of resources is admitted (allocated) or left
// pending, as the kubelet's handlePodResourcesResize. others are the other
// admitted pods, as admission counts them. It reports whether it admitted
// a new allocation.
func (a *Agent) handleResizeLocked(w *podWorker, p *v1.Pod, others func() []*v1.Pod) bool {
	desired := resourcesOf(p)
	w.mu.Lock()
	alloc := w.allocated
	w.mu.Unlock()
	if alloc == nil || w.isTerminating() || w.isFinished() {
		return false
	}
	if desired.equal(alloc) {
		// No resize, or one reverted before it was admitted.
		w.mu.Lock()
		w.resizePending = nil
		w.mu.Unlock()
		return false
	}
	v := admitResize(a.cfg.Node, p, others())
	now := metav1.NewTime(a.clock.Now())
	if !v.fit {
		w.mu.Lock()
		prev := w.resizePending
		w.resizePending = &v1.PodCondition{Type: v1.PodResizePending, Status: v1.ConditionTrue, Reason: v.reason, Message: v.message,
			ObservedGeneration: p.Generation, LastTransitionTime: now, LastProbeTime: now}
		if prev != nil && prev.Reason == v.reason {
			w.resizePending.LastTransitionTime = prev.LastTransitionTime
		}
		w.mu.Unlock()
		if prev == nil || prev.Reason != v.reason || prev.ObservedGeneration != p.Generation {
			evt := eventResizeDeferred
			if v.reason == v1.PodReasonInfeasible {
				evt = eventResizeInfeasible
			}
			w.event(v1.EventTypeWarning, evt, "Pod resize %s: %s", v.reason, resizeSummary(p, v.message))
		}
		return false
	}
	w.mu.Lock()
	w.allocated = desired
	w.refreshAllocatedLocked()
	w.resizePending = nil
	// A new resize clears an earlier error and takes the new generation.
	w.resizeInProgress = &v1.PodCondition{Type: v1.PodResizeInProgress, Status: v1.ConditionTrue,
		ObservedGeneration: p.Generation, LastTransitionTime: now, LastProbeTime: now}
	w.mu.Unlock()
	a.saveResize(w)
	w.event(v1.EventTypeNormal, eventResizeStarted, "Pod resize started: %s", resizeSummary(p, ""))
	return true
}

// retryDeferredResizesLocked admits the deferred resizes that fit now (a
// pod left, or another shrank), decreases first as the kubelet sorts them
// (a.mu held). Infeasible ones wait for a new spec.
func (a *Agent) retryDeferredResizesLocked() {
	var deferred []*podWorker
	for _, w := range a.workers {
		w.mu.Lock()
		if w.resizePending != nil && w.resizePending.Reason == v1.PodReasonDeferred {
			deferred = append(deferred, w)
		}
		w.mu.Unlock()
	}
	if len(deferred) == 0 {
		return
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

// resizeSummary is the event text: the containers' desired resources and
// the generation, as the kubelet's podResizeMessage (JSON).
func resizeSummary(p *v1.Pod, errMsg string) string {
	type ctr struct {
		Name      string                  `json:"name"`
		Resources v1.ResourceRequirements `json:"resources"`
	}
	s := struct {
		Containers []ctr  `json:"containers"`
		Generation int64  `json:"generation"`
		Error      string `json:"error,omitempty"`
	}{Generation: p.Generation, Error: errMsg}
	resizableContainers(&p.Spec, func(c *v1.Container, _ bool) {
		s.Containers = append(s.Containers, ctr{Name: c.Name, Resources: resizableResources(c.Resources)})
	})
	b, _ := json.Marshal(s)
	return string(b)
}

// containerResize is one container's update in a resize pass.
type containerResize struct {
	name string
	// sidecar: an init container (spec.initContainers).
	sidecar bool
	// id is the running instance's.
	id string
}

// resizeActions is the plan of a resize (the kubelet's ContainersToUpdate
// and the restarts of computePodResizeAction), computed without I/O.
type resizeActions struct {
	// restart maps the running instances to kill for a restart
	// (RestartContainer policy) to their container's name.
	restart map[string]string
	// restartApp and restartSidecar are the indexes to start again.
	restartApp, restartSidecar []int
	// update holds, per resource (cpu, memory), the containers to update
	// in place: decreases first, then increases.
	update map[v1.ResourceName][]containerResize
}

// empty reports whether nothing is to be done.
func (r resizeActions) empty() bool {
	return len(r.restart) == 0 && len(r.update[v1.ResourceCPU]) == 0 && len(r.update[v1.ResourceMemory]) == 0
}

// resizePolicy is c's restart policy for resource n (NotRequired when not
// given, as the API defaults it).
func resizePolicy(c *v1.Container, n v1.ResourceName) v1.ResourceResizeRestartPolicy {
	for _, p := range c.ResizePolicy {
		if p.ResourceName == n {
			return p.RestartPolicy
		}
	}
	return v1.NotRequired
}

// computeResizeActions compares, for each running resizable container, the
// allocated resources (pod's) with the actuated ones, as the kubelet's
// computePodResizeAction: a changed resource whose policy is
// RestartContainer restarts the container; otherwise each changed resource
// is updated in place, decreases before increases. A container without an
// actuated record (created by a version before resize) counts as actuated
// with its allocation.
func computeResizeActions(pod *v1.Pod, actuated podResources, st *podState) resizeActions {
	ra := resizeActions{restart: map[string]string{}, update: map[v1.ResourceName][]containerResize{}}
	if pod.DeletionTimestamp != nil || len(st.sandboxes) == 0 {
		return ra
	}
	sbID := st.sandboxes[0].id
	idx := func(list []v1.Container, name string) int {
		return slices.IndexFunc(list, func(c v1.Container) bool { return c.Name == name })
	}
	resizableContainers(&pod.Spec, func(c *v1.Container, sidecar bool) {
		cur := st.latestIn(c.Name, sbID)
		if cur == nil || cur.state != runtimeapi.ContainerState_CONTAINER_RUNNING {
			return
		}
		act, ok := actuated[c.Name]
		if !ok {
			return
		}
		want := resizableResources(c.Resources)
		var changed []v1.ResourceName
		for _, n := range []v1.ResourceName{v1.ResourceMemory, v1.ResourceCPU} {
			if !sameQuantity(want.Requests, act.Requests, n) || !sameQuantity(want.Limits, act.Limits, n) {
				changed = append(changed, n)
			}
		}
		if len(changed) == 0 {
			return
		}
		for _, n := range changed {
			if resizePolicy(c, n) == v1.RestartContainer {
				ra.restart[cur.id] = c.Name
				if sidecar {
					ra.restartSidecar = append(ra.restartSidecar, idx(pod.Spec.InitContainers, c.Name))
				} else {
					ra.restartApp = append(ra.restartApp, idx(pod.Spec.Containers, c.Name))
				}
				return
			}
		}
		for _, n := range changed {
			u := containerResize{name: c.Name, sidecar: sidecar, id: cur.id}
			if resourceIncreases(want, act, n) {
				ra.update[n] = append(ra.update[n], u)
			} else {
				ra.update[n] = append([]containerResize{u}, ra.update[n]...)
			}
		}
	})
	return ra
}

// sameQuantity compares l[n] of two lists (absent equals absent only).
func sameQuantity(a, b v1.ResourceList, n v1.ResourceName) bool {
	qa, oka := a[n]
	qb, okb := b[n]
	return oka == okb && (!oka || qa.Cmp(qb) == 0)
}

// resourceIncreases reports whether the change of n from act to want
// raises the limit (or removes it), or else the request: the kubelet's
// markContainerForUpdate order key.
func resourceIncreases(want, act v1.ResourceRequirements, n v1.ResourceName) bool {
	wl, wok := want.Limits[n]
	al, aok := act.Limits[n]
	switch {
	case wok && aok && wl.Cmp(al) != 0:
		return wl.Cmp(al) > 0
	case wok != aok:
		return !wok // a limit removed is an increase
	}
	wr, ar := want.Requests[n], act.Requests[n]
	return wr.Cmp(ar) > 0
}

// errResize marks a failed resize step (the kubelet's ErrResizePodInPlace).
var errResize = errors.New("ResizePodInPlaceError")

// doResize applies the in-place updates of ra to the pod's containers and
// pod cgroup, as the kubelet's doPodResizeAction: memory first, then cpu;
// for each, the pod cgroup before the containers when its limit or
// request grows, after them when it shrinks. A memory limit decreased below
// what a container uses now is refused (the kubelet's
// validateMemoryResizeAction); the resize then stays in progress with the
// error, and is retried. Each container updated is recorded as actuated
// at once, so a failure part-way leaves the record true.
func (a *Agent) doResize(ctx context.Context, w *podWorker, pod *v1.Pod, ra resizeActions) error {
	if err := a.checkMemoryDecrease(ctx, w, pod, ra.update[v1.ResourceMemory]); err != nil {
		return err
	}
	w.mu.Lock()
	actuated := clonePodResources(w.actuated)
	w.mu.Unlock()
	defer a.saveResize(w)
	for _, n := range []v1.ResourceName{v1.ResourceMemory, v1.ResourceCPU} {
		list := ra.update[n]
		if len(list) == 0 {
			continue
		}
		// The pod cgroup's values before and after this pass.
		before := podCgroupResources(withResources(pod, actuated), podQOSClass(pod), a.cfg.PodPidsLimit)
		next := clonePodResources(actuated)
		for _, u := range list {
			r := next[u.name]
			want := containerReqs(pod, u)
			setOrDelete(&r.Requests, n, want.Requests)
			setOrDelete(&r.Limits, n, want.Limits)
			next[u.name] = r
		}
		after := podCgroupResources(withResources(pod, next), podQOSClass(pod), a.cfg.PodPidsLimit)
		grow, shrink := podCgroupSteps(n, before, after)
		if err := a.updatePodCgroup(pod, grow); err != nil {
			return err
		}
		for _, u := range list {
			// This pass's resource at its new value, the other one as
			// actuated (the kubelet's updatePodContainerResources).
			r := actuated[u.name]
			want := containerReqs(pod, u)
			setOrDelete(&r.Requests, n, want.Requests)
			setOrDelete(&r.Limits, n, want.Limits)
			c := containerWithResources(pod, u, r)
			lr := podspec.ContainerResources(withResources(pod, actuated), c, a.memoryCapacity())
			if err := a.runtime.UpdateContainerResources(ctx, u.id, &runtimeapi.ContainerResources{Linux: lr}); err != nil {
				return fmt.Errorf("%w: update resources of container %q: %v", errResize, u.name, err)
			}
			actuated[u.name] = r
			w.mu.Lock()
			w.actuated[u.name] = *r.DeepCopy()
			w.mu.Unlock()
		}
		if err := a.updatePodCgroup(pod, shrink); err != nil {
			return err
		}
	}
	return nil
}

// containerReqs is the allocated resources of u's container.
func containerReqs(pod *v1.Pod, u containerResize) v1.ResourceRequirements {
	list := pod.Spec.Containers
	if u.sidecar {
		list = pod.Spec.InitContainers
	}
	for i := range list {
		if list[i].Name == u.name {
			return resizableResources(list[i].Resources)
		}
	}
	return v1.ResourceRequirements{}
}

// containerWithResources is a copy of u's container with r's cpu and memory.
func containerWithResources(pod *v1.Pod, u containerResize, r v1.ResourceRequirements) *v1.Container {
	list := pod.Spec.Containers
	if u.sidecar {
		list = pod.Spec.InitContainers
	}
	for i := range list {
		if list[i].Name == u.name {
			c := list[i]
			c.Resources = *r.DeepCopy()
			return &c
		}
	}
	return &v1.Container{Name: u.name}
}

// podCgroupSteps splits the change of the pod cgroup for resource n into
// what is written before the containers (what grows) and after them
// (what shrinks). Unlimited (or unset) counts as the largest value.
func podCgroupSteps(n v1.ResourceName, before, after cgroups.Resources) (grow, shrink cgroups.Resources) {
	cmpLimit := func(b, a *int64) int { // -1: shrinks, 1: grows, 0: same
		bv, av := limitValue(b), limitValue(a)
		switch {
		case av == bv:
			return 0
		case av > bv:
			return 1
		}
		return -1
	}
	if n == v1.ResourceMemory {
		switch cmpLimit(before.MemoryLimit, after.MemoryLimit) {
		case 1:
			grow.MemoryLimit = after.MemoryLimit
		case -1:
			shrink.MemoryLimit = after.MemoryLimit
		}
		return grow, shrink
	}
	switch cmpLimit(before.CPUQuota, after.CPUQuota) {
	case 1:
		grow.CPUQuota, grow.CPUPeriod = after.CPUQuota, after.CPUPeriod
	case -1:
		shrink.CPUQuota, shrink.CPUPeriod = after.CPUQuota, after.CPUPeriod
	}
	bs, as := ptr.Deref(before.CPUShares, 0), ptr.Deref(after.CPUShares, 0)
	switch {
	case as > bs:
		grow.CPUShares = after.CPUShares
	case as < bs:
		shrink.CPUShares = after.CPUShares
	}
	return grow, shrink
}

// limitValue is a limit for comparison: unset or unlimited is the largest.
func limitValue(p *int64) int64 {
	if p == nil || *p <= 0 {
		return 1<<63 - 1
	}
	return *p
}

// updatePodCgroup writes r (only what is set) to the pod's cgroup.
func (a *Agent) updatePodCgroup(pod *v1.Pod, r cgroups.Resources) error {
	if a.cgroups == nil || (r.CPUShares == nil && r.CPUQuota == nil && r.MemoryLimit == nil) {
		return nil
	}
	name := podCgroupName(pod, podQOSClass(pod))
	if err := a.cgroups.Update(name, r); err != nil {
		return fmt.Errorf("%w: update pod cgroup %s (%s): %v", errResize, a.cgroups.Path(name), r, err)
	}
	return nil
}

// checkMemoryDecrease refuses a memory limit below what the container uses
// now (the kubelet's validateMemoryResizeAction): the kernel would OOM-kill
// it, or refuse the write. Best effort: without usage figures from the
// runtime the update goes ahead.
func (a *Agent) checkMemoryDecrease(ctx context.Context, w *podWorker, pod *v1.Pod, list []containerResize) error {
	sl, ok := a.runtime.(ContainerStatsLister)
	if !ok {
		return nil
	}
	w.mu.Lock()
	actuated := clonePodResources(w.actuated)
	w.mu.Unlock()
	var errs []error
	for _, u := range list {
		want := containerReqs(pod, u).Limits[v1.ResourceMemory]
		act, had := actuated[u.name].Limits[v1.ResourceMemory]
		if want.IsZero() || (had && want.Cmp(act) >= 0) {
			continue // no limit, or not decreasing
		}
		stats, err := sl.ListContainerStats(ctx, &runtimeapi.ContainerStatsFilter{Id: u.id})
		if err != nil || len(stats) == 0 || stats[0].GetMemory().GetUsageBytes() == nil {
			continue
		}
		if usage := stats[0].GetMemory().GetUsageBytes().GetValue(); usage >= uint64(want.Value()) {
			errs = append(errs, fmt.Errorf("attempting to set container %q memory limit (%d) below current usage (%d)", u.name, want.Value(), usage))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("%w: cannot decrease memory limits: %w", errResize, err)
	}
	return nil
}

// resizeInProgress reports whether a running resizable container's
// actuated resources differ from the allocated ones (the kubelet's
// IsPodResizeInProgress).
func resizeInProgress(pod *v1.Pod, actuated podResources, st *podState) bool {
	ra := computeResizeActions(pod, actuated, st)
	return !ra.empty()
}

// finishResize updates the PodResizeInProgress condition after a sync's
// resize step: an error sets reason Error; a resize fully actuated clears
// the condition with a ResizeCompleted event.
func (a *Agent) finishResize(w *podWorker, pod *v1.Pod, st *podState, err error) {
	now := metav1.NewTime(a.clock.Now())
	w.mu.Lock()
	cond := w.resizeInProgress
	actuated := clonePodResources(w.actuated)
	w.mu.Unlock()
	if err != nil {
		c := v1.PodCondition{Type: v1.PodResizeInProgress, Status: v1.ConditionTrue, Reason: v1.PodReasonError,
			Message: strings.TrimPrefix(err.Error(), errResize.Error()+": "), ObservedGeneration: pod.Generation, LastTransitionTime: now, LastProbeTime: now}
		if cond != nil {
			c.ObservedGeneration = cond.ObservedGeneration
			if cond.Reason == c.Reason {
				c.LastTransitionTime = cond.LastTransitionTime
			}
		}
		w.mu.Lock()
		w.resizeInProgress = &c
		w.mu.Unlock()
		if cond == nil || cond.Message != c.Message {
			w.event(v1.EventTypeWarning, eventResizeError, "Pod resize error: %s", resizeSummary(pod, c.Message))
		}
		return
	}
	if cond == nil || resizeInProgress(pod, actuated, st) {
		return
	}
	w.mu.Lock()
	w.resizeInProgress = nil
	w.mu.Unlock()
	w.event(v1.EventTypeNormal, eventResizeCompleted, "Pod resize completed: %s", resizeSummary(pod, ""))
}

// recordActuated notes that c's new instance was created with its
// (allocated) resources, and checkpoints it when that is news: a daemon
// restarted later then knows what runs, even if the spec changed while it
// was down (the kubelet writes its actuated state at creation too).
func (a *Agent) recordActuated(w *podWorker, c *v1.Container) {
	r := resizableResources(c.Resources)
	w.mu.Lock()
	if w.actuated == nil {
		w.mu.Unlock()
		return
	}
	old, had := w.actuated[c.Name]
	w.actuated[c.Name] = r
	w.mu.Unlock()
	if !had || !sameRequirements(old, r) {
		a.saveResize(w)
	}
}

// resizeConditions are the pod's resize conditions now (none for a pod in
// a terminal phase, as the kubelet's determinePodResizeStatus).
func (w *podWorker) resizeConditions(phase v1.PodPhase) []v1.PodCondition {
	if phase == v1.PodSucceeded || phase == v1.PodFailed {
		return nil
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []v1.PodCondition
	if c := w.resizePending; c != nil {
		out = append(out, *c)
	}
	if c := w.resizeInProgress; c != nil {
		out = append(out, *c)
	}
	return out
}

// containerStatusResources is what status.containerStatuses[*] reports of
// c's resources: allocatedResources are the allocated requests; resources
// the actuated requests and limits of a running container (the CRI's
// values, as the kubelet reads them back), else the allocated ones.
func (w *podWorker) containerStatusResources(c *v1.Container, running bool) (v1.ResourceList, *v1.ResourceRequirements) {
	w.mu.Lock()
	defer w.mu.Unlock()
	alloc, ok := w.allocated[c.Name]
	if !ok {
		return nil, nil
	}
	r := alloc
	if act, ok := w.actuated[c.Name]; ok && running {
		r = act
	}
	out := resizableResources(r)
	var requests v1.ResourceList
	if len(alloc.Requests) > 0 {
		requests = resizableResources(alloc).Requests
	}
	return requests, &out
}

// refreshAllocatedLocked recomputes the allocated view of the spec (w.mu
// held).
func (w *podWorker) refreshAllocatedLocked() {
	w.allocPod = nil
	if w.allocated != nil {
		if p := withResources(w.spec, w.allocated); p != w.spec {
			w.allocPod = p
		}
	}
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

// planResize computes the sync's resize (computeResizeActions) and merges
// the restarts it asks for into act: the container is killed ("Container X
// resize requires restart", as the kubelet says) and started again with
// its new resources. Nothing is resized while the pod is killed or its
// sandbox recreated: everything then starts with the allocated resources.
func (a *Agent) planResize(w *podWorker, pod *v1.Pod, st *podState, act *podActions) resizeActions {
	w.mu.Lock()
	actuated := clonePodResources(w.actuated)
	w.mu.Unlock()
	if act.KillPod || act.CreateSandbox {
		return resizeActions{}
	}
	ra := computeResizeActions(pod, actuated, st)
	for id, name := range ra.restart {
		if _, ok := act.ContainersToKill[id]; ok {
			continue // killed anyway (a probe, a new definition)
		}
		act.ContainersToKill[id] = killReason{Name: name, Message: fmt.Sprintf("Container %s resize requires restart", name)}
	}
	for _, i := range ra.restartApp {
		if !slices.Contains(act.ContainersToStart, i) {
			act.ContainersToStart = append(act.ContainersToStart, i)
		}
	}
	for _, i := range ra.restartSidecar {
		if !slices.Contains(act.InitContainersToStart, i) {
			act.InitContainersToStart = append(act.InitContainersToStart, i)
		}
	}
	return ra
}
