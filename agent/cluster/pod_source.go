package cluster

// The API server as a pod source: the pods bound to this node (an informer
// with the field selector spec.nodeName=<node>, so only this node's pods
// stream to it, as the kubelet's apiserver source), turned into the same
// source.SourceUpdate the manifest directory and the local API produce.

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"

	"github.com/minikubelet/minikubelet/agent/manifest"
	"github.com/minikubelet/minikubelet/agent/source"
)

// SourceCluster names the API server source: SourceUpdate.Source, and the
// kubernetes.io/config.source annotation of its pods. (The kubelet calls it
// "api"; minikubelet's "api" is its own local API.)
const SourceCluster = "cluster"

// annotationConfigSource is the kubelet's annotation naming a pod's source
// (agent's constant is not exported).
const annotationConfigSource = "kubernetes.io/config.source"

// PodSource streams the pods the cluster bound to this node.
type PodSource struct {
	client   API
	nodeName string
	logger   *slog.Logger

	// podDone is the agent's PodDone (WithPodDone); nil: pod objects are
	// never deleted.
	podDone func(types.UID) <-chan struct{}
	// deleteRetryBase and deleteRetryMax bound the back-off of a failed
	// delete (tests shorten them).
	deleteRetryBase, deleteRetryMax time.Duration
	// configSyncWait bounds how long a set waits for the first list of a
	// ConfigMap or Secret its pods reference (DefaultConfigSyncWait).
	configSyncWait time.Duration
	// mirrors, when set, learns the node's mirror pods (WithMirrorPods).
	mirrors *MirrorPods
	// flush, when set (WithStatusFlush), sends a pod's final status
	// before its object is deleted.
	flush func(context.Context, types.UID)
	// holds reports whether the agent holds a pod (WithHeldPods); nil:
	// finished pods leave the set at once.
	holds func(types.UID) bool

	// synced, when set, is called by Run once the informer's first list
	// arrived; rebuilt after each rebuild of the set (tests).
	synced, rebuilt func()
}

// DefaultConfigSyncWait bounds how long the source holds a set whose pods
// reference a ConfigMap or Secret not listed yet: the pods then start with
// their data (usually milliseconds later) rather than waiting, with a
// reason, for a resync.
const DefaultConfigSyncWait = 10 * time.Second

// PodSourceOption configures a PodSource.
type PodSourceOption func(*PodSource)

// WithPodDone lets the source delete the objects of pods deleted on the
// API server once the agent has finished with them; podDone is the
// agent's (*agent.Agent).PodDone: nil for a pod the agent does not have
// (nothing to wait for), otherwise a channel closed when its teardown
// completed. Without it the source never deletes a pod object, and pods
// deleted gracefully stay Terminating on the API server.
func WithPodDone(podDone func(types.UID) <-chan struct{}) PodSourceOption {
	return func(s *PodSource) { s.podDone = podDone }
}

// WithStatusFlush has the source send a finished pod's final status
// through flush, the status writer's Flush, before it deletes the pod's
// object, as the kubelet's status manager does.
func WithStatusFlush(flush func(context.Context, types.UID)) PodSourceOption {
	return func(s *PodSource) { s.flush = flush }
}

// WithHeldPods keeps a pod the API server shows finished (Succeeded or
// Failed) in the set while holds, the agent's (*agent.Agent).Holds, says
// the agent has it: the kubelet keeps a finished pod's containers, and so
// its logs (`kubectl logs`, the conformance suite's way of reading a
// container's output), until the pod object is deleted. A finished pod the
// agent does not hold (after a restart of the agent, or one refused) stays
// out, so that a finished pod is never run again.
func WithHeldPods(holds func(types.UID) bool) PodSourceOption {
	return func(s *PodSource) { s.holds = holds }
}

// WithMirrorPods tells m the mirror pods bound to the node, which the
// source's informer sees (the source never runs them), whenever they
// change.
func WithMirrorPods(m *MirrorPods) PodSourceOption {
	return func(s *PodSource) { s.mirrors = m }
}

// NewPodSource returns the API server source for node nodeName.
func NewPodSource(client API, nodeName string, logger *slog.Logger, opts ...PodSourceOption) *PodSource {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	s := &PodSource{
		client: client, nodeName: nodeName, logger: logger.With("component", "cluster-pods"),
		deleteRetryBase: deleteRetryBase, deleteRetryMax: deleteRetryMax,
		configSyncWait: DefaultConfigSyncWait,
	}
	for _, o := range opts {
		o(s)
	}
	return s
}

