package agent

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation/field"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/minikubelet/minikubelet/agent/api"
	"github.com/minikubelet/minikubelet/cgroups"
	"github.com/minikubelet/minikubelet/cri"
)

// Annotations that say where a pod comes from (the kubelet's config.source).
const (
	annotationConfigSource = "kubernetes.io/config.source"
	annotationSourceFile   = "minikubelet.io/source-file"
	sourceFile             = "file"
	sourceAPI              = "api"
)

// DaemonConfig holds what the daemon adds to the agent.
type DaemonConfig struct {
	// Version is the daemon's version string.
	Version string
	// RuntimeName, RuntimeVersion and RuntimeAPIVersion come from the CRI
	// handshake.
	RuntimeName, RuntimeVersion, RuntimeAPIVersion string
	// LogRotation rotates container logs (kubelet defaults 10Mi × 5).
	LogRotation LogRotationConfig
	// Sources are pod sources beside the manifest directory and the API
	// store, such as the cluster's API server. Each sends its complete set
	// under its own name (SourceUpdate.Source), the first once it knows it.
	Sources []Source
	// StaticPods, when set, is called with the manifest directory's pods
	// (the static pods) whenever that set changed, in order; the cluster
	// keeps their mirror pods with it. It must not block for long.
	StaticPods func(pods []*v1.Pod)
}

// Source is a pod source the daemon merges with its own. Run sends the
// source's complete set on out whenever it changed and must never block on
// out for long (DirSource's contract: newer sets replace an unsent one).
// out is unbuffered: once a send completed, every set sent before it has
// been applied. A pod a source sends with a DeletionTimestamp is being deleted there: the
// daemon tears it down with its DeletionGracePeriodSeconds (if set) and
// never starts it (the kubelet's handling of a pod the API server deletes
// gracefully).
type Source interface {
	Run(ctx context.Context, out chan<- SourceUpdate)
}

// firstSetWait bounds how long the daemon waits for every source's first
// set before starting the pods it has; orphan collection waits for them
// all, however long that takes.
const firstSetWait = 30 * time.Second

// Daemon is the long-running node agent (`minikubelet serve`): it merges the
// pod sources — the static manifest directory and the pods accepted through
// the API, which it persists — into the agent's desired set, removes what
// nobody wants any more (pods and pod cgroups a previous run left), rotates
// logs, and serves the local API (it implements api.Backend).
type Daemon struct {
	a     *Agent
	cfg   DaemonConfig
	store *PodStore
	dir   *DirSource

	// applyMu serialises apply, so the agent gets the merged sets in the
	// order the sources changed (API requests and the Run loop both apply).
	applyMu sync.Mutex
	// configApplied is the ConfigMaps and Secrets, by scope, last handed to
	// the agent (guarded by applyMu); nil before the first apply.
	configApplied map[string]configSet
	// storeGen is the generation of the store's set last applied, valid
	// once storeApplied (both guarded by applyMu).
	storeGen     uint64
	storeApplied bool
	// firstSetWait is the const unless a test shortens it.
	firstSetWait time.Duration
	// openOrphanGate tells the agent orphans were collected (PodDone).
	openOrphanGate func()

	// mu guards the fields below.
	mu sync.Mutex
	// sources holds the latest update of each source, by name.
	sources map[string]SourceUpdate
	// lastRelist is when the sync loop last completed a relist.
	lastRelist time.Time

	// watch streams pod changes to the API's watches (daemon_watch.go).
	watch *podWatchFeed
}

var _ api.Backend = (*Daemon)(nil)

// NewDaemon wires the agent to its sources. dir may be nil (no manifest
// directory).
func NewDaemon(a *Agent, store *PodStore, dir *DirSource, cfg DaemonConfig) *Daemon {
	return &Daemon{a: a, cfg: cfg, store: store, dir: dir, sources: map[string]SourceUpdate{}, firstSetWait: firstSetWait,
		watch: newPodWatchFeed(a)}
}

