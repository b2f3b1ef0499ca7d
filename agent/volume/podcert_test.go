package volume

import (
	"context"
	"crypto"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	certificatesv1 "k8s.io/api/certificates/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
)

// fakeIssuer is a PodCertificateIssuer over an in-memory set of
// requests, with a call record and an injectable error.
type fakeIssuer struct {
	mu       sync.Mutex
	requests map[string]*certificatesv1.PodCertificateRequest
	created  []string
	gets     int
	err      error
	now      func() time.Time
}

var _ PodCertificateIssuer = (*fakeIssuer)(nil)

func (f *fakeIssuer) CreatePodCertificateRequest(_ context.Context, pod *v1.Pod, src *v1.PodCertificateProjection, pkcs10 []byte) (string, time.Time, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.err != nil {
		return "", time.Time{}, f.err
	}
	name := fmt.Sprintf("req-%d", len(f.created))
	f.created = append(f.created, name)
	f.requests[name] = &certificatesv1.PodCertificateRequest{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: pod.Namespace},
		Spec: certificatesv1.PodCertificateRequestSpec{SignerName: src.SignerName, PodName: pod.Name, PodUID: pod.UID, StubPKCS10Request: pkcs10}}
	return name, f.now(), nil
}

func (f *fakeIssuer) PodCertificateRequest(_ context.Context, ns, name string) (*certificatesv1.PodCertificateRequest, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.gets++
	if f.err != nil {
		return nil, f.err
	}
	r, ok := f.requests[name]
	if !ok {
		return nil, fmt.Errorf("podcertificaterequest %s/%s %w", ns, name, ErrConfigNotFound)
	}
	return r.DeepCopy(), nil
}

// issue plays the signer: a certificate for the request's key, valid
// from now for an hour, to be refreshed after 30 minutes; a comment
// between blocks, which the node drops.
func (f *fakeIssuer) issue(t *testing.T, name string, now time.Time) *x509.Certificate {
	t.Helper()
	f.mu.Lock()
	defer f.mu.Unlock()
	r := f.requests[name]
	csr, err := x509.ParseCertificateRequest(r.Spec.StubPKCS10Request)
	require.NoError(t, err)
	require.NoError(t, csr.CheckSignature(), "the stub request proves possession of the key")
	caKey, caCert := testCA(t)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(int64(len(f.created))), Subject: pkix.Name{CommonName: string(r.Spec.PodUID)},
		NotBefore: now, NotAfter: now.Add(time.Hour)}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, caCert, csr.PublicKey, caKey)
	require.NoError(t, err)
	leaf, err := x509.ParseCertificate(der)
	require.NoError(t, err)
	r.Status.CertificateChain = string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})) + "the CA:\n" +
		string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caCert.Raw}))
	r.Status.NotBefore, r.Status.NotAfter = ptr.To(metav1.NewTime(now)), ptr.To(metav1.NewTime(now.Add(time.Hour)))
	r.Status.BeginRefreshAt = ptr.To(metav1.NewTime(now.Add(30 * time.Minute)))
	r.Status.Conditions = []metav1.Condition{{Type: certificatesv1.PodCertificateRequestConditionTypeIssued, Status: metav1.ConditionTrue, Reason: "Issued"}}
	return leaf
}

// deny plays a signer that refuses.
func (f *fakeIssuer) deny(name string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.requests[name].Status.Conditions = []metav1.Condition{{Type: certificatesv1.PodCertificateRequestConditionTypeDenied,
		Status: metav1.ConditionTrue, Reason: "NotAllowed", Message: "this pod may not have one"}}
}

var (
	testCAOnce sync.Once
	testCAKey  crypto.Signer
	testCACert *x509.Certificate
)

// testCA is a CA the fake signer signs with.
func testCA(t *testing.T) (crypto.Signer, *x509.Certificate) {
	testCAOnce.Do(func() {
		keyPEM, _, err := generateKeyAndProof("ECDSAP256")
		require.NoError(t, err)
		b, _ := pem.Decode(keyPEM)
		k, err := x509.ParsePKCS8PrivateKey(b.Bytes)
		require.NoError(t, err)
		testCAKey = k.(crypto.Signer)
		tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "test signer"}, IsCA: true, BasicConstraintsValid: true,
			NotBefore: time.Unix(0, 0), NotAfter: time.Now().Add(24 * 365 * time.Hour), KeyUsage: x509.KeyUsageCertSign}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, testCAKey.Public(), testCAKey)
		require.NoError(t, err)
		testCACert, err = x509.ParseCertificate(der)
		require.NoError(t, err)
	})
	return testCAKey, testCACert
}

