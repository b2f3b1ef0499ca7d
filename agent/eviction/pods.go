package eviction

// What the engine offers the manager and keeps for each pod it evicts:
// Pods made of the engine's own methods (PodsFuncs), the pure part of
// which pods may be ranked (Evictable) and the decision the engine keeps
// on an evicted pod's worker (Decision).

import (
	"cmp"
	"slices"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// PodsFuncs is Pods made of three functions: the engine passes its own
// methods instead of keeping an adapter type.
type PodsFuncs struct {
	EvictableFunc func() []*v1.Pod
	EvictFunc     func(uid types.UID, grace int64, message string, disruption bool) bool
	CleanedUpFunc func(uid types.UID) (cleanedUp, gone <-chan struct{})
}

// Evictable implements Pods.
func (f PodsFuncs) Evictable() []*v1.Pod { return f.EvictableFunc() }

// Evict implements Pods.
func (f PodsFuncs) Evict(uid types.UID, grace int64, message string, disruption bool) bool {
	return f.EvictFunc(uid, grace, message, disruption)
}

// CleanedUp implements Pods.
func (f PodsFuncs) CleanedUp(uid types.UID) (cleanedUp, gone <-chan struct{}) {
	return f.CleanedUpFunc(uid)
}

// PodState is a pod the engine runs, with what Evictable needs of its
// worker's state, read under the worker's lock.
type PodState struct {
	Pod   *v1.Pod
	Phase v1.PodPhase
	// Stopping is set when the pod is terminating or already evicted.
	Stopping bool
}

// Evictable are the pods of states eviction may pick (Pods.Evictable),
// sorted by UID: neither stopping, nor in a terminal phase, nor critical
// (IsCritical).
func Evictable(states []PodState) []*v1.Pod {
	var out []*v1.Pod
	for _, c := range states {
		if c.Stopping || c.Phase == v1.PodSucceeded || c.Phase == v1.PodFailed || IsCritical(c.Pod) {
			continue
		}
		out = append(out, c.Pod)
	}
	slices.SortFunc(out, func(x, y *v1.Pod) int { return cmp.Compare(string(x.UID), string(y.UID)) })
	return out
}

// Decision is what the eviction manager decided for a pod (Pods.Evict):
// the engine keeps it on the pod's worker and kills the pod by it.
type Decision struct {
	Grace   int64
	Message string
	At      time.Time
	// Disruption adds the DisruptionTarget condition to the status: the
	// kubelet adds it for pressure evictions, not for local storage
	// limit evictions (its evictPod gets no condition there).
	Disruption bool
}
