package main

import (
	"bytes"
	"context"
	"crypto/tls"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/minikubelet/minikubelet/agent/api"
)

// TestKubeconfigCommand_Rotate: --rotate writes and prints a kubeconfig
// with a new admin certificate of the same CA.
func TestKubeconfigCommand_Rotate(t *testing.T) {
	root := t.TempDir()
	p, err := api.EnsurePKI(filepath.Join(root, "pki"), "127.0.0.1:6443", nil, time.Now())
	require.NoError(t, err)
	path := filepath.Join(root, "etc", "admin.kubeconfig")
	require.NoError(t, api.WriteKubeconfig(path, p))

	var out bytes.Buffer
	require.NoError(t, kubeconfigCommand(context.Background(), []string{"--rotate", "--root-dir", root, "--admin-kubeconfig", path}, &out, io.Discard))
	written, err := os.ReadFile(path)
	require.NoError(t, err)
	assert.Equal(t, string(written), out.String(), "prints what it wrote")
	cfg, err := clientcmd.Load(written)
	require.NoError(t, err)
	user := cfg.AuthInfos[api.AdminUser]
	require.NotNil(t, user)
	pair, err := tls.X509KeyPair(user.ClientCertificateData, user.ClientKeyData)
	require.NoError(t, err)
	assert.NotEqual(t, p.Admin.SerialNumber, pair.Leaf.SerialNumber, "a new admin certificate")
	assert.NoError(t, pair.Leaf.CheckSignatureFrom(p.CA), "of the same CA")
	assert.Equal(t, p.CAPEM, cfg.Clusters["minikubelet"].CertificateAuthorityData)
}
