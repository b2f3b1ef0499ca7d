package api_test

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"log/slog"
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

	"github.com/minikubelet/minikubelet/agent/api"
	"github.com/minikubelet/minikubelet/agent/api/apitest"
)

func testPod(ns, name string, containers ...string) *v1.Pod {
	p := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	for _, c := range containers {
		p.Spec.Containers = append(p.Spec.Containers, v1.Container{Name: c, Image: "busybox"})
		p.Status.ContainerStatuses = append(p.Status.ContainerStatuses, v1.ContainerStatus{
			Name: c, ContainerID: "containerd://" + c + "1", State: v1.ContainerState{Running: &v1.ContainerStateRunning{}},
		})
	}
	return p
}

func newTestServer(t *testing.T, opts api.Options) (*apitest.Backend, *httptest.Server) {
	t.Helper()
	b := apitest.New()
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	if opts.LogPollInterval == 0 {
		opts.LogPollInterval = 5 * time.Millisecond
	}
	srv := httptest.NewServer(api.NewServer(b, logger, opts).Handler())
	t.Cleanup(srv.Close)
	return b, srv
}

// request sends a request and returns the status code and body.
func request(t *testing.T, method, url, contentType, body string) (int, string, http.Header) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	require.NoError(t, err)
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, string(b), resp.Header
}

func decodeStatus(t *testing.T, body string) metav1.Status {
	t.Helper()
	var st metav1.Status
	require.NoError(t, json.Unmarshal([]byte(body), &st), body)
	require.Equal(t, "Status", st.Kind, body)
	require.Equal(t, "v1", st.APIVersion, body)
	require.Equal(t, metav1.StatusFailure, st.Status, body)
	return st
}

const podYAML = `apiVersion: v1
kind: Pod
metadata:
  name: web
spec:
  containers:
  - name: c
    image: nginx
`

