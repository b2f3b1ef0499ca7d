package api

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// boundaryBackend answers /version and pod lists; a create would be a
// test failure (the boundary must stop it first).
type boundaryBackend struct {
	Backend
	t *testing.T
}

func (b boundaryBackend) Version() VersionInfo        { return VersionInfo{Version: "test"} }
func (b boundaryBackend) PodsResourceVersion() string { return "1" }
func (b boundaryBackend) ListPods(string) []*v1.Pod   { return nil }
func (b boundaryBackend) CreatePod(context.Context, *v1.Pod) (*v1.Pod, error) {
	b.t.Error("CreatePod reached the backend")
	return nil, errors.New("unexpected")
}

// serveTCP starts ServeTLS on a loopback port with a PKI in a temporary
// directory and returns the PKI and the server's host:port.
func serveTCP(t *testing.T) (*PKI, string) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	p, err := EnsurePKI(filepath.Join(t.TempDir(), "pki"), l.Addr().String(), nil, time.Now())
	require.NoError(t, err)
	s := NewServer(boundaryBackend{t: t}, slog.New(slog.NewTextHandler(io.Discard, nil)), Options{})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.ServeTLS(ctx, l, p) }()
	t.Cleanup(func() {
		cancel()
		require.NoError(t, <-done)
	})
	return p, l.Addr().String()
}

// tlsClient trusts p's CA and presents certs.
func tlsClient(p *PKI, certs ...tls.Certificate) *http.Client {
	return &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{RootCAs: p.CertPool(), Certificates: certs, MinVersion: tls.VersionTLS12},
	}}
}

// adminCert is p's admin client certificate.
func adminCert(t *testing.T, p *PKI) tls.Certificate {
	t.Helper()
	c, err := tls.X509KeyPair(p.AdminCertPEM, p.AdminKeyPEM)
	require.NoError(t, err)
	return c
}

// pairOf loads a certificate and key written by the PKI.
func pairOf(t *testing.T, dir, name string) tls.Certificate {
	t.Helper()
	c, err := tls.LoadX509KeyPair(filepath.Join(dir, name+".crt"), filepath.Join(dir, name+".key"))
	require.NoError(t, err)
	return c
}