// Run runs the daemon until ctx ends. Pods keep running when it returns.
func (d *Daemon) Run(ctx context.Context) error {
	d.openOrphanGate = d.a.gateOrphans()
	// Unbuffered: a source's completed send means the daemon received
	// that set, so it applied every earlier one (the cluster source asks
	// PodDone only then: a pod of an earlier set is the agent's by then).
	updates := make(chan SourceUpdate)
	waiting := len(d.cfg.Sources)
	if d.dir != nil {
		waiting++
		go d.dir.Run(ctx, updates)
	}
	for _, src := range d.cfg.Sources {
		go src.Run(ctx, updates)
	}
	if d.dir == nil && d.cfg.StaticPods != nil {
		// No manifest directory: no static pods (mirror pods a previous
		// run left go).
		d.cfg.StaticPods(nil)
	}
	d.applyStore()

	// Orphans are collected only once the whole desired set is known: the
	// first set of every source must have arrived (a pod of a source that
	// has not answered yet, such as an API server still down, is not an
	// orphan). The pods known meanwhile start after firstSetWait at the
	// latest; orphans are then collected when the last source answers.
	seen := map[string]bool{}
	first := func(u SourceUpdate) {
		if !seen[u.Source] {
			seen[u.Source] = true
			waiting--
		}
	}
	timeout := time.NewTimer(d.firstSetWait)
	defer timeout.Stop()
wait:
	for waiting > 0 {
		select {
		case u := <-updates:
			first(u)
			d.apply(u)
		case <-d.store.Updates():
			d.applyStore()
		case <-timeout.C:
			d.a.logger.Warn("Not every pod source answered; starting the pods known so far, collecting orphans once all have answered",
				"waitedFor", d.firstSetWait, "answered", slices.Sorted(maps.Keys(seen)))
			break wait
		case <-ctx.Done():
			return nil
		}
	}
	collected := false
	collect := func() {
		if collected || waiting > 0 {
			return
		}
		collected = true
		if err := d.a.collectOrphans(ctx, d.desiredUIDs()); err != nil {
			d.a.logger.Warn("Orphan collection incomplete", "err", err)
		}
		d.openOrphanGate()
	}
	collect()

	agentDone := make(chan error, 1)
	go func() { agentDone <- d.a.Run(ctx) }()
	go d.a.runLogRotation(ctx, d.cfg.LogRotation)
	for {
		select {
		case <-ctx.Done():
			return <-agentDone
		case u := <-updates:
			if ctx.Err() != nil {
				continue // stopping: the agent's workers are going away
			}
			first(u)
			d.apply(u)
			collect()
		case <-d.store.Updates():
			d.applyStore()
		}
	}
}

// applyStore hands the API store's current set to the agent, unless that
// generation of the set was handed over already (by a concurrent API call:
// under load, one hand-over serves many). The set is read under applyMu:
// concurrent API calls each apply what the store holds when their turn
// comes, so a set read before a deletion can never be applied after it
// (the deleted pod would come back, and then no longer be deletable through
// the API). The store's signal is followed the same way. When it returns,
// the agent has every change the store committed before the call.
func (d *Daemon) applyStore() {
	d.applyMu.Lock()
	defer d.applyMu.Unlock()
	u, gen := d.store.snapshot()
	if d.storeApplied && gen == d.storeGen {
		return
	}
	d.applyLocked(u)
	d.storeGen, d.storeApplied = gen, true
}

// apply records one source's new set and hands the merged desired set to
// the agent. Two pods of the same namespace/name cannot both run: the
// local API refuses names another source's running pod uses, so a clash
// means a file (or a cluster pod) came later. The order of
// sourceOrderLocked decides: the API's pod, then the file's, then the
// cluster's; the other is reported. (A static file added later with a
// running cluster pod's name therefore replaces that pod: the node's own
// configuration wins.)
// For ConfigMaps and Secrets it is the other way round: the file's object
// wins (the manifest directory is the node's configuration), and the API's
// is reported and kept until it is deleted. The cluster's ConfigMaps and
// Secrets never clash with the node's: they are a scope of their own,
// which only the cluster's pods see (mergedConfigLocked).
func (d *Daemon) apply(u SourceUpdate) {
	d.applyMu.Lock()
	defer d.applyMu.Unlock()
	d.applyLocked(u)
}

// applyLocked is apply with applyMu held.
func (d *Daemon) applyLocked(u SourceUpdate) {
	d.mu.Lock()
	d.sources[u.Source] = u
	for _, fe := range u.Errors {
		d.a.logger.Warn("Manifest ignored", "source", u.Source, "path", fe.Path, "err", fe.Err)
	}
	merged, deleting := d.mergedLocked(true)
	config := d.mergedConfigLocked(true)
	d.mu.Unlock()
	if u.Source == sourceFile && d.cfg.StaticPods != nil {
		d.cfg.StaticPods(u.Pods)
	}
	// ConfigMaps and Secrets first: the pods' volumes and env use them.
	// Every worker is triggered by a new set: only hand over a change. The
	// API's objects are shared between the store's sets: the same pointers
	// are the same objects, which spares comparing their contents.
	if d.configApplied == nil || !sameScopes(config, d.configApplied) && !apiequality.Semantic.DeepEqual(d.configApplied, config) {
		d.a.setConfigScopes(config)
		d.configApplied = config
	}
	// The deletion's grace period first: SetPods then tears the pod down.
	for _, p := range deleting {
		d.a.markDeleted(p)
	}
	d.a.SetPods(merged)
}

// configSet is the ConfigMaps and Secrets of the node.
type configSet struct {
	ConfigMaps []*v1.ConfigMap
	Secrets    []*v1.Secret
}

// same reports whether c and o hold the same objects (pointers), in order.
func (c configSet) same(o configSet) bool {
	return slices.Equal(c.ConfigMaps, o.ConfigMaps) && slices.Equal(c.Secrets, o.Secrets)
}

