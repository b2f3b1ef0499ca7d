package api_test

import (
	"bufio"
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/minikubelet/minikubelet/agent/api"
	"github.com/minikubelet/minikubelet/agent/api/apitest"
)

// watchStream opens a watch over plain HTTP and returns a function that
// reads the next event (failing the test after 5 s).
func watchStream(t *testing.T, url string) (*http.Response, func() (metav1.WatchEvent, *v1.Pod)) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	require.NoError(t, err)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	t.Cleanup(func() { resp.Body.Close() })
	lines := make(chan []byte)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			lines <- append([]byte(nil), sc.Bytes()...)
		}
	}()
	next := func() (metav1.WatchEvent, *v1.Pod) {
		t.Helper()
		select {
		case line, ok := <-lines:
			require.True(t, ok, "the stream ended")
			var ev metav1.WatchEvent
			require.NoError(t, json.Unmarshal(line, &ev), "each line is a WatchEvent: %s", line)
			var p v1.Pod
			if ev.Type != string(watch.Error) {
				require.NoError(t, json.Unmarshal(ev.Object.Raw, &p))
			}
			return ev, &p
		case <-time.After(5 * time.Second):
			t.Fatal("no watch event within 5 s")
		}
		return metav1.WatchEvent{}, nil
	}
	return resp, next
}

// The watch streams one WatchEvent per line: the current pods as ADDED,
// then each change in order, DELETED when the pod is gone; objects are the
// pods as GET shows them, with kind and resource version.
func TestServer_WatchPods(t *testing.T) {
	b, srv := newTestServer(t, api.Options{})
	b.SetPod(testPod("default", "web", "app"))
	b.SetPod(testPod("other", "db", "app"))
	resp, next := watchStream(t, srv.URL+"/api/v1/namespaces/default/pods?watch=true")
	assert.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Equal(t, "application/json", resp.Header.Get("Content-Type"))

	ev, p := next()
	assert.Equal(t, "ADDED", ev.Type)
	assert.Equal(t, "web", p.Name, "the other namespace's pod is not watched")
	assert.Equal(t, "Pod", p.Kind)
	assert.Equal(t, "v1", p.APIVersion)
	assert.NotEmpty(t, p.ResourceVersion)

	web := testPod("default", "web", "app")
	web.Status.Phase = v1.PodRunning
	b.SetPod(web)
	b.SetPod(testPod("other", "db2", "app"))
	ev, p = next()
	assert.Equal(t, "MODIFIED", ev.Type)
	assert.Equal(t, v1.PodRunning, p.Status.Phase)

	_, err := b.DeletePod(context.Background(), "default", "web", nil)
	require.NoError(t, err)
	ev, p = next()
	assert.Equal(t, "MODIFIED", ev.Type)
	assert.NotNil(t, p.DeletionTimestamp)
	ev, p = next()
	assert.Equal(t, "DELETED", ev.Type)
	assert.Equal(t, "web", p.Name)
}

func TestServer_WatchPodsSelection(t *testing.T) {
	b, srv := newTestServer(t, api.Options{})
	b.SetPod(testPod("default", "web", "app"))
	b.SetPod(testPod("default", "db", "app"))
	b.SetPod(testPod("other", "web", "app"))

	t.Run("all namespaces, one name", func(t *testing.T) {
		_, next := watchStream(t, srv.URL+"/api/v1/pods?watch=1&fieldSelector=metadata.name%3Dweb")
		_, p := next()
		assert.Equal(t, "default/web", p.Namespace+"/"+p.Name)
		_, p = next()
		assert.Equal(t, "other/web", p.Namespace+"/"+p.Name)
	})
	t.Run("list then watch from the list's version", func(t *testing.T) {
		code, body, _ := request(t, http.MethodGet, srv.URL+"/api/v1/namespaces/default/pods", "", "")
		require.Equal(t, http.StatusOK, code)
		var l v1.PodList
		require.NoError(t, json.Unmarshal([]byte(body), &l))
		require.NotEmpty(t, l.ResourceVersion)
		assert.Len(t, l.Items, 2)
		b.SetPod(testPod("default", "cache", "app"))
		_, next := watchStream(t, srv.URL+"/api/v1/namespaces/default/pods?watch=true&resourceVersion="+l.ResourceVersion)
		ev, p := next()
		assert.Equal(t, "ADDED", ev.Type)
		assert.Equal(t, "cache", p.Name, "only what happened after the list")
	})
	t.Run("list with a field selector", func(t *testing.T) {
		code, body, _ := request(t, http.MethodGet, srv.URL+"/api/v1/pods?fieldSelector=metadata.namespace%3Dother", "", "")
		require.Equal(t, http.StatusOK, code)
		var l v1.PodList
		require.NoError(t, json.Unmarshal([]byte(body), &l))
		require.Len(t, l.Items, 1)
		assert.Equal(t, "other", l.Items[0].Namespace)
	})
	for name, tt := range map[string]struct {
		query string
		code  int
		msg   string
	}{
		"unsupported field":  {"fieldSelector=spec.bogus%3Dx", 400, `field label not supported: spec.bogus`},
		"bad label selector": {"labelSelector=a%20b%20c", 400, "labelSelector"},
		"bad version":        {"resourceVersion=x", 400, `resourceVersion "x" is not a resource version`},
		"old version":        {"resourceVersion=1", 410, "too old resource version"},
		"bad watch":          {"watch=maybe", 400, `watch "maybe" is not a boolean`},
	} {
		t.Run(name, func(t *testing.T) {
			q := tt.query
			if name != "bad watch" {
				q += "&watch=true"
			}
			code, body, _ := request(t, http.MethodGet, srv.URL+"/api/v1/namespaces/default/pods?"+q, "", "")
			assert.Equal(t, tt.code, code, body)
			assert.Contains(t, decodeStatus(t, body).Message, tt.msg)
		})
	}
}

