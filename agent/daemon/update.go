package daemon

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
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/minikubelet/minikubelet/agent/api"
	"github.com/minikubelet/minikubelet/agent/manifest"
	"github.com/minikubelet/minikubelet/agent/source"
)

// podsResource names pods in API errors.
var podsResource = schema.GroupResource{Resource: "pods"}

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

// UpdatePod implements api.PodUpdater with the API server's rules for a
// pod update (manifest.ValidatePodUpdate): metadata (labels, annotations),
// activeDeadlineSeconds (set or lowered), added tolerations and the images
// of containers and init containers change in place; anything else in the
// spec is Invalid (422, Forbidden on "spec", naming the changed fields),
// and the user deletes and creates the pod again (kubectl replace --force).
// The pod keeps its UID, sandbox and IP: the stored file is rewritten under
// the same UID and the worker gets the new spec, whose changed images
// change those containers' hashes, so the plan kills and starts only them
// ("Container c definition changed"), as the kubelet does. A label or
// annotation changes no hash and restarts nothing.
//
// A pod.ResourceVersion other than the pod's current one is a Conflict
// (409), as on the API server; an empty one updates unconditionally (pods
// allow it there too). Server-owned metadata (uid, creationTimestamp,
// resourceVersion, deletion fields, generation, managedFields) is the
// stored pod's whatever the client sends, as the API server's
// BeforeUpdate does, except a uid that differs, which is refused. Only
// pods submitted through the local API can change: a static pod's file is
// what to edit.
func (d *Daemon) UpdatePod(ctx context.Context, pod *v1.Pod) (*v1.Pod, error) {
	// One update at a time: the resourceVersion check and the change are
	// one step, as on the API server (two PUTs from the same version:
	// one wins, the other gets 409).
	d.updateMu.Lock()
	defer d.updateMu.Unlock()
	w, rejected := d.a.FindPod(pod.Namespace, pod.Name)
	var live *v1.Pod // read-only
	switch {
	case w != nil:
		live = w.Pod()
	case rejected != nil:
		live = rejected
	default:
		return nil, notFound(pod.Name)
	}
	switch src := live.Annotations[source.AnnotationConfigSource]; src {
	case source.SourceAPI:
	case source.SourceFile:
		return nil, apierrors.NewForbidden(podsResource, pod.Name,
			fmt.Errorf("it is a static pod from %s: edit that file to change it", live.Annotations[source.AnnotationSourceFile]))
	default:
		return nil, apierrors.NewForbidden(podsResource, pod.Name,
			fmt.Errorf("it comes from the %q pod source (the cluster's API server): change it there", src))
	}
	if w != nil && w.Pod().DeletionTimestamp != nil {
		return nil, apierrors.NewConflict(podsResource, pod.Name,
			errors.New("the pod is being deleted: create it again once it is gone"))
	}
	if rv := pod.ResourceVersion; rv != "" && rv != d.watch.hub.PodResourceVersion(live) {
		return nil, apierrors.NewConflict(podsResource, pod.Name,
			errors.New("the object has been modified; please apply your changes to the latest version and try again"))
	}
	next := pod.DeepCopy()
	if next.UID == "" {
		next.UID = live.UID
	}
	// The server's fields: the stored pod's (it has none of them).
	next.ResourceVersion, next.Generation, next.ManagedFields = "", 0, nil
	next.CreationTimestamp, next.DeletionTimestamp, next.DeletionGracePeriodSeconds = metav1.Time{}, nil, nil
	next.Status = v1.PodStatus{}
	_, changed, err := d.store.UpdatePod(next, func(prepared, stored *v1.Pod) error {
		if rule := manifest.ValidatePodUpdate(prepared, stored); len(rule) > 0 {
			return apierrors.NewInvalid(schema.GroupKind{Kind: "Pod"}, pod.Name, rule)
		}
		return nil
	})
	switch {
	case errors.Is(err, source.ErrPodNotFound):
		return nil, notFound(pod.Name)
	case errors.Is(err, source.ErrPodReplaced):
		if next.UID != live.UID {
			return nil, apierrors.NewInvalid(schema.GroupKind{Kind: "Pod"}, pod.Name, field.ErrorList{
				field.Invalid(field.NewPath("metadata", "uid"), next.UID, "field is immutable")})
		}
		return nil, apierrors.NewConflict(podsResource, pod.Name, errors.New("the pod was deleted and created again meanwhile: get it again and retry"))
	case err != nil:
		var se *apierrors.StatusError
		if errors.As(err, &se) {
			return nil, err
		}
		return nil, storeError(pod, err)
	}
	if changed {
		d.applyStore() // the worker (or the rejected pod) takes the new spec
	}
	got, err := d.GetPod(pod.Namespace, pod.Name)
	if err != nil {
		return nil, err
	}
	if changed {
		// A new resource version for the change (watchers see the new
		// labels now, not at the pod's next status report).
		d.watch.hub.Modify(got)
		got.ResourceVersion = d.watch.hub.PodResourceVersion(got)
	}
	return got, nil
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
