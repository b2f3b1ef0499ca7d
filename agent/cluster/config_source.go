package cluster

// The ConfigMaps and Secrets of the node's pods, read from the API server
// the way the kubelet's watch-based managers do: one informer per object a
// pod references, listing and watching that name only (field selector
// metadata.name=<name> in its namespace; the Node authorizer lets a node
// read nothing else, and only objects its pods reference), started when
// the first pod references it and stopped when the last one is gone.

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
)

// Kinds of referenced objects.
const (
	kindConfigMap = "ConfigMap"
	kindSecret    = "Secret"
)

// configRef names one ConfigMap or Secret.
type configRef struct {
	kind, namespace, name string
}

// podConfigRefs adds to refs the ConfigMaps and Secrets pod references: its
// volumes (configMap, secret, and the configMap and secret sources of
// projected volumes), the env and envFrom of every container (init,
// ephemeral and app), and its imagePullSecrets.
func podConfigRefs(pod *v1.Pod, refs map[configRef]bool) {
	add := func(kind, name string) {
		if name != "" {
			refs[configRef{kind: kind, namespace: pod.Namespace, name: name}] = true
		}
	}
	for _, s := range pod.Spec.ImagePullSecrets {
		add(kindSecret, s.Name)
	}
	for _, vol := range pod.Spec.Volumes {
		switch {
		case vol.ConfigMap != nil:
			add(kindConfigMap, vol.ConfigMap.Name)
		case vol.Secret != nil:
			add(kindSecret, vol.Secret.SecretName)
		case vol.Projected != nil:
			for _, src := range vol.Projected.Sources {
				if src.ConfigMap != nil {
					add(kindConfigMap, src.ConfigMap.Name)
				}
				if src.Secret != nil {
					add(kindSecret, src.Secret.Name)
				}
			}
		}
	}
	containerRefs := func(env []v1.EnvVar, envFrom []v1.EnvFromSource) {
		for _, e := range envFrom {
			if e.ConfigMapRef != nil {
				add(kindConfigMap, e.ConfigMapRef.Name)
			}
			if e.SecretRef != nil {
				add(kindSecret, e.SecretRef.Name)
			}
		}
		for _, e := range env {
			if e.ValueFrom == nil {
				continue
			}
			if r := e.ValueFrom.ConfigMapKeyRef; r != nil {
				add(kindConfigMap, r.Name)
			}
			if r := e.ValueFrom.SecretKeyRef; r != nil {
				add(kindSecret, r.Name)
			}
		}
	}
	for _, c := range pod.Spec.InitContainers {
		containerRefs(c.Env, c.EnvFrom)
	}
	for _, c := range pod.Spec.Containers {
		containerRefs(c.Env, c.EnvFrom)
	}
	for _, c := range pod.Spec.EphemeralContainers {
		containerRefs(c.Env, c.EnvFrom)
	}
}

// configWatcher keeps one informer per referenced object. It belongs to
// PodSource.Run's goroutine: sync, objects and stop are called from there.
type configWatcher struct {
	client API
	ctx    context.Context
	// notify wakes the source's loop: an object changed, or an informer
	// listed for the first time.
	notify  func()
	watches map[configRef]*configWatch
	wg      sync.WaitGroup
}

// configWatch is the informer of one object.
type configWatch struct {
	informer cache.SharedIndexInformer
	cancel   context.CancelFunc
	started  time.Time
	// prepared is the copy last handed out, reused while the object's
	// resource version is the same (the daemon compares sets by pointer
	// first).
	prepared runtime.Object
	uid      types.UID
	rv       string
}

func newConfigWatcher(ctx context.Context, client API, notify func()) *configWatcher {
	return &configWatcher{client: client, ctx: ctx, notify: notify, watches: map[configRef]*configWatch{}}
}

// sync starts an informer for every reference not watched yet and stops
// those no pod references any more.
func (c *configWatcher) sync(refs map[configRef]bool) {
	for ref, w := range c.watches {
		if !refs[ref] {
			w.cancel()
			delete(c.watches, ref)
		}
	}
	for ref := range refs {
		if _, ok := c.watches[ref]; !ok {
			c.watches[ref] = c.start(ref)
		}
	}
}

