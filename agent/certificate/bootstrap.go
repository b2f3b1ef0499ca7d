package certificate

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/minikubelet/minikubelet/agent/atomicfile"
)

// bootstrapKeyFile caches the bootstrap request's key until the
// certificate is issued, so that a restart waits for the same request
// (the kubelet's kubelet-client.key.tmp).
const bootstrapKeyFile = "kubelet-client.key.tmp"

// BootstrapConfig is what Bootstrap needs.
type BootstrapConfig struct {
	// Kubeconfig is the node's kubeconfig (--kubeconfig), written when
	// bootstrapping.
	Kubeconfig string
	// BootstrapKubeconfig has the bootstrap credentials
	// (--bootstrap-kubeconfig), a bootstrap token as kubeadm writes it.
	BootstrapKubeconfig string
	// CertDir holds the key and certificate pairs (--cert-dir).
	CertDir string
	// NodeName is the node the certificate is for.
	NodeName string
	// NewCSRClient makes the CSR client over the bootstrap credentials.
	NewCSRClient func(*rest.Config) (CSRClient, error)
	// Wait bounds the wait for approval and issuance (default: an hour,
	// the kubelet's) and says how often to log that it still waits
	// (default 30 s).
	Wait   WaitOptions
	Logger *slog.Logger
	// Now is the clock (time.Now if nil).
	Now func() time.Time
}

// Bootstrap makes sure Kubeconfig holds a valid client certificate, as the
// kubelet's LoadClientCert: when the file is missing or its certificate
// cannot be read or expired, a certificate for system:node:<NodeName> is
// requested with the bootstrap credentials, stored in CertDir, and
// Kubeconfig is written to point at it. It reports whether it did.
func Bootstrap(ctx context.Context, c BootstrapConfig) (bool, error) {
	now := time.Now
	if c.Now != nil {
		now = c.Now
	}
	if c.Wait.Timeout == 0 {
		c.Wait.Timeout = time.Hour
	}
	if c.Wait.Progress == 0 {
		c.Wait.Progress = 30 * time.Second
	}
	valid, why := KubeconfigValid(c.Kubeconfig, now())
	if valid {
		return false, nil
	}
	c.Logger.Info("Requesting a client certificate with the bootstrap kubeconfig (TLS bootstrapping)", "why", why,
		"bootstrapKubeconfig", c.BootstrapKubeconfig, "certDir", c.CertDir, "node", c.NodeName)
	bcfg, err := clientcmd.BuildConfigFromFlags("", c.BootstrapKubeconfig)
	if err != nil {
		return false, fmt.Errorf("--bootstrap-kubeconfig: %w", err)
	}
	store, err := NewStore(c.CertDir, ClientPrefix)
	if err != nil {
		return false, fmt.Errorf("--cert-dir: %w", err)
	}
	if err := os.MkdirAll(c.CertDir, 0o755); err != nil {
		return false, fmt.Errorf("--cert-dir: %w", err)
	}
	keyPath := filepath.Join(c.CertDir, bootstrapKeyFile)
	keyPEM, err := os.ReadFile(keyPath)
	if err == nil {
		if _, perr := parseKey(keyPEM); perr != nil {
			c.Logger.Warn("Replacing an unreadable cached bootstrap key", "path", keyPath, "err", perr)
			keyPEM = nil
		}
	} else if !errors.Is(err, fs.ErrNotExist) {
		return false, fmt.Errorf("--cert-dir: %w", err)
	}
	if keyPEM == nil {
		if _, keyPEM, err = newKey(); err != nil {
			return false, err
		}
		if err := atomicfile.Write(keyPath, keyPEM, 0o600); err != nil {
			return false, fmt.Errorf("--cert-dir: %w", err)
		}
	}
	key, err := parseKey(keyPEM)
	if err != nil {
		return false, err
	}
	client, err := c.NewCSRClient(bcfg)
	if err != nil {
		return false, fmt.Errorf("--bootstrap-kubeconfig: %w", err)
	}
	subject := NodeSubject(c.NodeName)
	csrPEM, err := makeCSR(key, subject, nil)
	if err != nil {
		return false, err
	}
	name, err := digestedName(key.Public(), subject, ClientUsages)
	if err != nil {
		return false, err
	}
	signer := certificatesv1.KubeAPIServerClientKubeletSignerName
	name, uid, err := create(ctx, client, request{name: name, csrPEM: csrPEM, signer: signer, usages: ClientUsages, key: key, subject: subject}, c.Logger)
	if err != nil {
		return false, fmt.Errorf("TLS bootstrapping with %s: %w", c.BootstrapKubeconfig, err)
	}
	c.Logger.Info("Created the certificate signing request; waiting for it to be approved and issued", "csr", name, "signer", signer,
		"timeout", c.Wait.Timeout, "approve", "kubectl certificate approve "+name)
	certPEM, err := waitIssued(ctx, client, name, uid, signer, c.Wait, c.Logger)
	if err != nil {
		return false, fmt.Errorf("TLS bootstrapping: %w", err)
	}
	cert, err := store.Update(certPEM, keyPEM, now())
	if err != nil {
		return false, fmt.Errorf("store the issued certificate in %s: %w", c.CertDir, err)
	}
	if err := os.Remove(keyPath); err != nil && !errors.Is(err, fs.ErrNotExist) {
		c.Logger.Warn("Cannot remove the cached bootstrap key", "path", keyPath, "err", err)
	}
	if err := writeKubeconfig(c.Kubeconfig, bcfg, store.CurrentPath()); err != nil {
		return false, fmt.Errorf("--kubeconfig: %w", err)
	}
	c.Logger.Info("Client certificate issued", "csr", name, "subject", cert.Leaf.Subject.String(), "notAfter", cert.Leaf.NotAfter,
		"pem", store.CurrentPath(), "kubeconfig", c.Kubeconfig)
	return true, nil
}

