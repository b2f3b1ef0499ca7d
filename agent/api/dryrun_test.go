package api_test

import (
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/minikubelet/minikubelet/agent/api"
	"github.com/minikubelet/minikubelet/agent/api/apitest"
)

// A write with dryRun (kubectl --dry-run=server) is refused before it
// reaches a handler: the node has no dry-run path, and running the write
// would change what the caller only meant to try.
func TestServer_RefusesDryRunWrites(t *testing.T) {
	b := apitest.New()
	b.SetPod(&v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "default", UID: "uid-p"},
		Spec:       v1.PodSpec{Containers: []v1.Container{{Name: "c", Image: "i"}}},
	})
	h := api.NewServer(b, slog.New(slog.DiscardHandler), api.Options{}).Handler()
	pod := `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"q"},"spec":{"containers":[{"name":"c","image":"i"}]}}`
	for _, tc := range []struct{ method, path, ctype, body string }{
		{http.MethodPost, "/api/v1/namespaces/default/pods?dryRun=All", "application/json", pod},
		{http.MethodDelete, "/api/v1/namespaces/default/pods/p?dryRun=All", "", ""},
		{http.MethodPatch, "/api/v1/namespaces/default/pods/p?dryRun=All", "application/strategic-merge-patch+json", `{"metadata":{"labels":{"a":"b"}}}`},
		{http.MethodPost, "/api/v1/namespaces/default/configmaps?dryRun=All", "application/json", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c"}}`},
	} {
		req := httptest.NewRequest(tc.method, tc.path, strings.NewReader(tc.body))
		req.Host = "minikubelet"
		if tc.ctype != "" {
			req.Header.Set("Content-Type", tc.ctype)
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		assert.Equal(t, http.StatusBadRequest, rec.Code, "%s %s: %s", tc.method, tc.path, rec.Body)
		assert.Contains(t, rec.Body.String(), "--dry-run=server", "%s %s says what to do", tc.method, tc.path)
	}
	_, err := b.GetPod("default", "p")
	require.NoError(t, err, "the pod a dry-run DELETE named is still there")
	_, err = b.GetPod("default", "q")
	require.Error(t, err, "a dry-run POST created nothing")
}
