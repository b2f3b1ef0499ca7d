package cluster

// The node's own labels as the API server holds them, for admission's node
// affinity and node selector checks (agent/node.Admit): the kubelet admits
// against the Node object its informer keeps, so a label another writer
// added (`kubectl label node`, the scheduler's e2e specs) counts as soon as
// the scheduler could have used it. The agent's configured labels alone
// (--node-labels and the well-known ones) would reject such a pod that the
// scheduler bound here.

import (
	"context"
	"log/slog"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
)

// NodeLabels keeps the node's Node object in an informer (field selector
// metadata.name). Build it with NewNodeLabels and start it with Run.
type NodeLabels struct {
	informer cache.SharedIndexInformer
	name     string
	logger   *slog.Logger
}

// NewNodeLabels builds the informer over api's Node named name.
func NewNodeLabels(api API, name string, logger *slog.Logger) *NodeLabels {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	nodes := api.Nodes()
	inf := newInformer(api, &v1.Node{}, fields.OneTermEqualSelector("metadata.name", name),
		func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) { return nodes.List(ctx, o) },
		func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) { return nodes.Watch(ctx, o) })
	return &NodeLabels{informer: inf, name: name, logger: logger.With("component", "node-labels")}
}

// Run runs the informer until ctx ends.
func (l *NodeLabels) Run(ctx context.Context) {
	l.informer.RunWithContext(ctx)
}

// Labels returns the Node object's labels as last seen (callers must not
// modify them), or nil before the Node was first seen: the caller then
// uses the labels it registered the Node with.
func (l *NodeLabels) Labels() map[string]string {
	obj, ok, err := l.informer.GetStore().GetByKey(l.name)
	if err != nil || !ok {
		return nil
	}
	if n, ok := obj.(*v1.Node); ok && n.Labels != nil {
		return n.Labels
	}
	return nil
}
