package resize

import (
	"errors"
	"fmt"
	"slices"

	v1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
)

// ErrResize marks a failed resize step (the kubelet's
// ErrResizePodInPlace); the PodResizeInProgress condition's Error message
// is what follows it.
var ErrResize = errors.New("ResizePodInPlaceError")

// Container is one container's update in a resize pass.
type Container struct {
	// Name is the container's.
	Name string
	// Sidecar: an init container (spec.initContainers).
	Sidecar bool
	// ID is the running instance's.
	ID string
}

// Actions is the plan of a resize (the kubelet's ContainersToUpdate and the
// restarts of computePodResizeAction), computed without I/O.
type Actions struct {
	// Restart maps the running instances to kill for a restart
	// (RestartContainer policy) to their container's name.
	Restart map[string]string
	// RestartApp and RestartSidecar are the indexes (in spec.containers and
	// spec.initContainers) to start again.
	RestartApp, RestartSidecar []int
	// Update holds, per resource (cpu, memory), the containers to update
	// in place: decreases first, then increases.
	Update map[v1.ResourceName][]Container
}

// Empty reports whether nothing is to be done.
func (r Actions) Empty() bool {
	return len(r.Restart) == 0 && !r.InPlace()
}

// InPlace reports whether a container is to be updated in place.
func (r Actions) InPlace() bool {
	return len(r.Update[v1.ResourceCPU]) > 0 || len(r.Update[v1.ResourceMemory]) > 0
}

// Starts adds the indexes of r's restarts to a sync plan's app and init
// container starts (apps, inits), each once.
func (r Actions) Starts(apps, inits []int) ([]int, []int) {
	add := func(to, from []int) []int {
		for _, i := range from {
			if !slices.Contains(to, i) {
				to = append(to, i)
			}
		}
		return to
	}
	return add(apps, r.RestartApp), add(inits, r.RestartSidecar)
}

// UpdateOrder is the order of the in-place passes: memory first, then cpu
// (the kubelet's doPodResizeAction).
var UpdateOrder = []v1.ResourceName{v1.ResourceMemory, v1.ResourceCPU}

// policy is c's restart policy for resource n (NotRequired when not
// given, as the API defaults it).
func policy(c *v1.Container, n v1.ResourceName) v1.ResourceResizeRestartPolicy {
	for _, p := range c.ResizePolicy {
		if p.ResourceName == n {
			return p.RestartPolicy
		}
	}
	return v1.NotRequired
}

