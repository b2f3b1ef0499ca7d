package certificate

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"log/slog"
	"math/big"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	certificatesv1 "k8s.io/api/certificates/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/rest"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// testCA signs certificate requests as kube-controller-manager's csrsigning
// controller would.
type testCA struct {
	key  *ecdsa.PrivateKey
	cert *x509.Certificate
	pem  []byte
}

func newTestCA(t *testing.T) *testCA {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "test-ca"}, IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign, NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour)}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	require.NoError(t, err)
	cert, err := x509.ParseCertificate(der)
	require.NoError(t, err)
	return &testCA{key: key, cert: cert, pem: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})}
}

// sign issues a client certificate for the request, valid from notBefore
// for lifetime.
func (ca *testCA) sign(t *testing.T, csrPEM []byte, notBefore time.Time, lifetime time.Duration) []byte {
	t.Helper()
	block, _ := pem.Decode(csrPEM)
	require.NotNil(t, block)
	cr, err := x509.ParseCertificateRequest(block.Bytes)
	require.NoError(t, err)
	require.NoError(t, cr.CheckSignature())
	serial, _ := rand.Int(rand.Reader, big.NewInt(1<<62))
	tmpl := &x509.Certificate{SerialNumber: serial, Subject: cr.Subject, NotBefore: notBefore, NotAfter: notBefore.Add(lifetime),
		DNSNames: cr.DNSNames, IPAddresses: cr.IPAddresses,
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth, x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, cr.PublicKey, ca.key)
	require.NoError(t, err)
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}

// pair is a key and a certificate for subject from ca, as PEM.
func (ca *testCA) pair(t *testing.T, subject pkix.Name, notBefore time.Time, lifetime time.Duration) (certPEM, keyPEM []byte) {
	t.Helper()
	key, keyPEM, err := newKey()
	require.NoError(t, err)
	csrPEM, err := makeCSR(key, subject, nil)
	require.NoError(t, err)
	return ca.sign(t, csrPEM, notBefore, lifetime), keyPEM
}

// fakeCSRs is client-go's fake clientset with the API server's naming of
// generateName requests and UIDs.
func fakeCSRs() *fake.Clientset {
	cs := fake.NewClientset()
	var n atomic.Int32
	cs.PrependReactor("create", "certificatesigningrequests", func(a k8stesting.Action) (bool, runtime.Object, error) {
		csr := a.(k8stesting.CreateAction).GetObject().(*certificatesv1.CertificateSigningRequest)
		i := n.Add(1)
		if csr.Name == "" && csr.GenerateName != "" {
			csr.Name = fmt.Sprintf("%s%05d", csr.GenerateName, i)
		}
		csr.UID = types.UID(fmt.Sprintf("uid-%d", i))
		return false, nil, nil // the tracker stores it
	})
	return cs
}

// decide runs a controller that approves (or denies) and signs each new
// request until the test ends; approved counts the ones it issued.
type controller struct {
	deny     bool
	lifetime time.Duration
	// longer, once set, replaces lifetime for the requests after it.
	longer   atomic.Int64
	approved atomic.Int32
	seen     sync.Map
}

func (c *controller) run(t *testing.T, cs *fake.Clientset, ca *testCA) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	t.Cleanup(func() { cancel(); <-done })
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			list, err := cs.CertificatesV1().CertificateSigningRequests().List(ctx, metav1.ListOptions{})
			if err == nil {
				for _, csr := range list.Items {
					if _, dup := c.seen.LoadOrStore(csr.Name, true); dup {
						continue
					}
					if c.deny {
						csr.Status.Conditions = append(csr.Status.Conditions, certificatesv1.CertificateSigningRequestCondition{
							Type: certificatesv1.CertificateDenied, Status: "True", Reason: "NotMyNode", Message: "not a node of this cluster"})
					} else {
						csr.Status.Conditions = append(csr.Status.Conditions, certificatesv1.CertificateSigningRequestCondition{
							Type: certificatesv1.CertificateApproved, Status: "True", Reason: "AutoApproved"})
						lifetime := c.lifetime
						if l := c.longer.Load(); l != 0 {
							lifetime = time.Duration(l)
						}
						csr.Status.Certificate = ca.sign(t, csr.Spec.Request, time.Now().Add(-time.Second), lifetime)
					}
					_, _ = cs.CertificatesV1().CertificateSigningRequests().UpdateStatus(ctx, &csr, metav1.UpdateOptions{})
					c.approved.Add(1)
				}
			}
			time.Sleep(10 * time.Millisecond)
		}
	}()
}

// writeBootstrapKubeconfig writes a bootstrap token kubeconfig as kubeadm
// does.
func writeBootstrapKubeconfig(t *testing.T, dir string, ca *testCA) string {
	t.Helper()
	p := filepath.Join(dir, "bootstrap-kubelet.conf")
	kc := clientcmdapi.Config{
		Clusters:       map[string]*clientcmdapi.Cluster{"c": {Server: "https://192.0.2.1:6443", CertificateAuthorityData: ca.pem}},
		AuthInfos:      map[string]*clientcmdapi.AuthInfo{"tls-bootstrap-token-user": {Token: "abcdef.0123456789abcdef"}},
		Contexts:       map[string]*clientcmdapi.Context{"ctx": {Cluster: "c", AuthInfo: "tls-bootstrap-token-user"}},
		CurrentContext: "ctx",
	}
	require.NoError(t, clientcmd.WriteToFile(kc, p))
	return p
}

func testLogger(t *testing.T) *slog.Logger {
	return slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelInfo}))
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimSpace(string(p)))
	return len(p), nil
}

func bootstrapConfig(t *testing.T, cs *fake.Clientset, ca *testCA) BootstrapConfig {
	dir := t.TempDir()
	return BootstrapConfig{
		Kubeconfig:          filepath.Join(dir, "etc", "kubelet.conf"),
		BootstrapKubeconfig: writeBootstrapKubeconfig(t, dir, ca),
		CertDir:             filepath.Join(dir, "pki"),
		NodeName:            "worker-1",
		NewCSRClient: func(cfg *rest.Config) (CSRClient, error) {
			return cs.CertificatesV1().CertificateSigningRequests(), nil
		},
		Wait:   WaitOptions{Timeout: 20 * time.Second, Progress: 100 * time.Millisecond},
		Logger: testLogger(t),
	}
}

func mustConfig(t *testing.T, path string) *rest.Config {
	t.Helper()
	cfg, err := clientcmd.BuildConfigFromFlags("", path)
	require.NoError(t, err)
	return cfg
}

func pemOf(c *x509.Certificate) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: c.Raw})
}
