package agent

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"slices"

	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/minikubelet/minikubelet/agent/fingerprint"
	"github.com/minikubelet/minikubelet/agent/podcgroup"
	"github.com/minikubelet/minikubelet/agent/podspec"
)

// relister is the PLEG: every period it lists all of minikubelet's sandboxes
// and containers on the node (one ListPodSandbox and one ListContainers,
// however many pods there are) and reports the pods whose runtime objects
// changed since the last relist and whose worker has not seen that change
// (the fingerprint of its newest observation differs): a worker's own sync
// ends with an observation, so what it created and started does not wake
// it again. A busy worker is not woken either; its change is looked at
// again at the next relist, against what its sync ended up observing.
//
// It runs every second whatever happens, so a relist in which nothing
// changed allocates nothing beyond the runtime's answers: the fingerprints
// (package fingerprint's format) are rendered into buffers kept between
// relists and compared with the previous ones in place; a string is made
// only for a pod whose fingerprint changed.
type relister struct {
	a *Agent
	// last is the previous fingerprint per pod UID; owned by the sync loop.
	last map[types.UID]string

	// Scratch reused by every relist (owned by the sync loop): parts holds
	// one entry per sandbox and container, whose rendered fingerprint part
	// is arena[start:end]; fp is one pod's joined fingerprint.
	parts []relistPart
	arena []byte
	fp    []byte
}

// relistPart is one runtime object of a relist: its pod and the range of
// relister.arena holding its fingerprint part.
type relistPart struct {
	uid        types.UID
	start, end int
}

func newRelister(a *Agent) *relister {
	return &relister{a: a, last: map[types.UID]string{}}
}

// relist returns the UIDs of pods whose sandboxes or containers appeared,
// disappeared or changed state, unbeknown to their worker.
func (r *relister) relist(ctx context.Context) ([]types.UID, error) {
	sel, ends := relistSelector(), r.a.workerEnds.Load()
	sbs, err := r.a.runtime.ListPodSandbox(ctx, &runtimeapi.PodSandboxFilter{LabelSelector: sel})
	if err != nil {
		return nil, fmt.Errorf("list sandboxes: %w", err)
	}
	ctrs, err := r.a.runtime.ListContainers(ctx, &runtimeapi.ContainerFilter{LabelSelector: sel})
	if err != nil {
		return nil, fmt.Errorf("list containers: %w", err)
	}
	// The burstable tier follows the Burstable pods that run (kubelet:
	// every minute and on pod changes; here every relist, from the
	// runtime, so several agents on one node agree): every minikubelet's.
	r.a.podCgroups().UpdateBurstableTier(podcgroup.BurstableMilli(sbs))
	// The rest (workers, metrics) is this agent's own objects only.
	sbs = slices.DeleteFunc(sbs, func(sb *runtimeapi.PodSandbox) bool { return !r.a.relistOwns(sb.Labels) })
	ctrs = slices.DeleteFunc(ctrs, func(c *runtimeapi.Container) bool { return !r.a.relistOwns(c.Labels) })
	r.parts, r.arena = r.parts[:0], r.arena[:0]
	ready := 0
	for _, sb := range sbs {
		start := len(r.arena)
		r.arena = fingerprint.AppendSandbox(r.arena, sb.Id, sb.State)
		r.parts = append(r.parts, relistPart{uid: types.UID(sb.Labels[podspec.LabelPodUID]), start: start, end: len(r.arena)})
		if sb.State == runtimeapi.PodSandboxState_SANDBOX_READY {
			ready++
		}
	}
	var states [4]int // created, running, exited, unknown
	for _, c := range ctrs {
		start := len(r.arena)
		r.arena = fingerprint.AppendContainer(r.arena, c.Id, c.State)
		r.parts = append(r.parts, relistPart{uid: types.UID(c.Labels[podspec.LabelPodUID]), start: start, end: len(r.arena)})
		if c.State >= 0 && int(c.State) < len(states) {
			states[c.State]++
		}
	}
	for s, name := range containerStateNames {
		r.a.metrics.RunningContainers.WithLabelValues(name).Set(float64(states[s]))
	}
	// Sorted by pod, and within a pod by part: each pod's parts are then
	// in joinFingerprint's order.
	slices.SortFunc(r.parts, func(x, y relistPart) int {
		if c := cmp.Compare(x.uid, y.uid); c != 0 {
			return c
		}
		return bytes.Compare(r.arena[x.start:x.end], r.arena[y.start:y.end])
	})

	r.a.mu.Lock()
	defer r.a.mu.Unlock()
	r.a.readySandboxes = ready
	r.a.lastRelist = r.a.clock.Now()
	var changed []types.UID
	// report decides for one pod whose objects changed since the last
	// relist; it returns false when the change must be looked at again
	// next time (its worker is busy).
	report := func(uid types.UID, fp []byte) bool {
		w, ok := r.a.workers[uid]
		if !ok {
			changed = append(changed, uid)
			return true
		}
		w.mu.Lock()
		busy, seen := w.busy, w.observed == string(fp)
		w.mu.Unlock()
		if busy {
			return false
		}
		if !seen {
			changed = append(changed, uid)
		}
		return true
	}
	for i := 0; i < len(r.parts); {
		// The pod of parts[i:j], joined as joinFingerprint does.
		uid := r.parts[i].uid
		r.fp = r.fp[:0]
		j := i
		for ; j < len(r.parts) && r.parts[j].uid == uid; j++ {
			if j > i {
				r.fp = append(r.fp, ',')
			}
			r.fp = append(r.fp, r.arena[r.parts[j].start:r.parts[j].end]...)
		}
		i = j
		last, known := r.last[uid]
		switch {
		case last == string(r.fp):
		case report(uid, r.fp):
			r.last[uid] = string(r.fp)
		case !known:
			r.last[uid] = "" // not dealt with: compare again
		}
	}
	// A running sandbox of this agent's whose pod has no worker, once the
	// orphans were collected, belongs to no pod any source wants: it came
	// after its pod's teardown listed it (containerd finished the
	// RunPodSandbox of a killed daemon late). It is torn down, as the
	// kubelet's housekeeping kills orphaned running pods
	// (HandlePodCleanups); a NOTREADY one is container GC's. Not when a
	// worker ended since the lists were asked for (its pod's sandbox may
	// be in them, gone since): the next relist sees. A pod admission
	// rejected at a restart is killed too (the kubelet's cleanup kills the
	// running pods of terminal ones), its rejection left as the status.
	if r.a.orphansCollectedLocked() && r.a.workerEnds.Load() == ends {
		for _, sb := range sbs {
			uid := types.UID(sb.Labels[podspec.LabelPodUID])
			if sb.State == runtimeapi.PodSandboxState_SANDBOX_READY && r.a.workers[uid] == nil && r.a.ownsObject(sb.Labels) {
				why := "Removing a running pod no source wants"
				if r.a.rejected[uid] != nil {
					why = "Killing what a pod admission rejected left running"
				}
				r.a.tearDownOrphanLocked(sb, why)
			}
		}
	}
	// Pods with no object left (a listed pod's fingerprint is never "").
	for uid := range r.last {
		if !r.listed(uid) && report(uid, nil) {
			delete(r.last, uid)
		}
	}
	return changed, nil
}