// Plan compares, for each running resizable container, the allocated
// resources (pod's) with the actuated ones, as the kubelet's
// computePodResizeAction: a changed resource whose policy is
// RestartContainer restarts the container; otherwise each changed resource
// is updated in place, decreases before increases. running is the ID of a
// container's running instance in the pod's current sandbox ("" when it
// does not run there). A container without an actuated record (created by
// a version before resize) counts as actuated with its allocation. A pod
// being deleted is not resized.
func Plan(pod *v1.Pod, actuated Resources, running func(name string) string) Actions {
	ra := Actions{Restart: map[string]string{}, Update: map[v1.ResourceName][]Container{}}
	if pod.DeletionTimestamp != nil {
		return ra
	}
	idx := func(list []v1.Container, name string) int {
		return slices.IndexFunc(list, func(c v1.Container) bool { return c.Name == name })
	}
	EachContainer(&pod.Spec, func(c *v1.Container, sidecar bool) {
		id := running(c.Name)
		if id == "" {
			return
		}
		act, ok := actuated[c.Name]
		if !ok {
			return
		}
		want := Resizable(c.Resources)
		var changed []v1.ResourceName
		for _, n := range UpdateOrder {
			if !sameQuantity(want.Requests, act.Requests, n) || !sameQuantity(want.Limits, act.Limits, n) {
				changed = append(changed, n)
			}
		}
		if len(changed) == 0 {
			return
		}
		for _, n := range changed {
			if policy(c, n) == v1.RestartContainer {
				ra.Restart[id] = c.Name
				if sidecar {
					ra.RestartSidecar = append(ra.RestartSidecar, idx(pod.Spec.InitContainers, c.Name))
				} else {
					ra.RestartApp = append(ra.RestartApp, idx(pod.Spec.Containers, c.Name))
				}
				return
			}
		}
		for _, n := range changed {
			u := Container{Name: c.Name, Sidecar: sidecar, ID: id}
			if increases(want, act, n) {
				ra.Update[n] = append(ra.Update[n], u)
			} else {
				ra.Update[n] = append([]Container{u}, ra.Update[n]...)
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

// increases reports whether the change of n from act to want raises the
// limit (or removes it), or else the request: the kubelet's
// markContainerForUpdate order key.
func increases(want, act v1.ResourceRequirements, n v1.ResourceName) bool {
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

// Requirements is the allocated cpu and memory of u's container in pod.
func Requirements(pod *v1.Pod, u Container) v1.ResourceRequirements {
	if c := find(pod, u); c != nil {
		return Resizable(c.Resources)
	}
	return v1.ResourceRequirements{}
}

// ContainerWith is a copy of u's container in pod with r as its resources
// (a container of that name alone when pod has none).
func ContainerWith(pod *v1.Pod, u Container, r v1.ResourceRequirements) *v1.Container {
	if c := find(pod, u); c != nil {
		out := *c
		out.Resources = *r.DeepCopy()
		return &out
	}
	return &v1.Container{Name: u.Name}
}

// find is u's container in pod's spec, nil when none.
func find(pod *v1.Pod, u Container) *v1.Container {
	list := pod.Spec.Containers
	if u.Sidecar {
		list = pod.Spec.InitContainers
	}
	for i := range list {
		if list[i].Name == u.Name {
			return &list[i]
		}
	}
	return nil
}

// CheckMemoryDecrease refuses a memory limit of list's containers below
// what the container uses now (the kubelet's validateMemoryResizeAction):
// the kernel would OOM-kill it, or refuse the write. usage is the
// container's memory usage by its running instance's ID, ok false when
// the runtime does not say; the update then goes ahead (best effort). It
// is asked only of containers whose limit decreases.
func CheckMemoryDecrease(pod *v1.Pod, actuated Resources, list []Container, usage func(id string) (bytes uint64, ok bool)) error {
	var errs []error
	for _, u := range list {
		want := Requirements(pod, u).Limits[v1.ResourceMemory]
		act, had := actuated[u.Name].Limits[v1.ResourceMemory]
		if want.IsZero() || (had && want.Cmp(act) >= 0) {
			continue // no limit, or not decreasing
		}
		used, ok := usage(u.ID)
		if !ok {
			continue
		}
		if used >= uint64(want.Value()) {
			errs = append(errs, fmt.Errorf("attempting to set container %q memory limit (%d) below current usage (%d)", u.Name, want.Value(), used))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("%w: cannot decrease memory limits: %w", ErrResize, err)
	}
	return nil
}

// PodCgroup is what a resize pass writes to the pod cgroup, the fields of
// the engine's cgroups.Resources it changes (nil: not written). A limit or
// quota ≤ 0 is unlimited.
type PodCgroup struct {
	CPUShares   *uint64
	CPUQuota    *int64
	CPUPeriod   *uint64
	MemoryLimit *int64
}

// PodCgroupSteps splits the change of the pod cgroup for resource n from
// before to after into what is written before the containers are updated
// (what grows) and after them (what shrinks), so the pod's limit never
// falls below the sum of its containers'. Unlimited (or unset) counts as
// the largest value; cpu shares follow the requests.
func PodCgroupSteps(n v1.ResourceName, before, after PodCgroup) (grow, shrink PodCgroup) {
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

// empty reports whether nothing is to be written.
func (p PodCgroup) empty() bool {
	return p.CPUShares == nil && p.CPUQuota == nil && p.MemoryLimit == nil
}

// Step is one write of a resize in place (Steps): the pod cgroup when
// Container is empty, otherwise one container's update.
type Step struct {
	// PodCgroup is what is written to the pod cgroup (only what is set).
	PodCgroup PodCgroup
	// Container is the container to update, ID its running instance.
	Container, ID string
	// Resources are the container's cpu and memory once updated: this
	// pass's resource at its new value, the other one as actuated (the
	// kubelet's updatePodContainerResources). The engine records them as
	// actuated when the update succeeded.
	Resources v1.ResourceRequirements
	// Pod and Spec are what the engine translates into the runtime's
	// resources: the pod with the resources actuated so far (for its QoS
	// class), and the container with Resources.
	Pod  *v1.Pod
	Spec *v1.Container
}

// Steps orders the in-place updates of ra (pod is the allocated view) as
// the kubelet's doPodResizeAction: memory first, then cpu; for each, the
// pod cgroup before the containers when its limit or request grows, after
// them when it shrinks (PodCgroupSteps over podCgroup, the pod cgroup's
// values for a pod). actuated is what the running containers have now
// (not changed); each step counts the ones before it as done, so the
// engine stops at the first that fails.
func Steps(pod *v1.Pod, actuated Resources, ra Actions, podCgroup func(*v1.Pod) PodCgroup) []Step {
	actuated = actuated.Clone()
	var out []Step
	for _, n := range UpdateOrder {
		list := ra.Update[n]
		if len(list) == 0 {
			continue
		}
		// The pod cgroup's values before and after this pass.
		before := podCgroup(WithResources(pod, actuated))
		next := actuated.Clone()
		for _, u := range list {
			r := next[u.Name]
			Set(&r, n, Requirements(pod, u))
			next[u.Name] = r
		}
		grow, shrink := PodCgroupSteps(n, before, podCgroup(WithResources(pod, next)))
		if !grow.empty() {
			out = append(out, Step{PodCgroup: grow})
		}
		for _, u := range list {
			r := actuated[u.Name]
			Set(&r, n, Requirements(pod, u))
			c := ContainerWith(pod, u, r)
			out = append(out, Step{Container: u.Name, ID: u.ID, Resources: *r.DeepCopy(), Pod: WithResources(pod, actuated), Spec: c})
			actuated[u.Name] = r
		}
		if !shrink.empty() {
			out = append(out, Step{PodCgroup: shrink})
		}
	}
	return out
}