// sameScopes reports whether a and b hold the same scopes with the same
// objects (pointers), in order.
func sameScopes(a, b map[string]configSet) bool {
	return maps.EqualFunc(a, b, configSet.same)
}

// sourceOrderLocked names the sources in the order their objects win a
// clash of namespace/name: for pods the API store, the manifest directory,
// then the other sources (such as the cluster) by name; for ConfigMaps and
// Secrets the manifest directory (the node's configuration) comes first.
// d.mu is held.
func (d *Daemon) sourceOrderLocked(fileFirst bool) []string {
	order := []string{sourceAPI, sourceFile}
	if fileFirst {
		order = []string{sourceFile, sourceAPI}
	}
	var others []string
	for name := range d.sources {
		if name != sourceAPI && name != sourceFile {
			others = append(others, name)
		}
	}
	slices.Sort(others)
	return append(order, others...)
}

// mergedConfigLocked is the ConfigMaps and Secrets by scope (configScope):
// the node's are the union of the manifest directory's and the local
// API's, the directory's winning a clash (logged when report is set); each
// other source (the cluster) is a scope of its own, which neither the
// node's objects nor another source's can shadow. d.mu is held.
func (d *Daemon) mergedConfigLocked(report bool) map[string]configSet {
	merge := func(order []string) configSet {
		return configSet{
			ConfigMaps: mergeByName(d, order, report, "ConfigMap", func(u SourceUpdate) []*v1.ConfigMap { return u.ConfigMaps }),
			Secrets:    mergeByName(d, order, report, "Secret", func(u SourceUpdate) []*v1.Secret { return u.Secrets }),
		}
	}
	sets := map[string]configSet{configScopeNode: merge([]string{sourceFile, sourceAPI})}
	for _, src := range d.sourceOrderLocked(true)[2:] {
		sets[src] = merge([]string{src})
	}
	return sets
}

// mergeByName is the union of the objects of the sources in order, by
// namespace/name, the first one's winning a clash (logged when report is
// set); d.mu is held.
func mergeByName[T metav1.Object](d *Daemon, order []string, report bool, kind string, objects func(SourceUpdate) []T) []T {
	var out []T
	from := map[string]string{}
	for _, src := range order {
		for _, o := range objects(d.sources[src]) {
			key := o.GetNamespace() + "/" + o.GetName()
			if winner, ok := from[key]; ok {
				if report {
					d.a.logger.Warn("Two pod sources define the same "+kind+"; the first one's is used", "name", key, "kind", kind, "used", winner, "ignored", src)
				}
				continue
			}
			from[key] = src
			out = append(out, o)
		}
	}
	return out
}

// mergedLocked is the union of all sources' pods, without those a source
// is deleting, which it returns apart; clashes are logged when report is
// set. d.mu is held.
func (d *Daemon) mergedLocked(report bool) (pods, deleting []*v1.Pod) {
	from := map[string]string{}
	for _, src := range d.sourceOrderLocked(false) {
		for _, p := range d.sources[src].Pods {
			key := p.Namespace + "/" + p.Name
			if winner, ok := from[key]; ok {
				if report {
					d.a.logger.Warn("Two pod sources define the same pod; the first one's runs", "pod", key, "runs", winner, "ignored", src, "file", p.Annotations[annotationSourceFile])
				}
				continue
			}
			from[key] = src
			if p.DeletionTimestamp != nil {
				deleting = append(deleting, p)
				continue
			}
			pods = append(pods, p)
		}
	}
	return pods, deleting
}

// desiredUIDs are the UIDs of every pod some source wants.
func (d *Daemon) desiredUIDs() map[types.UID]bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	uids := map[types.UID]bool{}
	pods, _ := d.mergedLocked(false)
	for _, p := range pods {
		uids[p.UID] = true
	}
	return uids
}

