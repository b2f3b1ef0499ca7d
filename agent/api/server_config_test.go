package api_test

import (
	"context"
	"encoding/json"
	"net/http"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/minikubelet/minikubelet/agent/api"
)

func TestServer_ConfigMaps(t *testing.T) {
	b, srv := newTestServer(t, api.Options{})
	base := srv.URL + "/api/v1/namespaces/prod/configmaps"

	for _, tc := range []struct {
		name, ctype, body string
		code              int
		reason            metav1.StatusReason
		causeField        string
	}{
		{name: "yaml", ctype: "application/yaml", body: "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: settings}\ndata: {mode: fast}\n", code: http.StatusCreated},
		{name: "exists", ctype: "application/json", body: `{"metadata":{"name":"settings"}}`, code: http.StatusConflict, reason: metav1.StatusReasonAlreadyExists},
		{name: "unknown field", ctype: "application/json", body: `{"metadata":{"name":"x"},"dat":{}}`, code: http.StatusBadRequest, reason: metav1.StatusReasonBadRequest, causeField: "dat"},
		{name: "wrong kind", ctype: "application/json", body: `{"kind":"Secret","metadata":{"name":"x"}}`, code: http.StatusBadRequest, reason: metav1.StatusReasonBadRequest},
		{name: "other namespace", ctype: "application/json", body: `{"metadata":{"name":"x","namespace":"dev"}}`, code: http.StatusBadRequest, reason: metav1.StatusReasonBadRequest},
		{name: "invalid", ctype: "application/json", body: `{"metadata":{}}`, code: http.StatusUnprocessableEntity, reason: metav1.StatusReasonInvalid, causeField: "metadata.name"},
		{name: "empty", ctype: "application/json", body: ``, code: http.StatusBadRequest, reason: metav1.StatusReasonBadRequest},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, body, _ := request(t, http.MethodPost, base, tc.ctype, tc.body)
			require.Equal(t, tc.code, code, body)
			if tc.code == http.StatusCreated {
				var cm v1.ConfigMap
				require.NoError(t, json.Unmarshal([]byte(body), &cm))
				assert.Equal(t, "ConfigMap", cm.Kind)
				assert.Equal(t, "prod", cm.Namespace, "the path's namespace fills an empty one")
				return
			}
			st := decodeStatus(t, body)
			assert.Equal(t, tc.reason, st.Reason)
			if tc.causeField != "" {
				require.NotNil(t, st.Details, body)
				require.NotEmpty(t, st.Details.Causes, body)
				assert.Equal(t, tc.causeField, st.Details.Causes[0].Field)
			}
		})
	}

	code, body, _ := request(t, http.MethodGet, base+"/settings", "", "")
	require.Equal(t, http.StatusOK, code, body)
	var cm v1.ConfigMap
	require.NoError(t, json.Unmarshal([]byte(body), &cm))
	assert.Equal(t, "fast", cm.Data["mode"])

	code, body, _ = request(t, http.MethodGet, srv.URL+"/api/v1/configmaps", "", "")
	require.Equal(t, http.StatusOK, code, body)
	var l v1.ConfigMapList
	require.NoError(t, json.Unmarshal([]byte(body), &l))
	assert.Equal(t, "ConfigMapList", l.Kind)
	require.Len(t, l.Items, 1)
	assert.Equal(t, "ConfigMap", l.Items[0].Kind)

	code, body, _ = request(t, http.MethodGet, srv.URL+"/api/v1/namespaces/dev/configmaps", "", "")
	require.Equal(t, http.StatusOK, code, body)
	assert.Contains(t, body, `"items":[]`, "an empty list is [], not null")

	code, body, _ = request(t, http.MethodDelete, base+"/settings", "", "")
	require.Equal(t, http.StatusOK, code, body)
	var st metav1.Status
	require.NoError(t, json.Unmarshal([]byte(body), &st))
	assert.Equal(t, metav1.StatusSuccess, st.Status)
	assert.Equal(t, "configmaps", st.Details.Kind)

	for _, m := range []string{http.MethodGet, http.MethodDelete} {
		code, body, _ = request(t, m, base+"/settings", "", "")
		assert.Equal(t, http.StatusNotFound, code, body)
		assert.Equal(t, metav1.StatusReasonNotFound, decodeStatus(t, body).Reason)
	}

	b.SetStaticConfig("ConfigMap", "prod", "static")
	code, body, _ = request(t, http.MethodDelete, base+"/static", "", "")
	assert.Equal(t, http.StatusForbidden, code, body)
	code, _, hdr := request(t, http.MethodPut, base+"/static", "", "")
	assert.Equal(t, http.StatusMethodNotAllowed, code)
	assert.Equal(t, "DELETE, GET, PATCH", hdr.Get("Allow"))
}

// The Go client round-trips Secrets: stringData comes back merged into
// data, errors are StatusErrors.
func TestClient_Secrets(t *testing.T) {
	sock := filepath.Join(shortTempDir(t), "api.sock")
	serveUnix(t, sock)
	c := api.NewClient(sock)
	ctx := context.Background()

	got, err := c.CreateSecret(ctx, &v1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "creds"}, StringData: map[string]string{"password": "pw"}})
	require.NoError(t, err)
	assert.Equal(t, "default", got.Namespace)
	assert.Equal(t, v1.SecretTypeOpaque, got.Type)
	assert.Equal(t, []byte("pw"), got.Data["password"])

	_, err = c.CreateSecret(ctx, &v1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "creds"}})
	assert.True(t, apierrors.IsAlreadyExists(err), "%v", err)

	one, err := c.GetSecret(ctx, "default", "creds")
	require.NoError(t, err)
	assert.Equal(t, []byte("pw"), one.Data["password"])
	l, err := c.ListSecrets(ctx, "")
	require.NoError(t, err)
	require.Len(t, l.Items, 1)

	_, err = c.CreateConfigMap(ctx, &v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cm", Namespace: "prod"}})
	require.NoError(t, err)
	cms, err := c.ListConfigMaps(ctx, "prod")
	require.NoError(t, err)
	require.Len(t, cms.Items, 1)
	require.NoError(t, c.DeleteConfigMap(ctx, "prod", "cm"))
	_, err = c.GetConfigMap(ctx, "prod", "cm")
	assert.True(t, apierrors.IsNotFound(err), "%v", err)

	require.NoError(t, c.DeleteSecret(ctx, "default", "creds"))
	assert.True(t, apierrors.IsNotFound(c.DeleteSecret(ctx, "default", "creds")))
}
