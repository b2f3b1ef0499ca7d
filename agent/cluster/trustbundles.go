package cluster

// The cluster's ClusterTrustBundles, for the projected clusterTrustBundle
// sources of the node's pods (agent/volume.ClusterTrustBundles): one
// informer on every certificates.k8s.io/v1 ClusterTrustBundle, as the
// kubelet's ClusterTrustBundle manager keeps one (the system:node
// ClusterRole lets nodes get, list and watch them all). Like the
// kubelet's (LazyInformerManager), it starts on first use: a node whose
// pods project no bundle never watches them.
//
// Only certificates.k8s.io/v1 is read (GA, and served by default, in
// Kubernetes 1.37): the kubelet also falls back to v1beta1 and v1alpha1
// for older API servers, which the version skew policy does not let a
// 1.37 node join anyway.

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"

	"github.com/minikubelet/minikubelet/agent/volume"
)

// ClusterTrustBundleClient is the part of client-go's certificates.k8s.io/v1
// ClusterTrustBundleInterface the node uses (client-go's fake clientset
// satisfies it).
type ClusterTrustBundleClient interface {
	List(ctx context.Context, opts metav1.ListOptions) (*certificatesv1.ClusterTrustBundleList, error)
	Watch(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error)
}

// NewClusterTrustBundleClient is a ClusterTrustBundle client over cfg
// (the node's), with the typed client of the node's other resources, as
// NewCSRClient.
func NewClusterTrustBundleClient(cfg *rest.Config, userAgent string) (ClusterTrustBundleClient, error) {
	rc, err := certificatesRESTClient(cfg, userAgent) // podcert.go
	if err != nil {
		return nil, err
	}
	return &typedResource[*certificatesv1.ClusterTrustBundle, *certificatesv1.ClusterTrustBundleList]{
		client: rc, name: "clustertrustbundles",
		newObject: func() *certificatesv1.ClusterTrustBundle { return &certificatesv1.ClusterTrustBundle{} },
		newList:   func() *certificatesv1.ClusterTrustBundleList { return &certificatesv1.ClusterTrustBundleList{} },
	}, nil
}

// trustBundleSyncWait is how long a first use waits for the informer's
// first list (the kubelet's LazyInformerManager waits 10 s too); a pod
// that needs a bundle waits for it anyway.
const trustBundleSyncWait = 10 * time.Second

// TrustBundleLister keeps the cluster's ClusterTrustBundles in an
// informer, started on first use once Run runs. It implements
// volume.ClusterTrustBundles.
type TrustBundleLister struct {
	informer cache.SharedIndexInformer
	logger   *slog.Logger
	// syncWait is trustBundleSyncWait (tests shorten it).
	syncWait time.Duration

	// mu guards ctx and started.
	mu sync.Mutex
	// ctx is Run's; nil before Run.
	ctx context.Context
	// started is set once the informer runs.
	started bool
}

var _ volume.ClusterTrustBundles = (*TrustBundleLister)(nil)

// NewTrustBundleLister builds the lister over client. watchList is asked,
// as client-go's informer factory asks the clientset, whether the client
// serves streaming lists: nil for the API server, the fake clientset in
// tests (it does not).
func NewTrustBundleLister(client ClusterTrustBundleClient, watchList any, logger *slog.Logger) *TrustBundleLister {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	lw := &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			return client.List(ctx, o)
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			return client.Watch(ctx, o)
		},
	}
	inf := cache.NewSharedIndexInformerWithOptions(cache.ToListWatcherWithWatchListSemantics(lw, watchList),
		&certificatesv1.ClusterTrustBundle{}, cache.SharedIndexInformerOptions{})
	return &TrustBundleLister{informer: inf, logger: logger.With("component", "clustertrustbundles"), syncWait: trustBundleSyncWait}
}

// Run lets the informer start (on first use) and runs it until ctx ends.
func (l *TrustBundleLister) Run(ctx context.Context) {
	l.mu.Lock()
	l.ctx = ctx
	l.mu.Unlock()
	<-ctx.Done()
}

// synced starts the informer if it does not run yet and waits up to
// syncWait for its first list. The error says what to check.
func (l *TrustBundleLister) synced() error {
	l.mu.Lock()
	ctx := l.ctx
	if ctx != nil && !l.started {
		l.started = true
		go l.informer.RunWithContext(ctx)
		go func() {
			if waitSynced(ctx, l.informer.HasSynced) {
				l.logger.Info("ClusterTrustBundles listed", "count", len(l.informer.GetStore().ListKeys()))
			}
		}()
	}
	l.mu.Unlock()
	if ctx == nil {
		return fmt.Errorf("the node's ClusterTrustBundle informer does not run yet")
	}
	if l.informer.HasSynced() {
		return nil
	}
	wctx, cancel := context.WithTimeout(ctx, l.syncWait)
	defer cancel()
	if !waitSynced(wctx, l.informer.HasSynced) {
		return fmt.Errorf("ClusterTrustBundles (certificates.k8s.io/v1) not listed yet after %s: check that the API server serves them "+
			"(Kubernetes 1.37 does by default) and lets the node list and watch them (the system:node ClusterRole does); the pod waits and retries", l.syncWait)
	}
	return nil
}

// ClusterTrustBundle implements volume.ClusterTrustBundles: the named
// bundle, or an error that Is volume.ErrConfigNotFound.
func (l *TrustBundleLister) ClusterTrustBundle(name string) (*certificatesv1.ClusterTrustBundle, error) {
	if err := l.synced(); err != nil {
		return nil, err
	}
	obj, ok, err := l.informer.GetStore().GetByKey(name)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, fmt.Errorf("clustertrustbundles.certificates.k8s.io %q %w", name, volume.ErrConfigNotFound)
	}
	ctb, ok := obj.(*certificatesv1.ClusterTrustBundle)
	if !ok {
		return nil, fmt.Errorf("ClusterTrustBundle informer holds a %T", obj)
	}
	return ctb, nil
}

// ListClusterTrustBundles implements volume.ClusterTrustBundles: the
// bundles whose labels match selector.
func (l *TrustBundleLister) ListClusterTrustBundles(selector labels.Selector) ([]*certificatesv1.ClusterTrustBundle, error) {
	if err := l.synced(); err != nil {
		return nil, err
	}
	var out []*certificatesv1.ClusterTrustBundle
	err := cache.ListAll(l.informer.GetStore(), selector, func(obj any) {
		if ctb, ok := obj.(*certificatesv1.ClusterTrustBundle); ok {
			out = append(out, ctb)
		}
	})
	return out, err
}