// start runs the informer of ref until its watch is stopped.
func (c *configWatcher) start(ref configRef) *configWatch {
	byName := fields.OneTermEqualSelector("metadata.name", ref.name)
	var inf cache.SharedIndexInformer
	if ref.kind == kindConfigMap {
		client := c.client.ConfigMaps(ref.namespace)
		inf = newInformer(c.client, &v1.ConfigMap{}, byName,
			func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) { return client.List(ctx, o) },
			func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) { return client.Watch(ctx, o) })
	} else {
		client := c.client.Secrets(ref.namespace)
		inf = newInformer(c.client, &v1.Secret{}, byName,
			func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) { return client.List(ctx, o) },
			func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) { return client.Watch(ctx, o) })
	}
	// Only ref's own events matter (a server, or the fake clientset, that
	// ignores the selector sends others).
	mine := func(obj any) bool {
		if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
			obj = d.Obj
		}
		m, ok := obj.(metav1.Object)
		return ok && m.GetName() == ref.name
	}
	_, _ = inf.AddEventHandler(cache.FilteringResourceEventHandler{
		FilterFunc: mine,
		Handler: cache.ResourceEventHandlerFuncs{
			AddFunc:    func(any) { c.notify() },
			UpdateFunc: func(any, any) { c.notify() },
			DeleteFunc: func(any) { c.notify() },
		},
	})
	ctx, cancel := context.WithCancel(c.ctx)
	c.wg.Add(2)
	go func() {
		defer c.wg.Done()
		inf.RunWithContext(ctx)
	}()
	go func() {
		defer c.wg.Done()
		// A missing object is known only once the list answered, which no
		// event tells.
		if waitSynced(ctx, inf.HasSynced) {
			c.notify()
		}
	}()
	return &configWatch{informer: inf, cancel: cancel, started: time.Now()}
}

// unsynced returns how long a set should still be held for the objects
// not listed yet: until the last informer started less than wait ago has
// listed (0: nothing to wait for). An object the API server keeps
// refusing (the Node authorizer, until it saw the pod) delays sets by
// wait at most; its informer keeps retrying.
func (c *configWatcher) unsynced(wait time.Duration) time.Duration {
	var longest time.Duration
	for _, w := range c.watches {
		if w.informer.HasSynced() {
			continue
		}
		longest = max(longest, wait-time.Since(w.started))
	}
	return longest
}

// objects returns the watched objects that exist, sorted by namespace and
// name, and a key that changes whenever one of them does.
func (c *configWatcher) objects() (cms []*v1.ConfigMap, secrets []*v1.Secret, key string) {
	refs := make([]configRef, 0, len(c.watches))
	for ref := range c.watches {
		refs = append(refs, ref)
	}
	slices.SortFunc(refs, func(a, b configRef) int {
		return strings.Compare(a.kind+"/"+a.namespace+"/"+a.name, b.kind+"/"+b.namespace+"/"+b.name)
	})
	var k strings.Builder
	for _, ref := range refs {
		w := c.watches[ref]
		obj, ok, err := w.informer.GetStore().GetByKey(ref.namespace + "/" + ref.name)
		if err != nil || !ok {
			continue
		}
		m, ok := obj.(metav1.Object)
		if !ok {
			continue
		}
		if w.prepared == nil || w.uid != m.GetUID() || w.rv != m.GetResourceVersion() {
			w.prepared, w.uid, w.rv = prepareConfigObject(obj), m.GetUID(), m.GetResourceVersion()
		}
		fmt.Fprintf(&k, "%s:%s/%s@%s/%s ", ref.kind, ref.namespace, ref.name, w.uid, w.rv)
		switch p := w.prepared.(type) {
		case *v1.ConfigMap:
			cms = append(cms, p)
		case *v1.Secret:
			secrets = append(secrets, p)
		}
	}
	return cms, secrets, k.String()
}

// stop stops every informer and waits for them.
func (c *configWatcher) stop() {
	for ref, w := range c.watches {
		w.cancel()
		delete(c.watches, ref)
	}
	c.wg.Wait()
}

// prepareConfigObject is the agent's copy of an informer's ConfigMap or
// Secret: its kind set, without the managed fields (the agent mirrors the
// ConfigMaps to files under its root dir; Secrets stay in memory). The
// agent keeps them in the scope of this source: only the cluster's pods
// see them, and no node-local object of the same name shadows them.
func prepareConfigObject(obj any) runtime.Object {
	switch o := obj.(type) {
	case *v1.ConfigMap:
		c := o.DeepCopy()
		c.TypeMeta = metav1.TypeMeta{APIVersion: "v1", Kind: kindConfigMap}
		c.ManagedFields = nil
		return c
	case *v1.Secret:
		c := o.DeepCopy()
		c.TypeMeta = metav1.TypeMeta{APIVersion: "v1", Kind: kindSecret}
		c.ManagedFields = nil
		return c
	}
	return nil
}