// keyMatches reports whether a PEM private key is the one a certificate
// certifies.
func keyMatches(t *testing.T, keyPEM []byte, cert *x509.Certificate) bool {
	t.Helper()
	b, _ := pem.Decode(keyPEM)
	require.NotNil(t, b, "a PEM key")
	require.Equal(t, "PRIVATE KEY", b.Type)
	k, err := x509.ParsePKCS8PrivateKey(b.Bytes)
	require.NoError(t, err)
	return k.(interface{ Public() crypto.PublicKey }).Public().(interface{ Equal(crypto.PublicKey) bool }).Equal(cert.PublicKey)
}

func podCertPod() (*v1.Pod, *v1.Volume) {
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "default", UID: "uid-1"},
		Spec: v1.PodSpec{ServiceAccountName: "default", Containers: []v1.Container{{Name: "c"}},
			Volumes: []v1.Volume{{Name: "id", VolumeSource: v1.VolumeSource{Projected: &v1.ProjectedVolumeSource{Sources: []v1.VolumeProjection{
				{PodCertificate: &v1.PodCertificateProjection{SignerName: "example.com/id", KeyType: "ECDSAP256",
					CredentialBundlePath: "bundle.pem", KeyPath: "tls.key", CertificateChainPath: "tls.crt"}},
			}}}}}}}
	return pod, &pod.Spec.Volumes[0]
}

// TestManager_PodCertificateIssuedAndRefreshed: the first build requests a
// certificate and the pod waits; once the signer issued it the files hold
// the node-generated key and the chain; at beginRefreshAt a new key is
// requested while the old credentials stay, and the new ones replace
// them once issued.
func TestManager_PodCertificateIssuedAndRefreshed(t *testing.T) {
	t0 := time.Date(2026, 11, 29, 6, 0, 0, 0, time.UTC)
	clk := clocktesting.NewFakePassiveClock(t0)
	iss := &fakeIssuer{requests: map[string]*certificatesv1.PodCertificateRequest{}, now: clk.Now}
	m := NewManager(Config{}, Deps{PodCerts: NewPodCertificates(iss, clk, nil)})
	pod, vol := podCertPod()
	assert.True(t, projectsSecret(vol.Projected), "the private key lives on a tmpfs")

	_, err := m.VolumePayload(pod, vol)
	require.ErrorContains(t, err, `waiting for signer "example.com/id" to issue PodCertificateRequest default/req-0`)
	_, err = m.VolumePayload(pod, vol)
	require.ErrorContains(t, err, "waiting for signer")
	require.Equal(t, []string{"req-0"}, iss.created, "one request while it is pending")

	leaf := iss.issue(t, "req-0", t0)
	payload, err := m.VolumePayload(pod, vol)
	require.NoError(t, err)
	require.Len(t, payload, 3)
	key, chain := payload["tls.key"].Data, payload["tls.crt"].Data
	assert.True(t, keyMatches(t, key, leaf), "the key is the one the certificate certifies")
	assert.Equal(t, string(key)+string(chain), string(payload["bundle.pem"].Data), "the credential bundle is the key, then the chain")
	assert.NotContains(t, string(chain), "the CA:", "text between blocks is dropped")
	assert.Equal(t, 2, len(commonNamesOf(t, chain)), "leaf and CA")
	assert.Equal(t, defaultProjectionMode, payload["tls.key"].Mode)

	// Before beginRefreshAt nothing is asked of the API server.
	gets := iss.gets
	clk.SetTime(t0.Add(29 * time.Minute))
	again, err := m.VolumePayload(pod, vol)
	require.NoError(t, err)
	assert.Equal(t, key, again["tls.key"].Data)
	assert.Equal(t, gets, iss.gets)

	clk.SetTime(t0.Add(31 * time.Minute))
	during, err := m.VolumePayload(pod, vol)
	require.NoError(t, err)
	assert.Equal(t, key, during["tls.key"].Data, "the old credentials stay while the refresh is pending")
	require.Equal(t, []string{"req-0", "req-1"}, iss.created)
	leaf2 := iss.issue(t, "req-1", clk.Now())
	after, err := m.VolumePayload(pod, vol)
	require.NoError(t, err)
	assert.NotEqual(t, key, after["tls.key"].Data, "a new key for the new certificate")
	assert.True(t, keyMatches(t, after["tls.key"].Data, leaf2))

	// The pod's volumes gone, its records go.
	m.podCerts.Forget(pod.UID)
	_, err = m.VolumePayload(pod, vol)
	require.ErrorContains(t, err, "req-2", "a pod that comes back starts over")
}

