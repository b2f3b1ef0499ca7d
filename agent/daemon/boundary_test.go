package daemon

import (
	"context"
	"io/fs"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/utils/ptr"

	"github.com/minikubelet/minikubelet/agent/api"
	"github.com/minikubelet/minikubelet/agent/eviction"
	"github.com/minikubelet/minikubelet/agent/manifest/manifesttest"
	"github.com/minikubelet/minikubelet/agent/source"
)

// Names with path characters, through every way the local API writes the
// store (create, server-side apply, patch, delete; pods, ConfigMaps,
// Secrets; JSON and YAML bodies): the URL's {name} and {namespace} are
// unescaped path segments ("..%2F..%2Fevil" arrives as "../../evil"), and
// an applied object may take its name from the URL. None may write or
// remove anything outside the store: each is refused with a 4xx, and no
// file named after them exists anywhere under the test's directory.
func TestBoundaryAPI_PathNamesNeverLeaveTheStore(t *testing.T) {
	h := newHarness(t)
	top := t.TempDir()
	store, err := source.NewPodStore(filepath.Join(top, "root", "api-pods"), "node-1")
	require.NoError(t, err)
	d := New(h.agent, store, nil, Config{})
	srv := httptest.NewServer(api.NewServer(d, slog.New(slog.DiscardHandler), api.Options{}).Handler())
	t.Cleanup(srv.Close)

	pod := func(name, ns string) string {
		return `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"` + name + `","namespace":"` + ns + `"},"spec":{"containers":[{"name":"c","image":"reg.local/x:1"}]}}`
	}
	cm := func(name string) string {
		return `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"` + name + `"},"data":{"k":"v"}}`
	}
	const apply = "application/apply-patch+yaml"
	for _, tt := range []struct {
		method, path, ctype, body string
	}{
		{"POST", "/api/v1/namespaces/default/pods", "application/json", pod("../../evil-pod", "default")},
		{"POST", "/api/v1/namespaces/default/pods", "application/json", pod("evil-pod", "../../evil-ns")},
		{"POST", "/api/v1/namespaces/..%2F..%2Fevil-ns/pods", "application/json", pod("evil-pod", "")},
		{"POST", "/api/v1/namespaces/default/pods", "application/yaml", "apiVersion: v1\nkind: Pod\nmetadata: {name: ../evil-pod}\nspec: {containers: [{name: c, image: x}]}\n"},
		{"PATCH", "/api/v1/namespaces/default/pods/..%2F..%2Fevil-pod", apply, "apiVersion: v1\nkind: Pod\nspec: {containers: [{name: c, image: x}]}\n"},
		{"PATCH", "/api/v1/namespaces/..%2F..%2Fevil-ns/pods/x", apply, "apiVersion: v1\nkind: Pod\nspec: {containers: [{name: c, image: x}]}\n"},
		{"PATCH", "/api/v1/namespaces/default/pods/%2e%2e", apply, "apiVersion: v1\nkind: Pod\nspec: {containers: [{name: c, image: x}]}\n"},
		{"PATCH", "/api/v1/namespaces/default/pods/..%2Fevil-pod", "application/merge-patch+json", `{"metadata":{"labels":{"a":"b"}}}`},
		{"DELETE", "/api/v1/namespaces/default/pods/..%2F..%2Fapi-pods", "", ""},
		{"POST", "/api/v1/namespaces/default/configmaps", "application/json", cm("../../evil-cm")},
		{"PATCH", "/api/v1/namespaces/default/configmaps/..%2F..%2Fevil-cm", apply, "apiVersion: v1\nkind: ConfigMap\ndata: {k: v}\n"},
		{"PATCH", "/api/v1/namespaces/default/secrets/..%2F..%2Fevil-secret", apply, "apiVersion: v1\nkind: Secret\nstringData: {k: v}\n"},
		{"DELETE", "/api/v1/namespaces/default/configmaps/..%2F..%2F..%2Froot", "", ""},
		{"DELETE", "/api/v1/namespaces/..%2F..%2F/secrets/x", "", ""},
	} {
		t.Run(tt.method+" "+tt.path, func(t *testing.T) {
			req, err := http.NewRequest(tt.method, srv.URL+tt.path, strings.NewReader(tt.body))
			require.NoError(t, err)
			if tt.ctype != "" {
				req.Header.Set("Content-Type", tt.ctype)
			}
			resp, err := http.DefaultClient.Do(req)
			require.NoError(t, err)
			resp.Body.Close()
			assert.GreaterOrEqual(t, resp.StatusCode, 400)
			assert.Less(t, resp.StatusCode, 500)
		})
	}
	// The same requests with good names are served (the refusals above
	// are about the names, not the plumbing).
	for _, ok := range []struct{ method, path, ctype, body string }{
		{"POST", "/api/v1/namespaces/default/pods", "application/json", pod("good-pod", "default")},
		{"PATCH", "/api/v1/namespaces/default/configmaps/good-cm", apply, "apiVersion: v1\nkind: ConfigMap\ndata: {k: v}\n"},
	} {
		req, err := http.NewRequest(ok.method, srv.URL+ok.path, strings.NewReader(ok.body))
		require.NoError(t, err)
		req.Header.Set("Content-Type", ok.ctype)
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		resp.Body.Close()
		assert.Equal(t, http.StatusCreated, resp.StatusCode, ok.path)
	}
	require.NoError(t, filepath.WalkDir(top, func(p string, e fs.DirEntry, err error) error {
		require.NoError(t, err)
		assert.NotContains(t, e.Name(), "evil", "%s was written", p)
		return nil
	}))
	assert.DirExists(t, filepath.Join(top, "root", "api-pods"), "the store is still there")
}

// A pod submitted through the local API that claims to be a static pod
// (kubernetes.io/config.source: file, which makes a pod critical: never
// evicted, admitted under pressure) or sets a system-critical spec.priority
// of its own gets neither: the store sets the source annotation itself, and
// a spec.priority other than its class's value is refused, as the API
// server's Priority admission refuses it. A pod of the built-in class
// system-cluster-critical is critical, as on a kubelet (whoever uses the
// local API is root on the node). Cluster pods get config.source "cluster"
// in cluster.PreparePod and their API server's spec.priority.
func TestEviction_CriticalCannotBeForgedThroughTheAPI(t *testing.T) {
	h := newHarness(t)
	store, err := source.NewPodStore(filepath.Join(t.TempDir(), "api-pods"), "node-1")
	require.NoError(t, err)
	d := New(h.agent, store, nil, Config{})
	forged := manifesttest.APIPod("default", "forged", "x")
	forged.Annotations = map[string]string{source.AnnotationConfigSource: source.SourceFile, source.AnnotationSourceFile: "/etc/minikubelet/manifests/x.yaml"}
	got, err := d.CreatePod(context.Background(), forged)
	require.NoError(t, err)
	assert.Equal(t, source.SourceAPI, got.Annotations[source.AnnotationConfigSource])
	assert.False(t, eviction.IsCritical(got), "a forged static pod is not critical")

	prio := manifesttest.APIPod("default", "prio", "x")
	prio.Spec.Priority = ptr.To(int32(eviction.CriticalPriority))
	_, err = d.CreatePod(context.Background(), prio)
	require.Error(t, err, "spec.priority is refused")

	class := manifesttest.APIPod("default", "class", "x")
	class.Spec.PriorityClassName = "system-cluster-critical"
	got, err = d.CreatePod(context.Background(), class)
	require.NoError(t, err)
	assert.True(t, eviction.IsCritical(got), "a system-cluster-critical pod is critical")
}
