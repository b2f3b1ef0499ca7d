package kubeletserver

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	authnv1 "k8s.io/api/authentication/v1"
	authzv1 "k8s.io/api/authorization/v1"
	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// TestServer_AnonymousAndAuthorizationMode: requests without credentials
// are refused (401) unless --anonymous-auth; then they are
// system:anonymous, whom the API server decides about (Webhook) or who is
// let in (AlwaysAllow). Failed credentials are never anonymous.
// AlwaysAllow asks the API server nothing.
func TestServer_AnonymousAndAuthorizationMode(t *testing.T) {
	tests := []struct {
		name      string
		anonymous bool
		mode      string
		creds     string // "", "bad-token", "other-ca", "bob" (a certificate of the client CA, whom the fake API server denies)
		wantCode  int
		wantSARs  []string // users of the SubjectAccessReviews made
	}{
		{name: "defaults: anonymous refused", wantCode: 401},
		{name: "defaults: explicit Webhook", mode: AuthorizationWebhook, wantCode: 401},
		{name: "anonymous-auth, Webhook: the API server denies system:anonymous", anonymous: true, wantCode: 403,
			wantSARs: []string{anonymousUser, anonymousUser}},
		{name: "anonymous-auth, AlwaysAllow: answered", anonymous: true, mode: AuthorizationAlwaysAllow, wantCode: 200},
		{name: "AlwaysAllow alone: anonymous still refused", mode: AuthorizationAlwaysAllow, wantCode: 401},
		{name: "AlwaysAllow: an authenticated user the API server would deny is let in", mode: AuthorizationAlwaysAllow, creds: "bob", wantCode: 200},
		{name: "anonymous-auth: a refused token is not anonymous", anonymous: true, mode: AuthorizationAlwaysAllow, creds: "bad-token", wantCode: 401},
		{name: "anonymous-auth: another CA's certificate is not anonymous", anonymous: true, mode: AuthorizationAlwaysAllow, creds: "other-ca", wantCode: 401},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarnessWith(t, nil, func(c *Config, _ *Deps) {
				c.AnonymousAuth, c.AuthorizationMode = tt.anonymous, tt.mode
			})
			var token string
			var cert = h.ca.client(t, "bob")
			certp := &cert
			switch tt.creds {
			case "":
				certp = nil
			case "bad-token":
				certp, token = nil, "bad-token"
			case "other-ca":
				other := newTestCA(t, "other-ca").client(t, "admin", "system:masters")
				certp = &other
			}
			code, body := h.do(t, "GET", "/pods", certp, token)
			require.Equal(t, tt.wantCode, code, body)
			if code == 200 {
				var list v1.PodList
				require.NoError(t, json.Unmarshal([]byte(body), &list), body)
				require.Len(t, list.Items, 1)
			}
			h.api.mu.Lock()
			var users []string
			for _, s := range h.api.sars {
				users = append(users, s.User)
				if s.User == anonymousUser {
					require.Equal(t, []string{anonymousGroup}, s.Groups)
				}
			}
			h.api.mu.Unlock()
			require.Equal(t, tt.wantSARs, users)
		})
	}
}

func TestNew_RefusesUnknownAuthorizationMode(t *testing.T) {
	_, err := New(Config{NodeName: "n", CertDir: t.TempDir(), AuthorizationMode: "RBAC"}, Deps{})
	require.ErrorContains(t, err, `--authorization-mode "RBAC": use Webhook or AlwaysAllow`)
}

// TestServer_FineGrainedSubresources: /configz, /pods, /runningpods/ and
// /healthz are allowed by their own nodes subresource, or else by
// nodes/proxy, as the kubelet (KubeletFineGrainedAuthz) asks.
func TestServer_FineGrainedSubresources(t *testing.T) {
	rr := &rbacReviewer{
		users: map[string]string{"t-configz": "configz-reader", "t-proxy": "proxy-user", "t-pods": "pods-reader", "t-stats": "stats-reader"},
		rules: map[string][][2]string{
			"configz-reader": {{"get", "configz"}},
			"proxy-user":     {{"get", "proxy"}},
			"pods-reader":    {{"get", "pods"}},
			"stats-reader":   {{"get", "stats"}},
		},
	}
	cfg := map[string]any{"kind": "KubeletConfiguration", "port": 10250}
	s, err := New(Config{NodeName: "node-a", CertDir: t.TempDir()},
		Deps{Pods: fakePods{}, Reviewer: rr, Configz: func() any { return cfg }})
	require.NoError(t, err)
	srv := httptest.NewUnstartedServer(s.Handler())
	srv.TLS = s.tls
	srv.StartTLS()
	t.Cleanup(srv.Close)
	h := &harness{url: srv.URL}
	tests := []struct {
		path, token string
		want        int
	}{
		{"/configz", "t-configz", 200},
		{"/configz", "t-proxy", 200},
		{"/configz", "t-pods", 403},
		{"/pods", "t-pods", 200},
		{"/runningpods/", "t-pods", 200},
		{"/pods", "t-proxy", 200},
		{"/pods", "t-configz", 403},
		{"/healthz", "t-proxy", 200},
		{"/healthz", "t-pods", 403},
		{"/stats/summary", "t-proxy", 403}, // stats has no proxy fallback
	}
	for _, tt := range tests {
		code, body := h.do(t, "GET", tt.path, nil, tt.token)
		require.Equal(t, tt.want, code, "%s with %s: %s", tt.path, tt.token, body)
		if tt.path == "/configz" && code == 200 {
			var got map[string]map[string]any
			require.NoError(t, json.Unmarshal([]byte(body), &got), body)
			require.Equal(t, "KubeletConfiguration", got["kubeletconfig"]["kind"], body)
		}
		if code == 403 && tt.path == "/configz" {
			require.Contains(t, body, "subresource=configz,proxy")
		}
	}
	// The reviews' attributes: configz first, then proxy.
	var seen []string
	rec := reviewerFunc(func(sar *authzv1.SubjectAccessReview) {
		seen = append(seen, sar.Spec.ResourceAttributes.Subresource)
	})
	s2, err := New(Config{NodeName: "node-a", CertDir: t.TempDir()}, Deps{Pods: fakePods{}, Reviewer: rec, Configz: func() any { return cfg }})
	require.NoError(t, err)
	ok, _, err := s2.authorize(context.Background(), &User{Name: "x"}, requestAttributes(httptest.NewRequest("GET", "/configz", nil)))
	require.NoError(t, err)
	require.False(t, ok)
	require.Equal(t, []string{"configz", "proxy"}, seen)
}