func TestServeTLS_Boundary(t *testing.T) {
	p, addr := serveTCP(t)
	_, port, _ := net.SplitHostPort(addr)
	admin := adminCert(t, p)

	// Another node's CA and its admin certificate.
	other, err := EnsurePKI(filepath.Join(t.TempDir(), "pki"), "127.0.0.1:1", nil, time.Now())
	require.NoError(t, err)
	foreign := adminCert(t, other)

	// A certificate of this CA, but not of the admin group.
	_, _, err = p.issue(p.Dir, "viewer", &x509.Certificate{
		Subject:     pkix.Name{CommonName: "viewer", Organization: []string{"viewers"}},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}, time.Hour, time.Now())
	require.NoError(t, err)
	viewer := pairOf(t, p.Dir, "viewer")
	// The serving certificate is no client certificate (ServerAuth only).
	serving := pairOf(t, p.Dir, "server")

	const pods = "/api/v1/namespaces/default/pods"
	const podJSON = `{"metadata":{"name":"csrf"},"spec":{"containers":[{"name":"c","image":"busybox"}]}}`
	for _, tc := range []struct {
		name        string
		certs       []tls.Certificate
		method      string
		path        string
		host        string // Host header ("" = the address)
		origin      string
		contentType string
		body        string
		wantCode    int // 0: the TLS handshake fails
		wantReason  metav1.StatusReason
	}{
		{name: "admin certificate", certs: []tls.Certificate{admin}, path: "/version", wantCode: 200},
		{name: "admin lists pods", certs: []tls.Certificate{admin}, path: "/api/v1/pods", wantCode: 200},
		{name: "no client certificate", path: "/api/v1/pods", wantCode: 401, wantReason: metav1.StatusReasonUnauthorized},
		{name: "no client certificate cannot create", method: "POST", path: pods, contentType: "application/json", body: podJSON, wantCode: 401},
		{name: "certificate of another CA", certs: []tls.Certificate{foreign}, path: "/api/v1/pods"},
		{name: "serving certificate as client", certs: []tls.Certificate{serving}, path: "/api/v1/pods"},
		{name: "not in the admin group", certs: []tls.Certificate{viewer}, path: "/api/v1/pods", wantCode: 403, wantReason: metav1.StatusReasonForbidden},
		{name: "foreign Host (DNS rebinding)", certs: []tls.Certificate{admin}, path: "/api/v1/pods", host: "attacker.example:" + port, wantCode: 403, wantReason: metav1.StatusReasonForbidden},
		{name: "foreign Host without credentials", path: "/api/v1/pods", host: "attacker.example:" + port, wantCode: 403},
		{name: "Host without port", certs: []tls.Certificate{admin}, path: "/version", host: "127.0.0.1", wantCode: 403},
		{name: "Host with another port", certs: []tls.Certificate{admin}, path: "/version", host: "127.0.0.1:1", wantCode: 403},
		{name: "Host localhost", certs: []tls.Certificate{admin}, path: "/version", host: "LocalHost:" + port, wantCode: 200},
		{name: "Host [::1]", certs: []tls.Certificate{admin}, path: "/version", host: "[::1]:" + port, wantCode: 200},
		{name: "Origin of a web page", certs: []tls.Certificate{admin}, path: "/version", origin: "https://attacker.example", wantCode: 403, wantReason: metav1.StatusReasonForbidden},
		{name: "Origin null", certs: []tls.Certificate{admin}, path: "/version", origin: "null", wantCode: 403},
		{name: "Origin over http", certs: []tls.Certificate{admin}, path: "/version", origin: "http://" + addr, wantCode: 403},
		{name: "Origin of this server", certs: []tls.Certificate{admin}, path: "/version", origin: "https://" + addr, wantCode: 200},
		{name: "create without Content-Type", certs: []tls.Certificate{admin}, method: "POST", path: pods, body: podJSON, wantCode: 415, wantReason: metav1.StatusReasonUnsupportedMediaType},
		{name: "create as text/plain", certs: []tls.Certificate{admin}, method: "POST", path: pods, contentType: "text/plain", body: podJSON, wantCode: 415},
		{name: "create as a form", certs: []tls.Certificate{admin}, method: "POST", path: pods, contentType: "application/x-www-form-urlencoded", body: podJSON, wantCode: 415},
		{name: "exec without Content-Type", certs: []tls.Certificate{admin}, method: "POST", path: pods + "/a/exec?command=id", wantCode: 415},
	} {
		t.Run(tc.name, func(t *testing.T) {
			method := tc.method
			if method == "" {
				method = http.MethodGet
			}
			req, err := http.NewRequest(method, "https://"+addr+tc.path, strings.NewReader(tc.body))
			require.NoError(t, err)
			if tc.host != "" {
				req.Host = tc.host
			}
			if tc.origin != "" {
				req.Header.Set("Origin", tc.origin)
			}
			if tc.contentType != "" {
				req.Header.Set("Content-Type", tc.contentType)
			}
			resp, err := tlsClient(p, tc.certs...).Do(req)
			if tc.wantCode == 0 {
				require.Error(t, err, "the TLS handshake must fail")
				if resp != nil {
					resp.Body.Close()
				}
				return
			}
			require.NoError(t, err)
			defer resp.Body.Close()
			b, err := io.ReadAll(resp.Body)
			require.NoError(t, err)
			require.Equal(t, tc.wantCode, resp.StatusCode, "%s", b)
			if tc.wantCode >= 400 {
				var st metav1.Status
				require.NoError(t, json.Unmarshal(b, &st), "a v1.Status: %s", b)
				assert.Equal(t, "Status", st.Kind)
				assert.Equal(t, int32(tc.wantCode), st.Code)
				if tc.wantReason != "" {
					assert.Equal(t, tc.wantReason, st.Reason)
				}
			}
		})
	}
}

