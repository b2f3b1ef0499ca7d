package volume

// The files of projected podCertificate sources, as the kubelet's pod
// certificate manager (pkg/kubelet/podcertificate) provides them: the node
// generates the pod's private key (keyType), asks the signer for a
// certificate with a PodCertificateRequest carrying a stub PKCS#10 request
// signed by that key (in cluster mode through the API server:
// agent/cluster.PodCertificateSource), and once a signer issued it writes
// the key, the certificate chain, or both in one credential bundle file,
// into the pod's tmpfs volume: the key never reaches the node's disk and
// never leaves the node. At the issuer's beginRefreshAt a new key is
// requested the same way; the old credentials stay until the new ones
// are issued. A denied or failed request is final for the pod, as in the
// kubelet.
//
// One record per (pod UID, volume, source index):
//
//	      create request             issued
//	none ───────────────► waiting ───────────► issued ◄─────────────┐
//	  ▲                      │                   │ beginRefreshAt   │ issued
//	  │ gone after 10 min    │ denied/failed     ▼                  │
//	  └──────────────────────┤              refreshing ─────────────┘
//	                         ▼                   │ denied/failed
//	                       final ◄───────────────┘
//
// Unlike the kubelet, which watches the node's requests with an informer
// and drives each record from a work queue, the records here advance when
// the pod's volume is built: at each container start and each sync of the
// pod (RefreshDataVolumes, at least every minute), one GET of a pending
// request each time. A pod waiting for its certificate is retried as any
// pod whose volume failed.

import (
	"bytes"
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
)

// PodCertificateIssuer creates and reads PodCertificateRequests; in
// cluster mode the API server's certificates.k8s.io/v1
// podcertificaterequests (agent/cluster.PodCertificateSource).
type PodCertificateIssuer interface {
	// CreatePodCertificateRequest creates the request of pod's source
	// (with the pod's service account and node, which the implementation
	// looks up) for the stub PKCS#10 request of a key, and returns its
	// name and creation time.
	CreatePodCertificateRequest(ctx context.Context, pod *v1.Pod, src *v1.PodCertificateProjection, pkcs10 []byte) (name string, created time.Time, err error)
	// PodCertificateRequest reads a request; a missing one is an error
	// that Is ErrConfigNotFound.
	PodCertificateRequest(ctx context.Context, namespace, name string) (*certificatesv1.PodCertificateRequest, error)
}

// The kubelet's pod certificate manager constants.
const (
	// podCertAssumeDeleted is when a request the API server does not
	// return is taken as deleted and made again.
	podCertAssumeDeleted = 10 * time.Minute
	// podCertRequestTimeout bounds one request to the API server.
	podCertRequestTimeout = 15 * time.Second
)

// podCertKey identifies a podCertificate source of a pod.
type podCertKey struct {
	podUID      types.UID
	volume      string
	sourceIndex int
}

// podCertState is where a record is (the diagram above).
type podCertState int

const (
	podCertNone podCertState = iota
	podCertWaiting
	podCertIssued
	podCertRefreshing
	podCertFinal
)

// podCertRecord is one source's credentials. fetch serialises its
// advances (containers of a pod set up its volumes concurrently); the
// fields are guarded by fetch too.
type podCertRecord struct {
	fetch sync.Mutex
	state podCertState
	// key and chain are the issued credentials (PEM); set in issued and
	// refreshing.
	key, chain []byte
	// beginRefreshAt and notAfter are the issued certificate's.
	beginRefreshAt, notAfter time.Time
	// pendingKey, pendingName and pendingCreated are the request in
	// flight (waiting, refreshing).
	pendingKey     []byte
	pendingName    string
	pendingCreated time.Time
	// final is the error of a denied or failed request.
	final error
}

// PodCertificates is the node's pod certificate manager; nil outside
// cluster mode.
type PodCertificates struct {
	issuer PodCertificateIssuer
	clock  clock.PassiveClock
	logger *slog.Logger

	// mu guards records.
	mu      sync.Mutex
	records map[podCertKey]*podCertRecord
}