// closedWatch is a PodWatch whose stream is already over.
type closedWatch struct{ ch chan api.PodEvent }

func (w closedWatch) Events() <-chan api.PodEvent { return w.ch }
func (w closedWatch) Stop()                       {}

// expiredBackend answers every watch with one event and the Expired error
// that closes a watcher too slow.
type expiredBackend struct{ *apitest.Backend }

func (expiredBackend) WatchPods(api.PodWatchOptions) (api.PodWatch, error) {
	ch := make(chan api.PodEvent, 2)
	ch <- api.PodEvent{Type: watch.Added, Pod: &v1.Pod{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"}, ObjectMeta: metav1.ObjectMeta{Name: "web"}}}
	ch <- api.PodEvent{Type: watch.Error, Status: &metav1.Status{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Status"},
		Status: metav1.StatusFailure, Code: 410, Reason: metav1.StatusReasonExpired, Message: "the watcher fell 1024 events behind"}}
	close(ch)
	return closedWatch{ch}, nil
}

// A watch the backend closes for falling behind ends with an ERROR event
// carrying the Status, then the end of the stream; the Go client hands it
// over as a *metav1.Status.
func TestServer_WatchPodsSlowWatcherGetsError(t *testing.T) {
	sock := filepath.Join(shortTempDir(t), "api.sock")
	s := api.NewServer(expiredBackend{apitest.New()}, slog.New(slog.DiscardHandler), api.Options{})
	l, err := api.ListenUnix(sock)
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Serve(ctx, l) }()
	t.Cleanup(func() { cancel(); <-done })

	w, err := api.NewClient(sock).WatchPods(context.Background(), "default", api.WatchOptions{})
	require.NoError(t, err)
	defer w.Stop()
	var got []watch.Event
	for ev := range w.ResultChan() {
		got = append(got, ev)
	}
	require.Len(t, got, 2)
	assert.Equal(t, watch.Added, got[0].Type)
	assert.Equal(t, "web", got[0].Object.(*v1.Pod).Name)
	assert.Equal(t, watch.Error, got[1].Type)
	st := got[1].Object.(*metav1.Status)
	assert.Equal(t, metav1.StatusReasonExpired, st.Reason)
	assert.EqualValues(t, 410, st.Code)
	assert.Contains(t, st.Message, "fell 1024 events behind")
}

// The Go client: typed events in order, a selected pod only, the watch
// ended by timeoutSeconds, and 410 Gone for a version too old.
func TestClient_WatchPods(t *testing.T) {
	sock := filepath.Join(shortTempDir(t), "api.sock")
	b, stop := serveUnix(t, sock)
	c := api.NewClient(sock)
	ctx := context.Background()

	w, err := c.WatchPods(ctx, "default", api.WatchOptions{Name: "web"})
	require.NoError(t, err)
	defer w.Stop()
	_, err = c.CreatePod(ctx, testPod("default", "other", "app"))
	require.NoError(t, err)
	_, err = c.CreatePod(ctx, testPod("default", "web", "app"))
	require.NoError(t, err)
	running := testPod("default", "web", "app")
	running.UID = "uid-web"
	running.Status.Phase = v1.PodRunning
	b.SetPod(running)
	require.True(t, b.RemovePod("default", "web"))
	var got []string
	for len(got) < 3 {
		select {
		case ev, ok := <-w.ResultChan():
			require.True(t, ok)
			p := ev.Object.(*v1.Pod)
			got = append(got, string(ev.Type)+" "+p.Name+" "+string(p.Status.Phase))
		case <-time.After(5 * time.Second):
			t.Fatalf("events so far: %v", got)
		}
	}
	assert.Equal(t, []string{"ADDED web Pending", "MODIFIED web Running", "DELETED web Running"}, got)

	tw, err := c.WatchPods(ctx, "", api.WatchOptions{TimeoutSeconds: 1})
	require.NoError(t, err)
	n := 0
	for range tw.ResultChan() {
		n++ // the initial ADDED of "other"
	}
	assert.Equal(t, 1, n, "the stream ends after timeoutSeconds")

	_, err = c.WatchPods(ctx, "", api.WatchOptions{ResourceVersion: "1"})
	assert.True(t, apierrors.IsResourceExpired(err) || apierrors.IsGone(err), "410: %v", err)

	// A server stopping ends its open watches.
	ow, err := c.WatchPods(ctx, "", api.WatchOptions{})
	require.NoError(t, err)
	defer ow.Stop()
	stop()
	for range ow.ResultChan() {
	}
}
