package certificate

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"io"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	certificatesv1 "k8s.io/api/certificates/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
)

// The renewal falls at 70 % + r x 20 % of the lifetime, r in [0, 1):
// within 70-90 %, measured from NotBefore.
func TestRotationDeadline(t *testing.T) {
	nb := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	na := nb.Add(100 * time.Hour)
	require.WithinDuration(t, nb.Add(70*time.Hour), RotationDeadline(nb, na, 0), time.Microsecond)
	require.WithinDuration(t, nb.Add(80*time.Hour), RotationDeadline(nb, na, 0.5), time.Microsecond)
	require.WithinDuration(t, nb.Add(89*time.Hour), RotationDeadline(nb, na, 0.95), time.Microsecond)
	// A year's certificate, as the csrsigning controller issues by default.
	year := nb.Add(365 * 24 * time.Hour)
	require.WithinDuration(t, nb.Add(time.Duration(0.7*365*24)*time.Hour), RotationDeadline(nb, year, 0), time.Microsecond)
	m := &Manager{cfg: ManagerConfig{Subject: NodeSubject("n")}}
	m.cfg.Rand = func() float64 { return 0.25 }
	m.cert = &tls.Certificate{Leaf: &x509.Certificate{NotBefore: nb, NotAfter: na, Subject: NodeSubject("n")}}
	require.WithinDuration(t, nb.Add(75*time.Hour), m.deadline(), time.Microsecond)
}

// A certificate of another node (or without system:nodes) is renewed at
// once.
func TestManager_WrongSubjectRenewsNow(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	m := &Manager{cfg: ManagerConfig{Subject: NodeSubject("n"), Now: func() time.Time { return now }, Rand: func() float64 { return 0 }, Logger: testLogger(t)}}
	m.cert = &tls.Certificate{Leaf: &x509.Certificate{NotBefore: now.Add(-time.Hour), NotAfter: now.Add(time.Hour), Subject: NodeSubject("other")}}
	require.Equal(t, now, m.deadline())
}

// The manager renews a short-lived certificate by itself, through new
// requests (generateName csr-, the kubelet's signer and usages), and a
// client built with UseRotatingCertificate presents the new certificate at
// once: its connections are closed on renewal. The TLS server here
// answers with the serial number of the client certificate it was shown.
func TestManager_RotatesAndTheTransportFollows(t *testing.T) {
	ca := newTestCA(t)
	cs := fakeCSRs()
	ctl := &controller{lifetime: 3 * time.Second}
	ctl.run(t, cs, ca)

	pool := x509.NewCertPool()
	pool.AddCert(ca.cert)
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, r.TLS.PeerCertificates[0].SerialNumber.String())
	}))
	srv.TLS = &tls.Config{ClientAuth: tls.RequireAndVerifyClientCert, ClientCAs: pool}
	srv.StartTLS()
	defer srv.Close()

	store, err := NewStore(t.TempDir(), ClientPrefix)
	require.NoError(t, err)
	// Valid for 10 s more (the first request below must not race its
	// end under -race on a loaded machine), due for renewal within 4 s.
	certPEM, keyPEM := ca.pair(t, NodeSubject("worker-1"), time.Now().Add(-50*time.Second), time.Minute)
	initial, err := parsePair(certPEM, keyPEM)
	require.NoError(t, err)
	m, err := NewManager(ManagerConfig{Store: store, Initial: initial, Subject: NodeSubject("worker-1"),
		Signer: certificatesv1.KubeAPIServerClientKubeletSignerName, Usages: ClientUsages,
		Client: cs.CertificatesV1().CertificateSigningRequests(), Logger: testLogger(t),
		Wait: WaitOptions{Timeout: 10 * time.Second, Progress: 100 * time.Millisecond}})
	require.NoError(t, err)
	var rotations atomic.Int32
	m.OnRotate(func() { rotations.Add(1) })

	srvCA := x509.NewCertPool()
	srvCA.AddCert(srv.Certificate())
	cfg := &rest.Config{Host: srv.URL, TLSClientConfig: rest.TLSClientConfig{CAData: pemOf(srv.Certificate()), CertData: certPEM, KeyData: keyPEM}}
	require.NoError(t, UseRotatingCertificate(cfg, m))
	hc, err := rest.HTTPClientFor(cfg)
	require.NoError(t, err)
	serial := func() string {
		resp, err := hc.Get(srv.URL)
		require.NoError(t, err)
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		return string(b)
	}
	require.Equal(t, initial.Leaf.SerialNumber.String(), serial())

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); m.Run(ctx) }()
	defer cancel()
	// Each 3 s certificate is renewed 2.1-2.7 s into its life. Then the
	// controller issues hour-long ones, so that the certificate checked
	// below cannot expire before the request, however slow the machine.
	require.Eventually(t, func() bool { return rotations.Load() >= 2 }, 20*time.Second, 20*time.Millisecond)
	ctl.longer.Store(int64(time.Hour))
	require.Eventually(t, func() bool { return m.Current().Leaf.NotAfter.After(time.Now().Add(time.Minute)) }, 20*time.Second, 20*time.Millisecond)
	// Stopped, so that no renewal closes the connection of the request
	// below (an in-flight request fails then, as with the kubelet).
	cancel()
	<-done
	cur := m.Current()
	require.NotEqual(t, initial.Leaf.SerialNumber, cur.Leaf.SerialNumber)
	require.Equal(t, cur.Leaf.SerialNumber.String(), serial(), "the kept-alive connection was closed: the new certificate is presented")
	stored, err := store.Current()
	require.NoError(t, err)
	require.Equal(t, "system:node:worker-1", stored.Leaf.Subject.CommonName)

	list, err := cs.CertificatesV1().CertificateSigningRequests().List(context.Background(), metav1.ListOptions{})
	require.NoError(t, err)
	require.GreaterOrEqual(t, len(list.Items), 2)
	for _, csr := range list.Items {
		require.Regexp(t, `^csr-\d+$`, csr.Name)
		require.Equal(t, certificatesv1.KubeAPIServerClientKubeletSignerName, csr.Spec.SignerName)
		require.Equal(t, ClientUsages, csr.Spec.Usages)
	}
}

// NewManager without any certificate says how to get one.
func TestManager_NeedsACertificate(t *testing.T) {
	store, err := NewStore(t.TempDir(), ClientPrefix)
	require.NoError(t, err)
	_, err = NewManager(ManagerConfig{Store: store, Subject: NodeSubject("n")})
	require.ErrorContains(t, err, "--bootstrap-kubeconfig")
}