func TestServe_UnixRefusesBrowsers(t *testing.T) {
	s := NewServer(boundaryBackend{t: t}, slog.New(slog.NewTextHandler(io.Discard, nil)), Options{})
	srv := httptest.NewServer(rejectBrowsers(s.handler))
	t.Cleanup(srv.Close)
	req, err := http.NewRequest(http.MethodGet, srv.URL+"/version", nil)
	require.NoError(t, err)
	req.Header.Set("Origin", "https://attacker.example")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusForbidden, resp.StatusCode)

	resp, err = http.Post(srv.URL+"/api/v1/namespaces/default/pods", "", strings.NewReader(`{"metadata":{"name":"x"}}`))
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusUnsupportedMediaType, resp.StatusCode, "no Content-Type on the socket either")
}

func TestCheckListenAddress(t *testing.T) {
	for _, tc := range []struct {
		name   string
		addr   string
		remote bool
		errIn  string // "" = accepted
	}{
		{name: "IPv4 loopback", addr: "127.0.0.1:6443"},
		{name: "other IPv4 loopback", addr: "127.0.0.2:6443"},
		{name: "IPv6 loopback", addr: "[::1]:6443"},
		{name: "localhost", addr: "localhost:6443"},
		{name: "every address", addr: "0.0.0.0:6443", errIn: "--api-allow-remote"},
		{name: "every IPv6 address", addr: "[::]:6443", errIn: "not a loopback address"},
		{name: "a LAN address", addr: "192.168.1.10:6443", errIn: "--api-allow-remote"},
		{name: "a host name", addr: "node1.example:6443", errIn: "--api-allow-remote"},
		{name: "no host", addr: ":6443", errIn: "give the IP"},
		{name: "no host even when remote is allowed", addr: ":6443", remote: true, errIn: "give the IP"},
		{name: "no port", addr: "127.0.0.1", errIn: "missing port"},
		{name: "every address when allowed", addr: "0.0.0.0:6443", remote: true},
		{name: "a LAN address when allowed", addr: "192.168.1.10:6443", remote: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := CheckListenAddress(tc.addr, tc.remote)
			if tc.errIn == "" {
				require.NoError(t, err)
				return
			}
			require.ErrorContains(t, err, tc.errIn)
		})
	}
}

func TestEnsurePKI_CreatesOnceAndReissuesForANewAddress(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "pki")
	now := time.Now()
	p1, err := EnsurePKI(dir, "127.0.0.1:6443", nil, now)
	require.NoError(t, err)

	fi, err := os.Stat(dir)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o700), fi.Mode().Perm())
	for _, name := range []string{"ca.key", "server.key", "admin.key"} {
		fi, err := os.Stat(filepath.Join(dir, name))
		require.NoError(t, err)
		assert.Equal(t, os.FileMode(0o600), fi.Mode().Perm(), name)
	}
	leaf := p1.Serving.Leaf
	require.NotNil(t, leaf)
	assert.ElementsMatch(t, []string{"localhost"}, leaf.DNSNames)
	var ips []string
	for _, ip := range leaf.IPAddresses {
		ips = append(ips, ip.String())
	}
	assert.ElementsMatch(t, []string{"127.0.0.1", "::1"}, ips)
	admin := adminCert(t, p1)
	assert.Equal(t, AdminUser, admin.Leaf.Subject.CommonName)
	assert.Equal(t, []string{AdminGroup}, admin.Leaf.Subject.Organization)
	_, err = admin.Leaf.Verify(x509.VerifyOptions{Roots: p1.CertPool(), KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}})
	require.NoError(t, err)

	// A restart reuses everything.
	p2, err := EnsurePKI(dir, "127.0.0.1:6443", nil, now.Add(time.Hour))
	require.NoError(t, err)
	assert.Equal(t, p1.CAPEM, p2.CAPEM)
	assert.Equal(t, p1.Serving.Leaf.SerialNumber, p2.Serving.Leaf.SerialNumber)
	assert.Equal(t, p1.AdminCertPEM, p2.AdminCertPEM)

	// A new address: same CA and admin, a serving certificate for it.
	p3, err := EnsurePKI(dir, "127.0.0.5:7443", []string{"node1.example"}, now.Add(time.Hour))
	require.NoError(t, err)
	assert.Equal(t, p1.CAPEM, p3.CAPEM)
	assert.Equal(t, p1.AdminCertPEM, p3.AdminCertPEM)
	assert.NotEqual(t, p1.Serving.Leaf.SerialNumber, p3.Serving.Leaf.SerialNumber)
	require.NoError(t, p3.Serving.Leaf.VerifyHostname("127.0.0.5"))
	require.NoError(t, p3.Serving.Leaf.VerifyHostname("node1.example"))
	require.NoError(t, p3.Serving.Leaf.VerifyHostname("localhost"))

	// Close to their end, the leaf certificates are issued again.
	later := now.Add(time.Duration(float64(servingValidity)*renewFrom) + time.Hour)
	p4, err := EnsurePKI(dir, "127.0.0.5:7443", []string{"node1.example"}, later)
	require.NoError(t, err)
	assert.Equal(t, p1.CAPEM, p4.CAPEM)
	assert.NotEqual(t, p3.AdminCertPEM, p4.AdminCertPEM)
	assert.NotEqual(t, p3.Serving.Leaf.SerialNumber, p4.Serving.Leaf.SerialNumber)

	// A damaged CA is replaced, and everything it signed with it.
	require.NoError(t, os.WriteFile(filepath.Join(dir, "ca.crt"), []byte("garbage"), 0o644))
	p5, err := EnsurePKI(dir, "127.0.0.5:7443", nil, now)
	require.NoError(t, err)
	assert.NotEqual(t, p1.CAPEM, p5.CAPEM)
	_, err = adminCert(t, p5).Leaf.Verify(x509.VerifyOptions{Roots: p5.CertPool(), KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}})
	require.NoError(t, err)
}

