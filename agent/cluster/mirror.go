package cluster

// Mirror pods: the static pods of the manifest directory shown on the API
// server, as the kubelet shows them (pkg/kubelet/pod's mirror client and
// its pod manager): for each static pod a pod <name>-<node> in its
// namespace, bound to the node, owned by the Node object, annotated
// kubernetes.io/config.mirror with a hash of the static pod (and
// config.source file), whose status is the static pod's. The API server
// cannot control a static pod through it: deleting a mirror only makes the
// node create it again; the cluster pod source never runs one. A static
// pod that leaves (its file removed, or edited: a new UID) keeps its
// mirror until the agent finished tearing it down (WithStaticPodDone), as
// the kubelet deletes or replaces a mirror only once no pod of that full
// name is terminating.

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/minikubelet/minikubelet/agent/podevents"
)

// Annotations of static and mirror pods (the kubelet's).
const (
	// annotationConfigMirror marks a mirror pod; its value is the hash of
	// the static pod it mirrors.
	annotationConfigMirror = "kubernetes.io/config.mirror"
	// annotationConfigHash is the static pod's hash (the kubelet's file
	// source sets it to the pod's UID, itself a hash of the file).
	annotationConfigHash = "kubernetes.io/config.hash"
	// sourceFile is the config.source of static pods.
	sourceFile = "file"
)

// Retry back-off of a failed reconcile.
const (
	mirrorRetryBase = time.Second
	mirrorRetryMax  = 30 * time.Second
)

// isMirrorPod reports whether p is a mirror pod.
func isMirrorPod(p *v1.Pod) bool {
	_, ok := p.Annotations[annotationConfigMirror]
	return ok
}

// MirrorPods keeps the node's mirror pods in step with its static pods.
// It learns the mirrors on the API server from the cluster pod source
// (WithMirrorPods: its informer sees every pod bound to the node), and
// sends the static pods' statuses to their mirrors through the
// StatusWriter (debounced like every pod status). SetStaticPods, the
// Observer methods and the source's reports never block; Run does the API
// calls.
type MirrorPods struct {
	client   API
	nodeName string
	status   *StatusWriter
	logger   *slog.Logger
	// retryBase and retryMax bound the back-off of a failed reconcile
	// (tests shorten them).
	retryBase, retryMax time.Duration

	// wake is signalled when static pods or mirrors changed; capacity 1.
	wake chan struct{}

	// mu guards static, byUID and mirrors.
	mu sync.Mutex
	// static holds the static pods by their mirror's namespace/name; nil
	// until the first SetStaticPods (nothing is deleted before).
	static map[string]*staticPod
	// byUID finds a static pod's key by its UID (statuses).
	byUID map[types.UID]string
	// mirrors holds the mirror pods bound to the node on the API server
	// by namespace/name, as last reported by the source and corrected by
	// Run's own writes; nil until the source's first list.
	mirrors map[string]*v1.Pod
	// observed counts the source's reports (observeMirrors). Run's own
	// write is recorded only if no report came since the reconcile that
	// made it took its snapshot: a report may be newer than the write (the
	// mirror Run just created, deleted by a user meanwhile), and a write
	// recorded over it would hide that mirror's absence until the next
	// report. A report older than the write costs a reconcile that finds
	// the mirror in place (AlreadyExists).
	observed uint64

	// leaving holds, by mirror key, the static pods that left the set
	// whose teardown the agent has not finished, with the channel that
	// says it has (WithStaticPodDone): their key's mirror is neither
	// deleted nor replaced meanwhile. Guarded by mu.
	leaving map[string]map[types.UID]<-chan struct{}

	// podDone is the agent's PodDone (WithStaticPodDone); nil: a static
	// pod's mirror goes as soon as the pod leaves the set.
	podDone func(types.UID) <-chan struct{}
	// stop is closed when Run returns: the waits for teardowns end.
	stop     chan struct{}
	stopOnce sync.Once

	// nodeUID is the Node object's UID for owner references; Run's only.
	nodeUID types.UID
}