// reviewerFunc denies every SubjectAccessReview after showing it to f.
type reviewerFunc func(*authzv1.SubjectAccessReview)

func (f reviewerFunc) ReviewToken(context.Context, *authnv1.TokenReview) (*authnv1.TokenReview, error) {
	return nil, io.EOF
}

func (f reviewerFunc) ReviewAccess(_ context.Context, sar *authzv1.SubjectAccessReview) (*authzv1.SubjectAccessReview, error) {
	f(sar)
	return sar, nil
}

// countingRuntime fails the test if the read-only port ever reaches the
// runtime's streaming calls.
type countingRuntime struct{ t *testing.T }

func (r countingRuntime) ListPodSandbox(context.Context, *runtimeapi.PodSandboxFilter) ([]*runtimeapi.PodSandbox, error) {
	r.t.Error("the read-only port reached CRI ListPodSandbox")
	return nil, io.EOF
}

func (r countingRuntime) Exec(context.Context, *runtimeapi.ExecRequest) (*runtimeapi.ExecResponse, error) {
	r.t.Error("the read-only port reached CRI Exec")
	return nil, io.EOF
}

func (r countingRuntime) Attach(context.Context, *runtimeapi.AttachRequest) (*runtimeapi.AttachResponse, error) {
	r.t.Error("the read-only port reached CRI Attach")
	return nil, io.EOF
}

func (r countingRuntime) PortForward(context.Context, *runtimeapi.PortForwardRequest) (*runtimeapi.PortForwardResponse, error) {
	r.t.Error("the read-only port reached CRI PortForward")
	return nil, io.EOF
}

// TestReadOnlyHandler: without any credentials, the read-only port serves
// /healthz, /pods, /stats/summary and /metrics; exec, run, attach,
// port-forward, container logs, /runningpods/, pprof and /logs answer 405
// as on the kubelet's, /configz is not there, and nothing reaches the
// runtime.
func TestReadOnlyHandler(t *testing.T) {
	logs := &fakeLogs{content: "secret\n"}
	s, err := New(Config{NodeName: "node-a", CertDir: t.TempDir()}, Deps{
		Pods: fakePods{}, Logs: logs, Runtime: countingRuntime{t}, Metrics: fakeMetrics{}, Summary: &fakeSummary{},
		Configz: func() any { return map[string]string{"kind": "KubeletConfiguration"} },
	})
	require.NoError(t, err)
	srv := httptest.NewServer(s.ReadOnlyHandler())
	t.Cleanup(srv.Close)
	get := func(method, path string) (int, string) {
		req, err := http.NewRequest(method, srv.URL+path, nil)
		require.NoError(t, err)
		resp, err := (&http.Client{Timeout: 10 * time.Second}).Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	code, body := get("GET", "/healthz")
	require.Equal(t, 200, code)
	require.Equal(t, "ok", body)
	code, body = get("GET", "/pods")
	require.Equal(t, 200, code, body)
	var list v1.PodList
	require.NoError(t, json.Unmarshal([]byte(body), &list))
	require.Equal(t, "web", list.Items[0].Name)
	code, body = get("GET", "/stats/summary")
	require.Equal(t, 200, code, body)
	code, _ = get("GET", "/metrics")
	require.Equal(t, 200, code)

	for _, p := range []string{
		"/exec/default/web/c?command=id&output=1", "/run/default/web/c?cmd=id",
		"/attach/default/web/c?output=1", "/portForward/default/web?port=80",
		"/containerLogs/default/web/c", "/runningpods/", "/debug/pprof/heap", "/logs/syslog",
	} {
		for _, m := range []string{"GET", "POST"} {
			code, body := get(m, p)
			require.Equal(t, http.StatusMethodNotAllowed, code, "%s %s: %s", m, p, body)
			require.Contains(t, body, "Debug endpoints are disabled.")
			require.NotContains(t, body, "secret")
		}
	}
	code, _ = get("GET", "/configz")
	require.Equal(t, http.StatusNotFound, code, "/configz is for authorized callers only")
	code, _ = get("DELETE", "/pods")
	require.Equal(t, http.StatusMethodNotAllowed, code)
	require.True(t, strings.HasPrefix(srv.URL, "http://"), "plain HTTP, as the kubelet's read-only port")
}

func TestHealthzHandler(t *testing.T) {
	srv := httptest.NewServer(HealthzHandler())
	t.Cleanup(srv.Close)
	resp, err := http.Get(srv.URL + "/healthz")
	require.NoError(t, err)
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.Equal(t, 200, resp.StatusCode)
	require.Equal(t, "ok", string(b))
	resp, err = http.Get(srv.URL + "/pods")
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, 404, resp.StatusCode, "the healthz endpoint serves nothing else")
}