func TestServer_Routes(t *testing.T) {
	tests := []struct {
		name        string
		setup       func(b *apitest.Backend)
		method      string
		path        string
		contentType string
		body        string
		wantCode    int
		wantReason  metav1.StatusReason // for errors
		wantIn      string              // substring of the body
	}{
		{name: "list all", method: "GET", path: "/api/v1/pods", wantCode: 200, wantIn: `"kind":"PodList"`},
		{name: "list namespace", method: "GET", path: "/api/v1/namespaces/default/pods", wantCode: 200, wantIn: `"name":"a"`},
		{name: "get", method: "GET", path: "/api/v1/namespaces/default/pods/a", wantCode: 200, wantIn: `"kind":"Pod"`},
		{name: "get missing", method: "GET", path: "/api/v1/namespaces/default/pods/zz", wantCode: 404, wantReason: metav1.StatusReasonNotFound, wantIn: `pods \"zz\" not found`},
		{name: "create JSON", method: "POST", path: "/api/v1/namespaces/default/pods", contentType: "application/json",
			body: `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"new"},"spec":{"containers":[{"name":"c","image":"x"}]}}`, wantCode: 201, wantIn: `"uid":"uid-new"`},
		{name: "create YAML", method: "POST", path: "/api/v1/namespaces/prod/pods", contentType: "application/yaml", body: podYAML, wantCode: 201, wantIn: `"namespace":"prod"`},
		{name: "create no content type refused", method: "POST", path: "/api/v1/namespaces/default/pods",
			body: `{"metadata":{"name":"new"},"spec":{"containers":[{"name":"c","image":"x"}]}}`, wantCode: 415, wantReason: metav1.StatusReasonUnsupportedMediaType, wantIn: "needs a Content-Type"},
		{name: "create form body refused", method: "POST", path: "/api/v1/namespaces/default/pods", contentType: "application/x-www-form-urlencoded",
			body: `{"metadata":{"name":"new"},"spec":{"containers":[{"name":"c","image":"x"}]}}`, wantCode: 415, wantReason: metav1.StatusReasonUnsupportedMediaType},
		{name: "create text/plain JSON refused", method: "POST", path: "/api/v1/namespaces/default/pods", contentType: "text/plain;charset=UTF-8",
			body: `{"metadata":{"name":"new"},"spec":{"containers":[{"name":"c","image":"x"}]}}`, wantCode: 415, wantReason: metav1.StatusReasonUnsupportedMediaType},
		{name: "create JSON with charset", method: "POST", path: "/api/v1/namespaces/default/pods", contentType: "application/json; charset=utf-8",
			body: `{"metadata":{"name":"new2"},"spec":{"containers":[{"name":"c","image":"x"}]}}`, wantCode: 201},
		{name: "create exists", method: "POST", path: "/api/v1/namespaces/default/pods", contentType: "application/json",
			body: `{"metadata":{"name":"a"},"spec":{"containers":[{"name":"c","image":"x"}]}}`, wantCode: 409, wantReason: metav1.StatusReasonAlreadyExists},
		{name: "create invalid", method: "POST", path: "/api/v1/namespaces/default/pods", contentType: "application/json",
			body: `{"metadata":{"name":"new"},"spec":{}}`, wantCode: 422, wantReason: metav1.StatusReasonInvalid, wantIn: `"field":"spec.containers"`},
		{name: "create unknown field names its path", method: "POST", path: "/api/v1/namespaces/default/pods", contentType: "application/yaml",
			body: podYAML + "    imagePullPolicyy: Always\n", wantCode: 400, wantReason: metav1.StatusReasonBadRequest, wantIn: `"field":"spec.containers[0].imagePullPolicyy"`},
		{name: "create duplicate field", method: "POST", path: "/api/v1/namespaces/default/pods", contentType: "application/json",
			body: `{"metadata":{"name":"x","name":"y"},"spec":{"containers":[{"name":"c","image":"x"}]}}`, wantCode: 400, wantIn: `duplicate field`},
		{name: "create namespace mismatch", method: "POST", path: "/api/v1/namespaces/default/pods", contentType: "application/yaml",
			body: strings.Replace(podYAML, "name: web", "name: web\n  namespace: other", 1), wantCode: 400, wantReason: metav1.StatusReasonBadRequest, wantIn: "does not match"},
		{name: "create wrong kind", method: "POST", path: "/api/v1/namespaces/default/pods", contentType: "application/json",
			body: `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"x"}}`, wantCode: 400},
		{name: "create malformed JSON", method: "POST", path: "/api/v1/namespaces/default/pods", contentType: "application/json", body: `{"metadata":`, wantCode: 400},
		{name: "create empty body", method: "POST", path: "/api/v1/namespaces/default/pods", contentType: "application/json", body: "", wantCode: 400, wantIn: "empty"},
		{name: "create empty body without content type", method: "POST", path: "/api/v1/namespaces/default/pods", body: "", wantCode: 415},
		{name: "delete with body without content type", method: "DELETE", path: "/api/v1/namespaces/default/pods/a", body: `{"gracePeriodSeconds":7}`, wantCode: 415},
		{name: "create unsupported media type", method: "POST", path: "/api/v1/namespaces/default/pods", contentType: "text/plain", body: "x", wantCode: 415},
		{name: "create too large", method: "POST", path: "/api/v1/namespaces/default/pods", contentType: "application/json",
			body: `{"metadata":{"name":"big","annotations":{"a":"` + strings.Repeat("x", 2048) + `"}}}`, wantCode: 413, wantReason: metav1.StatusReasonRequestEntityTooLarge},
		{name: "delete", method: "DELETE", path: "/api/v1/namespaces/default/pods/a?gracePeriodSeconds=3", wantCode: 200, wantIn: `"deletionGracePeriodSeconds":3`},
		{name: "delete with DeleteOptions body", method: "DELETE", path: "/api/v1/namespaces/default/pods/a", contentType: "application/json",
			body: `{"kind":"DeleteOptions","apiVersion":"v1","gracePeriodSeconds":7}`, wantCode: 200, wantIn: `"deletionGracePeriodSeconds":7`},
		{name: "delete bad grace", method: "DELETE", path: "/api/v1/namespaces/default/pods/a?gracePeriodSeconds=soon", wantCode: 400},
		{name: "delete missing", method: "DELETE", path: "/api/v1/namespaces/default/pods/zz", wantCode: 404, wantReason: metav1.StatusReasonNotFound},
		{name: "delete static forbidden", setup: func(b *apitest.Backend) { b.SetStatic("default", "a", "/etc/minikubelet/manifests/a.yaml") },
			method: "DELETE", path: "/api/v1/namespaces/default/pods/a", wantCode: 403, wantReason: metav1.StatusReasonForbidden, wantIn: "a.yaml"},
		{name: "method not allowed", method: "POST", path: "/api/v1/namespaces/default/pods/a", contentType: "application/json", body: "{}", wantCode: 405, wantReason: metav1.StatusReasonMethodNotAllowed},
		{name: "unknown path", method: "GET", path: "/apis/apps/v1/deployments", wantCode: 404, wantReason: metav1.StatusReasonNotFound},
		{name: "details", setup: func(b *apitest.Backend) {
			b.SetDetails("default", "a", &api.PodDetails{Source: "api", Stuck: &api.Stuck{Step: "image", Cause: "pull failed"}})
		}, method: "GET", path: "/api/v1/namespaces/default/pods/a/details", wantCode: 200, wantIn: `"step":"image"`},
		{name: "details missing", method: "GET", path: "/api/v1/namespaces/default/pods/zz/details", wantCode: 404},
		{name: "events", setup: func(b *apitest.Backend) {
			b.SetEvents("default", "a", []v1.Event{{Reason: "Pulled", Message: "pulled"}})
		}, method: "GET", path: "/api/v1/namespaces/default/events?fieldSelector=involvedObject.name%3Da", wantCode: 200, wantIn: `"reason":"Pulled"`},
		{name: "events of namespace", setup: func(b *apitest.Backend) {
			b.SetEvents("default", "a", []v1.Event{{Reason: "Started"}})
		}, method: "GET", path: "/api/v1/namespaces/default/events", wantCode: 200, wantIn: `"kind":"EventList"`},
		{name: "events bad selector", method: "GET", path: "/api/v1/namespaces/default/events?fieldSelector=%3D%3D%3D", wantCode: 400},
		{name: "exec without content type", method: "POST", path: "/api/v1/namespaces/default/pods/a/exec?command=echo&command=hi", wantCode: 415},
		{name: "exec", method: "POST", path: "/api/v1/namespaces/default/pods/a/exec?command=echo&command=hi", contentType: "application/json", wantCode: 200, wantIn: `"stdout":"` /* base64 */},
		{name: "exec no command", method: "POST", path: "/api/v1/namespaces/default/pods/a/exec", contentType: "application/json", wantCode: 400, wantIn: "at least one command"},
		{name: "exec tty refused", method: "POST", path: "/api/v1/namespaces/default/pods/a/exec?command=sh&tty=true", contentType: "application/json", wantCode: 400, wantIn: "stdin and tty need a streaming connection"},
		{name: "exec bad container", method: "POST", path: "/api/v1/namespaces/default/pods/a/exec?command=sh&container=nope", contentType: "application/json", wantCode: 400, wantIn: "choose one of: [c]"},
		{name: "exec bad timeout", method: "POST", path: "/api/v1/namespaces/default/pods/a/exec?command=sh&timeout=soon", contentType: "application/json", wantCode: 400},
		{name: "exec GET needs an upgrade", method: "GET", path: "/api/v1/namespaces/default/pods/a/exec?command=sh", wantCode: 400, wantIn: "needs a connection upgrade"},
		{name: "exec PUT not allowed", method: "PUT", path: "/api/v1/namespaces/default/pods/a/exec?command=sh", contentType: "application/json", wantCode: 405},
		{name: "healthz", method: "GET", path: "/healthz", wantCode: 200, wantIn: "ok"},
		{name: "readyz failing", setup: func(b *apitest.Backend) { b.ReadyErr = assert.AnError }, method: "GET", path: "/readyz", wantCode: 503, wantIn: assert.AnError.Error()},
		{name: "version", method: "GET", path: "/version", wantCode: 200, wantIn: `"runtimeName":"fake"`},
		{name: "metrics failing is 500", method: "GET", path: "/metrics", wantCode: 500, wantReason: metav1.StatusReasonInternalError},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, srv := newTestServer(t, api.Options{MaxBodyBytes: 1024})
			b.SetPod(testPod("default", "a", "c"))
			b.SetPod(testPod("kube-system", "b", "c"))
			if tt.setup != nil {
				tt.setup(b)
			}
			code, body, hdr := request(t, tt.method, srv.URL+tt.path, tt.contentType, tt.body)
			assert.Equal(t, tt.wantCode, code, body)
			assert.Contains(t, body, tt.wantIn)
			if tt.wantReason != "" {
				st := decodeStatus(t, body)
				assert.Equal(t, tt.wantReason, st.Reason)
				assert.EqualValues(t, tt.wantCode, st.Code)
			}
			if code >= 400 && code != 503 {
				assert.Equal(t, "application/json", hdr.Get("Content-Type"))
				decodeStatus(t, body)
			}
		})
	}
}

