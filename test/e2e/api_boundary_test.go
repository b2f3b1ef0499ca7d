package e2e

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/utils/ptr"

	"github.com/minikubelet/minikubelet/agent/api"
)

// TestAPIBoundary attacks the TCP API of a daemon started with
// --api-address on loopback (issue #16, finding 5): without the admin
// certificate, with a foreign Host (DNS rebinding) and without a
// Content-Type (CSRF) nothing gets through, and the admin kubeconfig the
// daemon wrote works with client-go. A non-loopback address needs
// --api-allow-remote.
func TestAPIBoundary(t *testing.T) {
	const csrfPod, clientGoPod = "e2e-api-csrf", "e2e-api-clientgo"
	port := freeTCPPort(t)
	addr := "127.0.0.1:" + port
	kubeconfig := filepath.Join(t.TempDir(), "etc", "admin.kubeconfig")
	d := newDaemon(t, []string{csrfPod, clientGoPod}, "--api-address", addr, "--admin-kubeconfig", kubeconfig)
	d.start(t)
	waitTLS(t, addr)

	kc, err := clientcmd.LoadFromFile(kubeconfig)
	require.NoError(t, err, "the admin kubeconfig")
	cluster := kc.Clusters[kc.Contexts[kc.CurrentContext].Cluster]
	user := kc.AuthInfos[kc.Contexts[kc.CurrentContext].AuthInfo]
	require.Equal(t, "https://"+addr, cluster.Server)
	roots := x509.NewCertPool()
	require.True(t, roots.AppendCertsFromPEM(cluster.CertificateAuthorityData))
	admin, err := tls.X509KeyPair(user.ClientCertificateData, user.ClientKeyData)
	require.NoError(t, err)
	// Another node's admin certificate, from a CA this daemon never saw.
	otherPKI, err := api.EnsurePKI(filepath.Join(t.TempDir(), "other-pki"), "127.0.0.1:1", nil, time.Now())
	require.NoError(t, err)
	otherCertPEM, otherKeyPEM := otherPKI.AdminCertPEM, otherPKI.AdminKeyPEM
	podJSON := `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"` + csrfPod + `"},` +
		`"spec":{"containers":[{"name":"c","image":"` + suite.registry + `/minikubelet/busybox:1.36","command":["sleep","3600"]}]}}`

	t.Run("FilesAre0600", func(t *testing.T) {
		for _, p := range []string{kubeconfig, filepath.Join(d.root, "pki", "ca.key"), filepath.Join(d.root, "pki", "server.key"), filepath.Join(d.root, "pki", "admin.key")} {
			fi, err := os.Stat(p)
			require.NoError(t, err)
			assert.Equal(t, os.FileMode(0o600), fi.Mode().Perm(), p)
		}
	})

	t.Run("KubeconfigCommand", func(t *testing.T) {
		want, err := os.ReadFile(kubeconfig)
		require.NoError(t, err)
		out, err := exec.Command(suite.bin, "kubeconfig", "--admin-kubeconfig", kubeconfig).Output()
		require.NoError(t, err)
		assert.Equal(t, string(want), string(out), "prints the file")
		out, err = exec.Command(suite.bin, "kubeconfig", "--admin-kubeconfig", kubeconfig+".gone", "--root-dir", d.root).Output()
		require.NoError(t, err)
		assert.Equal(t, string(want), string(out), "builds it again from <root-dir>/pki")
	})

	t.Run("NoClientCertificateRefused", func(t *testing.T) {
		// The handshake admits no certificate; the request gets a 401.
		code, body, err := tlsDo(roots, nil, http.MethodGet, "https://"+addr+"/api/v1/pods", "", "", nil)
		require.NoError(t, err)
		assert.Equal(t, http.StatusUnauthorized, code, body)
		assertStatus(t, body, http.StatusUnauthorized)
		code, body, err = tlsDo(roots, nil, http.MethodPost, "https://"+addr+"/api/v1/namespaces/default/pods", "", "application/json", []byte(podJSON))
		require.NoError(t, err)
		assert.Equal(t, http.StatusUnauthorized, code, body)
		// A certificate of another CA fails the handshake.
		other, err := tls.X509KeyPair(otherCertPEM, otherKeyPEM)
		require.NoError(t, err)
		_, _, err = tlsDo(roots, &other, http.MethodGet, "https://"+addr+"/api/v1/pods", "", "", nil)
		require.Error(t, err, "a foreign client certificate must fail the TLS handshake")
		// Plain HTTP gets nothing either.
		resp, err := (&http.Client{Timeout: 10 * time.Second}).Get("http://" + addr + "/api/v1/pods")
		if err == nil {
			resp.Body.Close()
			assert.NotEqual(t, http.StatusOK, resp.StatusCode)
		}
	})

	t.Run("ForeignHostRefused", func(t *testing.T) {
		for _, host := range []string{"attacker.example:" + port, "attacker.example", "10.1.2.3:" + port} {
			code, body, err := tlsDo(roots, &admin, http.MethodGet, "https://"+addr+"/api/v1/pods", host, "", nil)
			require.NoError(t, err)
			assert.Equal(t, http.StatusForbidden, code, "Host %s: %s", host, body)
			assertStatus(t, body, http.StatusForbidden)
		}
	})

	t.Run("PostWithoutContentTypeRefused", func(t *testing.T) {
		code, body, err := tlsDo(roots, &admin, http.MethodPost, "https://"+addr+"/api/v1/namespaces/default/pods", "", "", []byte(podJSON))
		require.NoError(t, err)
		assert.Equal(t, http.StatusUnsupportedMediaType, code, body)
		assertStatus(t, body, http.StatusUnsupportedMediaType)
		code, body, err = tlsDo(roots, &admin, http.MethodPost, "https://"+addr+"/api/v1/namespaces/default/pods", "", "text/plain", []byte(podJSON))
		require.NoError(t, err)
		assert.Equal(t, http.StatusUnsupportedMediaType, code, body)
		// The socket too (defense in depth).
		req, err := http.NewRequest(http.MethodPost, "http://minikubelet/api/v1/namespaces/default/pods", bytes.NewReader([]byte(podJSON)))
		require.NoError(t, err)
		resp, err := unixHTTPClient(d.sock).Do(req)
		require.NoError(t, err)
		resp.Body.Close()
		assert.Equal(t, http.StatusUnsupportedMediaType, resp.StatusCode, "over the unix socket")

		// The pod was not created, and nothing of it reaches the runtime.
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		time.Sleep(2 * time.Second)
		_, err = d.api().GetPod(ctx, "default", csrfPod)
		require.True(t, apierrors.IsNotFound(err), "the refused pod exists: %v", err)
		sbs, err := suite.rt.ListPodSandbox(ctx, &runtimeapi.PodSandboxFilter{LabelSelector: map[string]string{"io.kubernetes.pod.name": csrfPod}})
		require.NoError(t, err)
		assert.Empty(t, sbs, "a sandbox of the refused pod")
	})

	t.Run("AdminKubeconfigWorksWithClientGo", func(t *testing.T) {
		rc, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
		require.NoError(t, err)
		// JSON, as kubectl sends; client-go's default protobuf bodies
		// are TestKubectl's.
		rc.ContentType = "application/json"
		cs, err := kubernetes.NewForConfig(rc)
		require.NoError(t, err)
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		_, err = cs.CoreV1().Pods("").List(ctx, metav1.ListOptions{})
		require.NoError(t, err, "GET /api/v1/pods with the admin kubeconfig")

		// A write with client-go's Content-Type is served: the pod runs.
		pod := &v1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: clientGoPod},
			Spec: v1.PodSpec{TerminationGracePeriodSeconds: ptr.To[int64](1), Containers: []v1.Container{{
				Name: "c", Image: suite.registry + "/minikubelet/busybox:1.36", Command: []string{"sleep", "3600"},
			}}},
		}
		_, err = cs.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{})
		require.NoError(t, err)
		d.waitPod(t, clientGoPod, "Running", 2*time.Minute, isRunning)
		l, err := cs.CoreV1().Pods("default").List(ctx, metav1.ListOptions{})
		require.NoError(t, err)
		var names []string
		for _, p := range l.Items {
			names = append(names, p.Name)
		}
		assert.Contains(t, names, clientGoPod)
		_, err = cs.CoreV1().Pods("default").Get(ctx, csrfPod, metav1.GetOptions{})
		assert.True(t, apierrors.IsNotFound(err), "the refused pod: %v", err)
	})

	t.Run("NonLoopbackAddressNeedsAllowFlag", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		dir := t.TempDir()
		args := append(append([]string{"serve"}, agentArgs()...), serveHostFlags()...)
		args = append(args, "--socket", filepath.Join(dir, "api.sock"), "--root-dir", filepath.Join(dir, "root"),
			"--manifest-dir", "", "--api-address", "0.0.0.0:"+port, "--admin-kubeconfig", filepath.Join(dir, "admin.kubeconfig"))
		out, err := exec.CommandContext(ctx, suite.bin, args...).CombinedOutput()
		require.NoError(t, ctx.Err(), "serve started instead of refusing:\n%s", out)
		var ee *exec.ExitError
		require.ErrorAs(t, err, &ee, "serve must exit non-zero:\n%s", out)
		assert.Equal(t, 2, ee.ExitCode(), "%s", out)
		assert.Contains(t, string(out), "--api-allow-remote", "the message says what to do")
		assert.Contains(t, string(out), "not a loopback address")
		_, err = os.Stat(filepath.Join(dir, "admin.kubeconfig"))
		assert.ErrorIs(t, err, os.ErrNotExist, "nothing written")
	})
}

