package certificate

import (
	"crypto/tls"
	"fmt"
	"net"
	"net/http"
	"time"

	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/connrotation"
)

// UseRotatingCertificate makes cfg's clients present m's current
// certificate at each TLS handshake, and close their connections when m
// renews it, so that the next requests handshake again with the new one
// (the kubelet's pkg/kubelet/certificate UpdateTransport; the kubelet
// looks for a new certificate every 10 s, here the renewal closes the
// connections itself). cfg's own client certificate and TLS files are
// replaced by the transport.
func UseRotatingCertificate(cfg *rest.Config, m *Manager) error {
	if cfg.Transport != nil || cfg.Dial != nil {
		return fmt.Errorf("the client already has a transport")
	}
	tlsConfig, err := rest.TLSConfigFor(cfg)
	if err != nil {
		return err
	}
	if tlsConfig == nil {
		return fmt.Errorf("the API server %s is not HTTPS: a client certificate needs TLS", cfg.Host)
	}
	tlsConfig.Certificates = nil
	tlsConfig.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) {
		return m.Current(), nil
	}
	d := connrotation.NewDialer((&net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}).DialContext)
	m.OnRotate(d.CloseAll)
	cfg.Transport = utilnet.SetTransportDefaults(&http.Transport{
		Proxy:               http.ProxyFromEnvironment,
		TLSHandshakeTimeout: 10 * time.Second,
		TLSClientConfig:     tlsConfig,
		MaxIdleConnsPerHost: 25,
		DialContext:         d.DialContext,
	})
	cfg.TLSClientConfig = rest.TLSClientConfig{}
	return nil
}
