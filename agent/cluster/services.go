package cluster

// The cluster's Services, for the service link variables of the node's
// containers (agent.ServiceLister): one informer on every namespace's
// Services, as the kubelet keeps one. Like the kubelet's, it leaves out
// headless Services (field selector spec.clusterIP!=None): they give no
// variables, and a cluster may have many.

import (
	"context"
	"log/slog"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
)

// serviceSyncWait is how long HasSynced waits for the first list the
// first time it is asked: a pod from the API server arriving together
// with the node's start then gets its variables at once, where the
// kubelet fails the container (CreateContainerConfigError) and retries.
const serviceSyncWait = 5 * time.Second

// ServiceLister keeps the cluster's Services in an informer. Build it with
// NewServiceLister and start it with Run; until then it lists nothing and
// has not synced.
type ServiceLister struct {
	informer cache.SharedIndexInformer
	logger   *slog.Logger
	// started is closed when Run started the informer.
	started chan struct{}
	// waitOnce makes only the first unsynced HasSynced wait.
	waitOnce sync.Once
	// syncWait is serviceSyncWait (tests shorten it).
	syncWait time.Duration
}

// NewServiceLister builds the lister over api's Services of every
// namespace.
func NewServiceLister(api API, logger *slog.Logger) *ServiceLister {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	client := api.Services(metav1.NamespaceAll)
	notHeadless := fields.OneTermNotEqualSelector("spec.clusterIP", v1.ClusterIPNone)
	inf := newInformer(api, &v1.Service{}, notHeadless,
		func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) { return client.List(ctx, o) },
		func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) { return client.Watch(ctx, o) })
	return &ServiceLister{informer: inf, logger: logger.With("component", "services"),
		started: make(chan struct{}), syncWait: serviceSyncWait}
}

// Run runs the informer until ctx ends.
func (s *ServiceLister) Run(ctx context.Context) {
	close(s.started)
	go func() {
		if waitSynced(ctx, s.informer.HasSynced) {
			s.logger.Info("Services listed", "count", len(s.informer.GetStore().List()))
		}
	}()
	s.informer.RunWithContext(ctx)
}

// ListServices returns the Services read so far (the informer's objects:
// callers must not modify them).
func (s *ServiceLister) ListServices() []*v1.Service {
	objs := s.informer.GetStore().List()
	out := make([]*v1.Service, 0, len(objs))
	for _, o := range objs {
		if svc, ok := o.(*v1.Service); ok {
			out = append(out, svc)
		}
	}
	return out
}

// HasSynced reports whether the Services were listed once. The first call
// before that waits up to serviceSyncWait for it; later calls answer at
// once (a pod then fails and is retried, as with the kubelet).
func (s *ServiceLister) HasSynced() bool {
	if s.informer.HasSynced() {
		return true
	}
	s.waitOnce.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), s.syncWait)
		defer cancel()
		select {
		case <-s.started:
		case <-ctx.Done():
			return
		}
		waitSynced(ctx, s.informer.HasSynced)
	})
	return s.informer.HasSynced()
}
