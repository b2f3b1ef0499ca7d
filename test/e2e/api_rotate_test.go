package e2e

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
)

// TestAPIAdminRotate is the leaked admin kubeconfig (issue #29, item 10):
// a copy of the admin kubeconfig works against a running daemon's TCP API
// until `minikubelet kubeconfig --rotate`, and gets 401 right after it,
// also on the connection client-go kept open; the kubeconfig the command
// prints and writes works, with the same CA.
func TestAPIAdminRotate(t *testing.T) {
	addr := "127.0.0.1:" + freeTCPPort(t)
	kubeconfig := filepath.Join(t.TempDir(), "etc", "admin.kubeconfig")
	d := newDaemon(t, nil, "--api-address", addr, "--admin-kubeconfig", kubeconfig)
	d.start(t)
	waitTLS(t, addr)

	leaked, err := os.ReadFile(kubeconfig)
	require.NoError(t, err)
	client := func(t *testing.T, kubeconfigBytes []byte) *kubernetes.Clientset {
		t.Helper()
		rc, err := clientcmd.RESTConfigFromKubeConfig(kubeconfigBytes)
		require.NoError(t, err)
		rc.ContentType = "application/json"
		cs, err := kubernetes.NewForConfig(rc)
		require.NoError(t, err)
		return cs
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	old := client(t, leaked)
	_, err = old.CoreV1().Pods("").List(ctx, metav1.ListOptions{})
	require.NoError(t, err, "the admin kubeconfig before the rotation")

	out, err := exec.CommandContext(ctx, suite.bin, "kubeconfig", "--rotate", "--root-dir", d.root, "--admin-kubeconfig", kubeconfig).Output()
	require.NoError(t, err, "minikubelet kubeconfig --rotate: %s", exitStderr(err))
	written, err := os.ReadFile(kubeconfig)
	require.NoError(t, err)
	assert.Equal(t, string(written), string(out), "prints the kubeconfig it wrote")
	assert.NotEqual(t, string(leaked), string(out))

	_, err = old.CoreV1().Pods("").List(ctx, metav1.ListOptions{})
	require.Error(t, err)
	assert.True(t, apierrors.IsUnauthorized(err), "the old admin certificate on its kept-alive connection: %v", err)
	_, err = client(t, leaked).CoreV1().Pods("").List(ctx, metav1.ListOptions{})
	assert.True(t, apierrors.IsUnauthorized(err), "the old admin certificate on a new connection: %v", err)

	_, err = client(t, out).CoreV1().Pods("").List(ctx, metav1.ListOptions{})
	require.NoError(t, err, "the rotated kubeconfig")
	oldCfg, err := clientcmd.Load(leaked)
	require.NoError(t, err)
	newCfg, err := clientcmd.Load(out)
	require.NoError(t, err)
	assert.Equal(t, oldCfg.Clusters["minikubelet"].CertificateAuthorityData, newCfg.Clusters["minikubelet"].CertificateAuthorityData, "no new CA")

	// The daemon keeps the rotation across a restart.
	d.stop(t)
	d.start(t)
	waitTLS(t, addr)
	_, err = client(t, leaked).CoreV1().Pods("").List(ctx, metav1.ListOptions{})
	assert.True(t, apierrors.IsUnauthorized(err), "after a restart: %v", err)
	_, err = client(t, out).CoreV1().Pods("").List(ctx, metav1.ListOptions{})
	require.NoError(t, err, "the rotated kubeconfig after a restart")
}

// exitStderr is the stderr of a failed command, if any.
func exitStderr(err error) string {
	if ee, ok := err.(*exec.ExitError); ok {
		return string(ee.Stderr)
	}
	return ""
}