// collectOrphans tears down every pod this agent created that no source
// wants (the agent's restart found them in the runtime), using only what
// the runtime's labels and annotations tell, as the kubelet does; and
// removes pod cgroups of pods that exist nowhere. Pods of another
// minikubelet on the runtime (a foreground run, another daemon) are left
// alone and logged (agent_identity.go).
func (a *Agent) collectOrphans(ctx context.Context, desired map[types.UID]bool) error {
	sbs, err := a.runtime.ListPodSandbox(ctx, &runtimeapi.PodSandboxFilter{LabelSelector: map[string]string{labelManagedBy: managedByValue}})
	if err != nil {
		return fmt.Errorf("list sandboxes: %w", err)
	}
	for _, n := range foreignPodNotices(a.foreignPods(sbs)) {
		a.logger.Info(n)
	}
	orphans := map[types.UID]*v1.Pod{}
	for _, sb := range sbs {
		uid := types.UID(sb.Labels[labelPodUID])
		if uid == "" || desired[uid] || orphans[uid] != nil || !a.ownsObject(sb.Labels) {
			continue
		}
		p := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: sb.Labels[labelPodName], Namespace: sb.Labels[labelPodNamespace], UID: uid}}
		// The QoS class finds the pod cgroup; the grace period comes from
		// the containers' annotations (killPod reads them per container).
		p.Status.QOSClass = v1.PodQOSClass(sb.Annotations[annotationQOSClass])
		orphans[uid] = p
	}
	a.mu.Lock()
	if a.stopping {
		a.mu.Unlock()
		return nil
	}
	for _, p := range orphans {
		if a.workers[p.UID] != nil {
			// Wanted meanwhile: collection runs after the agent started
			// when a source answered late.
			continue
		}
		a.logger.Info("Removing a pod no source wants", "pod", p.Namespace+"/"+p.Name, "podUID", string(p.UID))
		w := newPodWorker(a, p)
		w.terminating = true
		a.workers[p.UID] = w
		a.startWorkerGoroutineLocked(w)
	}
	a.mu.Unlock()

	// Every sandbox counts as live, another minikubelet's too: its subPath
	// mounts and its pod cgroup are not this agent's to remove.
	live := map[types.UID]bool{}
	for _, sb := range sbs {
		live[types.UID(sb.Labels[labelPodUID])] = true
	}
	// Pinned subPath mounts of pods that exist nowhere (a teardown cut
	// short): no mount outlives its pod.
	var errs []error
	if err := a.cleanupStaleSubPaths(desired, live); err != nil {
		errs = append(errs, err)
	}
	// Pod cgroups whose pod has no sandbox and no source.
	if a.cgroups == nil {
		return errors.Join(errs...)
	}
	for _, tier := range []cgroups.Name{cgroups.Kubepods, cgroups.KubepodsBurstable, cgroups.KubepodsBestEffort} {
		names, err := a.cgroups.ListPods(tier)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		for _, n := range names {
			u, ok := n.PodUID()
			uid := types.UID(u)
			if !ok || live[uid] || desired[uid] || a.hasWorker(uid) {
				continue
			}
			// Only pod cgroups this agent made (it creates the pod dir
			// under its root dir first, and removes it last): another
			// agent on the machine (a test's, with its own containerd)
			// may be starting that pod right now. A cgroup that still has
			// processes is never ours to kill either.
			pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{UID: uid}}
			if _, err := os.Stat(a.podDir(pod)); err != nil {
				continue
			}
			if pids, err := a.cgroups.Pids(n); err != nil || len(pids) > 0 {
				continue
			}
			a.logger.Info("Removing an orphaned pod cgroup", "cgroup", a.cgroups.Path(n))
			if err := a.cgroups.Destroy(n); err != nil {
				errs = append(errs, err)
				continue
			}
			if err := unmountUnder(a.podDir(pod)); err != nil {
				errs = append(errs, err)
				continue
			}
			if err := os.RemoveAll(a.podDir(pod)); err != nil {
				errs = append(errs, err)
			}
		}
	}
	return errors.Join(errs...)
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
		if p.Namespace == namespace && p.Name == name {
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
		workers = append(workers, w)
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

func notFound(name string) error {
	return apierrors.NewNotFound(schema.GroupResource{Resource: "pods"}, name)
}

// manifestErrorPods renders each manifest file the daemon could not use as
// a Failed pod named after the file, so `get pods` shows it (reason
// InvalidManifest, the loader's message).
func (d *Daemon) manifestErrorPods() []*v1.Pod {
	d.mu.Lock()
	defer d.mu.Unlock()
	var out []*v1.Pod
	for _, src := range []string{sourceFile, sourceAPI} {
		for _, fe := range d.sources[src].Errors {
			name := strings.ToLower(strings.TrimSuffix(filepath.Base(fe.Path), filepath.Ext(fe.Path)))
			out = append(out, &v1.Pod{
				ObjectMeta: metav1.ObjectMeta{Name: "manifest:" + name, Namespace: metav1.NamespaceDefault,
					Annotations: map[string]string{annotationConfigSource: src, annotationSourceFile: fe.Path}},
				Status: v1.PodStatus{Phase: v1.PodFailed, Reason: "InvalidManifest", Message: fe.Err.Error()},
			})
		}
	}
	return out
}

// ListPods implements api.Backend. Manifest files that could not be used
// are listed too, as Failed pods with reason InvalidManifest.
func (d *Daemon) ListPods(namespace string) []*v1.Pod {
	var out []*v1.Pod
	for _, p := range append(d.a.listPods(), d.manifestErrorPods()...) {
		if namespace == "" || p.Namespace == namespace {
			out = append(out, p)
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Namespace != out[j].Namespace {
			return out[i].Namespace < out[j].Namespace
		}
		return out[i].Name < out[j].Name
	})
	return out
}

// GetPod implements api.Backend.
func (d *Daemon) GetPod(namespace, name string) (*v1.Pod, error) {
	w, rejected := d.a.findPod(namespace, name)
	switch {
	case w != nil:
		return w.snapshot(), nil
	case rejected != nil:
		return rejected.DeepCopy(), nil
	}
	return nil, notFound(name)
}

// CreatePod implements api.Backend: the pod is validated, persisted under
// the root dir (it survives restarts and reboots) and handed to the agent.
func (d *Daemon) CreatePod(ctx context.Context, pod *v1.Pod) (*v1.Pod, error) {
	if pod.Namespace == "" {
		pod.Namespace = metav1.NamespaceDefault
	}
	if w, rejected := d.a.findPod(pod.Namespace, pod.Name); w != nil || rejected != nil {
		return nil, apierrors.NewAlreadyExists(schema.GroupResource{Resource: "pods"}, pod.Name)
	}
	stored, err := d.store.Add(pod)
	if err != nil {
		return nil, storeError(pod, err)
	}
	d.applyStore()
	if p, err := d.GetPod(stored.Namespace, stored.Name); err == nil {
		return p, nil
	}
	return stored, nil
}

// storeError maps the store's errors to API errors.
func storeError(pod *v1.Pod, err error) error {
	var me *ManifestError
	var pie *PodInvalidError
	switch {
	case errors.Is(err, ErrPodExists):
		return apierrors.NewAlreadyExists(schema.GroupResource{Resource: "pods"}, pod.Name)
	case errors.As(err, &pie):
		return apierrors.NewInvalid(schema.GroupKind{Kind: "Pod"}, pod.Name, pie.Errs)
	case errors.As(err, &me):
		var causes field.ErrorList
		for _, p := range me.Problems {
			causes = append(causes, field.Invalid(field.NewPath(""), nil, p))
		}
		return apierrors.NewInvalid(schema.GroupKind{Kind: "Pod"}, pod.Name, causes)
	}
	return err
}

// DeletePod implements api.Backend.
func (d *Daemon) DeletePod(ctx context.Context, namespace, name string, grace *int64) (*v1.Pod, error) {
	w, rejected := d.a.findPod(namespace, name)
	var pod *v1.Pod // read-only
	switch {
	case w != nil:
		pod = w.pod()
	case rejected != nil:
		pod = rejected
	default:
		return nil, notFound(name)
	}
	switch src := pod.Annotations[annotationConfigSource]; src {
	case sourceAPI:
	case sourceFile:
		return nil, apierrors.NewForbidden(schema.GroupResource{Resource: "pods"}, name,
			fmt.Errorf("it is a static pod from %s: remove or edit that file to delete it", pod.Annotations[annotationSourceFile]))
	default:
		return nil, apierrors.NewForbidden(schema.GroupResource{Resource: "pods"}, name,
			fmt.Errorf("it comes from the %q pod source (the cluster's API server): delete it there (kubectl delete pod -n %s %s)", src, namespace, name))
	}
	if w != nil {
		w.setDeletion(grace, d.a.clock.Now())
	}
	if err := d.store.Delete(namespace, name); err != nil && !errors.Is(err, ErrPodNotFound) {
		return nil, err
	}
	d.applyStore()
	if w != nil {
		p := w.snapshot()
		d.watch.hub.Modify(p) // deletionTimestamp set
		return p, nil
	}
	return pod.DeepCopy(), nil
}

// Events implements api.Backend.
func (d *Daemon) Events(namespace, name string) ([]v1.Event, error) {
	w, rejected := d.a.findPod(namespace, name)
	var pod *v1.Pod
	var evs []Event
	switch {
	case w != nil:
		pod, evs = w.snapshot(), w.eventList()
	case rejected != nil:
		pod = rejected
		evs = []Event{{Type: v1.EventTypeWarning, Reason: rejected.Status.Reason, Message: rejected.Status.Message, Count: 1,
			FirstTimestamp: rejected.Status.StartTime.Time, LastTimestamp: rejected.Status.StartTime.Time}}
	default:
		return nil, notFound(name)
	}
	out := make([]v1.Event, 0, len(evs))
	for i, e := range evs {
		out = append(out, v1.Event{
			ObjectMeta:     metav1.ObjectMeta{Name: fmt.Sprintf("%s.%d", pod.Name, i), Namespace: pod.Namespace},
			InvolvedObject: v1.ObjectReference{Kind: "Pod", Namespace: pod.Namespace, Name: pod.Name, UID: pod.UID, APIVersion: "v1", FieldPath: e.FieldPath},
			Reason:         e.Reason,
			Message:        e.Message,
			Type:           e.Type,
			Count:          int32(e.Count),
			FirstTimestamp: metav1.NewTime(e.FirstTimestamp),
			LastTimestamp:  metav1.NewTime(e.LastTimestamp),
			// The kubelet's component name, as on the API server (cluster mode).
			Source: v1.EventSource{Component: "kubelet", Host: d.a.cfg.NodeName},
		})
	}
	return out, nil
}

// Details implements api.Backend: the startup trace, the probes, the
// cgroup, and where a pod that is not Ready is stuck.
func (d *Daemon) Details(namespace, name string) (*api.PodDetails, error) {
	w, rejected := d.a.findPod(namespace, name)
	if w == nil && rejected == nil {
		return nil, notFound(name)
	}
	pod := rejected
	det := &api.PodDetails{}
	if w != nil {
		pod = w.snapshot()
		w.mu.Lock()
		for _, s := range w.steps {
			det.Steps = append(det.Steps, api.Step{Name: s.Name, Duration: s.Duration, Detail: s.Detail, At: s.At})
		}
		w.mu.Unlock()
		det.CgroupPath = d.a.podCgroupPath(pod)
		for _, ps := range d.a.probes.PodStatus(pod.UID) {
			det.Probes = append(det.Probes, api.ProbeState{Container: ps.ContainerName, Kind: strings.ToLower(ps.Kind.String()), Result: ps.Result.String(),
				LastMessage: ps.LastMessage, LastProbeTime: ps.LastProbeTime, Failures: ps.ConsecutiveFailures})
		}
	}
	det.Source = pod.Annotations[annotationConfigSource]
	if f := pod.Annotations[annotationSourceFile]; f != "" {
		det.Source += ":" + f
	}
	det.Stuck = stuckAt(pod, det.Probes, w != nil && w.isTerminating())
	if det.Stuck != nil && det.Stuck.Step == "image" && w != nil {
		// In back-off the status only says "Back-off pulling image": the
		// registry's answer is in the last Failed event.
		evs := w.eventList()
		for i := len(evs) - 1; i >= 0; i-- {
			if evs[i].Reason == "Failed" && strings.HasPrefix(evs[i].Message, "Failed to pull image") {
				det.Stuck.Cause += "; last pull: " + evs[i].Message
				break
			}
		}
	}
	return det, nil
}

// stuckAt names the step of the chain a pod that is not Ready waits at and
// the likely cause (nil when it is Ready or done).
func stuckAt(pod *v1.Pod, ps []api.ProbeState, terminating bool) *api.Stuck {
	st := pod.Status
	if terminating {
		return &api.Stuck{Step: "terminating", Cause: "the pod is being stopped and removed"}
	}
	if st.Phase == v1.PodFailed && st.Reason != "" {
		return &api.Stuck{Step: "admission", Cause: st.Message, Hint: "free node resources or change the pod's requests, nodeSelector or hostPorts"}
	}
	if st.Phase == v1.PodSucceeded || conditionTrue(st.Conditions, v1.PodReady) {
		return nil
	}
	all := append(append([]v1.ContainerStatus{}, st.InitContainerStatuses...), st.ContainerStatuses...)
	for _, cs := range all {
		w := cs.State.Waiting
		if w == nil {
			continue
		}
		switch w.Reason {
		case "ErrImagePull", "ImagePullBackOff", "ErrImageNeverPull", "InvalidImageName":
			return &api.Stuck{Step: "image", Cause: fmt.Sprintf("container %s: %s: %s", cs.Name, w.Reason, w.Message),
				Hint: "check the image name and tag, and that its registry answers from this node"}
		case "CrashLoopBackOff":
			cause := fmt.Sprintf("container %s keeps exiting (%d restarts)", cs.Name, cs.RestartCount)
			if t := cs.LastTerminationState.Terminated; t != nil {
				cause += fmt.Sprintf("; last exit code %d (%s)", t.ExitCode, t.Reason)
				if t.Reason == "OOMKilled" {
					return &api.Stuck{Step: "crash-loop", Cause: cause, Hint: "it ran out of memory: raise its memory limit"}
				}
			}
			return &api.Stuck{Step: "crash-loop", Cause: cause, Hint: fmt.Sprintf("see its last output: minikubelet logs %s -c %s --previous", pod.Name, cs.Name)}
		case "CreateContainerConfigError", "CreateContainerError":
			return &api.Stuck{Step: "create", Cause: fmt.Sprintf("container %s: %s", cs.Name, w.Message)}
		case "RunContainerError", "PostStartHookError":
			return &api.Stuck{Step: "start", Cause: fmt.Sprintf("container %s: %s: %s", cs.Name, w.Reason, w.Message)}
		case "ContainerCreating", "PodInitializing":
			if strings.Contains(w.Message, "network is not ready") {
				return &api.Stuck{Step: "network", Cause: w.Message, Hint: "check the CNI conflist and plugins (minikubelet writes them at start; run hack/install-deps.sh)"}
			}
		}
	}
	if !conditionTrue(st.Conditions, v1.PodReadyToStartContainers) {
		return &api.Stuck{Step: "sandbox", Cause: "the pod sandbox (network namespace, pod IP) is not ready yet; see the events"}
	}
	for _, cs := range all {
		if cs.State.Running != nil && !cs.Ready {
			cause := fmt.Sprintf("container %s runs but is not ready", cs.Name)
			for _, p := range ps {
				if p.Container == cs.Name && (p.Kind == "readiness" || p.Kind == "startup") && p.LastMessage != "" {
					cause += fmt.Sprintf("; last %s probe: %s", p.Kind, p.LastMessage)
				}
			}
			return &api.Stuck{Step: "readiness", Cause: cause}
		}
	}
	return &api.Stuck{Step: "start", Cause: "containers are being created or started; see the events"}
}

// LogPath implements api.Backend.
func (d *Daemon) LogPath(namespace, name, container string, previous bool) (string, error) {
	pod, err := d.GetPod(namespace, name)
	if err != nil {
		return "", err
	}
	if container == "" {
		if len(pod.Spec.Containers) != 1 {
			return "", apierrors.NewBadRequest(fmt.Sprintf("a container name must be given for pod %s: choose one of %s", name, containerNames(pod)))
		}
		container = pod.Spec.Containers[0].Name
	}
	ctx, cancel := context.WithTimeout(context.Background(), d.a.cfg.RuntimeTimeout)
	defer cancel()
	st, err := d.a.observePod(ctx, pod)
	if err != nil {
		return "", err
	}
	c := st.latest(container)
	if previous {
		c = st.previous(container)
	}
	if c == nil {
		what := "no container"
		if previous {
			what = "no previous instance of container"
		}
		return "", apierrors.NewBadRequest(fmt.Sprintf("%s %q in pod %s", what, container, name))
	}
	resp, err := d.a.runtime.ContainerStatus(ctx, c.id, false)
	if err != nil {
		return "", err
	}
	return resp.GetStatus().GetLogPath(), nil
}

func containerNames(pod *v1.Pod) string {
	var names []string
	for _, c := range pod.Spec.Containers {
		names = append(names, c.Name)
	}
	return "[" + strings.Join(names, " ") + "]"
}

// Exec implements api.Backend.
func (d *Daemon) Exec(ctx context.Context, namespace, name, container string, cmd []string, timeout time.Duration) (*api.ExecResult, error) {
	pod, err := d.GetPod(namespace, name)
	if err != nil {
		return nil, err
	}
	if container == "" {
		container = pod.Spec.Containers[0].Name
	}
	st, err := d.a.observePod(ctx, pod)
	if err != nil {
		return nil, err
	}
	c := st.latest(container)
	if c == nil || c.state != runtimeapi.ContainerState_CONTAINER_RUNNING {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("container %q of pod %s is not running", container, name))
	}
	stdout, stderr, err := d.a.runtime.ExecSync(ctx, c.id, cmd, timeout)
	res := &api.ExecResult{Stdout: stdout, Stderr: stderr}
	var ee *cri.ExitError
	switch {
	case errors.As(err, &ee):
		res.ExitCode = int(ee.ExitCode)
	case err != nil:
		return nil, err
	}
	return res, nil
}

