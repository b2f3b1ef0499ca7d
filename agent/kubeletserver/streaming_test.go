package kubeletserver

import (
	"bufio"
	"context"
	"crypto/tls"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"k8s.io/client-go/rest"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// fakeRuntime answers the streaming calls with a URL on streamURL and
// records the requests.
type fakeRuntime struct {
	mu        sync.Mutex
	streamURL string
	execs     []*runtimeapi.ExecRequest
	attaches  []*runtimeapi.AttachRequest
	forwards  []*runtimeapi.PortForwardRequest
	sandboxes []*runtimeapi.PodSandbox
}

var _ Runtime = (*fakeRuntime)(nil)

func (f *fakeRuntime) ListPodSandbox(_ context.Context, filter *runtimeapi.PodSandboxFilter) ([]*runtimeapi.PodSandbox, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []*runtimeapi.PodSandbox
	for _, sb := range f.sandboxes {
		if sb.Labels["io.kubernetes.pod.uid"] == filter.GetLabelSelector()["io.kubernetes.pod.uid"] && sb.State == filter.GetState().GetState() {
			out = append(out, sb)
		}
	}
	return out, nil
}

func (f *fakeRuntime) Exec(_ context.Context, req *runtimeapi.ExecRequest) (*runtimeapi.ExecResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.execs = append(f.execs, req)
	return &runtimeapi.ExecResponse{Url: f.streamURL + "/exec/token"}, nil
}

func (f *fakeRuntime) Attach(_ context.Context, req *runtimeapi.AttachRequest) (*runtimeapi.AttachResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.attaches = append(f.attaches, req)
	return &runtimeapi.AttachResponse{Url: f.streamURL + "/attach/token"}, nil
}

func (f *fakeRuntime) PortForward(_ context.Context, req *runtimeapi.PortForwardRequest) (*runtimeapi.PortForwardResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.forwards = append(f.forwards, req)
	return &runtimeapi.PortForwardResponse{Url: f.streamURL + "/portforward/token"}, nil
}

// echoStreamServer is a stand-in for the runtime's streaming server: it
// accepts an upgrade, says which path it was asked for, then echoes.
func echoStreamServer(t *testing.T) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !strings.EqualFold(r.Header.Get("Connection"), "upgrade") {
			http.Error(w, "upgrade required", http.StatusBadRequest)
			return
		}
		conn, rw, err := w.(http.Hijacker).Hijack()
		if err != nil {
			return
		}
		defer conn.Close()
		_, _ = rw.WriteString("HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: " + r.Header.Get("Upgrade") + "\r\n\r\n")
		_, _ = rw.WriteString(r.URL.Path + "\n")
		_ = rw.Flush()
		_, _ = io.Copy(conn, rw)
	}))
	t.Cleanup(srv.Close)
	return srv
}

// TestServer_StreamsAreProxiedToTheRuntime checks exec, attach and
// port-forward: the CRI request each makes, and that the client's upgraded
// connection reaches the runtime's streaming URL and carries bytes both
// ways.
func TestServer_StreamsAreProxiedToTheRuntime(t *testing.T) {
	stream := echoStreamServer(t)
	rt := &fakeRuntime{streamURL: stream.URL, sandboxes: []*runtimeapi.PodSandbox{
		{Id: "sb-old", State: runtimeapi.PodSandboxState_SANDBOX_NOTREADY, Labels: map[string]string{"io.kubernetes.pod.uid": "uid-web"}},
		{Id: "sb-web", State: runtimeapi.PodSandboxState_SANDBOX_READY, Labels: map[string]string{"io.kubernetes.pod.uid": "uid-web"}},
	}}
	api := httptest.NewServer(&fakeAPIServer{})
	t.Cleanup(api.Close)
	reviewer, err := NewReviewer(&rest.Config{Host: api.URL})
	require.NoError(t, err)
	ca := newTestCA(t, "client-ca")
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "ca.crt"), ca.pem, 0o600))
	s, err := New(Config{NodeName: "node-a", CertDir: dir, ClientCAFile: filepath.Join(dir, "ca.crt")},
		Deps{Pods: fakePods{}, Logs: &fakeLogs{}, Runtime: rt, Reviewer: reviewer})
	require.NoError(t, err)
	srv := httptest.NewUnstartedServer(s.Handler())
	srv.TLS = s.tls
	srv.StartTLS()
	t.Cleanup(srv.Close)
	admin := ca.client(t, "admin", "system:masters")

	upgrade := func(t *testing.T, path string) string {
		t.Helper()
		conn, err := tls.Dial("tcp", srv.Listener.Addr().String(), &tls.Config{
			InsecureSkipVerify: true, //nolint:gosec // the test server's self-signed certificate
			Certificates:       []tls.Certificate{admin},
		})
		require.NoError(t, err)
		defer conn.Close()
		require.NoError(t, conn.SetDeadline(time.Now().Add(10*time.Second)))
		_, err = io.WriteString(conn, "POST "+path+" HTTP/1.1\r\nHost: node-a\r\nConnection: Upgrade\r\nUpgrade: SPDY/3.1\r\nX-Stream-Protocol-Version: v4.channel.k8s.io\r\n\r\n")
		require.NoError(t, err)
		br := bufio.NewReader(conn)
		resp, err := http.ReadResponse(br, nil)
		require.NoError(t, err)
		require.Equal(t, http.StatusSwitchingProtocols, resp.StatusCode)
		got, err := br.ReadString('\n')
		require.NoError(t, err)
		_, err = io.WriteString(conn, "ping\n")
		require.NoError(t, err)
		echo, err := br.ReadString('\n')
		require.NoError(t, err)
		require.Equal(t, "ping\n", echo, "bytes flow both ways")
		return strings.TrimSpace(got)
	}

	require.Equal(t, "/exec/token", upgrade(t, "/exec/default/web/c?command=sh&command=-c&command=id&input=1&output=1&tty=1"))
	require.Len(t, rt.execs, 1)
	require.Equal(t, &runtimeapi.ExecRequest{ContainerId: "abc", Cmd: []string{"sh", "-c", "id"}, Tty: true, Stdin: true, Stdout: true}, rt.execs[0])

	require.Equal(t, "/attach/token", upgrade(t, "/attach/default/web/c?output=1&error=1"))
	require.Equal(t, &runtimeapi.AttachRequest{ContainerId: "abc", Stdout: true, Stderr: true}, rt.attaches[0])

	require.Equal(t, "/portforward/token", upgrade(t, "/portForward/default/web"))
	require.Equal(t, &runtimeapi.PortForwardRequest{PodSandboxId: "sb-web"}, rt.forwards[0])

	// Not found and not upgraded.
	h := &harness{url: srv.URL}
	code, body := h.do(t, "POST", "/exec/default/web/nope?command=ls&output=1", &admin, "")
	require.Equal(t, http.StatusNotFound, code, body)
	code, body = h.do(t, "POST", "/exec/default/web/c?command=ls&output=1", &admin, "")
	require.Equal(t, http.StatusInternalServerError, code, body)
	require.Contains(t, body, "Upgrade request required")
}

