package api

// This file is the API's small certificate authority: the material the TCP
// listener needs for TLS with client-certificate authentication, created on
// the daemon's first start under <root-dir>/pki and reused afterwards.
//
//	<root-dir>/pki/          0700
//	  ca.crt     ca.key      the CA (10 years); signs the two below
//	  server.crt server.key  serving certificate for the listen address, localhost,
//	                         127.0.0.1 and ::1 (1 year; ServerAuth only)
//	  admin.crt  admin.key   client certificate O=system:masters, CN=minikubelet-admin
//	                         (30 days; ClientAuth only)
//	  admin.serials          the admin certificates the TCP API accepts
//	  server.address         the host:port the serving certificate was issued for
//	  .lock                  flock'd by whoever changes the files
//
// Keys are ECDSA P-256, written 0600; certificates 0644. Every file is
// written to a temporary name and renamed into place.
//
// Renewal: a leaf certificate is issued again past 70 % of its life at a
// start, and, while the daemon runs, at a random point between 70 % and
// 90 % (Renewer, as client-go's certificate manager); the CA within 90
// days of its end.
//
// The admin certificate cannot be revoked by the CA (no CRL): whoever
// copied the admin kubeconfig keeps root on the node for the certificate's
// life. So it lives 30 days, not a year, and the daemon renews it into the
// admin kubeconfig while it runs; and the TCP API accepts only the admin
// certificates listed in admin.serials. A renewal adds the new serial (a
// copy of the old kubeconfig keeps working until it expires); `minikubelet
// kubeconfig --rotate` (RotateAdmin) leaves only the new one, and the
// listener, which checks the list on each request, refuses the old
// certificate at once, without a new CA.
import (
	"bytes"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/minikubelet/minikubelet/agent/atomicfile"
)

// Names in the certificates, as kubeadm and k3s use them: system:masters is
// the group the API server's RBAC lets do anything.
const (
	// AdminUser is the admin client certificate's common name.
	AdminUser = "minikubelet-admin"
	// AdminGroup is the admin client certificate's organization; the TCP
	// listener admits only certificates carrying it.
	AdminGroup = "system:masters"
)

const (
	caValidity      = 10 * 365 * 24 * time.Hour
	servingValidity = 365 * 24 * time.Hour
	// adminValidity: see the file comment.
	adminValidity = 30 * 24 * time.Hour
	// renewBefore: a CA closer than this to its end is made again.
	renewBefore = 90 * 24 * time.Hour
	// renewFrom and renewTo bound the point of a leaf's life at which it
	// is issued again: renewFrom at a start, a random point between the
	// two while the daemon runs (client-go's certificate manager renews
	// at 70-90 %).
	renewFrom, renewTo = 0.7, 0.9
	// skew is how far before its issue a certificate is valid.
	skew = time.Hour
)

// adminSerialsFile lists the admin certificates the TCP API accepts.
const adminSerialsFile = "admin.serials"

// PKI is the loaded CA with the serving and admin certificates.
type PKI struct {
	// Dir is the directory the files live in.
	Dir string
	// Address is the host:port the serving certificate was issued for.
	Address string
	// CA is the CA certificate; CAPEM its PEM form.
	CA    *x509.Certificate
	CAPEM []byte
	// caKey signs the leaf certificates.
	caKey crypto.Signer
	// Serving is the TLS serving certificate.
	Serving tls.Certificate
	// AdminCertPEM and AdminKeyPEM are the admin client's credentials,
	// embedded in the admin kubeconfig; Admin is the certificate.
	AdminCertPEM, AdminKeyPEM []byte
	Admin                     *x509.Certificate

	// tlsOnce builds tlsConfig, the listener's TLS for this PKI.
	tlsOnce   sync.Once
	tlsConfig *tls.Config
}

