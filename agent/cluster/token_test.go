package cluster

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	authenticationv1 "k8s.io/api/authentication/v1"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
)

// tokenServer answers the TokenRequest endpoint with answer and records
// the request.
type tokenServer struct {
	method, path, contentType, auth string
	body                            authenticationv1.TokenRequest
	raw                             map[string]any
	answer                          func(w http.ResponseWriter, req authenticationv1.TokenRequest)
}

func (s *tokenServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.method, s.path, s.contentType, s.auth = r.Method, r.URL.Path, r.Header.Get("Content-Type"), r.Header.Get("Authorization")
	b, _ := io.ReadAll(r.Body)
	_ = json.Unmarshal(b, &s.body)
	_ = json.Unmarshal(b, &s.raw)
	s.answer(w, s.body)
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}

func tokenPod() *v1.Pod {
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "shop", UID: "0b6d3a0c-6a43-4bd4-9a55-0c3c8a5e1f10"},
		Spec:       v1.PodSpec{ServiceAccountName: "robot"},
	}
}

func TestTokenSource_RequestsABoundToken(t *testing.T) {
	expires := time.Date(2026, 11, 25, 2, 0, 7, 0, time.UTC)
	srv := &tokenServer{answer: func(w http.ResponseWriter, req authenticationv1.TokenRequest) {
		req.APIVersion, req.Kind = "authentication.k8s.io/v1", "TokenRequest"
		req.Status = authenticationv1.TokenRequestStatus{Token: "eyJhbGciOi.payload.sig", ExpirationTimestamp: metav1.NewTime(expires)}
		writeJSON(w, http.StatusCreated, req)
	}}
	hs := httptest.NewServer(srv)
	defer hs.Close()
	// The node's config as NewClient makes it: protobuf is asked for, the
	// token source still speaks JSON.
	ts := newTestTokenSource(t, &rest.Config{Host: hs.URL, BearerToken: "node-token", ContentConfig: rest.ContentConfig{ContentType: "application/vnd.kubernetes.protobuf"}})

	exp := int64(3607)
	for _, tc := range []struct {
		name      string
		audience  string
		audiences any
	}{
		{"the API server's audience", "", nil},
		{"an audience", "vault", []any{"vault"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tok, gotExp, err := ts.Token(t.Context(), tokenPod(), &v1.ServiceAccountTokenProjection{Audience: tc.audience, ExpirationSeconds: &exp, Path: "token"})
			require.NoError(t, err)
			require.Equal(t, "eyJhbGciOi.payload.sig", string(tok))
			require.True(t, expires.Equal(gotExp), "expires %s", gotExp)
			require.Equal(t, http.MethodPost, srv.method)
			require.Equal(t, "/api/v1/namespaces/shop/serviceaccounts/robot/token", srv.path)
			require.Equal(t, "application/json", srv.contentType)
			require.Equal(t, "Bearer node-token", srv.auth)
			require.Equal(t, "authentication.k8s.io/v1", srv.raw["apiVersion"])
			require.Equal(t, "TokenRequest", srv.raw["kind"])
			spec := srv.raw["spec"].(map[string]any)
			require.Equal(t, tc.audiences, spec["audiences"], "no audiences: the API server's default")
			require.Equal(t, float64(3607), spec["expirationSeconds"])
			require.Equal(t, &authenticationv1.BoundObjectReference{APIVersion: "v1", Kind: "Pod", Name: "web", UID: "0b6d3a0c-6a43-4bd4-9a55-0c3c8a5e1f10"},
				srv.body.Spec.BoundObjectRef)
		})
	}
}

func TestTokenSource_ErrorsSayWhatToDo(t *testing.T) {
	gr := schema.GroupResource{Resource: "serviceaccounts"}
	for _, tc := range []struct {
		name   string
		status *apierrors.StatusError
		is     func(error) bool
		want   []string
	}{
		{"forbidden", apierrors.NewForbidden(gr, "robot", nil), apierrors.IsForbidden, []string{
			`serviceaccounts "robot" is forbidden`,
			`the node's credentials need "create serviceaccounts/token" for the pods bound to it`,
			"system:node ClusterRole with the Node authorizer",
		}},
		{"no service account", apierrors.NewNotFound(gr, "robot"), apierrors.IsNotFound, []string{
			`serviceaccounts "robot" not found`,
			"kubectl create serviceaccount -n shop robot",
		}},
		{"unauthorized", apierrors.NewUnauthorized("no"), apierrors.IsUnauthorized, []string{
			"check the client certificate or token in the kubeconfig",
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			hs := httptest.NewServer(&tokenServer{answer: func(w http.ResponseWriter, _ authenticationv1.TokenRequest) {
				st := tc.status.Status()
				st.APIVersion, st.Kind = "v1", "Status"
				writeJSON(w, int(st.Code), st)
			}})
			defer hs.Close()
			ts := newTestTokenSource(t, &rest.Config{Host: hs.URL})
			exp := int64(600)
			_, _, err := ts.Token(t.Context(), tokenPod(), &v1.ServiceAccountTokenProjection{ExpirationSeconds: &exp, Path: "token"})
			require.Error(t, err)
			require.True(t, tc.is(err), "the API error is kept: %v", err)
			for _, w := range tc.want {
				require.Contains(t, err.Error(), w)
			}
		})
	}
}

func TestTokenSource_EmptyToken(t *testing.T) {
	hs := httptest.NewServer(&tokenServer{answer: func(w http.ResponseWriter, req authenticationv1.TokenRequest) {
		req.APIVersion, req.Kind = "authentication.k8s.io/v1", "TokenRequest"
		writeJSON(w, http.StatusCreated, req)
	}})
	defer hs.Close()
	ts := newTestTokenSource(t, &rest.Config{Host: hs.URL})
	exp := int64(600)
	_, _, err := ts.Token(t.Context(), tokenPod(), &v1.ServiceAccountTokenProjection{ExpirationSeconds: &exp, Path: "token"})
	require.EqualError(t, err, "the API server answered the token request without a token")
}

// newTestTokenSource is the token source of the node client NewClient
// would build from cfg.
func newTestTokenSource(t *testing.T, cfg *rest.Config) *TokenSource {
	t.Helper()
	api, err := newRESTAPI(cfg)
	require.NoError(t, err)
	ts, err := NewTokenSource(api)
	require.NoError(t, err)
	return ts
}
