package kubeletserver

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	authnv1 "k8s.io/api/authentication/v1"
	authzv1 "k8s.io/api/authorization/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// rbacReviewer is an API server whose RBAC grants each token's user the
// (verb, subresource) pairs listed for it on nodes; "*" is any verb.
type rbacReviewer struct {
	mu    sync.Mutex
	users map[string]string // token -> user
	rules map[string][][2]string
}

func (r *rbacReviewer) ReviewToken(_ context.Context, tr *authnv1.TokenReview) (*authnv1.TokenReview, error) {
	if u, ok := r.users[tr.Spec.Token]; ok {
		tr.Status = authnv1.TokenReviewStatus{Authenticated: true, User: authnv1.UserInfo{Username: u}}
	}
	return tr, nil
}

func (r *rbacReviewer) ReviewAccess(_ context.Context, sar *authzv1.SubjectAccessReview) (*authzv1.SubjectAccessReview, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	ra := sar.Spec.ResourceAttributes
	for _, rule := range r.rules[sar.Spec.User] {
		if ra.Resource == "nodes" && rule[1] == ra.Subresource && (rule[0] == "*" || rule[0] == ra.Verb) {
			sar.Status.Allowed = true
		}
	}
	return sar, nil
}

// raw sends one request line and headers exactly as given over TLS (no
// client-side path cleaning, any method) and returns the status code.
func raw(t *testing.T, addr, method, path, token string, upgrade string) int {
	t.Helper()
	conn, err := tls.Dial("tcp", addr, &tls.Config{InsecureSkipVerify: true}) //nolint:gosec // the test server's self-signed certificate
	require.NoError(t, err)
	defer conn.Close()
	require.NoError(t, conn.SetDeadline(time.Now().Add(10*time.Second)))
	req := method + " " + path + " HTTP/1.1\r\nHost: node-a\r\nAuthorization: Bearer " + token + "\r\n"
	switch upgrade {
	case "websocket":
		req += "Connection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Protocol: v5.channel.k8s.io\r\n"
	case "spdy":
		req += "Connection: Upgrade\r\nUpgrade: SPDY/3.1\r\nX-Stream-Protocol-Version: v4.channel.k8s.io\r\n"
	}
	_, err = io.WriteString(conn, req+"\r\n")
	require.NoError(t, err)
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	require.NoError(t, err)
	_ = resp.Body.Close()
	return resp.StatusCode
}

