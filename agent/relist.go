package agent

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// relister is the PLEG: every period it lists all of minikubelet's sandboxes
// and containers on the node (one ListPodSandbox and one ListContainers,
// however many pods there are) and reports the pods whose runtime objects
// changed since the last relist and whose worker has not seen that change
// (the fingerprint of its newest observation differs): a worker's own sync
// ends with an observation, so what it created and started does not wake
// it again. A busy worker is not woken either; its change is looked at
// again at the next relist, against what its sync ended up observing.
type relister struct {
	a *Agent
	// last is the previous fingerprint per pod UID; owned by the sync loop.
	last map[types.UID]string
}

func newRelister(a *Agent) *relister {
	return &relister{a: a, last: map[types.UID]string{}}
}

// relist returns the UIDs of pods whose sandboxes or containers appeared,
// disappeared or changed state, unbeknown to their worker.
func (r *relister) relist(ctx context.Context) ([]types.UID, error) {
	sel := map[string]string{labelManagedBy: managedByValue}
	sbs, err := r.a.runtime.ListPodSandbox(ctx, &runtimeapi.PodSandboxFilter{LabelSelector: sel})
	if err != nil {
		return nil, fmt.Errorf("list sandboxes: %w", err)
	}
	ctrs, err := r.a.runtime.ListContainers(ctx, &runtimeapi.ContainerFilter{LabelSelector: sel})
	if err != nil {
		return nil, fmt.Errorf("list containers: %w", err)
	}
	parts := map[types.UID][]string{}
	for _, sb := range sbs {
		uid := types.UID(sb.Labels[labelPodUID])
		parts[uid] = append(parts[uid], sandboxFingerprint(sb.Id, sb.State))
	}
	// The burstable tier follows the Burstable pods that run (kubelet:
	// every minute and on pod changes; here every relist, from the
	// runtime, so several agents on one node agree).
	r.a.updateBurstableTier(burstableMilli(sbs))
	ready := 0
	for _, sb := range sbs {
		if sb.State == runtimeapi.PodSandboxState_SANDBOX_READY {
			ready++
		}
	}
	states := map[string]int{}
	for _, c := range ctrs {
		states[strings.ToLower(strings.TrimPrefix(c.State.String(), "CONTAINER_"))]++
	}
	for _, s := range []string{"created", "running", "exited", "unknown"} {
		r.a.metrics.runningContainers.WithLabelValues(s).Set(float64(states[s]))
	}
	for _, c := range ctrs {
		uid := types.UID(c.Labels[labelPodUID])
		parts[uid] = append(parts[uid], containerFingerprint(c.Id, c.State))
	}
	now := make(map[types.UID]string, len(parts))
	for uid, p := range parts {
		now[uid] = joinFingerprint(p)
	}
	r.a.mu.Lock()
	defer r.a.mu.Unlock()
	r.a.readySandboxes = ready
	r.a.lastRelist = r.a.clock.Now()
	var changed []types.UID
	// report decides for one pod whose objects changed since the last
	// relist; it returns false when the change must be looked at again
	// next time (its worker is busy).
	report := func(uid types.UID, fp string) bool {
		w, ok := r.a.workers[uid]
		if !ok {
			changed = append(changed, uid)
			return true
		}
		w.mu.Lock()
		busy, seen := w.busy, w.observed == fp
		w.mu.Unlock()
		if busy {
			return false
		}
		if !seen {
			changed = append(changed, uid)
		}
		return true
	}
	for uid, fp := range now {
		if r.last[uid] != fp && !report(uid, fp) {
			now[uid] = r.last[uid] // not dealt with: compare again
		}
	}
	for uid, fp := range r.last {
		if _, ok := now[uid]; !ok && !report(uid, "") {
			now[uid] = fp
		}
	}
	r.last = now
	return changed, nil
}

// burstableMilli sums the CPU requests (millicores) of the Burstable pods
// whose sandboxes are ready, from the sandboxes' annotations.
func burstableMilli(sbs []*runtimeapi.PodSandbox) int64 {
	var sum int64
	for _, sb := range sbs {
		if sb.State == runtimeapi.PodSandboxState_SANDBOX_READY && sb.Annotations[annotationQOSClass] == string(v1.PodQOSBurstable) {
			m, _ := strconv.ParseInt(sb.Annotations[annotationCPURequest], 10, 64)
			sum += m
		}
	}
	return sum
}
