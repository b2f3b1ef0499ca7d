package cluster

import (
	"context"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
)

// newInformer is client-go's shared informer (list, then watch from the
// list's resource version, relisting with back-off when the watch breaks)
// over list and watch calls of one of API's clients restricted to
// selector; no resync. It stands in for the informers package's generated
// informers, which need the full clientset (issue #8). api is asked, as
// client-go's factory asks the clientset, whether it can serve streaming
// lists (the fake clientset cannot).
func newInformer(api API, obj runtime.Object, selector fields.Selector,
	list func(context.Context, metav1.ListOptions) (runtime.Object, error),
	watchFn func(context.Context, metav1.ListOptions) (watch.Interface, error)) cache.SharedIndexInformer {
	sel := selector.String()
	lw := &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			o.FieldSelector = sel
			return list(ctx, o)
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			o.FieldSelector = sel
			return watchFn(ctx, o)
		},
	}
	return cache.NewSharedIndexInformerWithOptions(cache.ToListWatcherWithWatchListSemantics(lw, api), obj,
		cache.SharedIndexInformerOptions{})
}

// syncPollPeriod is how often waitSynced asks.
const syncPollPeriod = 10 * time.Millisecond

// waitSynced waits until synced (an informer's HasSynced) or ctx ends, and
// reports which. It asks every 10 ms, where cache.WaitForCacheSync asks
// every 100 ms: pods wait for it (the first set, a new pod's ConfigMaps).
func waitSynced(ctx context.Context, synced func() bool) bool {
	t := time.NewTicker(syncPollPeriod)
	defer t.Stop()
	for !synced() {
		select {
		case <-t.C:
		case <-ctx.Done():
			return false
		}
	}
	return true
}
