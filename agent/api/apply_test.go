package api_test

import (
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/minikubelet/minikubelet/agent/api"
	"github.com/minikubelet/minikubelet/agent/api/apitest"
)

const applyType = "application/apply-patch+yaml"

// appliedPod is what kubectl apply --server-side sends for a pod file
// (kubectl sends it as JSON; YAML is as valid).
func appliedPod(image string) string {
	return `apiVersion: v1
kind: Pod
metadata:
  name: web
spec:
  containers:
  - name: c
    image: ` + image + `
`
}

// TestApplyPod: server-side apply creates an absent pod (201), answers an
// unchanged one as it is (200, no update), hands a changed one to
// PodUpdater (an update in place: no Warning), and refuses an invalid one
// with a 422 naming the field.
func TestApplyPod(t *testing.T) {
	b := &updatingBackend{Backend: apitest.New()}
	srv := httptest.NewServer(api.NewServer(b, slog.New(slog.NewTextHandler(io.Discard, nil)), api.Options{}).Handler())
	t.Cleanup(srv.Close)
	url := srv.URL + "/api/v1/namespaces/default/pods/web?fieldManager=kubectl&fieldValidation=Strict&force=true"

	code, body, _ := request(t, http.MethodPatch, url, applyType, appliedPod("busybox"))
	require.Equal(t, http.StatusCreated, code, body)
	assert.Contains(t, b.Calls(), "CreatePod default/web")
	var out v1.Pod
	require.NoError(t, json.Unmarshal([]byte(body), &out))
	assert.Equal(t, "uid-web", string(out.UID))
	assert.Empty(t, out.ManagedFields, "not modelled")

	// Again, as JSON (what kubectl sends): unchanged.
	code, body, hdr := request(t, http.MethodPatch, url, applyType,
		`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"web"},"spec":{"containers":[{"name":"c","image":"busybox"}]}}`)
	require.Equal(t, http.StatusOK, code, body)
	assert.Empty(t, b.updated, "unchanged: no update")
	assert.Empty(t, hdr.Get("Warning"))

	// A changed image: an update of the same pod (its UID).
	code, body, hdr = request(t, http.MethodPatch, url, applyType, appliedPod("nginx"))
	require.Equal(t, http.StatusOK, code, body)
	require.Len(t, b.updated, 1)
	assert.Equal(t, "nginx", b.updated[0].Spec.Containers[0].Image)
	assert.Empty(t, b.updated[0].UID, "the applied configuration names no UID: the backend keeps the pod's")
	assert.Empty(t, hdr.Get("Warning"))

	// Fields the applied configuration omits are removed: the labels.
	b.updated = nil
	code, body, _ = request(t, http.MethodPatch, url, applyType, "apiVersion: v1\nkind: Pod\nmetadata:\n  name: web\n  labels: {tier: web}\nspec:\n  containers:\n  - {name: c, image: nginx}\n")
	require.Equal(t, http.StatusOK, code, body)
	require.Len(t, b.updated, 1)
	assert.Equal(t, map[string]string{"tier": "web"}, b.updated[0].Labels)
	code, body, _ = request(t, http.MethodPatch, url, applyType, appliedPod("nginx"))
	require.Equal(t, http.StatusOK, code, body)
	require.Len(t, b.updated, 2)
	assert.Empty(t, b.updated[1].Labels, "omitted: removed")

	// Invalid: 422 naming the field, for an existing pod and a new one.
	code, body, _ = request(t, http.MethodPatch, url, applyType, "apiVersion: v1\nkind: Pod\nmetadata:\n  name: web\nspec:\n  containers: []\n")
	require.Equal(t, http.StatusUnprocessableEntity, code, body)
	assert.Equal(t, "spec.containers", decodeStatus(t, body).Details.Causes[0].Field)
	code, body, _ = request(t, http.MethodPatch, srv.URL+"/api/v1/namespaces/default/pods/other", applyType, "apiVersion: v1\nkind: Pod\nmetadata:\n  name: other\nspec: {}\n")
	require.Equal(t, http.StatusUnprocessableEntity, code, body)
	assert.Equal(t, "spec.containers", decodeStatus(t, body).Details.Causes[0].Field)

	// Bad applied configurations: 400 saying what is wrong.
	for _, tc := range []struct{ body, want string }{
		{"kind: Pod\nmetadata: {name: web}\nspec: {containers: [{name: c, image: x}]}\n", `apiVersion \"\", kind \"Pod\"`},
		{"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: web}\n", `kind \"ConfigMap\"`},
		{"apiVersion: v1\nkind: Pod\nmetadata: {name: other}\nspec: {containers: [{name: c, image: x}]}\n", "does not match the name on the URL"},
		{"apiVersion: v1\nkind: Pod\nmetadata: {name: web, namespace: prod}\nspec: {containers: [{name: c, image: x}]}\n", "does not match the namespace on the URL"},
		{"apiVersion: v1\nkind: Pod\nmetadata: {name: web}\nspec: {bogus: 1}\n", `unknown field \"spec.bogus\"`},
		{"apiVersion: v1\nkind: Pod\nmetadata: {name: web}\nspec: {containers: [{name: c, image: x}]}\n---\napiVersion: v1\nkind: Pod\n", "2 YAML documents"},
		{"", "empty"},
	} {
		code, body, _ = request(t, http.MethodPatch, url, applyType, tc.body)
		assert.Equal(t, http.StatusBadRequest, code, "%q: %s", tc.body, body)
		assert.Contains(t, body, tc.want, tc.body)
	}

	// A dry run is refused, not carried out.
	code, body, _ = request(t, http.MethodPatch, url+"&dryRun=All", applyType, appliedPod("busybox:2"))
	assert.Equal(t, http.StatusBadRequest, code, body)
	assert.Contains(t, body, "dryRun is not supported")
	assert.Len(t, b.updated, 2, "nothing changed")

	// Other patch types name the apply type among those taken.
	code, body, _ = request(t, http.MethodPatch, url, "application/json", `{}`)
	assert.Equal(t, http.StatusUnsupportedMediaType, code, body)
	assert.Contains(t, body, "application/apply-patch+yaml (kubectl apply --server-side)")
}