func commonNamesOf(t *testing.T, chain []byte) []string {
	var cns []string
	for rest := chain; ; {
		var b *pem.Block
		b, rest = pem.Decode(rest)
		if b == nil {
			return cns
		}
		c, err := x509.ParseCertificate(b.Bytes)
		require.NoError(t, err)
		cns = append(cns, c.Subject.CommonName)
	}
}

// TestManager_PodCertificateDeniedIsFinal: a denied request fails the
// volume for good, saying why, and nothing more is requested.
func TestManager_PodCertificateDeniedIsFinal(t *testing.T) {
	clk := clocktesting.NewFakePassiveClock(time.Now())
	iss := &fakeIssuer{requests: map[string]*certificatesv1.PodCertificateRequest{}, now: clk.Now}
	m := NewManager(Config{}, Deps{PodCerts: NewPodCertificates(iss, clk, nil)})
	pod, vol := podCertPod()
	_, err := m.VolumePayload(pod, vol)
	require.Error(t, err)
	iss.deny("req-0")
	for range 2 {
		_, err = m.VolumePayload(pod, vol)
		require.ErrorContains(t, err, `PodCertificateRequest default/req-0 was denied by signer "example.com/id": reason="NotAllowed" message="this pod may not have one"`)
	}
	assert.Equal(t, []string{"req-0"}, iss.created)
}

// TestManager_PodCertificateRequestGone: a pending request that the API
// server no longer has after 10 minutes is made again (the kubelet's
// rule); before that, it is taken for lag.
func TestManager_PodCertificateRequestGone(t *testing.T) {
	t0 := time.Now()
	clk := clocktesting.NewFakePassiveClock(t0)
	iss := &fakeIssuer{requests: map[string]*certificatesv1.PodCertificateRequest{}, now: clk.Now}
	m := NewManager(Config{}, Deps{PodCerts: NewPodCertificates(iss, clk, nil)})
	pod, vol := podCertPod()
	_, err := m.VolumePayload(pod, vol)
	require.Error(t, err)
	delete(iss.requests, "req-0")
	_, err = m.VolumePayload(pod, vol)
	require.ErrorContains(t, err, "read PodCertificateRequest default/req-0")
	clk.SetTime(t0.Add(11 * time.Minute))
	_, err = m.VolumePayload(pod, vol)
	require.ErrorContains(t, err, "is gone; a new one is requested")
	_, err = m.VolumePayload(pod, vol)
	require.ErrorContains(t, err, "req-1")
}

// TestManager_PodCertificateAdmission: without a cluster, or for a local
// pod, a pod certificate is refused at admission.
func TestManager_PodCertificateAdmission(t *testing.T) {
	pod, _ := podCertPod()
	reason, msg := NewManager(Config{}, Deps{}).AdmitClusterProjections(pod, "file", false)
	assert.Equal(t, "ClusterProjectionUnavailable", reason)
	assert.Contains(t, msg, `volume "id" projects a pod certificate (spec.volumes[0].projected.sources[0].podCertificate), which needs cluster mode`)
	clusterNode := NewManager(Config{}, Deps{PodCerts: NewPodCertificates(&fakeIssuer{}, clocktesting.NewFakePassiveClock(time.Now()), nil)})
	reason, msg = clusterNode.AdmitClusterProjections(pod, "api", false)
	assert.Equal(t, "ClusterProjectionUnavailable", reason)
	assert.Contains(t, msg, `only pods from the cluster's API server get pod certificates: this pod comes from the "api" source`)
	reason, _ = clusterNode.AdmitClusterProjections(pod, "cluster", true)
	assert.Empty(t, reason)
}
