package daemon

import (
	"context"
	"maps"
	"slices"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/minikubelet/minikubelet/agent"
	"github.com/minikubelet/minikubelet/agent/api"
	"github.com/minikubelet/minikubelet/agent/source"
)

// Config holds what the daemon adds to the agent.
type Config struct {
	// Version is the daemon's version string.
	Version string
	// RuntimeName, RuntimeVersion and RuntimeAPIVersion come from the CRI
	// handshake.
	RuntimeName, RuntimeVersion, RuntimeAPIVersion string
	// LogRotation rotates container logs (kubelet defaults 10Mi × 5).
	LogRotation agent.LogRotationConfig
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
	Run(ctx context.Context, out chan<- source.SourceUpdate)
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
	a     *agent.Agent
	cfg   Config
	store *source.PodStore
	dir   *source.DirSource

	// applyMu serialises apply, so the agent gets the merged sets in the
	// order the sources changed (API requests and the Run loop both apply).
	applyMu sync.Mutex
	// configApplied is the ConfigMaps and Secrets, by scope, last handed to
	// the agent (guarded by applyMu); nil before the first apply.
	configApplied map[string]agent.ConfigSet
	// storeGen is the generation of the store's set last applied, valid
	// once storeApplied (both guarded by applyMu).
	storeGen     uint64
	storeApplied bool
	// loaded is closed once Run applied the store's pods, ConfigMaps and
	// Secrets (Loaded).
	loaded chan struct{}
	// firstSetWait is the const unless a test shortens it.
	firstSetWait time.Duration
	// openOrphanGate tells the agent orphans were collected (PodDone).
	openOrphanGate func()
	// updateMu serialises UpdatePod (update.go): its
	// resourceVersion check and its change are one step.
	updateMu sync.Mutex

	// mu guards the fields below.
	mu sync.Mutex
	// sources holds the latest update of each source, by name.
	sources map[string]source.SourceUpdate
	// lastRelist is when the sync loop last completed a relist.
	lastRelist time.Time

	// watch streams pod changes to the API's watches (watch.go).
	watch *podWatchFeed
}

var _ api.Backend = (*Daemon)(nil)

// New wires the agent to its sources. dir may be nil (no manifest
// directory).
func New(a *agent.Agent, store *source.PodStore, dir *source.DirSource, cfg Config) *Daemon {
	if store != nil {
		a.SetFinalStatusStore(store) // agent/final_status.go
	}
	return &Daemon{a: a, cfg: cfg, store: store, dir: dir, sources: map[string]source.SourceUpdate{}, firstSetWait: firstSetWait,
		watch: newPodWatchFeed(a), loaded: make(chan struct{})}
}

// Loaded is closed once Run applied what the store holds: before that the
// API would answer "not found" for a stored Secret or pod, so the caller
// serves the API only after it.
func (d *Daemon) Loaded() <-chan struct{} { return d.loaded }