// Healthz implements api.Backend: the sync loop relists.
func (d *Daemon) Healthz() error {
	d.a.mu.Lock()
	last := d.a.lastRelist
	d.a.mu.Unlock()
	if last.IsZero() || d.a.clock.Since(last) < 3*time.Minute {
		return nil // the kubelet's PLEG threshold: 3 minutes without a relist
	}
	return fmt.Errorf("no successful relist since %s", last.Format(time.RFC3339))
}

// Readyz implements api.Backend: the runtime and the pod network are ready.
func (d *Daemon) Readyz() error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	ok, reason, msg, err := d.a.networkReady(ctx)
	switch {
	case err != nil:
		return fmt.Errorf("runtime: %w", err)
	case !ok:
		return fmt.Errorf("pod network not ready: %s %s", reason, msg)
	}
	return nil
}

// Version implements api.Backend.
func (d *Daemon) Version() api.VersionInfo {
	return api.VersionInfo{Version: d.cfg.Version, RuntimeName: d.cfg.RuntimeName, RuntimeVersion: d.cfg.RuntimeVersion,
		RuntimeAPIVersion: d.cfg.RuntimeAPIVersion, NodeName: d.a.cfg.NodeName}
}

// WriteMetrics implements api.Backend.
func (d *Daemon) WriteMetrics(w io.Writer) error { return d.a.WriteMetrics(w) }

