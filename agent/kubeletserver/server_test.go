package kubeletserver

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"math/big"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	authnv1 "k8s.io/api/authentication/v1"
	authzv1 "k8s.io/api/authorization/v1"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/utils/clock"
	clocktesting "k8s.io/utils/clock/testing"
)

// testCA is a certificate authority for client certificates.
type testCA struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	pem  []byte
}

func newTestCA(t *testing.T, name string) *testCA {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageCertSign, BasicConstraintsValid: true, IsCA: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	require.NoError(t, err)
	cert, err := x509.ParseCertificate(der)
	require.NoError(t, err)
	return &testCA{cert: cert, key: key, pem: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})}
}

// client issues a client certificate for user (CN) in groups (O).
func (ca *testCA) client(t *testing.T, user string, groups ...string) tls.Certificate {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: user, Organization: groups},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	require.NoError(t, err)
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
}

// fakeAPIServer answers TokenReviews (token "good-token" is alice in
// group devs) and SubjectAccessReviews (allowed for alice and for the
// group system:masters), and records the reviews.
type fakeAPIServer struct {
	mu   sync.Mutex
	sars []authzv1.SubjectAccessReviewSpec
	// tokens counts TokenReviews.
	tokens int
}

func (f *fakeAPIServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	switch r.URL.Path {
	case "/apis/authentication.k8s.io/v1/tokenreviews":
		f.tokens++
		var tr authnv1.TokenReview
		if err := json.NewDecoder(r.Body).Decode(&tr); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		if tr.Spec.Token == "good-token" {
			tr.Status = authnv1.TokenReviewStatus{Authenticated: true, User: authnv1.UserInfo{Username: "alice", UID: "u-1", Groups: []string{"devs"}}}
		}
		w.WriteHeader(http.StatusCreated)
		_ = json.NewEncoder(w).Encode(tr)
	case "/apis/authorization.k8s.io/v1/subjectaccessreviews":
		var sar authzv1.SubjectAccessReview
		if err := json.NewDecoder(r.Body).Decode(&sar); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		f.sars = append(f.sars, sar.Spec)
		allowed := sar.Spec.User == "alice"
		for _, g := range sar.Spec.Groups {
			allowed = allowed || g == "system:masters"
		}
		sar.Status = authzv1.SubjectAccessReviewStatus{Allowed: allowed}
		if !allowed {
			sar.Status.Reason = "no RBAC rule"
		}
		w.WriteHeader(http.StatusCreated)
		_ = json.NewEncoder(w).Encode(sar)
	default:
		http.NotFound(w, r)
	}
}

func (f *fakeAPIServer) lastSAR() authzv1.SubjectAccessReviewSpec {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.sars[len(f.sars)-1]
}

// fakePods holds one running pod, default/web with container c.
type fakePods struct{}

func (fakePods) ListPods(string) []*v1.Pod { return []*v1.Pod{webPod()} }
func (fakePods) GetPod(ns, name string) (*v1.Pod, error) {
	if ns == "default" && name == "web" {
		return webPod(), nil
	}
	return nil, apierrors.NewNotFound(v1.Resource("pods"), name)
}

var _ Pods = fakePods{}

func webPod() *v1.Pod {
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web", UID: "uid-web"},
		Status: v1.PodStatus{ContainerStatuses: []v1.ContainerStatus{{
			Name: "c", ContainerID: "containerd://abc", State: v1.ContainerState{Running: &v1.ContainerStateRunning{}},
		}}},
	}
}

// fakeLogs records the options it was called with and writes content.
type fakeLogs struct {
	mu      sync.Mutex
	opts    LogOptions
	content string
}

func (f *fakeLogs) WriteLog(_ context.Context, ns, pod, container string, opts LogOptions, w io.Writer) error {
	f.mu.Lock()
	f.opts = opts
	f.mu.Unlock()
	if container != "c" {
		return apierrors.NewBadRequest(fmt.Sprintf("container %q is not valid for pod %s", container, pod))
	}
	for _, line := range strings.SplitAfter(f.content, "\n") {
		if _, err := io.WriteString(w, line); err != nil {
			return err
		}
	}
	return nil
}