// MirrorPodsOption configures NewMirrorPods.
type MirrorPodsOption func(*MirrorPods)

// WithStaticPodDone keeps the mirror of a static pod that left the set
// (file removed, or edited into a new pod of the same name) until podDone,
// the agent's (*agent.Agent).PodDone, says its teardown finished: nil or
// closed means there is nothing to wait for. The kubelet keeps the mirror
// while the pod terminates (deleteOrphanedMirrorPods skips a full name
// whose pod is terminating; the edited pod's syncPod, which replaces the
// mirror, waits for the old one), and the node e2e's
// MirrorPodWithGracePeriod specs want the mirror running, with its UID,
// for the static pod's whole grace period.
func WithStaticPodDone(podDone func(types.UID) <-chan struct{}) MirrorPodsOption {
	return func(m *MirrorPods) { m.podDone = podDone }
}

// staticPod is what MirrorPods knows of one static pod.
type staticPod struct {
	pod  *v1.Pod
	hash string
	// status is the agent's newest status of the pod (nil before one).
	status *v1.PodStatus
	// sentTo is the mirror UID status was last handed to the writer for.
	sentTo types.UID
}

var _ podevents.Observer = (*MirrorPods)(nil)

// NewMirrorPods returns the mirror pods of node nodeName; status is the
// writer that also sends the cluster pods' statuses (its Run sends these).
func NewMirrorPods(client API, nodeName string, status *StatusWriter, logger *slog.Logger, opts ...MirrorPodsOption) *MirrorPods {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	m := &MirrorPods{
		client: client, nodeName: nodeName, status: status,
		logger:    logger.With("component", "cluster-mirror-pods"),
		retryBase: mirrorRetryBase, retryMax: mirrorRetryMax,
		wake: make(chan struct{}, 1),
		stop: make(chan struct{}),
	}
	for _, o := range opts {
		o(m)
	}
	return m
}

// MirrorName is the name of the mirror of static pod name on node.
func MirrorName(name, node string) string { return name + "-" + node }

// SetStaticPods replaces the static pods (the manifest directory's, as the
// agent runs them: defaulted, with their UIDs). Calls come in order, one
// at a time (the daemon's), before the agent gets the same set.
func (m *MirrorPods) SetStaticPods(pods []*v1.Pod) {
	// The pods that leave, and whether the agent is still tearing them
	// down, asked before the new set is in place (a reconcile between
	// would delete their mirrors) and without m.mu (the agent calls the
	// Observer methods with its own lock held).
	waits := m.leavingTeardowns(pods)
	m.mu.Lock()
	for _, lw := range waits {
		if m.leaving == nil {
			m.leaving = map[string]map[types.UID]<-chan struct{}{}
		}
		if m.leaving[lw.key] == nil {
			m.leaving[lw.key] = map[types.UID]<-chan struct{}{}
		}
		if _, ok := m.leaving[lw.key][lw.uid]; !ok {
			m.leaving[lw.key][lw.uid] = lw.done
			go m.awaitTeardown(lw)
		}
	}
	old := m.static
	m.static = make(map[string]*staticPod, len(pods))
	m.byUID = make(map[types.UID]string, len(pods))
	for _, p := range pods {
		key := p.Namespace + "/" + MirrorName(p.Name, m.nodeName)
		st := &staticPod{pod: p, hash: staticPodHash(p)}
		if prev := old[key]; prev != nil && prev.pod.UID == p.UID {
			st.status, st.sentTo = prev.status, prev.sentTo
		}
		m.static[key] = st
		m.byUID[p.UID] = key
	}
	// Statuses of static pods that are gone: nothing more to send.
	for key, prev := range old {
		if st := m.static[key]; prev.sentTo != "" && (st == nil || st.sentTo != prev.sentTo) {
			m.status.Forget(prev.sentTo)
		}
	}
	m.mu.Unlock()
	m.poke()
}

// leavingWait is a static pod that left the set, and the channel the agent
// closes once its teardown finished.
type leavingWait struct {
	key  string
	uid  types.UID
	done <-chan struct{}
}

