package cluster

import (
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"os"
	"strings"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// The kubelet's client settings (kubeAPIQPS 50, kubeAPIBurst 100, and
// protobuf on the wire).
const (
	clientQPS   = 50
	clientBurst = 100
)

// NewClient builds the API server client from a kubeconfig file (its
// current context). The file must hold credentials the API server knows
// the node by: a client certificate (CN system:node:<name>, O
// system:nodes), a bearer token, or an exec plugin. Bootstrap tokens (TLS
// bootstrapping) are not supported. userAgent names the agent in the API
// server's logs and audit.
func NewClient(kubeconfig, userAgent string) (kubernetes.Interface, *rest.Config, error) {
	if _, err := os.Stat(kubeconfig); err != nil {
		return nil, nil, fmt.Errorf("kubeconfig: %w", err)
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return nil, nil, fmt.Errorf("kubeconfig %s: %w", kubeconfig, err)
	}
	if !hasCredentials(cfg) {
		return nil, nil, fmt.Errorf("kubeconfig %s: its current context has no credentials: give the node a client certificate (CN system:node:<node name>, O system:nodes) or a bearer token; bootstrap tokens are not supported", kubeconfig)
	}
	cfg.UserAgent = userAgent
	cfg.QPS, cfg.Burst = clientQPS, clientBurst
	cfg.ContentType = "application/vnd.kubernetes.protobuf"
	cfg.AcceptContentTypes = "application/vnd.kubernetes.protobuf,application/json"
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, nil, fmt.Errorf("kubeconfig %s: %w", kubeconfig, err)
	}
	return cs, cfg, nil
}

// hasCredentials reports whether cfg authenticates at all.
func hasCredentials(cfg *rest.Config) bool {
	return (cfg.CertFile != "" || len(cfg.CertData) > 0) ||
		cfg.BearerToken != "" || cfg.BearerTokenFile != "" ||
		cfg.ExecProvider != nil || cfg.AuthProvider != nil ||
		cfg.Username != ""
}

// CheckNodeIdentity compares the kubeconfig's client certificate with the
// node name: an API server with the Node authorizer and NodeRestriction
// (every kubeadm cluster) lets system:node:<X> write only the Node named X,
// so a mismatch would fail every request. A certificate that names no node
// (or a token) is not checked: the API server decides.
func CheckNodeIdentity(cfg *rest.Config, nodeName string) error {
	data := cfg.CertData
	if len(data) == 0 && cfg.CertFile != "" {
		var err error
		if data, err = os.ReadFile(cfg.CertFile); err != nil {
			return fmt.Errorf("kubeconfig client certificate: %w", err)
		}
	}
	if len(data) == 0 {
		return nil
	}
	block, _ := pem.Decode(data)
	if block == nil {
		return errors.New("kubeconfig client certificate: not PEM")
	}
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		return fmt.Errorf("kubeconfig client certificate: %w", err)
	}
	certNode, ok := strings.CutPrefix(cert.Subject.CommonName, nodeUserPrefix)
	if ok && certNode != nodeName {
		return fmt.Errorf("the kubeconfig's client certificate is node %q's (CN %s), but this node is named %q: the API server would refuse every write; use --node-name %s or that node's kubeconfig",
			certNode, cert.Subject.CommonName, nodeName, certNode)
	}
	return nil
}

// nodeUserPrefix starts the user name of a node's credentials.
const nodeUserPrefix = "system:node:"