var _ Logs = (*fakeLogs)(nil)

// harness is a kubelet server on an httptest TLS listener, trusting ca.
type harness struct {
	api  *fakeAPIServer
	logs *fakeLogs
	ca   *testCA
	url  string
	// summary serves /stats/summary.
	summary *fakeSummary
	// server is the kubelet server under test.
	server *Server
}

func newHarness(t *testing.T) *harness {
	t.Helper()
	return newHarnessWithClock(t, nil)
}

// newHarnessWithClock is newHarness with the review caches on clk.
func newHarnessWithClock(t *testing.T, clk clock.PassiveClock) *harness {
	t.Helper()
	return newHarnessWith(t, clk, nil)
}

// newHarnessWith is newHarnessWithClock with the server's Config and Deps
// changed by edit (nil: as they are) before New.
func newHarnessWith(t *testing.T, clk clock.PassiveClock, edit func(*Config, *Deps)) *harness {
	t.Helper()
	h := &harness{api: &fakeAPIServer{}, logs: &fakeLogs{content: "one\ntwo\nthree\n"}, ca: newTestCA(t, "client-ca"), summary: &fakeSummary{}}
	apiSrv := httptest.NewServer(h.api)
	t.Cleanup(apiSrv.Close)
	reviewer, err := NewReviewer(&rest.Config{Host: apiSrv.URL})
	require.NoError(t, err)
	dir := t.TempDir()
	caFile := filepath.Join(dir, "ca.crt")
	require.NoError(t, os.WriteFile(caFile, h.ca.pem, 0o600))
	cfg := Config{NodeName: "node-a", CertDir: filepath.Join(dir, "pki"), ClientCAFile: caFile}
	deps := Deps{Pods: fakePods{}, Logs: h.logs, Reviewer: reviewer, Clock: clk, Summary: h.summary, Metrics: fakeMetrics{}}
	if edit != nil {
		edit(&cfg, &deps)
	}
	s, err := New(cfg, deps)
	require.NoError(t, err)
	h.server = s
	srv := httptest.NewUnstartedServer(s.Handler())
	srv.TLS = s.tls
	srv.StartTLS()
	t.Cleanup(srv.Close)
	h.url = srv.URL
	return h
}

// get sends a request with an optional client certificate and token.
func (h *harness) do(t *testing.T, method, path string, cert *tls.Certificate, token string) (int, string) {
	t.Helper()
	tc := &tls.Config{InsecureSkipVerify: true} //nolint:gosec // a test server's self-signed certificate
	if cert != nil {
		tc.Certificates = []tls.Certificate{*cert}
	}
	c := &http.Client{Transport: &http.Transport{TLSClientConfig: tc}, Timeout: 10 * time.Second}
	req, err := http.NewRequest(method, h.url+path, nil)
	require.NoError(t, err)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := c.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, string(b)
}