// listed reports whether the latest relist saw an object of pod uid
// (r.parts is sorted by pod).
func (r *relister) listed(uid types.UID) bool {
	_, ok := slices.BinarySearchFunc(r.parts, uid, func(p relistPart, uid types.UID) int { return cmp.Compare(p.uid, uid) })
	return ok
}

// containerStateNames are the label values of the running-containers
// gauge, indexed by runtimeapi.ContainerState.
var containerStateNames = [...]string{"created", "running", "exited", "unknown"}

// relistSelector is the label selector of the relister's runtime lists;
// container GC lists with it too.
func relistSelector() map[string]string {
	return map[string]string{podspec.LabelManagedBy: podspec.ManagedByValue}
}

// relistOwns reports whether an object the relister listed, by its labels,
// is this agent's: one it made (ownsObject, agent_identity.go), or one of a
// pod it runs, which it adopted by UID from an earlier agent whose label the
// objects keep (a `run` of the same file after a killed one). Another
// minikubelet's on the same runtime (a foreground run beside the daemon) is
// not. Without the second rule a crash in an adopted pod reached its worker
// only at the periodic resync (a minute) where the runtime streams no
// events (containerd 1.6); the kubelet's relist sees every container of
// its pods. Container GC and log rotation take only what this says (gc.go,
// logrotate.go), so they all agree on what is ours. It takes a.mu.
func (a *Agent) relistOwns(labels map[string]string) bool {
	if a.ownsObject(labels) {
		return true
	}
	uid := types.UID(labels[podspec.LabelPodUID])
	if labels[podspec.LabelManagedBy] != podspec.ManagedByValue || uid == "" {
		return false
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	_, runs := a.workers[uid]
	return runs
}