// Callers the cluster's RBAC lets read (a monitoring agent with get on
// nodes/proxy, metrics-server with nodes/metrics and nodes/stats) try to
// reach exec, attach and port-forward: through a WebSocket upgrade, which
// is a GET (the kubelet authorizes it with verb get, so get on
// nodes/proxy runs commands in every container: root on the node; this
// server asks for create), and through paths that start under an
// allowed prefix and lead elsewhere once cleaned. Not one reaches the
// runtime.
func TestServer_ReadOnlyCallersCannotStream(t *testing.T) {
	stream := echoStreamServer(t)
	rt := &fakeRuntime{streamURL: stream.URL, sandboxes: []*runtimeapi.PodSandbox{
		{Id: "sb-web", State: runtimeapi.PodSandboxState_SANDBOX_READY, Labels: map[string]string{"io.kubernetes.pod.uid": "uid-web"}},
	}}
	rev := &rbacReviewer{
		users: map[string]string{"monitor": "prometheus", "metrics": "metrics-server", "admin": "kube-apiserver"},
		rules: map[string][][2]string{
			"prometheus":     {{"get", "proxy"}, {"get", "metrics"}, {"get", "stats"}},
			"metrics-server": {{"get", "metrics"}, {"get", "stats"}},
			"kube-apiserver": {{"*", "proxy"}},
		},
	}
	s, err := New(Config{NodeName: "node-a", CertDir: filepath.Join(t.TempDir(), "pki")},
		Deps{Pods: fakePods{}, Logs: &fakeLogs{}, Runtime: rt, Reviewer: rev, Metrics: fakeMetrics{}})
	require.NoError(t, err)
	srv := httptest.NewUnstartedServer(s.Handler())
	srv.TLS = s.tls
	srv.StartTLS()
	t.Cleanup(srv.Close)
	addr := srv.Listener.Addr().String()
	calls := func() int {
		rt.mu.Lock()
		defer rt.mu.Unlock()
		return len(rt.execs) + len(rt.attaches) + len(rt.forwards)
	}

	for _, tt := range []struct {
		name, token, method, path, upgrade string
	}{
		{"websocket exec with get on nodes/proxy", "monitor", "GET", "/exec/default/web/c?command=id&output=1", "websocket"},
		{"websocket exec with the uid form", "monitor", "GET", "/exec/default/web/uid-web/c?command=id&output=1", "websocket"},
		{"websocket attach", "monitor", "GET", "/attach/default/web/c?output=1&input=1", "websocket"},
		{"websocket port-forward", "monitor", "GET", "/portForward/default/web?port=22", "websocket"},
		{"HEAD exec", "monitor", "HEAD", "/exec/default/web/c?command=id&output=1", "spdy"},
		{"dot-dot from /metrics", "metrics", "GET", "/metrics/../exec/default/web/c?command=id&output=1", "websocket"},
		{"encoded dot-dot from /stats", "metrics", "GET", "/stats/..%2Fexec/default/web/c?command=id&output=1", "websocket"},
		{"encoded slashes from /metrics", "metrics", "POST", "/metrics%2F..%2Fexec/default/web/c?command=id&output=1", "spdy"},
		{"CONNECT past the path cleaning", "metrics", "CONNECT", "/metrics/../exec/default/web/c?command=id&output=1", "spdy"},
		{"CONNECT to exec", "monitor", "CONNECT", "/exec/default/web/c?command=id&output=1", "spdy"},
		{"no credentials", "", "POST", "/exec/default/web/c?command=id&output=1", "spdy"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			before := calls()
			code := raw(t, addr, tt.method, tt.path, tt.token, tt.upgrade)
			// A 3xx redirects to the clean path, which is authorized again.
			assert.GreaterOrEqual(t, code, 300, "no 1xx or 2xx")
			assert.Equal(t, before, calls(), "the runtime was asked for a stream")
		})
	}
	// What they may do still works, and the API server's credentials
	// (create on nodes/proxy) still stream.
	assert.Equal(t, http.StatusOK, raw(t, addr, "GET", "/pods", "monitor", ""))
	assert.Equal(t, http.StatusOK, raw(t, addr, "GET", "/metrics/probes", "metrics", ""))
	before := calls()
	assert.Equal(t, http.StatusSwitchingProtocols, raw(t, addr, "POST", "/exec/default/web/c?command=id&output=1", "admin", "spdy"))
	assert.Equal(t, before+1, calls())
}

