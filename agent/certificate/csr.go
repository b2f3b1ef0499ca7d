package certificate

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha512"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/pem"
	"errors"
	"fmt"
	"log/slog"
	"reflect"
	"slices"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
)

// CSRClient is what the node uses of the certificates.k8s.io/v1
// CertificateSigningRequest API (client-go's typed client has these
// methods; agent/cluster.NewCSRClient is the daemon's).
type CSRClient interface {
	Create(ctx context.Context, csr *certificatesv1.CertificateSigningRequest, opts metav1.CreateOptions) (*certificatesv1.CertificateSigningRequest, error)
	Get(ctx context.Context, name string, opts metav1.GetOptions) (*certificatesv1.CertificateSigningRequest, error)
	List(ctx context.Context, opts metav1.ListOptions) (*certificatesv1.CertificateSigningRequestList, error)
	Watch(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error)
}

// ClientUsages are the usages of the kubelet's client certificate request
// for an ECDSA key (client-go's DefaultKubeletClientGetUsages: an RSA key
// adds key encipherment; this package makes ECDSA keys only).
var ClientUsages = []certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature, certificatesv1.UsageClientAuth}

// NodeSubject is the subject of node's client certificate: the Node
// authorizer's user system:node:<node> in group system:nodes.
func NodeSubject(node string) pkix.Name {
	return pkix.Name{CommonName: "system:node:" + node, Organization: []string{"system:nodes"}}
}

// newKey makes an ECDSA P-256 key (client-go's default) and its PEM.
func newKey() (*ecdsa.PrivateKey, []byte, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	der, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, nil, err
	}
	return key, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: der}), nil
}

// parseKey parses a PEM private key (EC, PKCS#8 or PKCS#1) as a signer.
func parseKey(keyPEM []byte) (crypto.Signer, error) {
	block, _ := pem.Decode(keyPEM)
	if block == nil {
		return nil, errors.New("private key: not PEM")
	}
	if k, err := x509.ParseECPrivateKey(block.Bytes); err == nil {
		return k, nil
	}
	if k, err := x509.ParsePKCS1PrivateKey(block.Bytes); err == nil {
		return k, nil
	}
	k, err := x509.ParsePKCS8PrivateKey(block.Bytes)
	if err != nil {
		return nil, fmt.Errorf("private key: %w", err)
	}
	s, ok := k.(crypto.Signer)
	if !ok {
		return nil, fmt.Errorf("private key: %T cannot sign", k)
	}
	return s, nil
}

// makeCSR is the PEM certificate request of key for subject (and SANs).
func makeCSR(key crypto.Signer, subject pkix.Name, template *x509.CertificateRequest) ([]byte, error) {
	t := &x509.CertificateRequest{Subject: subject}
	if template != nil {
		t.DNSNames, t.IPAddresses = template.DNSNames, template.IPAddresses
	}
	der, err := x509.CreateCertificateRequest(rand.Reader, t, key)
	if err != nil {
		return nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der}), nil
}

// digestedName is the kubelet's name of its bootstrap CSR: node-csr- and a
// digest of the public key, subject and usages, so that a restart while
// the request is pending waits for the same one instead of making another
// (k8s: pkg/kubelet/certificate/bootstrap digestedName).
func digestedName(pub crypto.PublicKey, subject pkix.Name, usages []certificatesv1.KeyUsage) (string, error) {
	h := sha512.New512_256()
	encode := base64.RawURLEncoding.EncodeToString
	write := func(b []byte) {
		h.Write([]byte(encode(b)))
		h.Write([]byte{'|'})
	}
	der, err := x509.MarshalPKIXPublicKey(pub)
	if err != nil {
		return "", err
	}
	write(der)
	write([]byte(subject.CommonName))
	for _, o := range subject.Organization {
		write([]byte(o))
	}
	for _, u := range usages {
		write([]byte(u))
	}
	return "node-csr-" + encode(h.Sum(nil)), nil
}

// request describes one CertificateSigningRequest to make.
type request struct {
	// name is the object's name; "" lets the API server name it (csr-…).
	name    string
	csrPEM  []byte
	signer  string
	usages  []certificatesv1.KeyUsage
	key     crypto.Signer
	subject pkix.Name
}