// leavingTeardowns returns the static pods of the current set that pods
// does not hold (by mirror key and UID) and whose teardown the agent has
// not finished; none without WithStaticPodDone.
func (m *MirrorPods) leavingTeardowns(pods []*v1.Pod) []leavingWait {
	if m.podDone == nil {
		return nil
	}
	keep := make(map[types.UID]bool, len(pods))
	for _, p := range pods {
		keep[p.UID] = true
	}
	m.mu.Lock()
	var left []leavingWait
	for key, st := range m.static {
		if !keep[st.pod.UID] {
			left = append(left, leavingWait{key: key, uid: st.pod.UID})
		}
	}
	m.mu.Unlock()
	var waits []leavingWait
	for _, lw := range left {
		done := m.podDone(lw.uid)
		if done == nil {
			continue // the agent has no such pod
		}
		select {
		case <-done:
			continue
		default:
		}
		lw.done = done
		waits = append(waits, lw)
	}
	return waits
}

// awaitTeardown waits for the teardown of a static pod that left and then
// lets its key's mirror go (or be replaced), unless Run returned first.
func (m *MirrorPods) awaitTeardown(lw leavingWait) {
	select {
	case <-lw.done:
	case <-m.stop:
		return
	}
	m.mu.Lock()
	if uids := m.leaving[lw.key]; uids != nil {
		delete(uids, lw.uid)
		if len(uids) == 0 {
			delete(m.leaving, lw.key)
		}
	}
	m.mu.Unlock()
	m.poke()
}

// observeMirrors replaces what MirrorPods knows of the mirrors on the API
// server (the source's informer: every mirror pod bound to the node).
func (m *MirrorPods) observeMirrors(mirrors []*v1.Pod) {
	m.mu.Lock()
	m.observed++
	m.mirrors = make(map[string]*v1.Pod, len(mirrors))
	for _, p := range mirrors {
		m.mirrors[p.Namespace+"/"+p.Name] = p
	}
	// A mirror found (such as one a previous run created) gets the status
	// the agent has.
	for key, st := range m.static {
		if mirror := m.mirrors[key]; mirror != nil && mirror.UID != st.sentTo {
			m.forwardLocked(key, st)
		}
	}
	m.mu.Unlock()
	m.poke()
}

func (m *MirrorPods) poke() {
	select {
	case m.wake <- struct{}{}:
	default:
	}
}

// PodEvent implements podevents.Observer (events are not sent yet).
func (m *MirrorPods) PodEvent(*v1.Pod, podevents.Event) {}

// PodStep implements podevents.Observer.
func (m *MirrorPods) PodStep(*v1.Pod, podevents.Step) {}