// An unauthenticated caller opens connections to the node's port, sends
// one request each (401) and keeps them: every one holds a descriptor and
// a goroutine of the root daemon for as long as the caller likes, until
// the agent runs out of descriptors. A refused request's connection is
// closed after the answer, and an idle kept-alive connection is closed
// after the idle timeout.
func TestServer_ConnectionsOfRefusedCallersAreNotKept(t *testing.T) {
	rev := &rbacReviewer{users: map[string]string{"monitor": "prometheus"},
		rules: map[string][][2]string{"prometheus": {{"get", "proxy"}}}}
	s, err := New(Config{NodeName: "node-a", Address: "127.0.0.1", CertDir: filepath.Join(t.TempDir(), "pki")},
		Deps{Pods: fakePods{}, Logs: &fakeLogs{}, Reviewer: rev})
	require.NoError(t, err)
	// Longer than the refused callers' waits below, so that their
	// connections must be closed at once, not by the idle timeout; long
	// enough that a loaded machine's stall between the answer and the
	// kept-alive check (300 ms once) does not close the kept connection.
	s.idleTimeout = 3 * time.Second
	require.NoError(t, s.Listen())
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Serve(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	addr := s.Addr().String()

	// closedAfter sends the request on a new connection, reads the answer
	// and reports whether the server closed the connection within wait.
	closedAfter := func(token string, wait time.Duration) (int, bool) {
		conn, err := tls.Dial("tcp", addr, &tls.Config{InsecureSkipVerify: true}) //nolint:gosec // the test server's self-signed certificate
		require.NoError(t, err)
		defer conn.Close()
		req := "GET /pods HTTP/1.1\r\nHost: node-a\r\n"
		if token != "" {
			req += "Authorization: Bearer " + token + "\r\n"
		}
		_, err = io.WriteString(conn, req+"\r\n")
		require.NoError(t, err)
		br := bufio.NewReader(conn)
		resp, err := http.ReadResponse(br, nil)
		require.NoError(t, err)
		_, _ = io.Copy(io.Discard, resp.Body)
		_ = resp.Body.Close()
		require.NoError(t, conn.SetReadDeadline(time.Now().Add(wait)))
		_, err = br.ReadByte()
		var ne interface{ Timeout() bool }
		if errors.As(err, &ne) && ne.Timeout() {
			return resp.StatusCode, false // still open
		}
		return resp.StatusCode, true
	}
	code, closed := closedAfter("", 2*time.Second)
	assert.Equal(t, http.StatusUnauthorized, code)
	assert.True(t, closed, "the connection of an unauthenticated request is kept open")
	code, closed = closedAfter("not-a-token", 2*time.Second)
	assert.Equal(t, http.StatusUnauthorized, code)
	assert.True(t, closed, "the connection of a refused token is kept open")
	code, closed = closedAfter("monitor", 100*time.Millisecond)
	assert.Equal(t, http.StatusOK, code)
	assert.False(t, closed, "an authorized caller's connection is kept alive")
	code, closed = closedAfter("monitor", 10*time.Second)
	assert.Equal(t, http.StatusOK, code)
	assert.True(t, closed, "an idle connection is closed after the idle timeout")
}

// Every route, with every method a client might try, answers an
// anonymous caller (or one whose token the API server refuses) 401 before
// any handler runs: no Pods, Logs, Runtime, Summary or Metrics call.
func TestServer_EveryRouteNeedsAuthentication(t *testing.T) {
	rt := &fakeRuntime{}
	logs := &fakeLogs{content: "secret log line\n"}
	sum := &fakeSummary{}
	rev := &rbacReviewer{users: map[string]string{}}
	s, err := New(Config{NodeName: "node-a", CertDir: filepath.Join(t.TempDir(), "pki")},
		Deps{Pods: fakePods{}, Logs: logs, Runtime: rt, Reviewer: rev, Summary: sum, Metrics: fakeMetrics{}})
	require.NoError(t, err)
	srv := httptest.NewUnstartedServer(s.Handler())
	srv.TLS = s.tls
	srv.StartTLS()
	t.Cleanup(srv.Close)
	for _, path := range []string{
		"/healthz", "/pods", "/runningpods/", "/metrics", "/metrics/probes", "/metrics/resource", "/metrics/cadvisor",
		"/stats/summary", "/stats/summary?only_cpu_and_memory=true", "/containerLogs/default/web/c?follow=true",
		"/exec/default/web/c?command=id&output=1", "/attach/default/web/c?output=1", "/portForward/default/web?port=80",
		"/logs/", "/configz", "/debug/pprof/", "/nope",
	} {
		for _, method := range []string{"GET", "POST", "HEAD"} {
			for _, token := range []string{"", "forged"} {
				code := raw(t, srv.Listener.Addr().String(), method, path, token, "websocket")
				assert.Equal(t, http.StatusUnauthorized, code, "%s %s token %q", method, path, token)
			}
		}
	}
	rt.mu.Lock()
	defer rt.mu.Unlock()
	assert.Empty(t, rt.execs)
	assert.Empty(t, rt.attaches)
	assert.Empty(t, rt.forwards)
	assert.Nil(t, sum.only, "the summary was built for an anonymous caller")
}