// EnsurePKI loads the PKI under dir, creating what is missing: the CA on
// first start; the serving certificate when it is missing, expiring, not
// the CA's or issued for another address than addr (host:port, the
// listen address); the admin certificate when it is missing, expiring or
// not the CA's. extraHosts are names or IPs the serving certificate also
// carries (e.g. the machine's addresses when listening on 0.0.0.0).
func EnsurePKI(dir, addr string, extraHosts []string, now time.Time) (*PKI, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("create PKI directory: %w", err)
	}
	// MkdirAll leaves an existing directory's mode alone.
	if err := os.Chmod(dir, 0o700); err != nil {
		return nil, fmt.Errorf("restrict PKI directory: %w", err)
	}
	unlock, err := lockPKI(dir)
	if err != nil {
		return nil, err
	}
	defer unlock()
	p := &PKI{Dir: dir, Address: addr}
	caCert, caKey, err := loadPair(dir, "ca")
	newCA := false
	if err != nil || !caCert.IsCA || now.After(caCert.NotAfter.Add(-renewBefore)) {
		// A new CA invalidates every certificate it signed, the admin
		// kubeconfig included: it is rewritten at each start anyway.
		if caCert, caKey, err = createCA(dir, now); err != nil {
			return nil, err
		}
		newCA = true
	}
	p.CA, p.caKey = caCert, caKey
	p.CAPEM = pemCert(caCert.Raw)

	hosts := servingHosts(addr, extraHosts)
	srvCert, _, err := loadPair(dir, "server")
	if err != nil || !p.issued(srvCert, now, renewFrom) || !sameHosts(srvCert, hosts) || readAddress(dir) != addr {
		if _, _, err := p.issue(dir, "server", servingTemplate(hosts), servingValidity, now); err != nil {
			return nil, err
		}
		if err := atomicfile.Write(filepath.Join(dir, "server.address"), []byte(addr+"\n"), 0o644); err != nil {
			return nil, err
		}
	}
	if p.Serving, err = tls.LoadX509KeyPair(filepath.Join(dir, "server.crt"), filepath.Join(dir, "server.key")); err != nil {
		return nil, fmt.Errorf("load serving certificate: %w", err)
	}

	serials, listErr := readAdminSerials(dir)
	adminCert, _, err := loadPair(dir, "admin")
	switch {
	case err != nil || newCA || !p.issued(adminCert, now, renewFrom) || !isAdmin(adminCert) ||
		adminCert.NotAfter.Sub(adminCert.NotBefore) > adminValidity+skew:
		// Missing, expiring, or issued under an older policy (a year).
		cert, _, err := p.issue(dir, "admin", adminTemplate(), adminValidity, now)
		if err != nil {
			return nil, err
		}
		if newCA || listErr != nil {
			serials = nil // the old admin certificates are not the new CA's
		}
		if err := writeAdminSerials(dir, append(serials, adminSerial{cert.SerialNumber, cert.NotAfter}), now); err != nil {
			return nil, err
		}
	case listErr != nil:
		// No list yet (a PKI from before it): the current certificate.
		if err := writeAdminSerials(dir, []adminSerial{{adminCert.SerialNumber, adminCert.NotAfter}}, now); err != nil {
			return nil, err
		}
	}
	if err := p.loadAdmin(); err != nil {
		return nil, err
	}
	return p, nil
}

// RotateAdmin issues a new admin certificate and makes it the only one the
// TCP API accepts (admin.serials): every copy of the old admin kubeconfig
// is refused (401) by a running daemon at its next request. The CA and
// the serving certificate stay. It returns the PKI with the new
// certificate (for `minikubelet kubeconfig --rotate`).
func RotateAdmin(dir string, now time.Time) (*PKI, error) {
	unlock, err := lockPKI(dir)
	if err != nil {
		return nil, err
	}
	defer unlock()
	caCert, caKey, err := loadPair(dir, "ca")
	if err != nil {
		return nil, fmt.Errorf("no API CA in %s (start `minikubelet serve --api-address` once to create it): %w", dir, err)
	}
	p := &PKI{Dir: dir, CA: caCert, caKey: caKey, CAPEM: pemCert(caCert.Raw), Address: readAddress(dir)}
	if p.Address == "" {
		return nil, fmt.Errorf("%s has no server.address: start `minikubelet serve --api-address` once", dir)
	}
	cert, _, err := p.issue(dir, "admin", adminTemplate(), adminValidity, now)
	if err != nil {
		return nil, err
	}
	if err := writeAdminSerials(dir, []adminSerial{{cert.SerialNumber, cert.NotAfter}}, now); err != nil {
		return nil, err
	}
	if err := p.loadAdmin(); err != nil {
		return nil, err
	}
	return p, nil
}