// Resources of the ConfigMaps and Secrets, for API errors.
var (
	configMapsResource = schema.GroupResource{Resource: "configmaps"}
	secretsResource    = schema.GroupResource{Resource: "secrets"}
)

// fileDefines reports whether the manifest directory defines the ConfigMap
// (secret false) or Secret namespace/name.
func (d *Daemon) fileDefines(secret bool, namespace, name string) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	file := d.sources[sourceFile]
	if secret {
		return slices.ContainsFunc(file.Secrets, func(s *v1.Secret) bool { return s.Namespace == namespace && s.Name == name })
	}
	return slices.ContainsFunc(file.ConfigMaps, func(c *v1.ConfigMap) bool { return c.Namespace == namespace && c.Name == name })
}

// configStoreError maps the store's errors about a ConfigMap or Secret to
// API errors.
func configStoreError(kind string, gr schema.GroupResource, name string, err error) error {
	var cie *ConfigInvalidError
	switch {
	case errors.Is(err, ErrConfigDataExists):
		return apierrors.NewAlreadyExists(gr, name)
	case errors.Is(err, ErrConfigDataNotFound):
		return apierrors.NewNotFound(gr, name)
	case errors.As(err, &cie):
		return apierrors.NewInvalid(schema.GroupKind{Kind: kind}, name, cie.Errs)
	}
	return err
}