// PodStatus sends a static pod's new status to its mirror (once there is
// one).
func (m *MirrorPods) PodStatus(pod *v1.Pod) {
	if pod.Annotations[annotationConfigSource] != sourceFile {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	key, ok := m.byUID[pod.UID]
	if !ok {
		return
	}
	st := m.static[key]
	st.status = pod.Status.DeepCopy()
	m.forwardLocked(key, st)
}

// forwardLocked hands st's status to the writer for its current mirror;
// m.mu is held.
func (m *MirrorPods) forwardLocked(key string, st *staticPod) {
	mirror := m.mirrors[key]
	if mirror == nil || mirror.DeletionTimestamp != nil || mirror.Annotations[annotationConfigMirror] != st.hash {
		return
	}
	if st.sentTo != "" && st.sentTo != mirror.UID {
		m.status.Forget(st.sentTo)
		st.sentTo = ""
	}
	if st.status == nil {
		return
	}
	m.status.record(mirror.UID, mirror.Namespace, mirror.Name, st.status)
	st.sentTo = mirror.UID
}

// Run keeps the mirrors in step until ctx ends: at every change of the
// static pods or of the mirrors on the API server, and after a failure
// with back-off.
func (m *MirrorPods) Run(ctx context.Context) {
	defer m.stopOnce.Do(func() { close(m.stop) })
	delay := m.retryBase
	failures := 0
	for {
		var retry <-chan time.Time
		var t *time.Timer
		if err := m.reconcile(ctx); err != nil && ctx.Err() == nil {
			failures++
			if failures == 1 || failures%10 == 0 {
				m.logger.Warn("Cannot keep the mirror pods of the static pods on the API server; retrying", "err", err, "failures", failures, "retryIn", delay)
			}
			t = time.NewTimer(delay)
			retry = t.C
			delay = min(2*delay, m.retryMax)
		} else {
			if failures > 0 {
				m.logger.Info("Mirror pods are in step with the static pods again")
			}
			failures, delay = 0, m.retryBase
		}
		select {
		case <-ctx.Done():
			return
		case <-m.wake:
		case <-retry:
		}
		if t != nil {
			t.Stop()
		}
	}
}

// reconcile creates the missing mirrors, replaces those out of date or
// being deleted, and deletes those of static pods that are gone. It waits
// for both the static pods and the mirrors to be known. A mirror whose
// key has a static pod still being torn down (leaving) stays as it is
// until that teardown finished.
func (m *MirrorPods) reconcile(ctx context.Context) error {
	m.mu.Lock()
	if m.static == nil || m.mirrors == nil {
		m.mu.Unlock()
		return nil
	}
	statics := make(map[string]*staticPod, len(m.static))
	for k, st := range m.static {
		statics[k] = &staticPod{pod: st.pod, hash: st.hash}
	}
	mirrors := maps.Clone(m.mirrors)
	leaving := make(map[string]bool, len(m.leaving))
	for k := range m.leaving {
		leaving[k] = true
	}
	gen := m.observed
	m.mu.Unlock()

	var errs []error
	for key, st := range statics {
		mirror := mirrors[key]
		if mirror != nil && mirror.DeletionTimestamp == nil && mirror.Annotations[annotationConfigMirror] == st.hash {
			continue
		}
		if mirror != nil && leaving[key] {
			// The mirror of the static pod this one replaces, which is
			// still terminating: it goes once that pod is gone.
			continue
		}
		if mirror != nil {
			// Deleted by someone (it comes back), or of an older version
			// of the static pod.
			if err := m.deleteMirror(ctx, mirror); err != nil {
				errs = append(errs, err)
				continue
			}
			m.setMirror(key, nil, gen)
		}
		created, err := m.createMirror(ctx, st.pod, st.hash)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		m.setMirror(key, created, gen)
	}
	for key, mirror := range mirrors {
		if _, ok := statics[key]; ok || leaving[key] {
			continue
		}
		if err := m.deleteMirror(ctx, mirror); err != nil {
			errs = append(errs, err)
			continue
		}
		m.setMirror(key, nil, gen)
	}
	return errors.Join(errs...)
}

// setMirror records Run's own write of the mirror key (nil: deleted) and
// sends the static pod's status to a new mirror, unless the source
// reported since gen (see observed): its report stands, and the wake it
// sent has the next reconcile check it.
func (m *MirrorPods) setMirror(key string, mirror *v1.Pod, gen uint64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.observed != gen {
		return
	}
	if mirror == nil {
		delete(m.mirrors, key)
		return
	}
	m.mirrors[key] = mirror
	if st := m.static[key]; st != nil {
		m.forwardLocked(key, st)
	}
}

// createMirror creates the mirror of static with hash. An existing pod of
// that name that is an up-to-date mirror is taken as created; any other
// mirror there is deleted for the next round.
func (m *MirrorPods) createMirror(ctx context.Context, static *v1.Pod, hash string) (*v1.Pod, error) {
	if m.nodeUID == "" {
		rctx, cancel := context.WithTimeout(ctx, requestTimeout)
		node, err := m.client.Nodes().Get(rctx, m.nodeName, metav1.GetOptions{})
		cancel()
		if err != nil {
			return nil, fmt.Errorf("get node %q for the mirror pods' owner: %w", m.nodeName, err)
		}
		m.nodeUID = node.UID
	}
	want := mirrorPod(static, hash, m.nodeName, m.nodeUID)
	rctx, cancel := context.WithTimeout(ctx, requestTimeout)
	defer cancel()
	pods := m.client.Pods(want.Namespace)
	created, err := pods.Create(rctx, want, metav1.CreateOptions{})
	if err == nil {
		m.logger.Info("Created the mirror pod of a static pod", "pod", want.Namespace+"/"+want.Name, "staticPodUID", string(static.UID))
		return created, nil
	}
	if !apierrors.IsAlreadyExists(err) {
		// The Node may have been registered again (a new UID).
		m.nodeUID = ""
		return nil, fmt.Errorf("create mirror pod %s/%s: %w", want.Namespace, want.Name, err)
	}
	existing, gerr := pods.Get(rctx, want.Name, metav1.GetOptions{})
	if gerr != nil {
		return nil, fmt.Errorf("create mirror pod %s/%s: %w; get the existing one: %w", want.Namespace, want.Name, err, gerr)
	}
	switch {
	case !isMirrorPod(existing) || existing.Spec.NodeName != m.nodeName:
		return nil, fmt.Errorf("cannot create mirror pod %s/%s of a static pod: a pod of that name exists that is not this node's mirror pod; rename the static pod or delete that pod", want.Namespace, want.Name)
	case existing.DeletionTimestamp == nil && existing.Annotations[annotationConfigMirror] == hash:
		return existing, nil
	}
	if derr := m.deleteMirror(ctx, existing); derr != nil {
		return nil, derr
	}
	return nil, fmt.Errorf("mirror pod %s/%s was out of date: deleted, to be created again", want.Namespace, want.Name)
}

// deleteMirror deletes mirror at once (grace 0), if it is still that
// object (its UID as precondition), as the kubelet's mirror client.
func (m *MirrorPods) deleteMirror(ctx context.Context, mirror *v1.Pod) error {
	deleted, err := deleteExact(ctx, m.client, mirror.Namespace, mirror.Name, mirror.UID)
	if err != nil {
		return fmt.Errorf("mirror: %w", err)
	}
	if deleted {
		m.logger.Info("Deleted a mirror pod", "pod", mirror.Namespace+"/"+mirror.Name, "uid", string(mirror.UID))
	}
	return nil
}

// mirrorPod is the mirror of static on node (whose Node object has UID
// nodeUID): the static pod's labels, annotations and spec under the name
// <name>-<node>, bound to the node, owned by the Node (controller, as the
// NodeRestriction admission plugin requires of a node's mirror pods), and
// without a service account (a node may not create pods that use one;
// minikubelet's defaults set "default").
func mirrorPod(static *v1.Pod, hash, node string, nodeUID types.UID) *v1.Pod {
	controller := true
	p := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name:        MirrorName(static.Name, node),
			Namespace:   static.Namespace,
			Labels:      maps.Clone(static.Labels),
			Annotations: maps.Clone(static.Annotations),
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: "v1", Kind: "Node", Name: node, UID: nodeUID, Controller: &controller,
			}},
		},
		Spec: *static.Spec.DeepCopy(),
	}
	if p.Annotations == nil {
		p.Annotations = map[string]string{}
	}
	p.Annotations[annotationConfigMirror] = hash
	p.Annotations[annotationConfigSource] = sourceFile
	p.Annotations[annotationConfigHash] = string(static.UID)
	p.Spec.NodeName = node
	p.Spec.ServiceAccountName, p.Spec.DeprecatedServiceAccount = "", ""
	return p
}

// staticPodHash is the mirror annotation's value for static, as the
// kubelet's: the static pod's kubernetes.io/config.hash, which is its UID
// (pkg/kubelet/pod's IsMirrorPodOf compares config.mirror with it, and the
// node e2e's validateMirrorPod wants them equal). The agent derives the UID
// from the manifest as written (manifest.SetPodDefaults), so any edit of the
// file makes a new mirror; a manifest with its own metadata.uid keeps its
// mirror until that uid changes, as on the kubelet.
func staticPodHash(static *v1.Pod) string {
	return string(static.UID)
}
