package agent

// Local storage eviction (the kubelet's localStorageEviction), step 3 of
// the eviction manager's cycle: every cycle, whether or not the node is
// under pressure, the pods with local storage limits (a disk emptyDir
// with a sizeLimit, an ephemeral-storage limit) are measured
// (EvictionStats.LocalStorage) and each pod past one is evicted at once
// with the kubelet's message (eviction.LocalStorageViolation). The
// decision is package eviction's; this file measures, evicts and records.

import (
	"context"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/minikubelet/minikubelet/agent/eviction"
)

// localStorageEviction evicts every evictable pod past one of its local
// storage limits and returns them. As in the kubelet, the grace period is
// immediateEvictionGracePeriodSeconds whatever the pod asks (killContainer's
// 2 s minimum applies), critical pods are never evicted, and the status
// gets no DisruptionTarget condition.
func (m *evictionManager) localStorageEviction(ctx context.Context, obs EvictionObservation, now time.Time) []*v1.Pod {
	var pods []*v1.Pod
	for _, p := range m.a.evictablePods() {
		if eviction.HasLocalStorageLimits(p) {
			pods = append(pods, p)
		}
	}
	if len(pods) == 0 {
		return nil
	}
	usage := m.cfg.Stats.LocalStorage(ctx, pods)
	// The kubelet's dedicatedImageFs: the image filesystem is known and is
	// not the node filesystem. When it is unknown (ImageFsInfo failed) the
	// writable layer counts: a container is never let past its limit for
	// want of an answer.
	dedicated := obs.ImageFsPath != "" && !obs.SameFs
	var evicted []*v1.Pod
	for _, p := range pods {
		_, limits := podRequestsAndLimits(p)
		var podLimit *resource.Quantity
		if q, ok := limits[v1.ResourceEphemeralStorage]; ok {
			podLimit = &q
		}
		signal, msg := eviction.LocalStorageViolation(p, usage[p.UID], podLimit, dedicated)
		if msg == "" {
			continue
		}
		if !m.a.evictPod(p.UID, immediateEvictionGracePeriodSeconds, msg, false) {
			continue
		}
		m.record(p, signal, immediateEvictionGracePeriodSeconds, msg, now)
		evicted = append(evicted, p)
	}
	return evicted
}