// CreateConfigMap implements api.Backend: the ConfigMap is defaulted,
// validated as in a manifest file, persisted under the root dir and handed
// to the agent before this returns, so a pod created next sees it. A name
// the manifest directory already defines is AlreadyExists.
func (d *Daemon) CreateConfigMap(ctx context.Context, cm *v1.ConfigMap) (*v1.ConfigMap, error) {
	if cm.Namespace == "" {
		cm.Namespace = metav1.NamespaceDefault
	}
	if cm.Name != "" && d.fileDefines(false, cm.Namespace, cm.Name) {
		return nil, apierrors.NewAlreadyExists(configMapsResource, cm.Name)
	}
	stored, err := d.store.AddConfigMap(cm)
	if err != nil {
		return nil, configStoreError("ConfigMap", configMapsResource, cm.Name, err)
	}
	d.applyStore()
	return stored, nil
}

// CreateSecret implements api.Backend, as CreateConfigMap.
func (d *Daemon) CreateSecret(ctx context.Context, secret *v1.Secret) (*v1.Secret, error) {
	if secret.Namespace == "" {
		secret.Namespace = metav1.NamespaceDefault
	}
	if secret.Name != "" && d.fileDefines(true, secret.Namespace, secret.Name) {
		return nil, apierrors.NewAlreadyExists(secretsResource, secret.Name)
	}
	stored, err := d.store.AddSecret(secret)
	if err != nil {
		return nil, configStoreError("Secret", secretsResource, secret.Name, err)
	}
	d.applyStore()
	return stored, nil
}

