package api_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/minikubelet/minikubelet/agent/api"
	"github.com/minikubelet/minikubelet/agent/api/apitest"
)

// fuzzMethods are the methods FuzzServerRequest picks from.
var fuzzMethods = []string{http.MethodGet, http.MethodPost, http.MethodDelete, http.MethodPut,
	http.MethodPatch, http.MethodHead, http.MethodOptions, "BREW"}

// fuzzContentTypes are the Content-Types FuzzServerRequest picks from.
var fuzzContentTypes = []string{"", "application/json", "application/yaml", "text/plain",
	"application/json; charset=utf-8", "multipart/form-data; boundary=x"}

// FuzzServerRequest sends arbitrary requests (method, path, query, body,
// Content-Type) to the API's handler over a fake backend holding one
// running pod with a log, and checks that:
//   - the handler never panics and never answers 5xx (the backend does not
//     fail: a 5xx would be the server mishandling its input);
//   - every error is a metav1.Status in JSON whose code is the response's
//     and whose message is valid UTF-8;
//   - a 400 caused by a query parameter names that parameter;
//   - the answer is bounded by the input (no amplification);
//   - the routes resolve: the pod's own path answers the pod.
//
// Followed logs and watches are cut after 50 ms.
func FuzzServerRequest(f *testing.F) {
	seeds := []struct {
		method      uint8
		path, query string
		body        string
		ctype       uint8
	}{
		{0, "/api/v1/namespaces/default/pods/p", "", "", 0},
		{0, "/api/v1/namespaces/default/pods/p/log", "tailLines=1&timestamps=true", "", 0},
		{0, "/api/v1/namespaces/default/pods/p/log", "tailLines=-1", "", 0},
		{0, "/api/v1/namespaces/default/pods/p/log", "sinceTime=yesterday&container=c", "", 0},
		{0, "/api/v1/namespaces/default/pods/p/log", "follow=true&sinceSeconds=5", "", 0},
		{0, "/api/v1/namespaces/default/pods/p/log", "previous=maybe", "", 0},
		{0, "/api/v1/pods", "watch=true&labelSelector=a%3Db", "", 0},
		{0, "/api/v1/namespaces/default/pods", "fieldSelector=spec.nodeName%3Dx&resourceVersion=1", "", 0},
		{1, "/api/v1/namespaces/default/pods", "", `{"metadata":{"name":"q"},"spec":{"containers":[{"name":"c","image":"i"}]}}`, 1},
		{1, "/api/v1/namespaces/default/pods", "", "metadata: {name: q}\n", 2},
		{1, "/api/v1/namespaces/default/pods", "", "{}", 3},
		{1, "/api/v1/namespaces/default/pods/p/exec", "command=true&container=c&stdin=true", "", 0},
		{2, "/api/v1/namespaces/default/pods/p", "gracePeriodSeconds=x", "", 0},
		{3, "/api/v1/namespaces/default/configmaps", "", "{}", 1},
		{0, "/api/v1/namespaces/default/events", "fieldSelector=involvedObject.name%3Dp", "", 0},
		{0, "/api/v1/namespaces//pods/%2F..%2F", "", "", 0},
		{5, "/healthz", "", "", 0},
		{7, "/version", "", "", 0},
	}
	for _, s := range seeds {
		f.Add(s.method, s.path, s.query, []byte(s.body), s.ctype)
	}
	logPath := filepath.Join(f.TempDir(), "0.log")
	if err := os.WriteFile(logPath, []byte("2024-01-01T00:00:01Z stdout F one\n2024-01-01T00:00:02Z stdout P tw\n2024-01-01T00:00:03Z stdout F o\n"), 0o644); err != nil {
		f.Fatal(err)
	}
	// Each input gets its own backend: the pods, ConfigMaps and Secrets
	// earlier inputs created would otherwise pile up, and a list would
	// answer with what other inputs asked for (CI saw a 71 KB list).
	newHandler := func() http.Handler {
		b := apitest.New()
		b.SetPod(&v1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "default", UID: "uid-p"},
			Spec:       v1.PodSpec{Containers: []v1.Container{{Name: "c", Image: "i"}}},
			Status: v1.PodStatus{Phase: v1.PodRunning, ContainerStatuses: []v1.ContainerStatus{{
				Name: "c", ContainerID: "containerd://1", State: v1.ContainerState{Running: &v1.ContainerStateRunning{}}}}},
		})
		b.SetLog("default", "p", "c", false, logPath)
		b.SetLog("default", "p", "c", true, logPath)
		return api.NewServer(b, slog.New(slog.NewTextHandler(io.Discard, nil)), api.Options{LogPollInterval: 5 * time.Millisecond}).Handler()
	}

	f.Fuzz(func(t *testing.T, method uint8, path, query string, body []byte, ctype uint8) {
		if !strings.HasPrefix(path, "/") {
			path = "/" + path
		}
		m := fuzzMethods[int(method)%len(fuzzMethods)]
		ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
		defer cancel()
		req := (&http.Request{
			Method: m, URL: &url.URL{Path: path, RawQuery: query}, RequestURI: path + "?" + query,
			Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1, Host: "minikubelet",
			Header: http.Header{}, Body: io.NopCloser(bytes.NewReader(body)), ContentLength: int64(len(body)),
		}).WithContext(ctx)
		if ct := fuzzContentTypes[int(ctype)%len(fuzzContentTypes)]; ct != "" {
			req.Header.Set("Content-Type", ct)
		}
		rec := httptest.NewRecorder()
		newHandler().ServeHTTP(rec, req)
		res := rec.Result()
		out := rec.Body.Bytes()

		if res.StatusCode >= 500 {
			t.Fatalf("%s %s?%s: %d %s", m, path, query, res.StatusCode, out)
		}
		if limit := 4*(len(path)+len(query)+len(body)) + 64<<10; len(out) > limit && !strings.HasSuffix(path, "/log") {
			t.Fatalf("%s %s?%s: %d bytes answered to %d bytes asked", m, path, query, len(out), len(path)+len(query)+len(body))
		}
		if res.StatusCode >= 400 && m != http.MethodHead {
			var st metav1.Status
			if err := json.Unmarshal(out, &st); err != nil || st.Kind != "Status" {
				t.Fatalf("%s %s?%s: %d is no Status: %q (%v)", m, path, query, res.StatusCode, out, err)
			}
			if int(st.Code) != res.StatusCode {
				t.Fatalf("%s %s?%s: Status code %d on a %d", m, path, query, st.Code, res.StatusCode)
			}
			if !utf8.ValidString(st.Message) {
				t.Fatalf("message is not UTF-8: %q", st.Message)
			}
			if res.StatusCode == http.StatusBadRequest {
				// On the log of a pod that exists, only a query parameter
				// (the container is one) can be wrong.
				strict := m == http.MethodGet && path == "/api/v1/namespaces/default/pods/p/log"
				checkParamNamed(t, query, st.Message, strict)
			}
		}
		// The pod's own path answers the pod (a GET with a body needs a
		// JSON or YAML Content-Type like any other request with one: 415).
		if m == http.MethodGet && path == "/api/v1/namespaces/default/pods/p" && len(body) == 0 {
			var p v1.Pod
			if res.StatusCode != http.StatusOK || json.Unmarshal(out, &p) != nil || p.Name != "p" {
				t.Fatalf("GET %s?%s: %d %.200s", path, query, res.StatusCode, out)
			}
		}
	})
}