func TestWriteKubeconfig_ClientGoReachesTheServer(t *testing.T) {
	p, addr := serveTCP(t)
	path := filepath.Join(t.TempDir(), "etc", "admin.kubeconfig")
	require.NoError(t, WriteKubeconfig(path, p))
	fi, err := os.Stat(path)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), fi.Mode().Perm())

	cfg, err := clientcmd.LoadFromFile(path)
	require.NoError(t, err)
	assert.Equal(t, "https://"+addr, cfg.Clusters[cfg.Contexts[cfg.CurrentContext].Cluster].Server)

	rc, err := clientcmd.BuildConfigFromFlags("", path)
	require.NoError(t, err)
	hc, err := rest.HTTPClientFor(rc)
	require.NoError(t, err)
	resp, err := hc.Get(rc.Host + "/api/v1/pods")
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusOK, resp.StatusCode)

	// LoadPKI builds the same kubeconfig again from the directory.
	lp, err := LoadPKI(p.Dir)
	require.NoError(t, err)
	want, err := os.ReadFile(path)
	require.NoError(t, err)
	got, err := Kubeconfig(lp)
	require.NoError(t, err)
	assert.Equal(t, string(want), string(got))
}

func TestServerURL(t *testing.T) {
	for addr, want := range map[string]string{
		"127.0.0.1:6443": "https://127.0.0.1:6443",
		"0.0.0.0:6443":   "https://127.0.0.1:6443",
		"[::]:6443":      "https://[::1]:6443",
		"[::1]:6443":     "https://[::1]:6443",
		"localhost:6443": "https://localhost:6443",
		"10.0.0.7:443":   "https://10.0.0.7:443",
	} {
		assert.Equal(t, want, ServerURL(addr), addr)
	}
}

func TestTCPGuard_AllowsOnlyThisServer(t *testing.T) {
	// Listening on every address of a machine named node1 with one LAN IP.
	p, err := EnsurePKI(filepath.Join(t.TempDir(), "pki"), "0.0.0.0:6443", []string{"node1", "192.168.1.10"}, time.Now())
	require.NoError(t, err)
	g := newTCPGuard(p, "6443", &net.TCPAddr{IP: net.IPv4zero, Port: 6443})
	for host, want := range map[string]bool{
		"localhost:6443":        true,
		"127.0.0.1:6443":        true,
		"[::1]:6443":            true,
		"node1:6443":            true,
		"NODE1:6443":            true,
		"192.168.1.10:6443":     true,
		"0.0.0.0:6443":          false, // browsers send it to localhost
		"[::]:6443":             false,
		"node1:443":             false,
		"node1":                 false, // https' 443
		"attacker.example:6443": false,
		"":                      false,
	} {
		assert.Equal(t, want, g.allows(host), host)
	}
}
