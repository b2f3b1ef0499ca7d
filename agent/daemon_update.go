package agent

// This file is the daemon's side of updates through the local API
// (kubectl apply of a changed object): api.PodUpdater and
// api.ConfigUpdater.

import (
	"context"
	"errors"
	"fmt"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/minikubelet/minikubelet/agent/api"
	"github.com/minikubelet/minikubelet/agent/source"
)

var (
	_ api.PodUpdater    = (*Daemon)(nil)
	_ api.ConfigUpdater = (*Daemon)(nil)
	_ api.PodPreparer   = (*Daemon)(nil)
)

// PreparePod implements api.PodPreparer: the pod as CreatePod would store
// it (the store's defaults and validation), not stored.
func (d *Daemon) PreparePod(pod *v1.Pod) (*v1.Pod, error) {
	p, err := d.store.Prepare(pod)
	if err != nil {
		return nil, storeError(pod, err)
	}
	return p, nil
}

// UpdatePod implements api.PodUpdater. Pods on this node are immutable:
// a pod's UID is derived from its content, and a worker runs one UID for
// its whole life. So any change (an image, a label, an annotation)
// replaces the pod: its stored file is rewritten, the daemon stops the old
// pod (its grace period) and starts the new one under a new UID, as for an
// edited manifest file; the old pod shows as Terminating meanwhile. The
// API server would change an image (or labels)
// in place, restarting only that container; here the whole pod restarts,
// and the new pod's first event (Replaced) says so. Only pods submitted
// through the local API can change: a static pod's file is what to edit.
func (d *Daemon) UpdatePod(ctx context.Context, pod *v1.Pod) (*v1.Pod, error) {
	w, rejected := d.a.findPod(pod.Namespace, pod.Name)
	var live *v1.Pod // read-only
	switch {
	case w != nil:
		live = w.pod()
	case rejected != nil:
		live = rejected
	default:
		return nil, notFound(pod.Name)
	}
	switch src := live.Annotations[source.AnnotationConfigSource]; src {
	case source.SourceAPI:
	case source.SourceFile:
		return nil, apierrors.NewForbidden(schema.GroupResource{Resource: "pods"}, pod.Name,
			fmt.Errorf("it is a static pod from %s: edit that file to change it", live.Annotations[source.AnnotationSourceFile]))
	default:
		return nil, apierrors.NewForbidden(schema.GroupResource{Resource: "pods"}, pod.Name,
			fmt.Errorf("it comes from the %q pod source (the cluster's API server): change it there", src))
	}
	if w != nil && w.pod().DeletionTimestamp != nil {
		return nil, apierrors.NewConflict(schema.GroupResource{Resource: "pods"}, pod.Name,
			errors.New("the pod is being deleted: create it again once it is gone"))
	}
	next := pod.DeepCopy()
	// The node's fields: derived again for the new pod.
	next.UID, next.ResourceVersion, next.Generation = "", "", 0
	next.CreationTimestamp, next.DeletionTimestamp, next.DeletionGracePeriodSeconds = metav1.Time{}, nil, nil
	next.ManagedFields = nil
	delete(next.Annotations, source.AnnotationConfigSource)
	stored, err := d.store.ReplacePod(next)
	if err != nil {
		if errors.Is(err, source.ErrPodNotFound) {
			return nil, notFound(pod.Name)
		}
		return nil, storeError(pod, err)
	}
	// The old pod is deleted, as on the API server when a pod is
	// replaced: it shows as Terminating (deletionTimestamp, its own grace
	// period) until it is gone, and watchers see that.
	if w != nil {
		w.setDeletion(nil, d.a.clock.Now())
	}
	d.applyStore()
	if w != nil {
		d.watch.hub.Modify(w.snapshot())
	}
	d.a.mu.Lock()
	nw := d.a.workers[stored.UID]
	d.a.mu.Unlock()
	if nw == nil {
		return stored, nil
	}
	nw.event(v1.EventTypeNormal, "Replaced", "Replaced pod %s (uid %s) after a change through the API: pods on this node are immutable, so the node stopped the old pod and started this one", live.Name, live.UID)
	return nw.snapshot(), nil
}

// UpdateConfigMap implements api.ConfigUpdater: the ConfigMap changes in
// place, and the pods that use it see the change as with the kubelet
// (volumes at their next sync; environment variables at the next start).
// One defined in the manifest directory is Forbidden.
func (d *Daemon) UpdateConfigMap(ctx context.Context, cm *v1.ConfigMap) (*v1.ConfigMap, error) {
	if d.fileDefines(false, cm.Namespace, cm.Name) {
		return nil, apierrors.NewForbidden(configMapsResource, cm.Name,
			errors.New("it is defined in the manifest directory: edit its file to change it"))
	}
	stored, err := d.store.ReplaceConfigMap(cm)
	if err != nil {
		return nil, configStoreError("ConfigMap", configMapsResource, cm.Name, err)
	}
	d.applyStore()
	return stored, nil
}

// UpdateSecret implements api.ConfigUpdater, as UpdateConfigMap.
func (d *Daemon) UpdateSecret(ctx context.Context, secret *v1.Secret) (*v1.Secret, error) {
	if d.fileDefines(true, secret.Namespace, secret.Name) {
		return nil, apierrors.NewForbidden(secretsResource, secret.Name,
			errors.New("it is defined in the manifest directory: edit its file to change it"))
	}
	stored, err := d.store.ReplaceSecret(secret)
	if err != nil {
		return nil, configStoreError("Secret", secretsResource, secret.Name, err)
	}
	d.applyStore()
	return stored, nil
}
