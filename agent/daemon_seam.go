package agent

// What the engine offers the daemon above it (agent/daemon, which this
// package never imports): the pods by name, orphan collection, and the
// few hooks and facts the daemon's loop and its local API backend use.
// The engine parts of the daemon's work (collectOrphans, findPod,
// listPods) live here; the daemon calls them through the exported names.

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/utils/clock"

	"github.com/minikubelet/minikubelet/agent/eviction"
	"github.com/minikubelet/minikubelet/agent/node"
	"github.com/minikubelet/minikubelet/agent/podevents"
	"github.com/minikubelet/minikubelet/agent/podspec"
	"github.com/minikubelet/minikubelet/agent/safepath"
	"github.com/minikubelet/minikubelet/agent/source"
	"github.com/minikubelet/minikubelet/agent/volume"
	"github.com/minikubelet/minikubelet/cri"
	"github.com/minikubelet/minikubelet/probes"
)

// PodWorker is what the daemon sees of a pod's worker (FindPod).
type PodWorker interface {
	// Pod is the newest desired spec; read-only.
	Pod() *v1.Pod
	// Snapshot is a copy of the pod carrying its current status.
	Snapshot() *v1.Pod
	// Events is a copy of the pod's events, oldest first.
	Events() []podevents.Event
	// Steps is a copy of the pod's startup trace, in order.
	Steps() []podevents.Step
	// Terminating reports whether the worker tears its pod down.
	Terminating() bool
	// SetDeletion marks the pod deleted through the local API, with an
	// optional grace period, at the agent's clock's now (the API plays
	// the API server: the generation is bumped).
	SetDeletion(grace *int64)
}

func (w *podWorker) Pod() *v1.Pod              { return w.pod() }
func (w *podWorker) Snapshot() *v1.Pod         { return w.snapshot() }
func (w *podWorker) Events() []podevents.Event { return w.eventList() }
func (w *podWorker) Terminating() bool         { return w.isTerminating() }
func (w *podWorker) SetDeletion(grace *int64) {
	w.setDeletion(grace, w.a.clock.Now(), true)
}

func (w *podWorker) Steps() []podevents.Step {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]podevents.Step(nil), w.steps...)
}

// FindPod returns the worker of the pod namespace/name, or the rejected
// pod (read-only), or neither (findPod).
func (a *Agent) FindPod(namespace, name string) (PodWorker, *v1.Pod) {
	w, rejected := a.findPod(namespace, name)
	if w == nil {
		return nil, rejected // never a nil *podWorker in the interface
	}
	return w, nil
}

// ListPods returns every known pod with its status (listPods).
func (a *Agent) ListPods() []*v1.Pod { return a.listPods() }

// CollectOrphans is collectOrphans, for the daemon once every source's
// first set arrived.
func (a *Agent) CollectOrphans(ctx context.Context, desired map[types.UID]bool) error {
	return a.collectOrphans(ctx, desired)
}

// GateOrphans is gateOrphans: call before Run.
func (a *Agent) GateOrphans() (open func()) { return a.gateOrphans() }

// Logger is the agent's logger.
func (a *Agent) Logger() *slog.Logger { return a.logger }

// RunLogRotation rotates the containers' logs until ctx ends.
func (a *Agent) RunLogRotation(ctx context.Context, cfg LogRotationConfig) {
	a.newLogRotator().Run(ctx, cfg)
}

// ConfigScopeNode is the scope of the node's ConfigMaps and Secrets (the
// manifest directory's and the local API's); every other pod source is a
// scope of its own, named after it.
const ConfigScopeNode = configScopeNode

// ConfigSet is the ConfigMaps and Secrets of one scope.
type ConfigSet = configSet

// configSet is the ConfigMaps and Secrets of one scope (agent/source).
type configSet = source.ConfigSet

// SetConfigScopes hands the agent every scope's ConfigMaps and Secrets.
func (a *Agent) SetConfigScopes(sets map[string]ConfigSet) { a.setConfigScopes(sets) }

// MarkDeleted is markDeleted: the deletion mark and grace period the
// sources set on the pods they are deleting (all of them, each time) reach
// their workers before SetPods tears them down.
func (a *Agent) MarkDeleted(pods []*v1.Pod) { a.markDeleted(pods) }

// FinalStatusStore keeps the final status of the local API's pods, so a
// finished pod is not run again after a restart (agent/source.PodStore).
type FinalStatusStore = finalStatusStore

// SetFinalStatusStore makes s keep the local API's pods' final status;
// call before Run.
func (a *Agent) SetFinalStatusStore(s FinalStatusStore) { a.finalStatus = s }

// PodLifecycle is told when a pod appears in the agent and when it leaves
// it. Calls are made with the agent's lock held: they must not block nor
// call back into the agent.
type PodLifecycle interface {
	// PodAdded receives a copy of a new pod with its initial status.
	PodAdded(pod *v1.Pod)
	// PodGone receives the pod (read-only) whose teardown finished, or
	// the rejected pod no source wants any more.
	PodGone(pod *v1.Pod)
}

