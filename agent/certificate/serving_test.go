package certificate

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"io"
	"log"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	certificatesv1 "k8s.io/api/certificates/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// serverTLSBootstrap: the serving manager starts without a certificate
// (GetCertificate says why and what to do), requests one at once for
// kubernetes.io/kubelet-serving with the node's addresses as SANs and the
// serving usages, and a TLS server using GetCertificate then presents it,
// verifiable for the node's IP against the cluster CA.
func TestServingManager_RequestsWithTheNodesAddresses(t *testing.T) {
	ca := newTestCA(t)
	cs := fakeCSRs()
	store, err := NewStore(t.TempDir(), ServerPrefix)
	require.NoError(t, err)
	sans := &x509.CertificateRequest{DNSNames: []string{"worker-1"}, IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}}
	m, err := NewManager(ManagerConfig{Store: store, Subject: NodeSubject("worker-1"), Signer: certificatesv1.KubeletServingSignerName,
		Usages: ServingUsages, SANs: sans, StartEmpty: true, Name: "serving",
		Client: cs.CertificatesV1().CertificateSigningRequests(), Logger: testLogger(t),
		Wait: WaitOptions{Timeout: 10 * time.Second, Progress: 100 * time.Millisecond}})
	require.NoError(t, err)
	require.Nil(t, m.Current())
	_, err = m.GetCertificate(nil)
	require.ErrorContains(t, err, "no serving certificate available yet")
	require.ErrorContains(t, err, "kubectl certificate approve")

	// Not httptest: it would add its own certificate, which wins over
	// GetCertificate for a client that sends no SNI (an IP address).
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}),
		TLSConfig: &tls.Config{GetCertificate: m.GetCertificate}, ErrorLog: log.New(io.Discard, "", 0)}
	go func() { _ = srv.ServeTLS(l, "", "") }()
	defer srv.Close()
	url := "https://" + l.Addr().String()

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); m.Run(ctx) }()
	defer func() { cancel(); <-done }()
	// Nobody approved yet: the request is pending, the server has no
	// certificate.
	var csr certificatesv1.CertificateSigningRequest
	require.Eventually(t, func() bool {
		list, err := cs.CertificatesV1().CertificateSigningRequests().List(ctx, metav1.ListOptions{})
		if err != nil || len(list.Items) == 0 {
			return false
		}
		csr = list.Items[0]
		return true
	}, 10*time.Second, 10*time.Millisecond)
	require.Equal(t, "kubernetes.io/kubelet-serving", csr.Spec.SignerName)
	require.Equal(t, []certificatesv1.KeyUsage{"digital signature", "server auth"}, csr.Spec.Usages)
	block, _ := pem.Decode(csr.Spec.Request)
	cr, err := x509.ParseCertificateRequest(block.Bytes)
	require.NoError(t, err)
	require.Equal(t, "system:node:worker-1", cr.Subject.CommonName)
	require.Equal(t, []string{"system:nodes"}, cr.Subject.Organization)
	require.Equal(t, []string{"worker-1"}, cr.DNSNames)
	require.Len(t, cr.IPAddresses, 1)
	require.True(t, cr.IPAddresses[0].Equal(net.ParseIP("127.0.0.1")))

	pool := x509.NewCertPool()
	pool.AddCert(ca.cert)
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	_, err = client.Get(url)
	require.ErrorContains(t, err, "tls: internal error", "no serving certificate before the request is issued")

	(&controller{lifetime: time.Hour}).run(t, cs, ca)
	require.Eventually(t, func() bool { return m.Current() != nil }, 10*time.Second, 10*time.Millisecond)
	resp, err := client.Get(url)
	require.NoError(t, err, "the issued certificate verifies for 127.0.0.1 against the cluster CA")
	resp.Body.Close()
	cur, err := store.Current()
	require.NoError(t, err)
	require.Equal(t, m.Current().Leaf.SerialNumber, cur.Leaf.SerialNumber)
	require.Contains(t, store.CurrentPath(), "kubelet-server-current.pem")
}

// A stored serving certificate that lacks an address of the node (the
// node's IP changed) is renewed at once.
func TestServingManager_MissingAddressRenewsNow(t *testing.T) {
	ca := newTestCA(t)
	now := time.Now()
	store, err := NewStore(t.TempDir(), ServerPrefix)
	require.NoError(t, err)
	key, keyPEM, err := newKey()
	require.NoError(t, err)
	csrPEM, err := makeCSR(key, NodeSubject("n"), &x509.CertificateRequest{DNSNames: []string{"n"}, IPAddresses: []net.IP{net.ParseIP("10.0.0.1")}})
	require.NoError(t, err)
	_, err = store.Update(ca.sign(t, csrPEM, now.Add(-time.Minute), time.Hour), keyPEM, now)
	require.NoError(t, err)
	cfg := ManagerConfig{Store: store, Subject: NodeSubject("n"), StartEmpty: true, Logger: testLogger(t),
		Now: func() time.Time { return now }, Rand: func() float64 { return 0 }}
	cfg.SANs = &x509.CertificateRequest{DNSNames: []string{"n"}, IPAddresses: []net.IP{net.ParseIP("10.0.0.1")}}
	m, err := NewManager(cfg)
	require.NoError(t, err)
	require.True(t, m.deadline().After(now.Add(30*time.Minute)), "the addresses match: renewed at 70 %%")
	cfg.SANs = &x509.CertificateRequest{DNSNames: []string{"n"}, IPAddresses: []net.IP{net.ParseIP("10.0.0.2")}}
	m, err = NewManager(cfg)
	require.NoError(t, err)
	require.Equal(t, now, m.deadline())
}