func TestServer_Authentication(t *testing.T) {
	h := newHarness(t)
	admin := h.ca.client(t, "kube-apiserver-kubelet-client", "system:masters")
	bob := h.ca.client(t, "bob", "devs")
	stranger := newTestCA(t, "other-ca").client(t, "kube-apiserver-kubelet-client", "system:masters")
	tests := []struct {
		name     string
		cert     *tls.Certificate
		token    string
		wantCode int
		wantUser string
	}{
		{name: "client certificate from the client CA", cert: &admin, wantCode: 200, wantUser: "kube-apiserver-kubelet-client"},
		{name: "client certificate from another CA", cert: &stranger, wantCode: 401},
		{name: "another CA's certificate, but a good token", cert: &stranger, token: "good-token", wantCode: 200, wantUser: "alice"},
		{name: "bearer token the TokenReview accepts", token: "good-token", wantCode: 200, wantUser: "alice"},
		{name: "bearer token the TokenReview refuses", token: "bad-token", wantCode: 401},
		{name: "anonymous", wantCode: 401},
		{name: "authenticated but not authorized", cert: &bob, wantCode: 403, wantUser: "bob"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, body := h.do(t, "GET", "/healthz", tt.cert, tt.token)
			require.Equal(t, tt.wantCode, code, body)
			if tt.wantUser != "" {
				require.Equal(t, tt.wantUser, h.api.lastSAR().User)
			}
			if code == 403 {
				require.Contains(t, body, "Forbidden (user=bob, verb=get, resource=nodes, subresource=healthz,proxy)")
			}
		})
	}
	// The certificate's groups and the token's user details reach the
	// SubjectAccessReview (a new server: nothing cached).
	h = newHarness(t)
	admin = h.ca.client(t, "kube-apiserver-kubelet-client", "system:masters")
	code, _ := h.do(t, "GET", "/pods", &admin, "")
	require.Equal(t, 200, code)
	// system:authenticated added, as the kubelet's authenticated-group
	// adder does for every authenticated user.
	require.Equal(t, []string{"system:masters", "system:authenticated"}, h.api.lastSAR().Groups)
	code, _ = h.do(t, "GET", "/pods", nil, "good-token")
	require.Equal(t, 200, code)
	require.Equal(t, "u-1", h.api.lastSAR().UID)
	require.Equal(t, []string{"devs", "system:authenticated"}, h.api.lastSAR().Groups)
}

func TestServer_AccessReviewAttributes(t *testing.T) {
	h := newHarness(t)
	tests := []struct {
		method, path      string
		verb, subresource string
	}{
		{"GET", "/healthz", "get", "proxy"},
		{"GET", "/pods", "get", "proxy"},
		{"GET", "/runningpods/", "get", "proxy"},
		{"GET", "/containerLogs/default/web/c", "get", "proxy"},
		{"POST", "/exec/default/web/c?command=ls&output=1", "create", "proxy"},
		// A WebSocket upgrade is a GET; streaming is create whatever the
		// method (requestAttributes says why this differs from the kubelet).
		{"GET", "/exec/default/web/c?command=ls&output=1", "create", "proxy"},
		{"GET", "/attach/default/web/c?output=1", "create", "proxy"},
		{"GET", "/portForward/default/web?port=80", "create", "proxy"},
		{"POST", "/attach/default/web/c?output=1", "create", "proxy"},
		{"POST", "/portForward/default/web", "create", "proxy"},
		{"GET", "/stats/summary", "get", "stats"},
		{"GET", "/stats", "get", "stats"},
		{"GET", "/stats/summary?only_cpu_and_memory=true", "get", "stats"},
		{"GET", "/metrics/resource", "get", "metrics"},
		{"GET", "/metrics/probes", "get", "metrics"},
		{"GET", "/metrics", "get", "metrics"},
		{"GET", "/metrics/cadvisor", "get", "metrics"},
		{"GET", "/logs/syslog", "get", "log"},
		{"GET", "/statsfoo", "get", "proxy"},
		{"PUT", "/pods", "update", "proxy"},
		{"PATCH", "/pods", "patch", "proxy"},
		{"DELETE", "/pods", "delete", "proxy"},
		{"HEAD", "/healthz", "get", "proxy"},
	}
	for i, tt := range tests {
		t.Run(tt.method+" "+tt.path, func(t *testing.T) {
			// The user is refused: the handler is never reached, only
			// the review is made. One user per case, so that no answer
			// comes from the decision cache.
			user := fmt.Sprintf("bob-%d", i)
			bob := h.ca.client(t, user)
			code, _ := h.do(t, tt.method, tt.path, &bob, "")
			require.Equal(t, http.StatusForbidden, code)
			sar := h.api.lastSAR()
			require.Equal(t, &authzv1.ResourceAttributes{Verb: tt.verb, Resource: "nodes", Subresource: tt.subresource, Name: "node-a"}, sar.ResourceAttributes)
			require.Equal(t, user, sar.User)
		})
	}
}

