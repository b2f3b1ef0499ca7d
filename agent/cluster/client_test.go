package cluster

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/pem"
	"fmt"
	"math/big"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// clientCert returns a self-signed PEM certificate and key for subject.
func clientCert(t *testing.T, subject pkix.Name) (certPEM, keyPEM []byte) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: subject,
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	require.NoError(t, err)
	kder, err := x509.MarshalECPrivateKey(key)
	require.NoError(t, err)
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder})
}

// writeKubeconfig writes a kubeconfig whose user has the given YAML body.
func writeKubeconfig(t *testing.T, user string) string {
	t.Helper()
	return writeKubeconfigFor(t, "https://127.0.0.1:6443", user)
}

// writeKubeconfigFor writes a kubeconfig for server whose user has the
// given YAML body.
func writeKubeconfigFor(t *testing.T, server, user string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "kubeconfig")
	data := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: c
  cluster:
    server: %s
    insecure-skip-tls-verify: true
users:
- name: u
  user:
%s
contexts:
- name: x
  context: {cluster: c, user: u}
current-context: x
`, server, user)
	require.NoError(t, os.WriteFile(path, []byte(data), 0o600))
	return path
}

func TestNewClientAndCheckNodeIdentity(t *testing.T) {
	b64 := func(b []byte) string { return base64.StdEncoding.EncodeToString(b) }
	nodeCert, nodeKey := clientCert(t, pkix.Name{CommonName: "system:node:node-a", Organization: []string{"system:nodes"}})
	otherCert, otherKey := clientCert(t, pkix.Name{CommonName: "jane"})
	certUser := func(c, k []byte) string {
		return fmt.Sprintf("    client-certificate-data: %s\n    client-key-data: %s", b64(c), b64(k))
	}
	tests := []struct {
		name       string
		kubeconfig string // "" means a missing file
		wantErr    string
	}{
		{name: "the node's certificate", kubeconfig: certUser(nodeCert, nodeKey)},
		{name: "a certificate naming no node is left to the API server", kubeconfig: certUser(otherCert, otherKey)},
		{name: "a token", kubeconfig: "    token: abc.def"},
		{name: "no credentials", kubeconfig: "    {}", wantErr: "its current context has no credentials"},
		{name: "no file", wantErr: "kubeconfig: stat"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "missing")
			if tt.kubeconfig != "" {
				path = writeKubeconfig(t, tt.kubeconfig)
			}
			cs, cfg, err := NewClient(path, "minikubelet/test")
			if tt.wantErr != "" {
				require.ErrorContains(t, err, tt.wantErr)
				return
			}
			require.NoError(t, err)
			require.NotNil(t, cs)
			require.Equal(t, "minikubelet/test", cfg.UserAgent)
			require.NoError(t, CheckNodeIdentity(cfg, "node-a"))
		})
	}

	t.Run("a certificate of another node is refused with what to do", func(t *testing.T) {
		_, cfg, err := NewClient(writeKubeconfig(t, certUser(nodeCert, nodeKey)), "ua")
		require.NoError(t, err)
		err = CheckNodeIdentity(cfg, "node-b")
		require.EqualError(t, err, `the kubeconfig's client certificate is node "node-a"'s (CN system:node:node-a), but this node is named "node-b": the API server would refuse every write; use --node-name node-a or that node's kubeconfig`)
	})
	t.Run("a certificate file", func(t *testing.T) {
		dir := t.TempDir()
		cf, kf := filepath.Join(dir, "c.pem"), filepath.Join(dir, "k.pem")
		require.NoError(t, os.WriteFile(cf, nodeCert, 0o600))
		require.NoError(t, os.WriteFile(kf, nodeKey, 0o600))
		_, cfg, err := NewClient(writeKubeconfig(t, fmt.Sprintf("    client-certificate: %s\n    client-key: %s", cf, kf)), "ua")
		require.NoError(t, err)
		require.ErrorContains(t, CheckNodeIdentity(cfg, "node-b"), `node "node-a"'s`)
	})
}