func TestServer_ListAndCreateObjects(t *testing.T) {
	b, srv := newTestServer(t, api.Options{})
	b.SetPod(testPod("ns2", "z", "c"))
	b.SetPod(testPod("ns1", "y", "c"))
	b.SetPod(testPod("ns1", "x", "c"))
	_, body, _ := request(t, "GET", srv.URL+"/api/v1/pods", "", "")
	var l v1.PodList
	require.NoError(t, json.Unmarshal([]byte(body), &l))
	assert.Equal(t, "v1", l.APIVersion)
	require.Len(t, l.Items, 3)
	var names []string
	for _, p := range l.Items {
		names = append(names, p.Namespace+"/"+p.Name)
		assert.Equal(t, "Pod", p.Kind)
	}
	assert.Equal(t, []string{"ns1/x", "ns1/y", "ns2/z"}, names)

	_, body, _ = request(t, "GET", srv.URL+"/api/v1/namespaces/empty/pods", "", "")
	assert.Contains(t, body, `"items":[]`)

	code, body, _ := request(t, "POST", srv.URL+"/api/v1/namespaces/default/pods", "application/yaml", podYAML)
	require.Equal(t, 201, code, body)
	var p v1.Pod
	require.NoError(t, json.Unmarshal([]byte(body), &p))
	assert.Equal(t, "default", p.Namespace)
	assert.Equal(t, "web", p.Name)
	assert.Equal(t, "nginx", p.Spec.Containers[0].Image)
}

