package certificate

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"slices"
	"sync"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
)

// ServingUsages are the usages of the kubelet's serving certificate
// request for an ECDSA key (client-go's DefaultKubeletServingGetUsages).
var ServingUsages = []certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature, certificatesv1.UsageServerAuth}

// ServerPrefix is the kubelet's name of its serving certificate pairs.
const ServerPrefix = "kubelet-server"

// ManagerConfig is what a Manager needs.
type ManagerConfig struct {
	// Store keeps the pairs; its current one is used first.
	Store *Store
	// Initial is the pair to start with when the store has none (the
	// kubeconfig's own client certificate); may be nil.
	Initial *tls.Certificate
	// Subject and Signer of the requests (NodeSubject,
	// kubernetes.io/kube-apiserver-client-kubelet or
	// kubernetes.io/kubelet-serving).
	Subject pkix.Name
	Signer  string
	Usages  []certificatesv1.KeyUsage
	// SANs holds the DNSNames and IPAddresses the requests ask for (the
	// serving certificate's: the node's addresses); a current
	// certificate that lacks one is renewed at once.
	SANs *x509.CertificateRequest
	// StartEmpty allows starting without a certificate and requests one
	// at once (the serving certificate, as the kubelet's
	// serverTLSBootstrap); Current is nil until it is issued.
	StartEmpty bool
	// Name names the certificate in the logs ("client", "serving").
	Name string
	// Client makes the requests, with the current certificate.
	Client CSRClient
	// Wait bounds each request's wait (default 15 minutes, client-go's).
	Wait   WaitOptions
	Logger *slog.Logger
	// Now and Rand (a number in [0, 1)) are the clock and the jitter.
	Now  func() time.Time
	Rand func() float64
}

// Manager keeps the node's client certificate and renews it before it
// expires, as client-go's certificate Manager does for the kubelet.
type Manager struct {
	cfg ManagerConfig

	mu       sync.RWMutex
	cert     *tls.Certificate
	onRotate []func()
}

// NewManager starts from the store's current pair, or cfg.Initial.
func NewManager(cfg ManagerConfig) (*Manager, error) {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Rand == nil {
		cfg.Rand = rand.Float64
	}
	if cfg.Wait.Timeout == 0 {
		cfg.Wait.Timeout = 15 * time.Minute
	}
	if cfg.Wait.Progress == 0 {
		cfg.Wait.Progress = 30 * time.Second
	}
	m := &Manager{cfg: cfg}
	c, err := cfg.Store.Current()
	switch {
	case err == nil && cfg.Now().Before(c.Leaf.NotAfter):
		m.cert = c
	case err != nil && !errors.Is(err, ErrNoCertificate):
		return nil, err
	default:
		m.cert = cfg.Initial
	}
	if m.cert == nil && !cfg.StartEmpty {
		return nil, errors.New("no client certificate to renew: give --kubeconfig a client certificate, or --bootstrap-kubeconfig to get one")
	}
	if cfg.Name == "" {
		cfg.Name = "client"
	}
	m.cfg.Logger = cfg.Logger.With("certificate", cfg.Name)
	return m, nil
}

// SetClient sets the CSR client when it could only be made after the
// manager (it uses the transport that presents the manager's certificate:
// UseRotatingCertificate). Before Run.
func (m *Manager) SetClient(c CSRClient) { m.cfg.Client = c }

// Current is the certificate in use.
func (m *Manager) Current() *tls.Certificate {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return m.cert
}

// OnRotate registers f, called after each renewal (a transport closes its
// connections there, so that new ones present the new certificate).
func (m *Manager) OnRotate(f func()) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.onRotate = append(m.onRotate, f)
}

// RotationDeadline is when a certificate valid from notBefore to notAfter
// is renewed: at 70 % + r x 20 % of its lifetime, r in [0, 1) (client-go's
// jitteryDuration: 80 % +/- 10 %, so that the nodes of a cluster made at
// once do not all renew at once).
func RotationDeadline(notBefore, notAfter time.Time, r float64) time.Time {
	total := float64(notAfter.Sub(notBefore))
	return notBefore.Add(time.Duration(total * (0.7 + 0.2*r)))
}