// SetPodLifecycle registers l; call before Run.
func (a *Agent) SetPodLifecycle(l PodLifecycle) { a.lifecycle = lifecycleOf{l} }

// podLifecycle is PodLifecycle as the engine calls it.
type podLifecycle interface {
	podAdded(pod *v1.Pod)
	podGone(pod *v1.Pod)
}

type lifecycleOf struct{ l PodLifecycle }

func (f lifecycleOf) podAdded(pod *v1.Pod) { f.l.PodAdded(pod) }
func (f lifecycleOf) podGone(pod *v1.Pod)  { f.l.PodGone(pod) }

// NodeName is the node's name.
func (a *Agent) NodeName() string { return a.cfg.NodeName }

// NodeInfo is what the agent knows of its node (capacity, allocatable).
func (a *Agent) NodeInfo() node.Info { return a.cfg.Node }

// Clock is the agent's clock.
func (a *Agent) Clock() clock.PassiveClock { return a.clock }

// RuntimeTimeout bounds one runtime call.
func (a *Agent) RuntimeTimeout() time.Duration { return a.cfg.RuntimeTimeout }

// Runtime is the CRI runtime the agent uses.
func (a *Agent) Runtime() cri.Runtime { return a.runtime }

// EvictionManager is the eviction manager, nil unless EnableEviction ran.
func (a *Agent) EvictionManager() *eviction.Manager { return a.eviction }

// PodCgroupPath is the pod's cgroup ("" without cgroups).
func (a *Agent) PodCgroupPath(pod *v1.Pod) string { return a.podCgroups().Path(pod) }

// ProbeStatus is the state of the pod's probes.
func (a *Agent) ProbeStatus(uid types.UID) []probes.ProbeStatus { return a.probes.PodStatus(uid) }

// LastRelist is when a relist last succeeded (zero: none yet).
func (a *Agent) LastRelist() time.Time {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.lastRelist
}

// NetworkReady is the runtime's NetworkReady condition, asked now (a ready
// answer is remembered for the pods' starts: Deps.NetworkReady).
func (a *Agent) NetworkReady(ctx context.Context) (ok bool, reason, message string, err error) {
	return a.readyCache.Ask(ctx, a.cfg.Network, a.networkReady)
}

// LatestContainer is the newest instance of the pod's container named
// name in the runtime: its ID and state; found is false when it has none.
func (a *Agent) LatestContainer(ctx context.Context, pod *v1.Pod, name string) (id string, state runtimeapi.ContainerState, found bool, err error) {
	st, err := a.observePod(ctx, pod)
	if err != nil {
		return "", 0, false, err
	}
	c := st.latest(name)
	if c == nil {
		return "", 0, false, nil
	}
	return c.id, c.state, true, nil
}

// collectOrphans tears down every pod this agent created that no source
// wants (the agent's restart found them in the runtime), using only what
// the runtime's labels and annotations tell, as the kubelet does; and
// removes pod cgroups of pods that exist nowhere. Pods of another
// minikubelet on the runtime (a foreground run, another daemon) are left
// alone and logged (agent_identity.go).
func (a *Agent) collectOrphans(ctx context.Context, desired map[types.UID]bool) error {
	sbs, err := a.runtime.ListPodSandbox(ctx, &runtimeapi.PodSandboxFilter{LabelSelector: map[string]string{podspec.LabelManagedBy: podspec.ManagedByValue}})
	if err != nil {
		return fmt.Errorf("list sandboxes: %w", err)
	}
	for _, n := range node.ForeignPodNotices(a.foreignPods(sbs)) {
		a.logger.Info(n)
	}
	a.mu.Lock()
	if a.stopping {
		a.mu.Unlock()
		return nil
	}
	for _, sb := range sbs {
		if !desired[types.UID(sb.Labels[podspec.LabelPodUID])] && a.ownsObject(sb.Labels) {
			a.tearDownOrphanLocked(sb, "Removing a pod no source wants")
		}
	}
	a.mu.Unlock()

	// Every sandbox counts as live, another minikubelet's too: its subPath
	// mounts and its pod cgroup are not this agent's to remove.
	live := map[types.UID]bool{}
	for _, sb := range sbs {
		live[types.UID(sb.Labels[podspec.LabelPodUID])] = true
	}
	// Pinned subPath mounts of pods that exist nowhere (a teardown cut
	// short): no mount outlives its pod.
	var errs []error
	// Another agent's pod dir (a foreground run sharing the root dir) is
	// its to clean.
	busy := func(uid types.UID) bool { return a.hasWorker(uid) || a.foreignPodDir(uid) }
	if err := a.volumes().CleanupStaleSubPaths(desired, live, busy); err != nil {
		errs = append(errs, err)
	}
	// Pod cgroups whose pod has no sandbox and no source, of pods this
	// agent made (it creates the pod dir under its root dir first, and
	// removes it last): another agent on the machine (a test's, with its
	// own containerd) may be starting that pod right now, and so may a
	// foreground run sharing this root dir (its ID is in the pod dir).
	dir := func(uid types.UID) string { return a.podDir(&v1.Pod{ObjectMeta: metav1.ObjectMeta{UID: uid}}) }
	keep := func(uid types.UID) bool {
		if live[uid] || desired[uid] || a.hasWorker(uid) {
			return true
		}
		_, err := os.Stat(dir(uid))
		return err != nil || a.foreignPodDir(uid)
	}
	removed := func(uid types.UID) error {
		if err := volume.UnmountUnder(dir(uid)); err != nil {
			return err
		}
		return safepath.RemoveAll(dir(uid)) // never through a mount left there
	}
	errs = append(errs, a.podCgroups().SweepOrphans(keep, removed))
	return errors.Join(errs...)
}