func TestServer_Metrics(t *testing.T) {
	b, srv := newTestServer(t, api.Options{})
	b.Metrics = "# TYPE kubelet_running_pods gauge\nkubelet_running_pods 1\n"
	code, body, hdr := request(t, "GET", srv.URL+"/metrics", "", "")
	assert.Equal(t, 200, code)
	assert.Equal(t, b.Metrics, body)
	assert.Equal(t, "text/plain; version=0.0.4; charset=utf-8", hdr.Get("Content-Type"))
}

func TestServer_Profiling(t *testing.T) {
	for _, tc := range []struct {
		name string
		on   bool
		code int
	}{
		{name: "off by default", on: false, code: 404},
		{name: "on with Profiling", on: true, code: 200},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, srv := newTestServer(t, api.Options{Profiling: tc.on})
			code, body, _ := request(t, "GET", srv.URL+"/debug/pprof/heap?debug=1", "", "")
			assert.Equal(t, tc.code, code, body)
			if tc.on {
				assert.Contains(t, body, "heap profile")
			}
		})
	}
}

func TestServer_Exec(t *testing.T) {
	b, srv := newTestServer(t, api.Options{})
	b.SetPod(testPod("default", "a", "c", "d"))
	var gotContainer string
	var gotTimeout time.Duration
	b.ExecFunc = func(ctx context.Context, ns, name, container string, cmd []string, timeout time.Duration) (*api.ExecResult, error) {
		gotContainer, gotTimeout = container, timeout
		return &api.ExecResult{Stdout: []byte("out"), Stderr: []byte("err"), ExitCode: 3}, nil
	}
	code, body, _ := request(t, "POST", srv.URL+"/api/v1/namespaces/default/pods/a/exec?command=sh", "application/json", "")
	assert.Equal(t, 400, code)
	assert.Contains(t, body, "a container name must be specified for pod a, choose one of: [c d]")

	code, body, _ = request(t, "POST", srv.URL+"/api/v1/namespaces/default/pods/a/exec?container=d&command=sh&command=-c&command=exit+3&timeout=30", "application/json", "")
	require.Equal(t, 200, code, body)
	var res api.ExecResult
	require.NoError(t, json.Unmarshal([]byte(body), &res))
	assert.Equal(t, api.ExecResult{Stdout: []byte("out"), Stderr: []byte("err"), ExitCode: 3}, res)
	assert.Equal(t, "d", gotContainer)
	assert.Equal(t, 30*time.Second, gotTimeout)
}