// Run sends the node's complete pod set on out once the informer has
// listed them, and again whenever it changed; while out is not read, newer
// sets replace the unsent one, so Run never blocks on its consumer (as
// source.DirSource.Run). Nothing is sent before the first list: a consumer
// that collects orphans must wait for it. The informer reconnects by
// itself (with back-off) when the API server goes away; the pods of the
// last list stay desired meanwhile.
//
// The set carries the ConfigMaps and Secrets its pods reference (see
// configWatcher), each watched from when a pod first references it until
// none does, and is sent again when one of them changes; a set is held
// until those referenced for the first time have been listed
// (configSyncWait at most). An object that does not exist is absent.
//
// A pod deleted on the API server (deletionTimestamp set) stays in the set,
// marked, until its object is gone: the consumer tears it down with its
// grace period. With WithPodDone, once the consumer has received the
// marked set and the agent has finished with the pod, Run deletes the
// object (see podDeleter); terminal pods being deleted likewise.
func (s *PodSource) Run(ctx context.Context, out chan<- source.SourceUpdate) {
	informer := newInformer(s.client, &v1.Pod{}, fields.OneTermEqualSelector("spec.nodeName", s.nodeName),
		func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			return s.client.Pods(metav1.NamespaceAll).List(ctx, o)
		},
		func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			return s.client.Pods(metav1.NamespaceAll).Watch(ctx, o)
		})
	// Capacity 1: a burst of events is one rebuild.
	changed := make(chan struct{}, 1)
	notify := func() {
		select {
		case changed <- struct{}{}:
		default:
		}
	}
	if _, err := informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { notify() },
		UpdateFunc: func(any, any) { notify() },
		DeleteFunc: func(any) { notify() },
	}); err != nil {
		s.logger.Error("Cannot watch the node's pods", "err", err)
		return
	}
	informerDone := make(chan struct{})
	go func() {
		defer close(informerDone)
		informer.RunWithContext(ctx)
	}()
	defer func() { <-informerDone }()
	start := time.Now()
	if !waitSynced(ctx, informer.HasSynced) {
		return
	}
	s.logger.Info("Listed the node's pods on the API server", "took", time.Since(start).Round(time.Millisecond))
	if s.synced != nil {
		s.synced()
	}
	notify()

	deleter := newPodDeleter(ctx, s)
	defer deleter.stop()
	config := newConfigWatcher(ctx, s.client, notify)
	defer config.stop()
	var (
		pending *source.SourceUpdate
		lastKey string
		// refused holds the UIDs of pods already marked Failed here.
		refused = map[types.UID]bool{}
		// gen counts the informer states the set was built from; pendingGen
		// is pending's, delivered the newest the consumer has an
		// equivalent set of.
		gen, pendingGen, delivered uint64
		// applied is the Applied channel of the newest set sent.
		applied chan struct{}
	)
	for {
		var send chan<- source.SourceUpdate
		var u source.SourceUpdate
		var hold *time.Timer
		var holdC <-chan time.Time
		if pending != nil {
			if wait := config.unsynced(s.configSyncWait); wait > 0 {
				// Held for the first list of a referenced object: woken by
				// that list (notify), or by this timer.
				hold = time.NewTimer(wait)
				holdC = hold.C
			} else {
				send, u = out, *pending
				u.Applied = make(chan struct{})
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-holdC:
		case <-changed:
			pods := storedPods(informer.GetStore())
			gen++
			next, key := s.update(pods)
			refs := map[configRef]bool{}
			for _, p := range next.Pods {
				podConfigRefs(p, refs)
			}
			config.sync(refs)
			var configKey string
			next.ConfigMaps, next.Secrets, configKey = config.objects()
			key += "| " + configKey
			switch {
			case key != lastKey:
				lastKey, pending = key, &next
				pendingGen = gen
			case pending != nil:
				pendingGen = gen
			default:
				// The consumer's set is this one already.
				delivered = gen
			}
			s.refuseInvalid(ctx, pods, next.Errors, refused)
			if s.mirrors != nil {
				s.mirrors.observeMirrors(s.mirrorPods(pods))
			}
			deleter.observe(pods, gen)
			deleter.start(delivered, applied)
			if s.rebuilt != nil {
				s.rebuilt()
			}
		case send <- u:
			pending = nil
			delivered, applied = pendingGen, u.Applied
			deleter.start(delivered, applied)
		}
		if hold != nil {
			hold.Stop()
		}
	}
}