// deadline is the current certificate's; now when it does not match the
// subject (another node name).
func (m *Manager) deadline() time.Time {
	c := m.Current()
	if c == nil {
		return m.cfg.Now()
	}
	s := m.cfg.Subject
	if c.Leaf.Subject.CommonName != s.CommonName || !containsAll(c.Leaf.Subject.Organization, s.Organization) {
		m.cfg.Logger.Info("The certificate's subject is not this node's; renewing now", "subject", c.Leaf.Subject.String(), "want", s.String())
		return m.cfg.Now()
	}
	if t := m.cfg.SANs; t != nil {
		var ips []string
		for _, ip := range c.Leaf.IPAddresses {
			ips = append(ips, ip.String())
		}
		for _, ip := range t.IPAddresses {
			if !slices.Contains(ips, ip.String()) {
				m.cfg.Logger.Info("The certificate lacks an address of the node; renewing now", "missing", ip.String())
				return m.cfg.Now()
			}
		}
		if !containsAll(c.Leaf.DNSNames, t.DNSNames) {
			m.cfg.Logger.Info("The certificate lacks a name of the node; renewing now", "have", c.Leaf.DNSNames, "want", t.DNSNames)
			return m.cfg.Now()
		}
	}
	return RotationDeadline(c.Leaf.NotBefore, c.Leaf.NotAfter, m.cfg.Rand())
}

func containsAll(have, want []string) bool {
	for _, w := range want {
		if !slices.Contains(have, w) {
			return false
		}
	}
	return true
}

// Run renews the certificate at each deadline until ctx ends; a failed
// renewal is retried after 2 s, doubling to 32 s (client-go: 2 s doubling
// five times, then every 32 s).
func (m *Manager) Run(ctx context.Context) {
	for ctx.Err() == nil {
		d := m.deadline()
		if c := m.Current(); c != nil {
			m.cfg.Logger.Info("Certificate rotation scheduled", "notAfter", c.Leaf.NotAfter, "rotateAt", d, "in", d.Sub(m.cfg.Now()).Round(time.Second))
		}
		if !sleep(ctx, d.Sub(m.cfg.Now())) {
			return
		}
		delay := 2 * time.Second
		for {
			err := m.Rotate(ctx)
			if err == nil || ctx.Err() != nil {
				break
			}
			m.cfg.Logger.Warn("Certificate request failed; retrying", "err", err, "in", delay)
			if !sleep(ctx, delay) {
				return
			}
			delay = min(2*delay, 32*time.Second)
		}
	}
}

func sleep(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// Rotate requests a certificate for a new key now, stores it and makes it
// current.
func (m *Manager) Rotate(ctx context.Context) error {
	key, keyPEM, err := newKey()
	if err != nil {
		return err
	}
	csrPEM, err := makeCSR(key, m.cfg.Subject, m.cfg.SANs)
	if err != nil {
		return err
	}
	name, uid, err := create(ctx, m.cfg.Client, request{csrPEM: csrPEM, signer: m.cfg.Signer, usages: m.cfg.Usages, key: key, subject: m.cfg.Subject}, m.cfg.Logger)
	if err != nil {
		return err
	}
	m.cfg.Logger.Info("Requested a new certificate", "csr", name, "signer", m.cfg.Signer)
	certPEM, err := waitIssued(ctx, m.cfg.Client, name, uid, m.cfg.Signer, m.cfg.Wait, m.cfg.Logger)
	if err != nil {
		return err
	}
	c, err := m.cfg.Store.Update(certPEM, keyPEM, m.cfg.Now())
	if err != nil {
		return fmt.Errorf("store the renewed certificate: %w", err)
	}
	m.mu.Lock()
	old := m.cert
	m.cert = c
	hooks := slices.Clone(m.onRotate)
	m.mu.Unlock()
	attrs := []any{"csr", name, "notBefore", c.Leaf.NotBefore, "notAfter", c.Leaf.NotAfter, "pem", m.cfg.Store.CurrentPath()}
	if old != nil {
		attrs = append(attrs, "previousNotAfter", old.Leaf.NotAfter)
	}
	m.cfg.Logger.Info("Certificate issued", attrs...)
	for _, f := range hooks {
		f()
	}
	return nil
}

// GetCertificate is the current certificate for a TLS server
// (tls.Config.GetCertificate); an error until one is issued, as the
// kubelet's "no serving certificate available for the kubelet".
func (m *Manager) GetCertificate(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	if c := m.Current(); c != nil {
		return c, nil
	}
	return nil, fmt.Errorf("no %s certificate available yet: its CertificateSigningRequest for %s waits for approval (kube-controller-manager does not approve kubelet-serving requests: kubectl get csr; kubectl certificate approve NAME)",
		m.cfg.Name, m.cfg.Signer)
}