// NewPodCertificates returns the manager of an issuer (nil for none).
func NewPodCertificates(issuer PodCertificateIssuer, clk clock.PassiveClock, logger *slog.Logger) *PodCertificates {
	if issuer == nil {
		return nil
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	return &PodCertificates{issuer: issuer, clock: clk, logger: logger, records: map[podCertKey]*podCertRecord{}}
}

// Credentials returns the key and certificate chain (PEM) of the source
// at sourceIndex of pod's volume, advancing its record: a first call
// creates the request and says the pod waits; later calls read the
// request until a signer issued it, and start the refresh at its
// beginRefreshAt.
func (m *PodCertificates) Credentials(pod *v1.Pod, volume string, sourceIndex int, src *v1.PodCertificateProjection) (key, chain []byte, err error) {
	k := podCertKey{podUID: pod.UID, volume: volume, sourceIndex: sourceIndex}
	m.mu.Lock()
	rec := m.records[k]
	if rec == nil {
		rec = &podCertRecord{}
		m.records[k] = rec
	}
	m.mu.Unlock()
	rec.fetch.Lock()
	defer rec.fetch.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), podCertRequestTimeout)
	defer cancel()
	now := m.clock.Now()
	switch rec.state {
	case podCertNone:
		if err := m.request(ctx, rec, pod, src); err != nil {
			return nil, nil, err
		}
		rec.state = podCertWaiting
		return nil, nil, m.waitingError(pod, src, rec)
	case podCertIssued:
		if now.Before(rec.beginRefreshAt) {
			return rec.key, rec.chain, nil
		}
		if err := m.request(ctx, rec, pod, src); err != nil {
			// Keep the current credentials; the next sync tries again.
			m.logger.Warn("Pod certificate refresh request failed; keeping the current certificate", "pod", pod.Namespace+"/"+pod.Name,
				"volume", volume, "notAfter", rec.notAfter, "err", err)
			return rec.key, rec.chain, nil
		}
		rec.state = podCertRefreshing
		return rec.key, rec.chain, nil
	case podCertFinal:
		return nil, nil, rec.final
	}
	// waiting or refreshing: read the request in flight.
	pcr, err := m.issuer.PodCertificateRequest(ctx, pod.Namespace, rec.pendingName)
	switch {
	case errors.Is(err, ErrConfigNotFound) && now.Sub(rec.pendingCreated) > podCertAssumeDeleted:
		// Someone deleted it: ask again (the kubelet's abandon rule).
		if rec.state == podCertWaiting {
			rec.state = podCertNone
			return nil, nil, fmt.Errorf("PodCertificateRequest %s/%s is gone; a new one is requested", pod.Namespace, rec.pendingName)
		}
		rec.state = podCertIssued
		return rec.key, rec.chain, nil
	case err != nil:
		if rec.state == podCertRefreshing {
			return rec.key, rec.chain, nil
		}
		return nil, nil, fmt.Errorf("read PodCertificateRequest %s/%s: %w", pod.Namespace, rec.pendingName, err)
	}
	for _, c := range pcr.Status.Conditions {
		switch c.Type {
		case certificatesv1.PodCertificateRequestConditionTypeDenied, certificatesv1.PodCertificateRequestConditionTypeFailed:
			verb := "denied"
			if c.Type == certificatesv1.PodCertificateRequestConditionTypeFailed {
				verb = "failed"
			}
			rec.state, rec.key, rec.chain, rec.pendingKey = podCertFinal, nil, nil, nil
			rec.final = fmt.Errorf("PodCertificateRequest %s/%s was %s by signer %q: reason=%q message=%q; the pod's certificate cannot be issued, delete the pod to try again",
				pod.Namespace, pcr.Name, verb, src.SignerName, c.Reason, c.Message)
			return nil, nil, rec.final
		case certificatesv1.PodCertificateRequestConditionTypeIssued:
			chain := cleanCertificateChain([]byte(pcr.Status.CertificateChain))
			if len(chain) == 0 || pcr.Status.NotAfter == nil || pcr.Status.BeginRefreshAt == nil {
				return nil, nil, fmt.Errorf("PodCertificateRequest %s/%s is Issued without a certificate chain, notAfter or beginRefreshAt", pod.Namespace, pcr.Name)
			}
			rec.state, rec.key, rec.chain = podCertIssued, rec.pendingKey, chain
			rec.beginRefreshAt, rec.notAfter = pcr.Status.BeginRefreshAt.Time, pcr.Status.NotAfter.Time
			rec.pendingKey, rec.pendingName = nil, ""
			return rec.key, rec.chain, nil
		}
	}
	if rec.state == podCertRefreshing {
		return rec.key, rec.chain, nil
	}
	return nil, nil, m.waitingError(pod, src, rec)
}