// mirrorPods picks the node's mirror pods out of pods.
func (s *PodSource) mirrorPods(pods []*v1.Pod) []*v1.Pod {
	var out []*v1.Pod
	for _, p := range pods {
		if isMirrorPod(p) && p.Spec.NodeName == s.nodeName {
			out = append(out, p)
		}
	}
	return out
}

// storedPods lists the pods of an informer's store.
func storedPods(store cache.Store) []*v1.Pod {
	objs := store.List()
	pods := make([]*v1.Pod, 0, len(objs))
	for _, o := range objs {
		if p, ok := o.(*v1.Pod); ok {
			pods = append(pods, p)
		}
	}
	return pods
}

// update builds the source's set from the informer's pods and a key that
// changes whenever the set does (UIDs and resource versions).
func (s *PodSource) update(pods []*v1.Pod) (source.SourceUpdate, string) {
	slices.SortFunc(pods, func(a, b *v1.Pod) int {
		return strings.Compare(a.Namespace+"/"+a.Name, b.Namespace+"/"+b.Name)
	})
	u := source.SourceUpdate{Source: SourceCluster}
	var key strings.Builder
	for _, p := range pods {
		if !s.wanted(p) {
			continue
		}
		fmt.Fprintf(&key, "%s@%s ", p.UID, p.ResourceVersion)
		prepared, err := PreparePod(p, s.nodeName)
		if err != nil {
			u.Errors = append(u.Errors, source.FileError{Path: podSourcePath(p), Err: err})
			continue
		}
		u.Pods = append(u.Pods, prepared)
	}
	return u, key.String()
}

// wanted reports whether p belongs in the source's set: bound to the node
// (the field selector says so already; this guards against a server that
// ignores it), not a mirror pod (the static pod runs from its manifest),
// and not finished (the kubelet never restarts a pod in a terminal phase)
// unless the agent holds it (WithHeldPods): then its stopped containers
// and their logs stay until the object is deleted. A pod being deleted
// stays, marked, until its object is gone: the consumer tears it down
// with its grace period.
func (s *PodSource) wanted(p *v1.Pod) bool {
	if p.Spec.NodeName != s.nodeName || isMirrorPod(p) {
		return false
	}
	if p.Status.Phase != v1.PodSucceeded && p.Status.Phase != v1.PodFailed {
		return true
	}
	return s.holds != nil && s.holds(p.UID)
}

// ReasonUnsupportedPodSpec is the status reason of a cluster pod that
// minikubelet cannot run (a field it does not support, or an invalid one).
const ReasonUnsupportedPodSpec = "UnsupportedPodSpec"

// refuseInvalid marks Failed, on the API server, every pod of errs not
// marked yet: phase Failed, reason UnsupportedPodSpec and a message with
// every problem, so that `kubectl get pods` says why the pod does not run
// (the pod then leaves the source as terminal). refused remembers the pods
// done; a failed patch is tried again at the next change of the node's pods.
func (s *PodSource) refuseInvalid(ctx context.Context, pods []*v1.Pod, errs []source.FileError, refused map[types.UID]bool) {
	if len(errs) == 0 {
		return
	}
	byPath := map[string]*v1.Pod{}
	for _, p := range pods {
		byPath[podSourcePath(p)] = p
	}
	for _, fe := range errs {
		p := byPath[fe.Path]
		if p == nil || refused[p.UID] || p.Status.Phase == v1.PodFailed {
			continue
		}
		problems := fe.Err.Error()
		var me *manifest.ManifestError
		if errors.As(fe.Err, &me) {
			problems = strings.Join(me.Problems, "; ")
		}
		msg := "Pod was rejected: minikubelet cannot run this pod: " + problems
		st := p.Status.DeepCopy()
		st.Phase, st.Reason, st.Message = v1.PodFailed, ReasonUnsupportedPodSpec, msg
		data, err := podStatusPatch(p.UID, p.Status, *st)
		if err == nil {
			rctx, cancel := context.WithTimeout(ctx, requestTimeout)
			_, err = s.client.Pods(p.Namespace).Patch(rctx, p.Name, types.StrategicMergePatchType, data, metav1.PatchOptions{}, "status")
			cancel()
		}
		if err != nil {
			s.logger.Warn("Cannot mark an unsupported pod Failed on the API server; retrying at the next change", "pod", p.Namespace+"/"+p.Name, "err", err)
			continue
		}
		refused[p.UID] = true
		s.logger.Warn("Pod refused", "pod", p.Namespace+"/"+p.Name, "podUID", string(p.UID), "reason", ReasonUnsupportedPodSpec, "problems", problems)
	}
}