func criLine(sec int, stream, tag, content string) string {
	ts := time.Date(2024, 1, 1, 0, 0, sec, 0, time.UTC).Format(time.RFC3339Nano)
	return ts + " " + stream + " " + tag + " " + content + "\n"
}

func appendLines(t *testing.T, path string, lines ...string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY|os.O_CREATE, 0o644)
	require.NoError(t, err)
	_, err = f.WriteString(strings.Join(lines, ""))
	require.NoError(t, err)
	require.NoError(t, f.Close())
}

func TestServer_Logs(t *testing.T) {
	dir := t.TempDir()
	cur, prev := filepath.Join(dir, "1.log"), filepath.Join(dir, "0.log")
	appendLines(t, cur, criLine(1, "stdout", "F", "one"), criLine(2, "stderr", "P", "t"), criLine(3, "stderr", "F", "wo"), criLine(4, "stdout", "F", "three"))
	appendLines(t, prev, criLine(0, "stdout", "F", "before the crash"))
	b, srv := newTestServer(t, api.Options{})
	b.SetPod(testPod("default", "a", "c"))
	b.SetPod(testPod("default", "two", "c", "d"))
	b.SetLog("default", "a", "c", false, cur)
	b.SetLog("default", "a", "c", true, prev)
	b.SetLog("default", "two", "d", false, filepath.Join(dir, "missing.log"))
	// A log path a hostile runtime state turned into a symlink.
	require.NoError(t, os.Symlink("/etc/shadow", filepath.Join(dir, "link.log")))
	b.SetPod(testPod("default", "linked", "c"))
	b.SetLog("default", "linked", "c", false, filepath.Join(dir, "link.log"))

	tests := []struct {
		name     string
		query    string
		pod      string
		wantCode int
		want     string
	}{
		{name: "all", want: "one\ntwo\nthree\n"},
		{name: "tail", query: "tailLines=2", want: "two\nthree\n"},
		{name: "timestamps", query: "timestamps=true&tailLines=1", want: "2024-01-01T00:00:04.000000000Z three\n"},
		{name: "named container", query: "container=c", want: "one\ntwo\nthree\n"},
		{name: "previous", query: "previous=true", want: "before the crash\n"},
		{name: "previous follow returns", query: "previous=true&follow=true", want: "before the crash\n"},
		{name: "bad tail", query: "tailLines=-1", wantCode: 400},
		{name: "limitBytes", query: "limitBytes=5", want: "one\nt"},
		{name: "bad limitBytes", query: "limitBytes=0", wantCode: 422, want: "limitBytes: Invalid value: 0: must be greater than 0"},
		{name: "sinceSeconds", query: "sinceSeconds=1", want: ""},
		{name: "sinceTime", query: "sinceTime=2024-01-01T00:00:02Z", want: "two\nthree\n"},
		{name: "sinceSeconds 0", query: "sinceSeconds=0", wantCode: 422, want: "sinceSeconds: Invalid value: 0: must be greater than 0"},
		{name: "both since", query: "sinceSeconds=5&sinceTime=2024-01-01T00:00:03Z", wantCode: 422, want: "at most one of `sinceTime` or `sinceSeconds` may be specified"},
		{name: "symlinked log refused before the header", pod: "linked", wantCode: 500, want: "not a regular file"},
		{name: "bad bool", query: "follow=maybe", wantCode: 400},
		{name: "two containers need a name", pod: "two", wantCode: 400, want: "choose one of: [c d]"},
		{name: "no log file yet", pod: "two", query: "container=d", wantCode: 400, want: "has no log yet"},
		{name: "no previous", pod: "two", query: "container=c&previous=true", wantCode: 400, want: "previous terminated container"},
		{name: "pod missing", pod: "zz", wantCode: 404},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pod := tt.pod
			if pod == "" {
				pod = "a"
			}
			code, body, hdr := request(t, "GET", srv.URL+"/api/v1/namespaces/default/pods/"+pod+"/log?"+tt.query, "", "")
			want := tt.wantCode
			if want == 0 {
				want = 200
			}
			require.Equal(t, want, code, body)
			if want == 200 {
				assert.Equal(t, tt.want, body)
				assert.Equal(t, "text/plain; charset=utf-8", hdr.Get("Content-Type"))
			} else {
				decodeStatus(t, body)
				assert.Contains(t, body, tt.want)
			}
		})
	}
}