// TestApplyPod_WithoutUpdater: a backend that cannot change a pod still
// creates one and answers an unchanged one; a change is refused (422,
// naming the changed field).
func TestApplyPod_WithoutUpdater(t *testing.T) {
	_, srv := newTestServer(t, api.Options{})
	url := srv.URL + "/api/v1/namespaces/default/pods/web?fieldManager=kubectl"
	code, body, _ := request(t, http.MethodPatch, url, applyType, appliedPod("busybox"))
	require.Equal(t, http.StatusCreated, code, body)
	code, body, _ = request(t, http.MethodPatch, url, applyType, appliedPod("nginx"))
	assert.Equal(t, http.StatusUnprocessableEntity, code, body)
	assert.Contains(t, body, "spec.containers[0].image")
}

// TestApplyConfigMapAndSecret: server-side apply creates, answers an
// unchanged one without an update, removes the keys the applied
// configuration omits, keeps an immutable one's data, and folds a
// Secret's stringData into data.
func TestApplyConfigMapAndSecret(t *testing.T) {
	b, srv := newTestServer(t, api.Options{})
	url := srv.URL + "/api/v1/namespaces/prod/configmaps/settings?fieldManager=kubectl"
	cm := func(extra string) string {
		return "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\n  labels: {app: web}\ndata:\n  a: \"1\"\n" + extra
	}
	code, body, _ := request(t, http.MethodPatch, url, applyType, cm("  b: \"2\"\n"))
	require.Equal(t, http.StatusCreated, code, body)
	assert.Contains(t, b.Calls(), "CreateConfigMap prod/settings")
	code, body, _ = request(t, http.MethodPatch, url, applyType, cm("  b: \"2\"\n"))
	require.Equal(t, http.StatusOK, code, body)
	assert.NotContains(t, b.Calls(), "UpdateConfigMap prod/settings", "unchanged")

	code, body, _ = request(t, http.MethodPatch, url, applyType, "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\ndata:\n  a: \"1\"\n")
	require.Equal(t, http.StatusOK, code, body)
	assert.Contains(t, b.Calls(), "UpdateConfigMap prod/settings")
	var got v1.ConfigMap
	require.NoError(t, json.Unmarshal([]byte(body), &got))
	assert.Equal(t, map[string]string{"a": "1"}, got.Data, "b removed")
	assert.Empty(t, got.Labels, "labels removed")
	assert.Equal(t, "ConfigMap", got.Kind)
	assert.Empty(t, got.ManagedFields)
	code, body, _ = request(t, http.MethodGet, srv.URL+"/api/v1/namespaces/prod/configmaps/settings", "", "")
	require.Equal(t, http.StatusOK, code, body)
	assert.NotContains(t, body, `"b":`)

	// Immutable: the data stays, as on the patch path.
	frozen := srv.URL + "/api/v1/namespaces/prod/configmaps/frozen"
	code, body, _ = request(t, http.MethodPatch, frozen, applyType, "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: frozen}\nimmutable: true\ndata: {a: \"1\"}\n")
	require.Equal(t, http.StatusCreated, code, body)
	code, body, _ = request(t, http.MethodPatch, frozen, applyType, "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: frozen}\nimmutable: true\ndata: {a: \"2\"}\n")
	require.Equal(t, http.StatusUnprocessableEntity, code, body)
	st := decodeStatus(t, body)
	assert.Equal(t, metav1.StatusReasonInvalid, st.Reason)
	assert.Equal(t, "data", st.Details.Causes[0].Field)

	secret := srv.URL + "/api/v1/namespaces/prod/secrets/creds"
	code, body, _ = request(t, http.MethodPatch, secret, applyType, "apiVersion: v1\nkind: Secret\nmetadata: {name: creds}\nstringData: {user: a, pass: b}\n")
	require.Equal(t, http.StatusCreated, code, body)
	code, body, _ = request(t, http.MethodPatch, secret, applyType, "apiVersion: v1\nkind: Secret\nmetadata: {name: creds}\nstringData: {user: a, pass: b}\n")
	require.Equal(t, http.StatusOK, code, body)
	assert.NotContains(t, b.Calls(), "UpdateSecret prod/creds", "stringData equal to the stored data: unchanged")
	code, body, _ = request(t, http.MethodPatch, secret, applyType, "apiVersion: v1\nkind: Secret\nmetadata: {name: creds}\nstringData: {user: c}\n")
	require.Equal(t, http.StatusOK, code, body)
	var sec v1.Secret
	require.NoError(t, json.Unmarshal([]byte(body), &sec))
	assert.Equal(t, map[string][]byte{"user": []byte("c")}, sec.Data, "pass removed")
	assert.Equal(t, v1.SecretTypeOpaque, sec.Type, "an omitted type stays")
	code, body, _ = request(t, http.MethodPatch, secret, applyType, "apiVersion: v1\nkind: Secret\nmetadata: {name: creds}\ntype: kubernetes.io/tls\n")
	require.Equal(t, http.StatusUnprocessableEntity, code, body)
	assert.Equal(t, "type", decodeStatus(t, body).Details.Causes[0].Field)
}
