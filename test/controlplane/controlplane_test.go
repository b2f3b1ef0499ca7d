package controlplane

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	authenticationv1 "k8s.io/api/authentication/v1"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestMain(m *testing.M) {
	if !Enabled() {
		fmt.Printf("controlplane: skipped; set %s=1 (make test-e2e; root)\n", EnvGate)
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// TestControlPlane_ServesAndRestrictsNodes checks what the cluster-mode
// tests rely on: the admin can do everything; a node identity may write
// its own Node and nothing of another node's (Node authorizer and
// NodeRestriction); service-account tokens can be requested; and the
// apiserver can be stopped and started again at the same address.
func TestControlPlane_ServesAndRestrictsNodes(t *testing.T) {
	cp := Start(t, "node-x")
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()

	ns, err := cp.Admin.CoreV1().Namespaces().Get(ctx, v1.NamespaceNodeLease, metav1.GetOptions{})
	require.NoError(t, err, "the apiserver creates kube-node-lease itself")
	require.Equal(t, v1.NamespaceNodeLease, ns.Name)
	_, err = cp.Admin.CoreV1().ServiceAccounts("default").Get(ctx, "default", metav1.GetOptions{})
	require.NoError(t, err, "start.sh creates the default ServiceAccount")

	node := cp.NodeClient(t, "node-x")
	_, err = node.CoreV1().Nodes().Create(ctx, &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-x"}}, metav1.CreateOptions{})
	require.NoError(t, err, "a node registers itself")
	_, err = node.CoreV1().Nodes().Create(ctx, &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-y"}}, metav1.CreateOptions{})
	require.True(t, apierrors.IsForbidden(err), "NodeRestriction: not another node, got %v", err)
	_, err = node.CoreV1().Secrets("default").List(ctx, metav1.ListOptions{})
	require.True(t, apierrors.IsForbidden(err), "Node authorizer: no secret listing, got %v", err)

	tr, err := cp.Admin.CoreV1().ServiceAccounts("default").CreateToken(ctx, "default", &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: new(int64(600))},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	require.NotEmpty(t, tr.Status.Token)

	require.NoError(t, cp.CreateNamespace(ctx, "other"))
	cm, err := cp.Admin.CoreV1().ConfigMaps("other").Get(ctx, "kube-root-ca.crt", metav1.GetOptions{})
	require.NoError(t, err)
	require.Contains(t, cm.Data["ca.crt"], "BEGIN CERTIFICATE")

	// An outage: down, then back at the same address with the same data.
	cp.StopAPIServer(t)
	_, err = cp.Admin.CoreV1().Nodes().Get(ctx, "node-x", metav1.GetOptions{})
	require.Error(t, err)
	start := time.Now()
	cp.StartAPIServer(t)
	t.Logf("apiserver restarted and ready in %s", time.Since(start).Round(time.Millisecond))
	_, err = cp.Admin.CoreV1().Nodes().Get(ctx, "node-x", metav1.GetOptions{})
	require.NoError(t, err)
}