// create creates the request, retrying while the API server cannot be
// reached until ctx ends. A request of that name that exists already is
// reused if it is for the same subject, signer and key (a restart while it
// was pending), as client-go's RequestCertificate does.
func create(ctx context.Context, c CSRClient, r request, logger *slog.Logger) (string, types.UID, error) {
	obj := &certificatesv1.CertificateSigningRequest{
		ObjectMeta: metav1.ObjectMeta{Name: r.name},
		Spec:       certificatesv1.CertificateSigningRequestSpec{Request: r.csrPEM, SignerName: r.signer, Usages: r.usages},
	}
	if r.name == "" {
		obj.GenerateName = "csr-"
	}
	delay := time.Second
	for {
		got, err := c.Create(ctx, obj, metav1.CreateOptions{})
		switch {
		case err == nil:
			return got.Name, got.UID, nil
		case apierrors.IsAlreadyExists(err) && r.name != "":
			old, err := c.Get(ctx, r.name, metav1.GetOptions{})
			if err != nil {
				return "", "", fmt.Errorf("certificate signing request %s exists but cannot be read: %w", r.name, err)
			}
			if err := compatible(old, r); err != nil {
				return "", "", fmt.Errorf("certificate signing request %s exists for another request (%v): delete it (kubectl delete csr %s)", r.name, err, r.name)
			}
			logger.Info("Reusing the pending certificate signing request", "csr", r.name)
			return old.Name, old.UID, nil
		case apierrors.IsForbidden(err) || apierrors.IsUnauthorized(err) || apierrors.IsInvalid(err) || apierrors.IsAlreadyExists(err):
			return "", "", fmt.Errorf("create the certificate signing request: %w%s", err, forbiddenHint(err))
		}
		logger.Warn("Cannot create the certificate signing request; retrying", "err", err, "in", delay)
		select {
		case <-ctx.Done():
			return "", "", fmt.Errorf("create the certificate signing request: %w (last error: %v)", ctx.Err(), err)
		case <-time.After(delay):
		}
		delay = min(2*delay, 30*time.Second)
	}
}

// forbiddenHint says what to check when the API server refuses the
// bootstrap credentials.
func forbiddenHint(err error) string {
	switch {
	case apierrors.IsUnauthorized(err):
		return " (the API server does not know these credentials: is the bootstrap token valid and unexpired, and does the API server run with --enable-bootstrap-token-auth?)"
	case apierrors.IsForbidden(err):
		return " (bind the credentials' group to the ClusterRole system:node-bootstrapper: kubeadm binds system:bootstrappers:kubeadm:default-node-token)"
	}
	return ""
}

// compatible checks that an existing request old is r's: same subject and
// signer, signed by r's key.
func compatible(old *certificatesv1.CertificateSigningRequest, r request) error {
	block, _ := pem.Decode(old.Spec.Request)
	if block == nil || block.Type != "CERTIFICATE REQUEST" {
		return errors.New("its request is not a PEM CERTIFICATE REQUEST")
	}
	cr, err := x509.ParseCertificateRequest(block.Bytes)
	if err != nil {
		return err
	}
	if !reflect.DeepEqual(cr.Subject.CommonName, r.subject.CommonName) || !reflect.DeepEqual(cr.Subject.Organization, r.subject.Organization) {
		return fmt.Errorf("subject %q", cr.Subject.String())
	}
	if old.Spec.SignerName != r.signer {
		return fmt.Errorf("signer %s", old.Spec.SignerName)
	}
	cr.PublicKey = r.key.Public()
	if err := cr.CheckSignature(); err != nil {
		return errors.New("another key")
	}
	return nil
}

// WaitOptions tune waitIssued.
type WaitOptions struct {
	// Timeout bounds the wait (the kubelet's bootstrap waits an hour,
	// a renewal 15 minutes).
	Timeout time.Duration
	// Progress is how often a line says the request is still pending.
	Progress time.Duration
}