// podSourcePath names a cluster pod where a file source names its file.
func podSourcePath(p *v1.Pod) string { return SourceCluster + ":" + p.Namespace + "/" + p.Name }

// PreparePod turns a pod from the API server into the pod the agent runs:
// a copy without what the server owns (status, resource version, managed
// fields, timestamps, finalizers), given the same
// defaults and validation as a pod from a manifest, and the
// kubernetes.io/config.source annotation "cluster". The UID is the API
// server's; so are the generation and the deletion mark and its grace period
// (DeletionTimestamp, DeletionGracePeriodSeconds) of a pod being deleted.
// A pod minikubelet cannot run is an *manifest.ManifestError listing every
// problem by field path.
func PreparePod(p *v1.Pod, nodeName string) (*v1.Pod, error) {
	c := &v1.Pod{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{
			Name:            p.Name,
			Namespace:       p.Namespace,
			UID:             p.UID,
			Labels:          p.Labels,
			Annotations:     p.Annotations,
			OwnerReferences: p.OwnerReferences,
		},
		Spec: p.Spec,
	}
	c = c.DeepCopy()
	// spec.priority is the API server's resolution of priorityClassName
	// (its Priority admission plugin): kept, it ranks the pod for eviction
	// and makes system-critical pods critical, as on the kubelet.
	manifest.SetPodDefaults(c, podSourcePath(p), nodeName)
	errs := scheduledPodErrors(manifest.ValidatePod(c))
	if c.Spec.NodeName != nodeName {
		errs = append(errs, field.Invalid(field.NewPath("spec", "nodeName"), c.Spec.NodeName,
			fmt.Sprintf("must be the name of this node (%q)", nodeName)))
	}
	if len(errs) > 0 {
		problems := make([]string, 0, len(errs))
		for _, e := range errs {
			problems = append(problems, e.Error())
		}
		return nil, &manifest.ManifestError{Source: podSourcePath(p), Problems: problems}
	}
	if c.Annotations == nil {
		c.Annotations = map[string]string{}
	}
	c.Annotations[annotationConfigSource] = SourceCluster
	// The conditions the readiness gates name are set by other controllers
	// on the API server's pod; Ready waits for them (agent/podstatus's
	// Conditions). Only those are kept: a new value of one is a change
	// of the pod the worker re-evaluates, the rest of the server's status
	// is the agent's own.
	for _, cond := range p.Status.Conditions {
		for _, g := range p.Spec.ReadinessGates {
			if cond.Type == g.ConditionType {
				c.Status.Conditions = append(c.Status.Conditions, *cond.DeepCopy())
				break
			}
		}
	}
	// The server's own fields, which a manifest may not set (hence after
	// validation). The generation is reported back as the status's
	// observedGeneration, as the kubelet does (KEP 5067).
	c.Generation = p.Generation
	if p.DeletionTimestamp != nil {
		t := *p.DeletionTimestamp
		c.DeletionTimestamp = &t
		if p.DeletionGracePeriodSeconds != nil {
			g := *p.DeletionGracePeriodSeconds
			c.DeletionGracePeriodSeconds = &g
		}
	}
	return c, nil
}

// scheduledPodErrors drops from a cluster pod's problems the refusal of
// spec.affinity.podAffinity and podAntiAffinity: those are the scheduler's
// to evaluate, and it placed the pod here already. The kubelet does not
// look at them either (its admission checks node name, host ports,
// resources, node selector and required node affinity, and taints);
// kubeadm's CoreDNS Deployment carries a preferred podAntiAffinity. A
// local pod, which no scheduler places, still has them refused.
func scheduledPodErrors(errs field.ErrorList) field.ErrorList {
	out := errs[:0:0]
	for _, e := range errs {
		if e.Type == field.ErrorTypeForbidden && (e.Field == "spec.affinity.podAffinity" || e.Field == "spec.affinity.podAntiAffinity") {
			continue
		}
		out = append(out, e)
	}
	return out
}