// tearDownOrphanLocked starts a worker tearing down the pod of sandbox sb,
// as its labels tell it, unless they name no pod or the pod has a worker
// (wanted meanwhile: collection runs after the agent started when a
// source answered late; or another of its sandboxes came first). The QoS
// class finds the pod cgroup; the grace period comes from the containers'
// annotations (killPod reads them per container). a.mu is held,
// a.stopping false.
func (a *Agent) tearDownOrphanLocked(sb *runtimeapi.PodSandbox, why string) {
	uid := types.UID(sb.Labels[podspec.LabelPodUID])
	if uid == "" || a.workers[uid] != nil {
		return
	}
	p := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: sb.Labels[podspec.LabelPodName], Namespace: sb.Labels[podspec.LabelPodNamespace], UID: uid}}
	p.Status.QOSClass = v1.PodQOSClass(sb.Annotations[podspec.AnnotationQOSClass])
	a.logger.Info(why, "pod", p.Namespace+"/"+p.Name, "podUID", string(uid))
	rp := a.rejected[uid]
	if rp != nil {
		p.Annotations = rp.Annotations // its source: a local pod's events stay local
	}
	w := newPodWorker(a, p)
	w.terminating, w.orphan, w.quiet = true, true, rp != nil
	a.workers[uid] = w
	a.startWorkerGoroutineLocked(w)
}

// hasWorker reports whether the pod uid has a worker.
func (a *Agent) hasWorker(uid types.UID) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.workers[uid] != nil
}

// findPod returns the worker of the pod namespace/name, or the rejected pod.
// While a replaced pod (a changed manifest file, an update through the
// API) is torn down, two workers hold the name: the one still desired wins.
func (a *Agent) findPod(namespace, name string) (*podWorker, *v1.Pod) {
	a.mu.Lock()
	defer a.mu.Unlock()
	var found *podWorker
	for _, w := range a.workers {
		p := w.pod()
		if p.Namespace == namespace && p.Name == name && !w.quiet {
			if !w.isTerminating() {
				return w, nil
			}
			found = w
		}
	}
	if found != nil {
		return found, nil
	}
	for _, p := range a.rejected {
		if p.Namespace == namespace && p.Name == name {
			return nil, p
		}
	}
	return nil, nil
}

// listPods returns every known pod with its status.
func (a *Agent) listPods() []*v1.Pod {
	a.mu.Lock()
	workers := make([]*podWorker, 0, len(a.workers))
	for _, w := range a.workers {
		if !w.quiet {
			workers = append(workers, w)
		}
	}
	var out []*v1.Pod
	for _, p := range a.rejected {
		out = append(out, p.DeepCopy())
	}
	a.mu.Unlock()
	for _, w := range workers {
		out = append(out, w.snapshot())
	}
	return out
}

// StopWorkers ends every worker goroutine without touching the runtime
// (stopWorkers; Run does it when its context ends): the pods keep running.
func (a *Agent) StopWorkers() { a.stopWorkers() }

// ConfigMapFor is the ConfigMap name as the pod sees it (its namespace and
// scope: the node's, or its source's); volume.ErrConfigNotFound when there
// is none.
func (a *Agent) ConfigMapFor(pod *v1.Pod, name string) (*v1.ConfigMap, error) {
	return a.configData().ConfigMap(pod, name)
}

// SecretFor is the Secret name as the pod sees it, as ConfigMapFor.
func (a *Agent) SecretFor(pod *v1.Pod, name string) (*v1.Secret, error) {
	return a.configData().Secret(pod, name)
}

// PodTables counts the entries of the engine's per-pod tables: workers,
// rejected pods, pods to restart after a teardown, back-off entries and
// cached termination messages; a leak check expects none once every pod
// is gone.
func (a *Agent) PodTables() map[string]int {
	out := map[string]int{}
	out["crash back-off entries"] = a.crashBackoff.Len()
	out["image back-off entries"] = a.imageBackoff.Len()
	a.mu.Lock()
	out["workers"] = len(a.workers)
	out["rejected"] = len(a.rejected)
	out["restartAfterTeardown"] = len(a.restartAfterTeardown)
	a.mu.Unlock()
	out["termination messages"] = a.termMessages.Len()
	return out
}