// waitIssued watches the request name (UID uid) until it carries a
// certificate, and returns it (PEM). A denied or failed request, a deleted
// one, or the timeout, is an error that says what to do.
func waitIssued(parent context.Context, c CSRClient, name string, uid types.UID, signer string, o WaitOptions, logger *slog.Logger) ([]byte, error) {
	ctx, cancel := context.WithTimeout(parent, o.Timeout)
	defer cancel()
	start := time.Now()
	progress := time.NewTicker(o.Progress)
	defer progress.Stop()
	approved := false
	sel := fields.OneTermEqualSelector("metadata.name", name).String()
	// check returns the certificate once issued.
	check := func(csr *certificatesv1.CertificateSigningRequest) ([]byte, error) {
		if csr.UID != uid {
			return nil, fmt.Errorf("certificate signing request %s was replaced by another object of that name", name)
		}
		for _, cond := range csr.Status.Conditions {
			switch cond.Type {
			case certificatesv1.CertificateDenied:
				return nil, fmt.Errorf("certificate signing request %s was denied (reason %q, message %q): see `kubectl describe csr %s`; "+
					"once the cause is fixed, delete it (kubectl delete csr %s) and restart minikubelet to request a new one", name, cond.Reason, cond.Message, name, name)
			case certificatesv1.CertificateFailed:
				return nil, fmt.Errorf("certificate signing request %s failed (reason %q, message %q): the signer %s could not sign it; check kube-controller-manager's csrsigning controller (--cluster-signing-cert-file, --cluster-signing-key-file), then delete the request (kubectl delete csr %s) and restart minikubelet",
					name, cond.Reason, cond.Message, signer, name)
			case certificatesv1.CertificateApproved:
				if !approved {
					logger.Info("Certificate signing request approved; waiting for the signer to issue it", "csr", name, "signer", signer)
				}
				approved = true
			}
		}
		if approved && len(csr.Status.Certificate) > 0 {
			return csr.Status.Certificate, nil
		}
		return nil, nil
	}
	timeout := func(last error) error {
		state := "not approved"
		next := fmt.Sprintf("approve it: kubectl certificate approve %s, or check that kube-controller-manager runs its csrapproving controller "+
			"(it approves node client requests of users bound to system:certificates.k8s.io:certificatesigningrequests:nodeclient or selfnodeclient)", name)
		if approved {
			state = "approved but not issued"
			next = fmt.Sprintf("check that kube-controller-manager runs its csrsigning controller for %s (--cluster-signing-cert-file, --cluster-signing-key-file)", signer)
		}
		err := fmt.Errorf("certificate signing request %s (signer %s) is %s after %s: %s", name, signer, state, time.Since(start).Round(time.Second), next)
		if last != nil {
			err = fmt.Errorf("%w (last API error: %v)", err, last)
		}
		return err
	}
	var last error
	for {
		list, err := c.List(ctx, metav1.ListOptions{FieldSelector: sel})
		if err == nil {
			i := slices.IndexFunc(list.Items, func(c certificatesv1.CertificateSigningRequest) bool { return c.Name == name })
			if i < 0 {
				return nil, fmt.Errorf("certificate signing request %s was deleted before it was issued: restart minikubelet to request a new one", name)
			}
			cert, err := check(&list.Items[i])
			if err != nil || cert != nil {
				return cert, err
			}
			var w watch.Interface
			if w, err = c.Watch(ctx, metav1.ListOptions{FieldSelector: sel, ResourceVersion: list.ResourceVersion}); err == nil {
				cert, done, err := watchIssued(ctx, w, name, check, progress.C, func() {
					logger.Info("Waiting for the certificate signing request", "csr", name, "approved", approved, "waited", time.Since(start).Round(time.Second))
				})
				w.Stop()
				if done {
					return cert, err
				}
				if ctx.Err() == nil {
					continue
				}
			}
		}
		if err != nil {
			last = err
			logger.Warn("Cannot read the certificate signing request; retrying", "csr", name, "err", err)
		}
		select {
		case <-ctx.Done():
			if parent.Err() != nil {
				return nil, parent.Err()
			}
			return nil, timeout(last)
		case <-time.After(time.Second):
		}
	}
}

// watchIssued follows w; done is false when the watch ended and the
// request must be listed again.
func watchIssued(ctx context.Context, w watch.Interface, name string, check func(*certificatesv1.CertificateSigningRequest) ([]byte, error),
	tick <-chan time.Time, progress func()) (cert []byte, done bool, err error) {
	for {
		select {
		case <-ctx.Done():
			return nil, false, nil
		case <-tick:
			// Say so, and list again: a watch that missed an event
			// (or a proxy that holds it) does not stall the wait.
			progress()
			return nil, false, nil
		case ev, ok := <-w.ResultChan():
			if !ok {
				return nil, false, nil
			}
			switch ev.Type {
			case watch.Deleted:
				return nil, true, fmt.Errorf("certificate signing request %s was deleted before it was issued: restart minikubelet to request a new one", name)
			case watch.Added, watch.Modified:
				csr, ok := ev.Object.(*certificatesv1.CertificateSigningRequest)
				if !ok || csr.Name != name {
					continue
				}
				cert, err := check(csr)
				if err != nil || cert != nil {
					return cert, true, err
				}
			default:
				return nil, false, nil // an Error event (expired resource version): list again
			}
		}
	}
}
