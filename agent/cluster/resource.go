package cluster

import (
	"context"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"
)

// object is what typedResource reads and writes: a typed API object.
type object interface {
	runtime.Object
	GetName() string
}

// typedResource is a typed client of one resource (pods, nodes, …) in one
// namespace ("" for cluster-scoped ones), with the calls of the XClient
// interfaces in API: the REST calls client-go's generated typed clients
// make, protobuf on the wire.
//
// It replaces client-go's generic typed client (k8s.io/client-go/gentype),
// which links client-go's fake-clientset machinery (client-go/testing) and
// through it strategicpatch, kube-openapi and the OpenAPI models: with
// strategicpatch itself (see twoWayMergePatch), 2.5 MB of the binary's
// 31 MB of code and read-only data, which the daemon maps whether or not it
// joins a cluster (issue #8, RSS).
type typedResource[T object, L runtime.Object] struct {
	client    rest.Interface
	name      string
	namespace string
	newObject func() T
	newList   func() L
}

// request starts a request on the resource, in its namespace if it has one.
func (r *typedResource[T, L]) request(verb *rest.Request) *rest.Request {
	return verb.UseProtobufAsDefault().
		NamespaceIfScoped(r.namespace, r.namespace != "").
		Resource(r.name)
}

func (r *typedResource[T, L]) Get(ctx context.Context, name string, opts metav1.GetOptions) (T, error) {
	out := r.newObject()
	err := r.request(r.client.Get()).Name(name).VersionedParams(&opts, nodeScheme().params).Do(ctx).Into(out)
	return out, err
}

func (r *typedResource[T, L]) List(ctx context.Context, opts metav1.ListOptions) (L, error) {
	out := r.newList()
	err := r.request(r.client.Get()).VersionedParams(&opts, nodeScheme().params).Timeout(timeoutOf(opts)).Do(ctx).Into(out)
	return out, err
}

func (r *typedResource[T, L]) Watch(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
	opts.Watch = true
	return r.request(r.client.Get()).VersionedParams(&opts, nodeScheme().params).Timeout(timeoutOf(opts)).Watch(ctx)
}

func (r *typedResource[T, L]) Create(ctx context.Context, obj T, opts metav1.CreateOptions) (T, error) {
	out := r.newObject()
	err := r.request(r.client.Post()).VersionedParams(&opts, nodeScheme().params).Body(obj).Do(ctx).Into(out)
	return out, err
}

func (r *typedResource[T, L]) Update(ctx context.Context, obj T, opts metav1.UpdateOptions) (T, error) {
	out := r.newObject()
	err := r.request(r.client.Put()).Name(obj.GetName()).VersionedParams(&opts, nodeScheme().params).Body(obj).Do(ctx).Into(out)
	return out, err
}

func (r *typedResource[T, L]) Delete(ctx context.Context, name string, opts metav1.DeleteOptions) error {
	return r.request(r.client.Delete()).Name(name).Body(&opts).Do(ctx).Error()
}

func (r *typedResource[T, L]) Patch(ctx context.Context, name string, pt types.PatchType, data []byte, opts metav1.PatchOptions, subresources ...string) (T, error) {
	out := r.newObject()
	err := r.request(r.client.Patch(pt)).Name(name).SubResource(subresources...).VersionedParams(&opts, nodeScheme().params).Body(data).Do(ctx).Into(out)
	return out, err
}

// timeoutOf is a list or watch request's own timeout (TimeoutSeconds).
func timeoutOf(opts metav1.ListOptions) time.Duration {
	if opts.TimeoutSeconds == nil {
		return 0
	}
	return time.Duration(*opts.TimeoutSeconds) * time.Second
}