// TestServer_LogsFollow follows a log over HTTP while it grows and is
// rotated, then ends when the container exits.
func TestServer_LogsFollow(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "0.log")
	appendLines(t, path, criLine(1, "stdout", "F", "a"), criLine(2, "stdout", "F", "b"))
	b, srv := newTestServer(t, api.Options{})
	pod := testPod("default", "a", "c")
	b.SetPod(pod)
	b.SetLog("default", "a", "c", false, path)

	resp, err := http.Get(srv.URL + "/api/v1/namespaces/default/pods/a/log?follow=true&tailLines=1")
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, 200, resp.StatusCode)
	lines := make(chan string, 10)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			lines <- sc.Text()
		}
	}()
	next := func() string {
		t.Helper()
		select {
		case l := <-lines:
			return l
		case <-time.After(5 * time.Second):
			t.Fatal("no line within 5s")
			return ""
		}
	}
	assert.Equal(t, "b", next())
	appendLines(t, path, criLine(3, "stdout", "F", "c"))
	assert.Equal(t, "c", next())

	// Rotate: rename, then the runtime reopens the path.
	require.NoError(t, os.Rename(path, path+".20240101-000004"))
	appendLines(t, path, criLine(4, "stdout", "F", "after rotation"))
	assert.Equal(t, "after rotation", next())

	// The container exits: the stream ends after the last line.
	appendLines(t, path, criLine(5, "stdout", "F", "bye"))
	exited := pod.DeepCopy()
	exited.Status.ContainerStatuses[0].State = v1.ContainerState{Terminated: &v1.ContainerStateTerminated{ExitCode: 0}}
	b.SetPod(exited)
	assert.Equal(t, "bye", next())
	select {
	case _, ok := <-lines:
		assert.False(t, ok, "stream should end")
	case <-time.After(5 * time.Second):
		t.Fatal("stream did not end after the container exited")
	}
}

func TestServer_LogsFollowEndsWithClient(t *testing.T) {
	path := filepath.Join(t.TempDir(), "0.log")
	appendLines(t, path, criLine(1, "stdout", "F", "a"))
	b, srv := newTestServer(t, api.Options{})
	b.SetPod(testPod("default", "a", "c"))
	b.SetLog("default", "a", "c", false, path)
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, "GET", srv.URL+"/api/v1/namespaces/default/pods/a/log?follow=true", nil)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	line, err := bufio.NewReader(resp.Body).ReadString('\n')
	require.NoError(t, err)
	assert.Equal(t, "a\n", line)
	cancel()
	resp.Body.Close()
	// httptest.Server.Close (in Cleanup) blocks until the handler returns:
	// the test finishing proves the follower noticed the client left.
	srv.Close()
}