// DeleteConfigMap implements api.Backend. One defined in the manifest
// directory is Forbidden: its file is what to edit. Pods that use it keep
// running; their volumes keep the last content, and containers started
// later fail as the kubelet's do (CreateContainerConfigError) unless the
// reference is optional.
func (d *Daemon) DeleteConfigMap(ctx context.Context, namespace, name string) error {
	if d.fileDefines(false, namespace, name) {
		return apierrors.NewForbidden(configMapsResource, name,
			errors.New("it is defined in the manifest directory: remove it from its file to delete it"))
	}
	if err := d.store.DeleteConfigMap(namespace, name); err != nil {
		return configStoreError("ConfigMap", configMapsResource, name, err)
	}
	d.applyStore()
	return nil
}

// DeleteSecret implements api.Backend, as DeleteConfigMap.
func (d *Daemon) DeleteSecret(ctx context.Context, namespace, name string) error {
	if d.fileDefines(true, namespace, name) {
		return apierrors.NewForbidden(secretsResource, name,
			errors.New("it is defined in the manifest directory: remove it from its file to delete it"))
	}
	if err := d.store.DeleteSecret(namespace, name); err != nil {
		return configStoreError("Secret", secretsResource, name, err)
	}
	d.applyStore()
	return nil
}

// ListConfigMaps implements api.Backend: the node's ConfigMaps of a
// namespace ("" = all) from both node sources, as the node's pods see
// them, sorted by namespace and name (the cluster's are the API server's
// to list).
func (d *Daemon) ListConfigMaps(namespace string) []*v1.ConfigMap {
	d.mu.Lock()
	set := d.mergedConfigLocked(false)[configScopeNode]
	d.mu.Unlock()
	var out []*v1.ConfigMap
	for _, cm := range set.ConfigMaps {
		if namespace == "" || cm.Namespace == namespace {
			out = append(out, cm.DeepCopy())
		}
	}
	slices.SortFunc(out, func(a, b *v1.ConfigMap) int {
		return cmp.Or(strings.Compare(a.Namespace, b.Namespace), strings.Compare(a.Name, b.Name))
	})
	return out
}

// ListSecrets implements api.Backend, as ListConfigMaps. The data is
// included, as the API server does; the socket is root's only.
func (d *Daemon) ListSecrets(namespace string) []*v1.Secret {
	d.mu.Lock()
	set := d.mergedConfigLocked(false)[configScopeNode]
	d.mu.Unlock()
	var out []*v1.Secret
	for _, s := range set.Secrets {
		if namespace == "" || s.Namespace == namespace {
			out = append(out, s.DeepCopy())
		}
	}
	slices.SortFunc(out, func(a, b *v1.Secret) int {
		return cmp.Or(strings.Compare(a.Namespace, b.Namespace), strings.Compare(a.Name, b.Name))
	})
	return out
}
