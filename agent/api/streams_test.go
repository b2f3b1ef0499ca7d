package api_test

import (
	"bufio"
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/minikubelet/minikubelet/agent/api"
)

// streamRuntime answers the streaming CRI calls with URLs on an echo
// server standing in for the runtime's streaming server, and records them.
type streamRuntime struct {
	mu       sync.Mutex
	url      string
	execs    []*runtimeapi.ExecRequest
	attaches []*runtimeapi.AttachRequest
	forwards []*runtimeapi.PortForwardRequest
}

func (f *streamRuntime) ListPodSandbox(_ context.Context, filter *runtimeapi.PodSandboxFilter) ([]*runtimeapi.PodSandbox, error) {
	return []*runtimeapi.PodSandbox{{Id: "sb-" + filter.GetLabelSelector()["io.kubernetes.pod.uid"]}}, nil
}

func (f *streamRuntime) Exec(_ context.Context, req *runtimeapi.ExecRequest) (*runtimeapi.ExecResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.execs = append(f.execs, req)
	return &runtimeapi.ExecResponse{Url: f.url + "/exec/token"}, nil
}

func (f *streamRuntime) Attach(_ context.Context, req *runtimeapi.AttachRequest) (*runtimeapi.AttachResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.attaches = append(f.attaches, req)
	return &runtimeapi.AttachResponse{Url: f.url + "/attach/token"}, nil
}

func (f *streamRuntime) PortForward(_ context.Context, req *runtimeapi.PortForwardRequest) (*runtimeapi.PortForwardResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.forwards = append(f.forwards, req)
	return &runtimeapi.PortForwardResponse{Url: f.url + "/portforward/token"}, nil
}

// TestStreams_ProxiedToTheRuntime: kubectl's exec (SPDY, POST), attach and
// port-forward (WebSocket, GET) reach the runtime's streaming URL with the
// CRI request the query asks for, and bytes flow both ways.
func TestStreams_ProxiedToTheRuntime(t *testing.T) {
	echo := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
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
	t.Cleanup(echo.Close)
	rt := &streamRuntime{url: echo.URL}
	b, srv := newTestServer(t, api.Options{Streams: rt})
	pod := testPod("default", "web", "c")
	pod.UID = "uid-web"
	b.SetPod(pod)

	upgrade := func(t *testing.T, method, path, proto string) string {
		t.Helper()
		conn, err := net.Dial("tcp", srv.Listener.Addr().String())
		require.NoError(t, err)
		defer conn.Close()
		require.NoError(t, conn.SetDeadline(time.Now().Add(10*time.Second)))
		_, err = io.WriteString(conn, method+" "+path+" HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: "+proto+"\r\n\r\n")
		require.NoError(t, err)
		br := bufio.NewReader(conn)
		resp, err := http.ReadResponse(br, nil)
		require.NoError(t, err)
		require.Equal(t, http.StatusSwitchingProtocols, resp.StatusCode)
		got, err := br.ReadString('\n')
		require.NoError(t, err)
		_, err = io.WriteString(conn, "ping\n")
		require.NoError(t, err)
		back, err := br.ReadString('\n')
		require.NoError(t, err)
		require.Equal(t, "ping\n", back, "bytes flow both ways")
		return strings.TrimSpace(got)
	}
	const base = "/api/v1/namespaces/default/pods/web"
	assert.Equal(t, "/exec/token", upgrade(t, "POST", base+"/exec?command=sh&command=-i&stdin=true&stdout=true&tty=true&container=c", "SPDY/3.1"))
	assert.Equal(t, &runtimeapi.ExecRequest{ContainerId: "c1", Cmd: []string{"sh", "-i"}, Stdin: true, Stdout: true, Tty: true}, rt.execs[0])
	// No container named: the pod's only one.
	assert.Equal(t, "/attach/token", upgrade(t, "GET", base+"/attach?stdout=true&stderr=true", "websocket"))
	assert.Equal(t, &runtimeapi.AttachRequest{ContainerId: "c1", Stdout: true, Stderr: true}, rt.attaches[0])
	// An ephemeral container, named.
	pod.Spec.EphemeralContainers = []v1.EphemeralContainer{{EphemeralContainerCommon: v1.EphemeralContainerCommon{Name: "dbg", Stdin: true, TTY: true}}}
	pod.Status.EphemeralContainerStatuses = []v1.ContainerStatus{{Name: "dbg", ContainerID: "containerd://dbg1", State: v1.ContainerState{Running: &v1.ContainerStateRunning{}}}}
	b.SetPod(pod)
	assert.Equal(t, "/attach/token", upgrade(t, "POST", base+"/attach?stdin=true&stdout=true&tty=true&container=dbg", "SPDY/3.1"))
	assert.Equal(t, &runtimeapi.AttachRequest{ContainerId: "dbg1", Stdin: true, Stdout: true, Tty: true}, rt.attaches[1])
	assert.Equal(t, "/portforward/token", upgrade(t, "GET", base+"/portforward?ports=80", "websocket"))
	assert.Equal(t, &runtimeapi.PortForwardRequest{PodSandboxId: "sb-uid-web"}, rt.forwards[0])

	// Errors before the upgrade are Statuses.
	code, body, _ := request(t, http.MethodGet, srv.URL+base+"/exec?command=ls&stdout=true", "", "")
	assert.Equal(t, http.StatusBadRequest, code, body)
	assert.Contains(t, body, "needs a connection upgrade")
	req, err := http.NewRequest(http.MethodPost, srv.URL+base+"/exec?command=ls&stdout=true&container=nope", nil)
	require.NoError(t, err)
	req.Header.Set("Connection", "Upgrade")
	req.Header.Set("Upgrade", "SPDY/3.1")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	out, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	assert.Equal(t, http.StatusBadRequest, resp.StatusCode, "%s", out)
	assert.Contains(t, string(out), `"kind":"Status"`)
	assert.Contains(t, string(out), "container nope is not valid for pod web")
}

// TestStreams_WithoutRuntimeAre503: an API built without a streaming
// runtime says so rather than pretending.
func TestStreams_WithoutRuntimeAre503(t *testing.T) {
	b, srv := newTestServer(t, api.Options{})
	b.SetPod(testPod("default", "web", "c"))
	req, err := http.NewRequest(http.MethodGet, srv.URL+"/api/v1/namespaces/default/pods/web/attach?stdout=true", nil)
	require.NoError(t, err)
	req.Header.Set("Connection", "Upgrade")
	req.Header.Set("Upgrade", "websocket")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	out, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	assert.Equal(t, http.StatusServiceUnavailable, resp.StatusCode, "%s", out)
}