// KubeconfigValid reports whether the kubeconfig at path exists and its
// client certificate can be read and is unexpired (the kubelet's
// isClientConfigStillValid); why says what is wrong otherwise.
func KubeconfigValid(path string, now time.Time) (ok bool, why string) {
	if _, err := os.Stat(path); err != nil {
		return false, err.Error()
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", path)
	if err != nil {
		return false, err.Error()
	}
	certPEM, keyPEM := cfg.CertData, cfg.KeyData
	if cfg.CertFile != "" {
		if certPEM, err = os.ReadFile(cfg.CertFile); err != nil {
			return false, err.Error()
		}
	}
	if cfg.KeyFile != "" {
		if keyPEM, err = os.ReadFile(cfg.KeyFile); err != nil {
			return false, err.Error()
		}
	}
	if len(certPEM) == 0 {
		return false, path + " has no client certificate"
	}
	c, err := parsePair(certPEM, keyPEM)
	if err != nil {
		return false, path + ": " + err.Error()
	}
	if now.After(c.Leaf.NotAfter) {
		return false, fmt.Sprintf("%s: the client certificate expired at %s", path, c.Leaf.NotAfter.UTC().Format(time.RFC3339))
	}
	return true, ""
}

// writeKubeconfig writes the node's kubeconfig: the bootstrap kubeconfig's
// server and CA, and the pair at pemPath as client certificate and key
// (the kubelet's writeKubeconfigFromBootstrapping). Written atomically,
// 0600, where the kubelet writes it in place.
func writeKubeconfig(path string, bcfg *rest.Config, pemPath string) error {
	cluster := &clientcmdapi.Cluster{Server: bcfg.Host, InsecureSkipTLSVerify: bcfg.Insecure, TLSServerName: bcfg.ServerName}
	if bcfg.CAFile != "" {
		cluster.CertificateAuthority = bcfg.CAFile
	} else {
		cluster.CertificateAuthorityData = bcfg.CAData
	}
	kc := clientcmdapi.Config{
		Clusters:       map[string]*clientcmdapi.Cluster{"default-cluster": cluster},
		AuthInfos:      map[string]*clientcmdapi.AuthInfo{"default-auth": {ClientCertificate: pemPath, ClientKey: pemPath}},
		Contexts:       map[string]*clientcmdapi.Context{"default-context": {Cluster: "default-cluster", AuthInfo: "default-auth", Namespace: "default"}},
		CurrentContext: "default-context",
	}
	data, err := clientcmd.Write(kc)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return atomicfile.Write(path, data, 0o600)
}