// Run runs the daemon until ctx ends. Pods keep running when it returns.
func (d *Daemon) Run(ctx context.Context) error {
	d.openOrphanGate = d.a.GateOrphans()
	// Unbuffered: a source's completed send means the daemon received
	// that set, so it applied every earlier one (the cluster source asks
	// PodDone only then: a pod of an earlier set is the agent's by then).
	updates := make(chan source.SourceUpdate)
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
	for _, fe := range d.store.FinalStatusErrors() {
		d.a.Logger().Warn("Stored final pod status ignored; its pod runs as if it had not finished", "path", fe.Path, "err", fe.Err)
	}
	d.applyStore()
	close(d.loaded)

	// Orphans are collected only once the whole desired set is known: the
	// first set of every source must have arrived (a pod of a source that
	// has not answered yet, such as an API server still down, is not an
	// orphan). The pods known meanwhile start after firstSetWait at the
	// latest; orphans are then collected when the last source answers.
	seen := map[string]bool{}
	first := func(u source.SourceUpdate) {
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
			d.a.Logger().Warn("Not every pod source answered; starting the pods known so far, collecting orphans once all have answered",
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
		if err := d.a.CollectOrphans(ctx, d.desiredUIDs()); err != nil {
			d.a.Logger().Warn("Orphan collection incomplete", "err", err)
		}
		d.openOrphanGate()
	}
	collect()

	agentDone := make(chan error, 1)
	go func() { agentDone <- d.a.Run(ctx) }()
	go d.a.RunLogRotation(ctx, d.cfg.LogRotation)
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
	u, gen := d.store.SnapshotGen()
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
func (d *Daemon) apply(u source.SourceUpdate) {
	d.applyMu.Lock()
	defer d.applyMu.Unlock()
	d.applyLocked(u)
	if u.Applied != nil {
		close(u.Applied) // the agent holds its pods: see SourceUpdate
	}
}

// applyLocked is apply with applyMu held.
func (d *Daemon) applyLocked(u source.SourceUpdate) {
	d.mu.Lock()
	recreated := u.Recreated
	u.Recreated = nil // this set's news only, not the source's state
	d.sources[u.Source] = u
	for _, fe := range u.Errors {
		d.a.Logger().Warn("Manifest ignored", "source", u.Source, "path", fe.Path, "err", fe.Err)
	}
	merged, deleting := d.mergedLocked(true)
	config := d.mergedConfigLocked(true)
	d.mu.Unlock()
	if u.Source == source.SourceFile && d.cfg.StaticPods != nil {
		d.cfg.StaticPods(u.Pods)
	}
	// ConfigMaps and Secrets first: the pods' volumes and env use them.
	// Every worker is triggered by a new set: only hand over a change. The
	// API's objects are shared between the store's sets: the same pointers
	// are the same objects, which spares comparing their contents.
	if d.configApplied == nil || !sameScopes(config, d.configApplied) && !apiequality.Semantic.DeepEqual(d.configApplied, config) {
		d.a.SetConfigScopes(config)
		d.configApplied = config
	}
	// The deletion's grace period first: SetPods then tears the pod down.
	d.a.MarkDeleted(deleting)
	if len(recreated) > 0 {
		// Files removed and created again before the daemon saw the
		// removal: the agent sees it now, so those pods are torn down
		// and then started again (the agent keeps a pod that comes back
		// during its teardown for afterwards), as the kubelet's file
		// source reports a removal and then an addition.
		d.a.SetPods(withoutUIDs(merged, recreated))
	}
	d.a.SetPods(merged)
}

// withoutUIDs is pods without those whose UID is in uids.
func withoutUIDs(pods []*v1.Pod, uids []types.UID) []*v1.Pod {
	out := make([]*v1.Pod, 0, len(pods))
	for _, p := range pods {
		if !slices.Contains(uids, p.UID) {
			out = append(out, p)
		}
	}
	return out
}

// sameSet reports whether c and o hold the same objects (pointers), in order.
func sameSet(c, o agent.ConfigSet) bool {
	return slices.Equal(c.ConfigMaps, o.ConfigMaps) && slices.Equal(c.Secrets, o.Secrets)
}

// sameScopes reports whether a and b hold the same scopes with the same
// objects (pointers), in order.
func sameScopes(a, b map[string]agent.ConfigSet) bool {
	return maps.EqualFunc(a, b, sameSet)
}

// sourceOrderLocked names the sources in the order their objects win a
// clash of namespace/name: for pods the API store, the manifest directory,
// then the other sources (such as the cluster) by name; for ConfigMaps and
// Secrets the manifest directory (the node's configuration) comes first.
// d.mu is held.
func (d *Daemon) sourceOrderLocked(fileFirst bool) []string {
	order := []string{source.SourceAPI, source.SourceFile}
	if fileFirst {
		order = []string{source.SourceFile, source.SourceAPI}
	}
	var others []string
	for name := range d.sources {
		if name != source.SourceAPI && name != source.SourceFile {
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
func (d *Daemon) mergedConfigLocked(report bool) map[string]agent.ConfigSet {
	merge := func(order []string) agent.ConfigSet {
		return agent.ConfigSet{
			ConfigMaps: mergeByName(d, order, report, "ConfigMap", func(u source.SourceUpdate) []*v1.ConfigMap { return u.ConfigMaps }),
			Secrets:    mergeByName(d, order, report, "Secret", func(u source.SourceUpdate) []*v1.Secret { return u.Secrets }),
		}
	}
	sets := map[string]agent.ConfigSet{agent.ConfigScopeNode: merge([]string{source.SourceFile, source.SourceAPI})}
	for _, src := range d.sourceOrderLocked(true)[2:] {
		sets[src] = merge([]string{src})
	}
	return sets
}

// mergeByName is the union of the objects of the sources in order, by
// namespace/name, the first one's winning a clash (logged when report is
// set); d.mu is held.
func mergeByName[T metav1.Object](d *Daemon, order []string, report bool, kind string, objects func(source.SourceUpdate) []T) []T {
	var out []T
	from := map[string]string{}
	for _, src := range order {
		for _, o := range objects(d.sources[src]) {
			key := o.GetNamespace() + "/" + o.GetName()
			if winner, ok := from[key]; ok {
				if report {
					d.a.Logger().Warn("Two pod sources define the same "+kind+"; the first one's is used", "name", key, "kind", kind, "used", winner, "ignored", src)
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
					d.a.Logger().Warn("Two pod sources define the same pod; the first one's runs", "pod", key, "runs", winner, "ignored", src, "file", p.Annotations[source.AnnotationSourceFile])
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