// queryParams whose bad values the handlers refuse with a 400.
var queryParams = []string{"dryRun", "follow", "previous", "timestamps", "tailLines", "sinceSeconds", "sinceTime",
	"gracePeriodSeconds", "stdin", "tty", "watch", "timeoutSeconds", "labelSelector", "fieldSelector",
	"resourceVersion", "allowWatchBookmarks", "sendInitialEvents", "limit", "container", "command"}

// checkParamNamed fails when a 400's message neither names a query
// parameter present in the request nor is about something else (the path,
// the body or the pod).
// With strict, only a parameter will do.
func checkParamNamed(t *testing.T, rawQuery, msg string, strict bool) {
	t.Helper()
	q, _ := url.ParseQuery(rawQuery) // what parsed is what handlers see
	for _, k := range queryParams {
		if _, ok := q[k]; ok && strings.Contains(msg, k) {
			return
		}
	}
	if strict {
		t.Fatalf("400 on the log names no query parameter of %q: %s", rawQuery, msg)
	}
	for _, other := range []string{"body", "Content-Type", "container", "pod", "namespace", "name", "decode", "object", "command", "log", "json", "yaml", "Pod", "ConfigMap", "Secret", "field", "metadata", "spec", "kind", "apiVersion", "selector", "upgrade"} {
		if strings.Contains(msg, other) {
			return
		}
	}
	t.Fatalf("400 names neither a query parameter of %q nor what else is wrong: %s", rawQuery, msg)
}
