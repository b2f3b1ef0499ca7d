package daemon

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"

	"github.com/minikubelet/minikubelet/agent/manifest/manifesttest"
	"github.com/minikubelet/minikubelet/agent/source"
)

// A cluster user with pods/exec in a namespace creates a pod named after
// a pod the node runs for itself (a local API pod, a static pod), bound to
// this node: the node runs its own pod and reports the cluster's, and the
// API server then proxies kubectl exec, attach, port-forward and logs of
// "that pod" to the node. The kubelet server must not find the node's pod
// under that name: it sees only the cluster's pods, and static pods under
// their mirror names (<name>-<node>), as the kubelet names them.
func TestClusterView_NodePodsNotReachableByClusterNames(t *testing.T) {
	h := newHarness(t)
	store, err := source.NewPodStore(t.TempDir(), "node-1")
	require.NoError(t, err)
	d := New(h.agent, store, nil, Config{})
	ctx := context.Background()

	local, err := d.CreatePod(ctx, manifesttest.APIPod("default", "web", "local"))
	require.NoError(t, err)
	static := testPod(t, "apiVersion: v1\nkind: Pod\nmetadata:\n  name: etcd\n  namespace: kube-system\nspec:\n  containers:\n  - name: c\n    image: busybox\n")
	static.Annotations = map[string]string{source.AnnotationConfigSource: source.SourceFile}
	d.apply(source.SourceUpdate{Source: source.SourceFile, Pods: []*v1.Pod{static}})
	db := clusterPod(t, "db", "uid-db")
	clashWeb := clusterPod(t, "web", "uid-web-cluster")
	clashEtcd := clusterPod(t, "etcd", "uid-etcd-cluster")
	clashEtcd.Namespace = "kube-system"
	d.apply(source.SourceUpdate{Source: sourceTestCluster, Pods: []*v1.Pod{db, clashWeb, clashEtcd}})

	// The daemon itself resolves the names to the node's pods.
	p, err := d.GetPod("default", "web")
	require.NoError(t, err)
	require.Equal(t, local.UID, p.UID, "the local pod won the clash")

	v := d.ClusterView("node-1")
	for _, tt := range []struct{ ns, name string }{
		{"default", "web"},        // the local API's pod
		{"kube-system", "etcd"},   // a static pod by its own name
		{"default", "web-node-1"}, // not a static pod's mirror
		{"default", "-node-1"},
	} {
		_, err := v.GetPod(tt.ns, tt.name)
		assert.True(t, apierrors.IsNotFound(err), "%s/%s: %v", tt.ns, tt.name, err)
		_, err = v.LogPath(tt.ns, tt.name, "app", false)
		assert.True(t, apierrors.IsNotFound(err), "logs of %s/%s: %v", tt.ns, tt.name, err)
	}
	got, err := v.GetPod("default", "db")
	require.NoError(t, err)
	assert.Equal(t, types.UID("uid-db"), got.UID, "a cluster pod")
	got, err = v.GetPod("kube-system", "etcd-node-1")
	require.NoError(t, err)
	assert.Equal(t, static.UID, got.UID, "a static pod under its mirror's name")

	var names []string
	for _, p := range v.ListPods("") {
		names = append(names, p.Namespace+"/"+p.Name)
	}
	assert.ElementsMatch(t, []string{"default/db", "kube-system/etcd-node-1"}, names)
}
