package api_test

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/minikubelet/minikubelet/agent/api"
)

// TestPatch_ConfigMapAndSecretInPlace: kubectl apply's strategic merge
// patch changes a ConfigMap or Secret in place; an empty patch is a no-op;
// an immutable one refuses a data change naming the field; renaming is
// refused.
func TestPatch_ConfigMapAndSecretInPlace(t *testing.T) {
	b, srv := newTestServer(t, api.Options{})
	const smp = "application/strategic-merge-patch+json"
	cms := srv.URL + "/api/v1/namespaces/prod/configmaps"
	code, body, _ := request(t, http.MethodPost, cms, "application/json", `{"metadata":{"name":"settings"},"data":{"a":"1","b":"2"}}`)
	require.Equal(t, http.StatusCreated, code, body)

	code, body, _ = request(t, http.MethodPatch, cms+"/settings", smp, `{}`)
	require.Equal(t, http.StatusOK, code, body)
	assert.NotContains(t, b.Calls(), "UpdateConfigMap prod/settings", "nothing changed")

	code, body, _ = request(t, http.MethodPatch, cms+"/settings", smp, `{"data":{"a":"10","b":null},"metadata":{"labels":{"x":"y"}}}`)
	require.Equal(t, http.StatusOK, code, body)
	var cm v1.ConfigMap
	require.NoError(t, json.Unmarshal([]byte(body), &cm))
	assert.Equal(t, map[string]string{"a": "10"}, cm.Data)
	assert.Equal(t, map[string]string{"x": "y"}, cm.Labels)
	assert.Equal(t, "ConfigMap", cm.Kind)
	code, body, _ = request(t, http.MethodGet, cms+"/settings", "", "")
	require.Equal(t, http.StatusOK, code, body)
	assert.Contains(t, body, `"a":"10"`)

	code, body, _ = request(t, http.MethodPatch, cms+"/settings", smp, `{"metadata":{"name":"other"}}`)
	assert.Equal(t, http.StatusUnprocessableEntity, code, body)
	assert.Equal(t, "metadata.name", decodeStatus(t, body).Details.Causes[0].Field)
	code, body, _ = request(t, http.MethodPatch, cms+"/settings", "application/json-patch+json", `[{"op":"replace","path":"/data/a","value":"11"}]`)
	require.Equal(t, http.StatusOK, code, body)
	assert.Contains(t, body, `"a":"11"`, "a JSON patch")
	code, body, _ = request(t, http.MethodPatch, cms+"/settings", "application/json", `{}`)
	assert.Equal(t, http.StatusUnsupportedMediaType, code, body)
	code, body, _ = request(t, http.MethodPatch, cms+"/nope", smp, `{}`)
	assert.Equal(t, http.StatusNotFound, code, body)

	// Immutable: the data stays.
	code, body, _ = request(t, http.MethodPost, cms, "application/json", `{"metadata":{"name":"frozen"},"data":{"a":"1"},"immutable":true}`)
	require.Equal(t, http.StatusCreated, code, body)
	code, body, _ = request(t, http.MethodPatch, cms+"/frozen", "application/merge-patch+json", `{"data":{"a":"2"}}`)
	require.Equal(t, http.StatusUnprocessableEntity, code, body)
	st := decodeStatus(t, body)
	assert.Equal(t, metav1.StatusReasonInvalid, st.Reason)
	assert.Equal(t, "data", st.Details.Causes[0].Field)
	code, body, _ = request(t, http.MethodPatch, cms+"/frozen", "application/merge-patch+json", `{"metadata":{"labels":{"k":"v"}}}`)
	assert.Equal(t, http.StatusOK, code, "metadata still changes: %s", body)

	secrets := srv.URL + "/api/v1/namespaces/prod/secrets"
	code, body, _ = request(t, http.MethodPost, secrets, "application/json", `{"metadata":{"name":"creds"},"stringData":{"user":"a"}}`)
	require.Equal(t, http.StatusCreated, code, body)
	code, body, _ = request(t, http.MethodPatch, secrets+"/creds", smp, `{"stringData":{"user":"b"}}`)
	require.Equal(t, http.StatusOK, code, body)
	var sec v1.Secret
	require.NoError(t, json.Unmarshal([]byte(body), &sec))
	assert.Equal(t, map[string][]byte{"user": []byte("b")}, sec.Data)
	code, body, _ = request(t, http.MethodPatch, secrets+"/creds", smp, `{"type":"kubernetes.io/tls"}`)
	require.Equal(t, http.StatusUnprocessableEntity, code, body)
	assert.Equal(t, "type", decodeStatus(t, body).Details.Causes[0].Field)
}
