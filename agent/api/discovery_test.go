package api_test

import (
	"encoding/json"
	"io"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/minikubelet/minikubelet/agent/api"
)

// get sends a GET with an Accept header and returns code, body and the
// response's Content-Type.
func get(t *testing.T, url, accept string) (int, string, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	require.NoError(t, err)
	if accept != "" {
		req.Header.Set("Accept", accept)
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, string(b), resp.Header.Get("Content-Type")
}

func TestDiscovery(t *testing.T) {
	b, srv := newTestServer(t, api.Options{})
	b.SetPod(testPod("web", "a", "c"))

	// kubectl 1.3x asks /api and /apis for aggregated discovery first; the
	// legacy answer (plain application/json) makes it fall back.
	const aggregated = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json"
	code, body, ct := get(t, srv.URL+"/api", aggregated)
	require.Equal(t, http.StatusOK, code, body)
	assert.Equal(t, "application/json", ct)
	var versions metav1.APIVersions
	require.NoError(t, json.Unmarshal([]byte(body), &versions))
	assert.Equal(t, "APIVersions", versions.Kind)
	assert.Equal(t, []string{"v1"}, versions.Versions)

	code, body, ct = get(t, srv.URL+"/apis", aggregated)
	require.Equal(t, http.StatusOK, code, body)
	assert.Equal(t, "application/json", ct)
	var groups metav1.APIGroupList
	require.NoError(t, json.Unmarshal([]byte(body), &groups))
	assert.Equal(t, "APIGroupList", groups.Kind)
	assert.Empty(t, groups.Groups)

	code, body, _ = get(t, srv.URL+"/api/v1", "application/json, */*")
	require.Equal(t, http.StatusOK, code, body)
	var list metav1.APIResourceList
	require.NoError(t, json.Unmarshal([]byte(body), &list))
	assert.Equal(t, "v1", list.GroupVersion)
	byName := map[string]metav1.APIResource{}
	for _, r := range list.APIResources {
		byName[r.Name] = r
	}
	assert.ElementsMatch(t, []string{"configmaps", "events", "namespaces", "nodes", "pods", "pods/attach", "pods/exec", "pods/log", "pods/portforward", "pods/status", "secrets"},
		keys(byName), "only what the node serves")
	assert.Equal(t, []string{"po"}, byName["pods"].ShortNames)
	assert.Equal(t, []string{"all"}, byName["pods"].Categories)
	assert.ElementsMatch(t, []string{"create", "delete", "get", "list", "patch", "watch"}, []string(byName["pods"].Verbs))
	assert.ElementsMatch(t, []string{"get", "list"}, []string(byName["namespaces"].Verbs), "read-only")
	assert.ElementsMatch(t, []string{"get", "list"}, []string(byName["nodes"].Verbs), "read-only")
	assert.False(t, byName["nodes"].Namespaced)
	assert.Equal(t, []string{"cm"}, byName["configmaps"].ShortNames)
	assert.Equal(t, []string{"ev"}, byName["events"].ShortNames)

	code, body, _ = get(t, srv.URL+"/version", "")
	require.Equal(t, http.StatusOK, code, body)
	var ver map[string]any
	require.NoError(t, json.Unmarshal([]byte(body), &ver))
	assert.Equal(t, "1", ver["major"])
	assert.Regexp(t, `^v1\.\d+\.\d+$`, ver["gitVersion"])
	assert.NotEmpty(t, ver["nodeName"], "the node's own fields stay")

	// The OpenAPI v3 that tells kubectl the server validates fields.
	code, body, _ = get(t, srv.URL+"/openapi/v3", "")
	require.Equal(t, http.StatusOK, code, body)
	assert.Contains(t, body, `"serverRelativeURL":"/openapi/v3/api/v1?hash=`)
	code, body, _ = get(t, srv.URL+"/openapi/v3/api/v1?hash=x", "")
	require.Equal(t, http.StatusOK, code, body)
	assert.Contains(t, body, `"fieldValidation"`)
	assert.Contains(t, body, `"kind":"Pod"`)

	for _, path := range []string{"/api/v1/namespaces/default/deployments", "/apis/apps/v1", "/api/v2", "/api/v1/services"} {
		code, body, _ = get(t, srv.URL+path, "")
		assert.Equal(t, http.StatusNotFound, code, path)
		st := decodeStatus(t, body)
		assert.Equal(t, "Status", st.Kind, path)
		assert.Equal(t, metav1.StatusReasonNotFound, st.Reason, path)
	}
}

func TestNamespacesAndNodes(t *testing.T) {
	b, srv := newTestServer(t, api.Options{})
	b.SetPod(testPod("web", "a", "c"))

	code, body, _ := get(t, srv.URL+"/api/v1/namespaces", "")
	require.Equal(t, http.StatusOK, code, body)
	var nss v1.NamespaceList
	require.NoError(t, json.Unmarshal([]byte(body), &nss))
	var names []string
	for _, n := range nss.Items {
		names = append(names, n.Name)
		assert.Equal(t, v1.NamespaceActive, n.Status.Phase)
	}
	assert.Equal(t, []string{"default", "web"}, names, "default and those in use")
	code, _, _ = get(t, srv.URL+"/api/v1/namespaces/web", "")
	assert.Equal(t, http.StatusOK, code)
	code, body, _ = get(t, srv.URL+"/api/v1/namespaces/nope", "")
	assert.Equal(t, http.StatusNotFound, code)
	assert.Equal(t, metav1.StatusReasonNotFound, decodeStatus(t, body).Reason)
	code, body, _ = request(t, http.MethodDelete, srv.URL+"/api/v1/namespaces/web", "", "")
	assert.Equal(t, http.StatusMethodNotAllowed, code, "read-only: %s", body)

	code, body, _ = get(t, srv.URL+"/api/v1/nodes", "")
	require.Equal(t, http.StatusOK, code, body)
	var nodes v1.NodeList
	require.NoError(t, json.Unmarshal([]byte(body), &nodes))
	require.Len(t, nodes.Items, 1)
	n := nodes.Items[0]
	assert.NotEmpty(t, n.Name)
	// From the package's fake /proc (export_test.go), never the host's.
	assert.Equal(t, "6.1.0-test-amd64", n.Status.NodeInfo.KernelVersion)
	assert.Equal(t, "4Gi", n.Status.Capacity.Memory().String())
	require.Len(t, n.Status.Conditions, 1)
	assert.Equal(t, v1.NodeReady, n.Status.Conditions[0].Type)
	code, _, _ = get(t, srv.URL+"/api/v1/nodes/"+n.Name, "")
	assert.Equal(t, http.StatusOK, code)
	code, _, _ = get(t, srv.URL+"/api/v1/nodes/other", "")
	assert.Equal(t, http.StatusNotFound, code)
}

func keys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}
