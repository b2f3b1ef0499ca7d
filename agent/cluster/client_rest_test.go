package cluster

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	coordinationv1 "k8s.io/api/coordination/v1"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/minikubelet/minikubelet/agent/source"
)

const (
	mediaProtobuf = "application/vnd.kubernetes.protobuf"
	mediaJSON     = "application/json"
)

// encodeAs encodes obj as the API server would in mediaType.
func encodeAs(t *testing.T, mediaType string, gv schema.GroupVersion, obj runtime.Object) []byte {
	t.Helper()
	info, ok := runtime.SerializerInfoForMediaType(nodeScheme().codecs.SupportedMediaTypes(), mediaType)
	require.True(t, ok, mediaType)
	b, err := runtime.Encode(nodeScheme().codecs.EncoderForVersion(info.Serializer, gv), obj)
	require.NoError(t, err)
	return b
}

// apiRequest is what the stand-in API server saw of one request.
type apiRequest struct {
	method, path, query, accept, contentType, userAgent string
	body                                                string
}

// standInAPIServer answers the few requests TestRESTAPI makes the way
// kube-apiserver does (paths, media types, Status errors, list then
// watch); it records every request.
type standInAPIServer struct {
	t        *testing.T
	mu       sync.Mutex
	requests []apiRequest
	// watchEvents are sent, in JSON, to the pods watch.
	watchEvents chan []byte
}

func (s *standInAPIServer) seen() []apiRequest {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]apiRequest(nil), s.requests...)
}

func (s *standInAPIServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	s.mu.Lock()
	s.requests = append(s.requests, apiRequest{
		method: r.Method, path: r.URL.Path, query: r.URL.RawQuery, accept: r.Header.Get("Accept"),
		contentType: r.Header.Get("Content-Type"), userAgent: r.Header.Get("User-Agent"), body: string(body),
	})
	s.mu.Unlock()
	reply := func(mediaType string, gv schema.GroupVersion, code int, obj runtime.Object) {
		w.Header().Set("Content-Type", mediaType)
		w.WriteHeader(code)
		_, _ = w.Write(encodeAs(s.t, mediaType, gv, obj))
	}
	status := func(code int, reason metav1.StatusReason, msg string) {
		reply(mediaJSON, metav1.SchemeGroupVersion, code, &metav1.Status{Status: metav1.StatusFailure, Code: int32(code), Reason: reason, Message: msg})
	}
	q := r.URL.Query()
	switch {
	case r.Method == http.MethodGet && r.URL.Path == "/api/v1/namespaces/default/pods/web":
		reply(mediaProtobuf, v1.SchemeGroupVersion, http.StatusOK, nodePod("web", "node-a"))
	case r.Method == http.MethodPatch && r.URL.Path == "/api/v1/namespaces/default/pods/web/status":
		p := nodePod("web", "node-a")
		p.Status.Phase = v1.PodRunning
		reply(mediaProtobuf, v1.SchemeGroupVersion, http.StatusOK, p)
	case r.Method == http.MethodGet && r.URL.Path == "/api/v1/namespaces/default/pods/gone":
		status(http.StatusNotFound, metav1.StatusReasonNotFound, `pods "gone" not found`)
	case r.Method == http.MethodGet && r.URL.Path == "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/node-a":
		reply(mediaProtobuf, coordinationv1.SchemeGroupVersion, http.StatusOK,
			&coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "node-a", Namespace: "kube-node-lease", ResourceVersion: "3"}})
	case r.Method == http.MethodGet && r.URL.Path == "/api/v1/pods" && q.Get("watch") != "true":
		list := &v1.PodList{ListMeta: metav1.ListMeta{ResourceVersion: "10"}, Items: []v1.Pod{*nodePod("web", "node-a")}}
		reply(mediaJSON, v1.SchemeGroupVersion, http.StatusOK, list)
	case r.Method == http.MethodGet && r.URL.Path == "/api/v1/pods" && q.Get("sendInitialEvents") == "true":
		// A server without streaming lists: the reflector falls back to
		// list and watch.
		status(http.StatusBadRequest, metav1.StatusReasonBadRequest, "sendInitialEvents is not supported")
	case r.Method == http.MethodGet && r.URL.Path == "/api/v1/pods":
		w.Header().Set("Content-Type", mediaJSON)
		w.WriteHeader(http.StatusOK)
		w.(http.Flusher).Flush()
		for {
			select {
			case ev := <-s.watchEvents:
				_, _ = w.Write(append(ev, '\n'))
				w.(http.Flusher).Flush()
			case <-r.Context().Done():
				return
			}
		}
	default:
		status(http.StatusNotFound, metav1.StatusReasonNotFound, "the stand-in API server does not serve "+r.Method+" "+r.URL.String())
	}
}

