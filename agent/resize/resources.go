package resize

import (
	"slices"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"

	"github.com/minikubelet/minikubelet/agent/manifest"
)

// Resources maps a resizable container's name to its cpu and memory
// requests and limits.
type Resources map[string]v1.ResourceRequirements

// resizable are the resources a resize changes, in the order they are
// compared.
var resizable = []v1.ResourceName{v1.ResourceCPU, v1.ResourceMemory}

// Resizable is r's cpu and memory requests and limits only.
func Resizable(r v1.ResourceRequirements) v1.ResourceRequirements {
	pick := func(l v1.ResourceList) v1.ResourceList {
		var out v1.ResourceList
		for _, n := range resizable {
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

// EachContainer calls fn for each resizable container of spec: native
// sidecars (sidecar true), then app containers.
func EachContainer(spec *v1.PodSpec, fn func(c *v1.Container, sidecar bool)) {
	for i := range spec.InitContainers {
		if manifest.IsSidecar(&spec.InitContainers[i]) {
			fn(&spec.InitContainers[i], true)
		}
	}
	for i := range spec.Containers {
		fn(&spec.Containers[i], false)
	}
}

// Of is the pod's resizable resources.
func Of(pod *v1.Pod) Resources {
	out := Resources{}
	EachContainer(&pod.Spec, func(c *v1.Container, _ bool) { out[c.Name] = Resizable(c.Resources) })
	return out
}

// SameRequirements compares two cpu/memory requirements semantically
// (100m equals 0.1); other resources are not compared.
func SameRequirements(a, b v1.ResourceRequirements) bool {
	return equality.Semantic.DeepEqual(Resizable(a), Resizable(b))
}

// Equal reports whether both hold the same requirements for every
// container of either.
func (p Resources) Equal(o Resources) bool {
	if len(p) != len(o) {
		return false
	}
	for name, r := range p {
		or, ok := o[name]
		if !ok || !SameRequirements(r, or) {
			return false
		}
	}
	return true
}

// Clone is a deep copy of p (never nil).
func (p Resources) Clone() Resources {
	out := make(Resources, len(p))
	for k, v := range p {
		out[k] = *v.DeepCopy()
	}
	return out
}

// WithResources returns pod with the resizable containers' resources taken
// from res (the allocated view); pod itself when nothing differs. The copy
// shares everything but the container lists; resources other than cpu and
// memory (ephemeral-storage) stay as the spec has them.
func WithResources(pod *v1.Pod, res Resources) *v1.Pod {
	differs := false
	EachContainer(&pod.Spec, func(c *v1.Container, _ bool) {
		if r, ok := res[c.Name]; ok && !SameRequirements(c.Resources, r) {
			differs = true
		}
	})
	if !differs {
		return pod
	}
	out := *pod
	out.Spec.Containers = slices.Clone(pod.Spec.Containers)
	out.Spec.InitContainers = slices.Clone(pod.Spec.InitContainers)
	EachContainer(&out.Spec, func(c *v1.Container, _ bool) {
		r, ok := res[c.Name]
		if !ok {
			return
		}
		c.Resources = *c.Resources.DeepCopy()
		for _, n := range resizable {
			Set(&c.Resources, n, r)
		}
	})
	return &out
}

// Set sets resource n of r's requests and limits to from's, removing it
// where from has none.
func Set(r *v1.ResourceRequirements, n v1.ResourceName, from v1.ResourceRequirements) {
	setOrDelete(&r.Requests, n, from.Requests)
	setOrDelete(&r.Limits, n, from.Limits)
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