// waitingError says what the pod waits for.
func (m *PodCertificates) waitingError(pod *v1.Pod, src *v1.PodCertificateProjection, rec *podCertRecord) error {
	return fmt.Errorf("waiting for signer %q to issue PodCertificateRequest %s/%s (the pod starts once it is issued)", src.SignerName, pod.Namespace, rec.pendingName)
}

// request generates a key and creates its request; rec keeps both.
func (m *PodCertificates) request(ctx context.Context, rec *podCertRecord, pod *v1.Pod, src *v1.PodCertificateProjection) error {
	key, csr, err := generateKeyAndProof(src.KeyType)
	if err != nil {
		return err
	}
	name, created, err := m.issuer.CreatePodCertificateRequest(ctx, pod, src, csr)
	if err != nil {
		return fmt.Errorf("create a PodCertificateRequest for signer %q: %w", src.SignerName, err)
	}
	rec.pendingKey, rec.pendingName, rec.pendingCreated = key, name, created
	return nil
}

// Forget drops the records of a pod (its volumes are gone).
func (m *PodCertificates) Forget(uid types.UID) {
	if m == nil {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	for k := range m.records {
		if k.podUID == uid {
			delete(m.records, k)
		}
	}
}

// generateKeyAndProof is the kubelet's: a key of keyType (PKCS#8 PEM) and
// an empty PKCS#10 request it signed, the proof of possession.
func generateKeyAndProof(keyType string) (keyPEM, pkcs10 []byte, err error) {
	var priv crypto.Signer
	switch keyType {
	case "RSA3072":
		priv, err = rsa.GenerateKey(rand.Reader, 3072)
	case "RSA4096":
		priv, err = rsa.GenerateKey(rand.Reader, 4096)
	case "ECDSAP256":
		priv, err = ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	case "ECDSAP384":
		priv, err = ecdsa.GenerateKey(elliptic.P384(), rand.Reader)
	case "ECDSAP521":
		priv, err = ecdsa.GenerateKey(elliptic.P521(), rand.Reader)
	case "ED25519":
		_, priv, err = ed25519.GenerateKey(rand.Reader)
	default:
		return nil, nil, fmt.Errorf("unknown key type %q", keyType)
	}
	if err != nil {
		return nil, nil, fmt.Errorf("generate a %s key: %w", keyType, err)
	}
	pkcs10, err = x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{}, priv)
	if err != nil {
		return nil, nil, fmt.Errorf("sign the stub PKCS#10 request: %w", err)
	}
	der, err := x509.MarshalPKCS8PrivateKey(priv)
	if err != nil {
		return nil, nil, fmt.Errorf("encode the key: %w", err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), pkcs10, nil
}

// cleanCertificateChain is the kubelet's: the chain's CERTIFICATE blocks
// only, without headers or text between them.
func cleanCertificateChain(in []byte) []byte {
	var out bytes.Buffer
	for rest := in; ; {
		var b *pem.Block
		b, rest = pem.Decode(rest)
		if b == nil {
			break
		}
		out.Write(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: b.Bytes}))
	}
	return out.Bytes()
}

// podCertificatePayload is the files of one podCertificate source: the
// credential bundle (key, then chain), the key, the chain, those whose
// path is set. Mode and owner as clusterTrustBundlePayload's.
func (a *Manager) podCertificatePayload(pod *v1.Pod, vol string, sourceIndex int, src *v1.PodCertificateProjection, mode os.FileMode) (map[string]FileProjection, error) {
	if a.podCerts == nil {
		return nil, fmt.Errorf("pod certificates need cluster mode (serve --kubeconfig)")
	}
	key, chain, err := a.podCerts.Credentials(pod, vol, sourceIndex, src)
	if err != nil {
		return nil, err
	}
	fsUser := podFSUser(pod)
	if gid, _ := podFSGroup(pod); gid != nil || fsUser != nil {
		mode = 0o600
	}
	out := map[string]FileProjection{}
	if p := src.CredentialBundlePath; p != "" {
		out[p] = FileProjection{Data: append(append([]byte{}, key...), chain...), Mode: mode, UID: fsUser}
	}
	if p := src.KeyPath; p != "" {
		out[p] = FileProjection{Data: key, Mode: mode, UID: fsUser}
	}
	if p := src.CertificateChainPath; p != "" {
		out[p] = FileProjection{Data: chain, Mode: mode, UID: fsUser}
	}
	return out, nil
}