// TestRESTAPI drives the API NewClient builds against a stand-in API
// server: client-go's generic clients with this package's small scheme
// must reach the same paths, speak protobuf, decode Status errors, and
// carry an informer (list with the field selector, then watch).
func TestRESTAPI(t *testing.T) {
	s := &standInAPIServer{t: t, watchEvents: make(chan []byte, 1)}
	srv := httptest.NewTLSServer(s)
	defer srv.Close()
	api, _, err := NewClient(writeKubeconfigFor(t, srv.URL, "    token: abc.def"), "minikubelet/test")
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	t.Run("get decodes protobuf", func(t *testing.T) {
		p, err := api.Pods("default").Get(ctx, "web", metav1.GetOptions{})
		require.NoError(t, err)
		require.Equal(t, types.UID("uid-web"), p.UID)
		require.Equal(t, "node-a", p.Spec.NodeName)
		last := s.seen()[len(s.seen())-1]
		require.True(t, strings.HasPrefix(last.accept, mediaProtobuf), "protobuf is asked for first: %q", last.accept)
		require.Equal(t, "minikubelet/test", last.userAgent)
	})
	t.Run("a Status error is an API error", func(t *testing.T) {
		_, err := api.Pods("default").Get(ctx, "gone", metav1.GetOptions{})
		require.True(t, apierrors.IsNotFound(err), "%v", err)
	})
	t.Run("a status patch goes to the subresource", func(t *testing.T) {
		p, err := api.Pods("default").Patch(ctx, "web", types.StrategicMergePatchType, []byte(`{"status":{"phase":"Running"}}`), metav1.PatchOptions{}, "status")
		require.NoError(t, err)
		require.Equal(t, v1.PodRunning, p.Status.Phase)
		last := s.seen()[len(s.seen())-1]
		require.Equal(t, string(types.StrategicMergePatchType), last.contentType)
		require.JSONEq(t, `{"status":{"phase":"Running"}}`, last.body)
	})
	t.Run("leases are in coordination.k8s.io", func(t *testing.T) {
		l, err := api.Leases("kube-node-lease").Get(ctx, "node-a", metav1.GetOptions{})
		require.NoError(t, err)
		require.Equal(t, "3", l.ResourceVersion)
	})
	t.Run("the pod source's informer lists and watches this node's pods", func(t *testing.T) {
		src := NewPodSource(api, "node-a", nil)
		sctx, scancel := context.WithCancel(ctx)
		defer scancel()
		out := make(chan source.SourceUpdate)
		go src.Run(sctx, out)
		next := func() source.SourceUpdate {
			t.Helper()
			select {
			case u := <-out:
				return u
			case <-ctx.Done():
				t.Fatal("no update from the pod source")
				return source.SourceUpdate{}
			}
		}
		pods, _ := names(next())
		require.Equal(t, []string{"web"}, pods)

		second := nodePod("second", "node-a")
		second.ResourceVersion = "11"
		ev, err := json.Marshal(metav1.WatchEvent{Type: "ADDED", Object: runtime.RawExtension{Raw: encodeAs(t, mediaJSON, v1.SchemeGroupVersion, second)}})
		require.NoError(t, err)
		s.watchEvents <- ev
		pods, _ = names(next())
		require.Equal(t, []string{"second", "web"}, pods)

		var list, watch bool
		for _, r := range s.seen() {
			if r.path != "/api/v1/pods" {
				continue
			}
			require.Contains(t, r.query, "fieldSelector=spec.nodeName%3Dnode-a", "every list and watch is restricted to the node: %s", r.query)
			if strings.Contains(r.query, "watch=true") {
				watch = true
			} else {
				list = true
			}
		}
		require.True(t, list && watch, "a list then a watch")
	})
}