// loadAdmin reads the admin certificate and key into p.
func (p *PKI) loadAdmin() error {
	var err error
	if p.AdminCertPEM, err = os.ReadFile(filepath.Join(p.Dir, "admin.crt")); err != nil {
		return fmt.Errorf("read admin certificate: %w", err)
	}
	if p.AdminKeyPEM, err = os.ReadFile(filepath.Join(p.Dir, "admin.key")); err != nil {
		return fmt.Errorf("read admin key: %w", err)
	}
	pair, err := tls.X509KeyPair(p.AdminCertPEM, p.AdminKeyPEM)
	if err != nil {
		return fmt.Errorf("admin certificate: %w", err)
	}
	p.Admin = pair.Leaf
	return nil
}

// LoadPKI loads a PKI that EnsurePKI created, without creating or renewing
// anything (for `minikubelet kubeconfig`).
func LoadPKI(dir string) (*PKI, error) {
	caCert, _, err := loadPair(dir, "ca")
	if err != nil {
		return nil, fmt.Errorf("no API CA in %s (start `minikubelet serve --api-address` once to create it): %w", dir, err)
	}
	p := &PKI{Dir: dir, CA: caCert, CAPEM: pemCert(caCert.Raw), Address: readAddress(dir)}
	if p.Address == "" {
		return nil, fmt.Errorf("%s has no server.address: start `minikubelet serve --api-address` once", dir)
	}
	if err := p.loadAdmin(); err != nil {
		return nil, err
	}
	return p, nil
}

// CertPool is a pool holding only the CA.
func (p *PKI) CertPool() *x509.CertPool {
	pool := x509.NewCertPool()
	pool.AddCert(p.CA)
	return pool
}

// issued reports whether c was signed by the CA, is valid at now and has
// not reached fraction renewAt of its life.
func (p *PKI) issued(c *x509.Certificate, now time.Time, renewAt float64) bool {
	return c.CheckSignatureFrom(p.CA) == nil && now.Before(renewalTime(c, renewAt)) && !now.Before(c.NotBefore)
}

// renewalTime is the point at fraction f of c's life.
func renewalTime(c *x509.Certificate, f float64) time.Time {
	life := c.NotAfter.Sub(c.NotBefore)
	return c.NotBefore.Add(time.Duration(float64(life) * f))
}

// issue signs a new key's certificate from tmpl, valid for validity, and
// writes name.crt and name.key.
func (p *PKI) issue(dir, name string, tmpl *x509.Certificate, validity time.Duration, now time.Time) (*x509.Certificate, crypto.Signer, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, fmt.Errorf("generate %s key: %w", name, err)
	}
	if tmpl.SerialNumber, err = serial(); err != nil {
		return nil, nil, err
	}
	tmpl.NotBefore = now.Add(-skew) // tolerate a little clock skew
	tmpl.NotAfter = now.Add(validity)
	tmpl.KeyUsage = x509.KeyUsageDigitalSignature
	der, err := x509.CreateCertificate(rand.Reader, tmpl, p.CA, key.Public(), p.caKey)
	if err != nil {
		return nil, nil, fmt.Errorf("sign %s certificate: %w", name, err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, nil, fmt.Errorf("parse %s certificate: %w", name, err)
	}
	if err := writePair(dir, name, der, key); err != nil {
		return nil, nil, err
	}
	return cert, key, nil
}

// createCA creates and writes a self-signed CA.
func createCA(dir string, now time.Time) (*x509.Certificate, crypto.Signer, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, fmt.Errorf("generate CA key: %w", err)
	}
	sn, err := serial()
	if err != nil {
		return nil, nil, err
	}
	host, _ := os.Hostname()
	tmpl := &x509.Certificate{
		SerialNumber:          sn,
		Subject:               pkix.Name{CommonName: "minikubelet-ca@" + host},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(caValidity),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
		MaxPathLenZero:        true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		return nil, nil, fmt.Errorf("sign CA certificate: %w", err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, nil, fmt.Errorf("parse CA certificate: %w", err)
	}
	if err := writePair(dir, "ca", der, key); err != nil {
		return nil, nil, err
	}
	return cert, key, nil
}

