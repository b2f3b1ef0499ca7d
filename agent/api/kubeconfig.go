package api

import (
	"fmt"
	"net"
	"os"
	"path/filepath"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/minikubelet/minikubelet/agent/atomicfile"
)

// DefaultAdminKubeconfig is where serve writes the admin kubeconfig.
const DefaultAdminKubeconfig = "/etc/minikubelet/admin.kubeconfig"

// kubeconfigName names the cluster, user and context of the admin
// kubeconfig.
const kubeconfigName = "minikubelet"

// ServerURL is the https URL clients dial for the listen address: an
// unspecified IP (0.0.0.0, ::) becomes the matching loopback IP.
func ServerURL(addr string) string {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "https://" + addr
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsUnspecified() {
		host = "127.0.0.1"
		if ip.To4() == nil {
			host = "::1"
		}
	}
	return "https://" + net.JoinHostPort(host, port)
}

// Kubeconfig is the admin kubeconfig of p: the CA, the server URL and the
// admin client certificate and key, all embedded.
func Kubeconfig(p *PKI) ([]byte, error) {
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters[kubeconfigName] = &clientcmdapi.Cluster{
		Server:                   ServerURL(p.Address),
		CertificateAuthorityData: p.CAPEM,
	}
	cfg.AuthInfos[AdminUser] = &clientcmdapi.AuthInfo{
		ClientCertificateData: p.AdminCertPEM,
		ClientKeyData:         p.AdminKeyPEM,
	}
	cfg.Contexts[kubeconfigName] = &clientcmdapi.Context{Cluster: kubeconfigName, AuthInfo: AdminUser}
	cfg.CurrentContext = kubeconfigName
	b, err := clientcmd.Write(*cfg)
	if err != nil {
		return nil, fmt.Errorf("encode kubeconfig: %w", err)
	}
	return b, nil
}

// WriteKubeconfig writes p's admin kubeconfig to path (0600, atomically),
// creating its directory (0755) if needed.
func WriteKubeconfig(path string, p *PKI) error {
	b, err := Kubeconfig(p)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("create kubeconfig directory: %w", err)
	}
	return atomicfile.Write(path, b, 0o600)
}
