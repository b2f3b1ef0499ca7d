package cluster

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
)

// TestNodeLabels_FollowsTheNodeObject: nil before the Node is seen (the
// caller keeps its own labels), the Node's labels once listed, and a label
// another writer adds (`kubectl label node`) without a restart; another
// Node's labels never.
func TestNodeLabels_FollowsTheNodeObject(t *testing.T) {
	cs := fake.NewClientset(&v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "other", Labels: map[string]string{"zone": "b"}}})
	l := NewNodeLabels(fromClientset(cs), "node-a", nil)
	require.Nil(t, l.Labels(), "nothing seen before Run")

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); l.Run(ctx) }()
	defer func() { cancel(); <-done }()
	require.Eventually(t, l.informer.HasSynced, 10*time.Second, 5*time.Millisecond)
	require.Nil(t, l.Labels(), "no Node of ours yet: not another Node's labels")

	node, err := cs.CoreV1().Nodes().Create(ctx, &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-a",
		Labels: map[string]string{"kubernetes.io/hostname": "node-a"}}}, metav1.CreateOptions{})
	require.NoError(t, err)
	require.Eventually(t, func() bool { return l.Labels()["kubernetes.io/hostname"] == "node-a" }, 10*time.Second, 5*time.Millisecond)

	node.Labels["node"] = "node-a"
	_, err = cs.CoreV1().Nodes().Update(ctx, node, metav1.UpdateOptions{})
	require.NoError(t, err)
	require.Eventually(t, func() bool { return l.Labels()["node"] == "node-a" }, 10*time.Second, 5*time.Millisecond)
}