// servingTemplate is the serving certificate for hosts (IPs and names).
func servingTemplate(hosts []string) *x509.Certificate {
	t := &x509.Certificate{
		Subject:     pkix.Name{CommonName: "minikubelet-api"},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	for _, h := range hosts {
		if ip := net.ParseIP(h); ip != nil {
			t.IPAddresses = append(t.IPAddresses, ip)
		} else {
			t.DNSNames = append(t.DNSNames, h)
		}
	}
	return t
}

// adminTemplate is the admin client certificate.
func adminTemplate() *x509.Certificate {
	return &x509.Certificate{
		Subject:     pkix.Name{CommonName: AdminUser, Organization: []string{AdminGroup}},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
}

// isAdmin reports whether c is a client certificate of the admin group.
func isAdmin(c *x509.Certificate) bool {
	return slices.Contains(c.Subject.Organization, AdminGroup) &&
		slices.Contains(c.ExtKeyUsage, x509.ExtKeyUsageClientAuth)
}

// servingHosts are the names and IPs the serving certificate covers: the
// listen address's host, localhost and the loopback IPs, and extra;
// sorted, without duplicates, IPs in canonical form.
func servingHosts(addr string, extra []string) []string {
	hosts := []string{"localhost", "127.0.0.1", "::1"}
	if h, _, err := net.SplitHostPort(addr); err == nil && h != "" {
		hosts = append(hosts, h)
	}
	hosts = append(hosts, extra...)
	out := make([]string, 0, len(hosts))
	for _, h := range hosts {
		if ip := net.ParseIP(h); ip != nil {
			if ip.IsUnspecified() {
				continue // 0.0.0.0 is no address a client dials
			}
			h = ip.String()
		} else {
			h = strings.ToLower(h)
		}
		out = append(out, h)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// sameHosts reports whether c names exactly hosts.
func sameHosts(c *x509.Certificate, hosts []string) bool {
	var have []string
	for _, ip := range c.IPAddresses {
		have = append(have, ip.String())
	}
	for _, n := range c.DNSNames {
		have = append(have, strings.ToLower(n))
	}
	slices.Sort(have)
	return slices.Equal(slices.Compact(have), hosts)
}

// serial is a random 128-bit certificate serial number.
func serial() (*big.Int, error) {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 128))
	if err != nil {
		return nil, fmt.Errorf("certificate serial: %w", err)
	}
	return n, nil
}

// loadPair reads name.crt and name.key and checks that they belong
// together.
func loadPair(dir, name string) (*x509.Certificate, crypto.Signer, error) {
	certPEM, err := os.ReadFile(filepath.Join(dir, name+".crt"))
	if err != nil {
		return nil, nil, err
	}
	keyPEM, err := os.ReadFile(filepath.Join(dir, name+".key"))
	if err != nil {
		return nil, nil, err
	}
	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", name, err)
	}
	signer, ok := pair.PrivateKey.(crypto.Signer)
	if !ok {
		return nil, nil, fmt.Errorf("%s: the key cannot sign", name)
	}
	return pair.Leaf, signer, nil
}

// writePair writes name.key (0600) first, then name.crt (0644).
func writePair(dir, name string, der []byte, key *ecdsa.PrivateKey) error {
	kder, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return fmt.Errorf("encode %s key: %w", name, err)
	}
	kpem := pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: kder})
	if err := atomicfile.Write(filepath.Join(dir, name+".key"), kpem, 0o600); err != nil {
		return err
	}
	return atomicfile.Write(filepath.Join(dir, name+".crt"), pemCert(der), 0o644)
}

// pemCert is a certificate's PEM form.
func pemCert(der []byte) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}

// readAddress is the address server.address records ("" if none).
func readAddress(dir string) string {
	b, err := os.ReadFile(filepath.Join(dir, "server.address"))
	if err != nil {
		return ""
	}
	return string(bytes.TrimSpace(b))
}
