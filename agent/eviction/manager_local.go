package eviction

// Local storage eviction (the kubelet's localStorageEviction), step 3 of
// the eviction manager's cycle: every cycle, whether or not the node is
// under pressure, the pods with local storage limits (a disk emptyDir
// with a sizeLimit, an ephemeral-storage limit) are measured
// (StatsProvider.LocalStorage) and each pod past one is evicted at once
// with the kubelet's message (LocalStorageViolation, local.go: the
// decision); this file measures, evicts and records.

import (
	"context"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/minikubelet/minikubelet/agent/podspec"
)

// localStorageEviction evicts every evictable pod past one of its local
// storage limits and returns them. As in the kubelet, the grace period is
// immediateEvictionGracePeriodSeconds whatever the pod asks (killContainer's
// 2 s minimum applies), critical pods are never evicted, and the status
// gets no DisruptionTarget condition.
func (m *Manager) localStorageEviction(ctx context.Context, obs NodeObservation, now time.Time) []*v1.Pod {
	var pods []*v1.Pod
	for _, p := range m.pods.Evictable() {
		if HasLocalStorageLimits(p) {
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
		_, limits := podspec.PodRequestsAndLimits(p)
		var podLimit *resource.Quantity
		if q, ok := limits[v1.ResourceEphemeralStorage]; ok {
			podLimit = &q
		}
		signal, msg := LocalStorageViolation(p, usage[p.UID], podLimit, dedicated)
		if msg == "" {
			continue
		}
		if !m.pods.Evict(p.UID, immediateEvictionGracePeriodSeconds, msg, false) {
			continue
		}
		m.record(p, signal, immediateEvictionGracePeriodSeconds, msg, now)
		evicted = append(evicted, p)
	}
	return evicted
}
