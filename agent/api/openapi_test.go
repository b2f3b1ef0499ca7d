package api_test

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/minikubelet/minikubelet/agent/api"
)

// TestOpenAPIV3_SchemasForExplain: the api/v1 document carries the schemas
// kubectl explain walks (Pod by its group-version-kind, down to
// spec.containers), every $ref resolves, the PATCH operations declare
// fieldValidation, and a client without gzip gets plain JSON.
func TestOpenAPIV3_SchemasForExplain(t *testing.T) {
	_, srv := newTestServer(t, api.Options{})
	for _, gz := range []bool{true, false} {
		req, err := http.NewRequest(http.MethodGet, srv.URL+"/openapi/v3/api/v1", nil)
		require.NoError(t, err)
		if !gz {
			req.Header.Set("Accept-Encoding", "identity") // the transport then leaves the body alone
		}
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, resp.StatusCode)
		var doc struct {
			Paths      map[string]map[string]json.RawMessage `json:"paths"`
			Components struct {
				Schemas map[string]struct {
					Properties map[string]struct {
						Description string `json:"description"`
						Type        string `json:"type"`
						Items       struct {
							Ref string `json:"$ref"`
						} `json:"items"`
						AllOf []struct {
							Ref string `json:"$ref"`
						} `json:"allOf"`
					} `json:"properties"`
					GVK []map[string]string `json:"x-kubernetes-group-version-kind"`
				} `json:"schemas"`
			} `json:"components"`
		}
		require.NoError(t, json.Unmarshal(body, &doc), "gzip %v", gz)
		schemas := doc.Components.Schemas
		pod, ok := schemas["io.k8s.api.core.v1.Pod"]
		require.True(t, ok)
		assert.Equal(t, []map[string]string{{"group": "", "version": "v1", "kind": "Pod"}}, pod.GVK)
		require.Len(t, pod.Properties["spec"].AllOf, 1)
		spec := schemas[strings.TrimPrefix(pod.Properties["spec"].AllOf[0].Ref, "#/components/schemas/")]
		containers := spec.Properties["containers"]
		assert.Equal(t, "array", containers.Type)
		assert.Contains(t, containers.Description, "List of containers belonging to the pod")
		assert.Equal(t, "#/components/schemas/io.k8s.api.core.v1.Container", containers.Items.Ref)
		for _, kind := range []string{"ConfigMap", "Secret", "Event", "Namespace", "Node"} {
			assert.Contains(t, schemas, "io.k8s.api.core.v1."+kind)
		}
		refs := strings.Count(string(body), `"$ref":"#/components/schemas/`)
		assert.Greater(t, refs, 100)
		for _, m := range regexpRefs(string(body)) {
			assert.Contains(t, schemas, m, "every $ref resolves")
		}
		patch := string(doc.Paths["/api/v1/namespaces/{namespace}/pods/{name}"]["patch"])
		assert.Contains(t, patch, `"name":"fieldValidation"`)
		assert.NotContains(t, doc.Paths["/api/v1/namespaces/{namespace}/pods/{name}"], "put", "only what the node serves")
		assert.NotContains(t, doc.Paths, "/api/v1/namespaces/{namespace}/services")
	}
}

// regexpRefs returns the schema names the document's $refs name.
func regexpRefs(body string) []string {
	var out []string
	for _, part := range strings.Split(body, `"$ref":"#/components/schemas/`)[1:] {
		name, _, _ := strings.Cut(part, `"`)
		out = append(out, name)
	}
	return out
}