// freeTCPPort returns a loopback port nothing listens on right now.
func freeTCPPort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	_, port, err := net.SplitHostPort(l.Addr().String())
	require.NoError(t, err)
	require.NoError(t, l.Close())
	return port
}

// waitTLS waits until addr completes TLS handshakes (serve opens the TCP
// listener after the socket).
func waitTLS(t *testing.T, addr string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		c, err := tls.DialWithDialer(&net.Dialer{Timeout: 2 * time.Second}, "tcp", addr, &tls.Config{InsecureSkipVerify: true}) //nolint:gosec // only waiting for the listener
		if err == nil {
			c.Close()
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("nothing speaks TLS on %s within 30s: %v", addr, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// tlsDo sends one request over TLS trusting roots, with the client
// certificate cert (nil: none), the Host header host ("": the URL's) and
// the Content-Type ct ("": none). err is a transport failure (a refused
// handshake).
func tlsDo(roots *x509.CertPool, cert *tls.Certificate, method, url, host, ct string, body []byte) (int, string, error) {
	cfg := &tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12}
	if cert != nil {
		cfg.Certificates = []tls.Certificate{*cert}
	}
	hc := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: cfg}}
	defer hc.CloseIdleConnections()
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequest(method, url, rd)
	if err != nil {
		return 0, "", err
	}
	if host != "" {
		req.Host = host
	}
	if ct != "" {
		req.Header.Set("Content-Type", ct)
	}
	resp, err := hc.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), err
}

// assertStatus checks that body is a v1.Status with code.
func assertStatus(t *testing.T, body string, code int) {
	t.Helper()
	var st metav1.Status
	if assert.NoError(t, json.Unmarshal([]byte(body), &st), "a v1.Status: %s", body) {
		assert.Equal(t, "Status", st.Kind, body)
		assert.Equal(t, int32(code), st.Code, body)
		assert.NotEmpty(t, strings.TrimSpace(st.Message))
	}
}