func TestServer_Endpoints(t *testing.T) {
	h := newHarness(t)
	admin := h.ca.client(t, "admin", "system:masters")

	code, body := h.do(t, "GET", "/pods", &admin, "")
	require.Equal(t, 200, code)
	var list v1.PodList
	require.NoError(t, json.Unmarshal([]byte(body), &list))
	require.Equal(t, "PodList", list.Kind)
	require.Len(t, list.Items, 1)
	require.Equal(t, "web", list.Items[0].Name)

	code, body = h.do(t, "GET", "/containerLogs/default/web/c?tailLines=2&timestamps=true", &admin, "")
	require.Equal(t, 200, code)
	require.Equal(t, "one\ntwo\nthree\n", body) // the fake ignores the options…
	require.Equal(t, int64(2), *h.logs.opts.TailLines)
	require.True(t, h.logs.opts.Timestamps) // …but receives them

	code, body = h.do(t, "GET", "/containerLogs/default/web/c?limitBytes=6", &admin, "")
	require.Equal(t, 200, code)
	require.Equal(t, "one\ntw", body, "cut at limitBytes")

	code, body = h.do(t, "GET", "/containerLogs/default/web/c?tailLines=-1", &admin, "")
	require.Equal(t, 400, code, body)
	code, body = h.do(t, "GET", "/containerLogs/default/nope/c", &admin, "")
	require.Equal(t, 404, code, body)
	code, body = h.do(t, "GET", "/containerLogs/default/web/nope", &admin, "")
	require.Equal(t, 400, code, body)
	require.Contains(t, body, `container "nope" is not valid`)

	// Streaming endpoints insist on an upgrade (after their checks).
	code, body = h.do(t, "POST", "/exec/default/web/c?output=1", &admin, "")
	require.Equal(t, 400, code, body)
	require.Contains(t, body, "at least one command")
}

func TestParseLogOptions(t *testing.T) {
	now := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	i := func(n int64) *int64 { return &n }
	tests := []struct {
		name    string
		query   string
		want    LogOptions
		wantErr string
	}{
		{name: "none", query: "", want: LogOptions{}},
		{name: "follow and timestamps", query: "follow=true&timestamps=1", want: LogOptions{Follow: true, Timestamps: true}},
		{name: "previous does not follow", query: "follow=true&previous=true", want: LogOptions{Previous: true}},
		{name: "tailLines", query: "tailLines=10", want: LogOptions{TailLines: i(10)}},
		{name: "tailLines 0", query: "tailLines=0", want: LogOptions{TailLines: i(0)}},
		{name: "negative tailLines", query: "tailLines=-1", wantErr: "tailLines"},
		{name: "limitBytes", query: "limitBytes=100", want: LogOptions{LimitBytes: i(100)}},
		{name: "limitBytes 0", query: "limitBytes=0", wantErr: "limitBytes"},
		{name: "sinceSeconds", query: "sinceSeconds=60", want: LogOptions{Since: now.Add(-time.Minute)}},
		{name: "sinceSeconds 0", query: "sinceSeconds=0", wantErr: "sinceSeconds"},
		{name: "sinceTime", query: "sinceTime=2026-11-25T11:00:00Z", want: LogOptions{Since: now.Add(-time.Hour)}},
		{name: "bad sinceTime", query: "sinceTime=yesterday", wantErr: "RFC3339"},
		{name: "both since", query: "sinceSeconds=5&sinceTime=2026-11-25T11:00:00Z", wantErr: "at most one"},
		{name: "bad boolean", query: "follow=yes", wantErr: "follow"},
		{name: "not a number", query: "tailLines=ten", wantErr: "tailLines"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			q, err := urlQuery(tt.query)
			require.NoError(t, err)
			got, err := parseLogOptions(q, now)
			if tt.wantErr != "" {
				require.ErrorContains(t, err, tt.wantErr)
				require.True(t, apierrors.IsBadRequest(err))
				return
			}
			require.NoError(t, err)
			require.Equal(t, tt.want, got)
		})
	}
}