// TestServer_StreamsCheckThePodUID sends exec, attach and port-forward in
// their /{uid}/ forms: the pod's UID is served, another UID (a pod of that
// name deleted and created again) is a 404 that never reaches the runtime.
func TestServer_StreamsCheckThePodUID(t *testing.T) {
	stream := echoStreamServer(t)
	rt := &fakeRuntime{streamURL: stream.URL, sandboxes: []*runtimeapi.PodSandbox{
		{Id: "sb-web", State: runtimeapi.PodSandboxState_SANDBOX_READY, Labels: map[string]string{"io.kubernetes.pod.uid": "uid-web"}},
	}}
	api := httptest.NewServer(&fakeAPIServer{})
	t.Cleanup(api.Close)
	reviewer, err := NewReviewer(&rest.Config{Host: api.URL})
	require.NoError(t, err)
	ca := newTestCA(t, "client-ca")
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "ca.crt"), ca.pem, 0o600))
	s, err := New(Config{NodeName: "node-a", CertDir: dir, ClientCAFile: filepath.Join(dir, "ca.crt")},
		Deps{Pods: fakePods{}, Logs: &fakeLogs{}, Runtime: rt, Reviewer: reviewer})
	require.NoError(t, err)
	srv := httptest.NewUnstartedServer(s.Handler())
	srv.TLS = s.tls
	srv.StartTLS()
	t.Cleanup(srv.Close)
	admin := ca.client(t, "admin", "system:masters")

	// status sends an upgrade request and returns the response's status.
	status := func(t *testing.T, path string) int {
		t.Helper()
		conn, err := tls.Dial("tcp", srv.Listener.Addr().String(), &tls.Config{
			InsecureSkipVerify: true, //nolint:gosec // the test server's self-signed certificate
			Certificates:       []tls.Certificate{admin},
		})
		require.NoError(t, err)
		defer conn.Close()
		require.NoError(t, conn.SetDeadline(time.Now().Add(10*time.Second)))
		_, err = io.WriteString(conn, "POST "+path+" HTTP/1.1\r\nHost: node-a\r\nConnection: Upgrade\r\nUpgrade: SPDY/3.1\r\nX-Stream-Protocol-Version: v4.channel.k8s.io\r\n\r\n")
		require.NoError(t, err)
		resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
		require.NoError(t, err)
		return resp.StatusCode
	}
	calls := func() int {
		rt.mu.Lock()
		defer rt.mu.Unlock()
		return len(rt.execs) + len(rt.attaches) + len(rt.forwards)
	}

	for _, path := range []string{
		"/exec/default/web/uid-other/c?command=id&output=1",
		"/attach/default/web/uid-other/c?output=1",
		"/portForward/default/web/uid-other",
	} {
		require.Equal(t, http.StatusNotFound, status(t, path), path)
	}
	require.Zero(t, calls(), "a request for another UID never reaches the runtime")

	for _, path := range []string{
		"/exec/default/web/uid-web/c?command=id&output=1",
		"/attach/default/web/uid-web/c?output=1",
		"/portForward/default/web/uid-web",
	} {
		require.Equal(t, http.StatusSwitchingProtocols, status(t, path), path)
	}
	require.Equal(t, 3, calls())
}