func TestSelfSigned_CreatedOnceAndKept(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "pki")
	cert, key, err := selfSigned(dir, "node-a", nil, time.Now())
	require.NoError(t, err)
	before, err := os.ReadFile(cert)
	require.NoError(t, err)
	_, err = tls.LoadX509KeyPair(cert, key)
	require.NoError(t, err)
	_, _, err = selfSigned(dir, "node-a", nil, time.Now())
	require.NoError(t, err)
	after, err := os.ReadFile(cert)
	require.NoError(t, err)
	require.Equal(t, before, after, "an existing pair is kept")
	st, err := os.Stat(key)
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o600), st.Mode().Perm())
}

func urlQuery(s string) (url.Values, error) {
	return url.ParseQuery(s)
}

// TestServer_CachesReviews checks the kubelet's cache lifetimes: a token's
// user for 2 minutes, a refused token for 2 minutes, an allowed decision
// for 5, a denied one for 30 s.
func TestServer_CachesReviews(t *testing.T) {
	clk := clocktesting.NewFakePassiveClock(time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC))
	h := newHarnessWithClock(t, clk)
	reviews := func() (tokens, sars int) {
		h.api.mu.Lock()
		defer h.api.mu.Unlock()
		return h.api.tokens, len(h.api.sars)
	}
	get := func(cert *tls.Certificate, token string) int {
		code, _ := h.do(t, "GET", "/healthz", cert, token)
		return code
	}

	require.Equal(t, 200, get(nil, "good-token"))
	require.Equal(t, 200, get(nil, "good-token"))
	tokens, sars := reviews()
	require.Equal(t, 1, tokens, "the token's user is cached")
	require.Equal(t, 1, sars, "the decision is cached")

	clk.SetTime(clk.Now().Add(2*time.Minute + time.Second))
	require.Equal(t, 200, get(nil, "good-token"))
	tokens, sars = reviews()
	require.Equal(t, 2, tokens, "after 2 minutes the token is reviewed again")
	require.Equal(t, 1, sars, "an allowed decision lasts 5 minutes")

	clk.SetTime(clk.Now().Add(3 * time.Minute))
	require.Equal(t, 200, get(nil, "good-token"))
	_, sars = reviews()
	require.Equal(t, 2, sars, "after 5 minutes the decision is asked again")

	require.Equal(t, 401, get(nil, "bad-token"))
	require.Equal(t, 401, get(nil, "bad-token"))
	require.Equal(t, 401, get(nil, "bad-token"))
	tokens, _ = reviews()
	require.Equal(t, 4, tokens, "a refused token is cached: repeating it costs no review")
	clk.SetTime(clk.Now().Add(2*time.Minute + time.Second))
	require.Equal(t, 401, get(nil, "bad-token"))
	tokens, _ = reviews()
	require.Equal(t, 5, tokens, "for 2 minutes, as the kubelet's failure TTL")
	require.Equal(t, 200, get(nil, "good-token"))
	tokens, _ = reviews()
	require.Equal(t, 6, tokens, "the good token's 2 minutes were over too")

	bob := h.ca.client(t, "bob")
	require.Equal(t, 403, get(&bob, ""))
	require.Equal(t, 403, get(&bob, ""))
	// Denied, /healthz asks for nodes/healthz, then nodes/proxy: two
	// reviews, each cached.
	_, sars = reviews()
	require.Equal(t, 4, sars, "a denied decision is cached")
	clk.SetTime(clk.Now().Add(31 * time.Second))
	require.Equal(t, 403, get(&bob, ""))
	_, sars = reviews()
	require.Equal(t, 6, sars, "for 30 seconds")
}
