package kubeletserver

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	authnv1 "k8s.io/api/authentication/v1"
	"k8s.io/client-go/rest"
	clocktesting "k8s.io/utils/clock/testing"
)

// audienceAPIServer answers TokenReviews as the API server does for
// service account tokens: a token is valid for the audiences it was minted
// for, the review checks it against spec.audiences or, when none are
// given, the API server's own (apiAudiences), and status.audiences is
// the intersection. A token in lax is answered as an authenticator that
// ignores the audiences asked for would: authenticated, for its own
// audiences.
type audienceAPIServer struct {
	apiAudiences []string
	tokens       map[string][]string // token -> audiences it was minted for
	lax          map[string]bool
	mu           sync.Mutex
	asked        [][]string // spec.audiences of each review
}

func (f *audienceAPIServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var tr authnv1.TokenReview
	if r.URL.Path != "/apis/authentication.k8s.io/v1/tokenreviews" || json.NewDecoder(r.Body).Decode(&tr) != nil {
		http.Error(w, "bad request", http.StatusBadRequest)
		return
	}
	f.mu.Lock()
	f.asked = append(f.asked, tr.Spec.Audiences)
	f.mu.Unlock()
	want := tr.Spec.Audiences
	if len(want) == 0 {
		want = f.apiAudiences
	}
	minted := f.tokens[tr.Spec.Token]
	var both []string
	for _, a := range minted {
		if slices.Contains(want, a) {
			both = append(both, a)
		}
	}
	switch {
	case f.lax[tr.Spec.Token]:
		tr.Status = authnv1.TokenReviewStatus{Authenticated: true, User: authnv1.UserInfo{Username: "mallory"}, Audiences: minted}
	case len(both) > 0:
		tr.Status = authnv1.TokenReviewStatus{Authenticated: true, User: authnv1.UserInfo{Username: "alice"}, Audiences: both}
	default:
		tr.Status = authnv1.TokenReviewStatus{Error: "[invalid bearer token, token audiences " + tr.Spec.Token + " is invalid for the target audiences]"}
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusCreated)
	_ = json.NewEncoder(w).Encode(tr)
}

// authenticatorFor is an authenticator whose reviews go to handler.
func authenticatorFor(t *testing.T, handler http.Handler, audiences []string, clk *clocktesting.FakePassiveClock) *authenticator {
	t.Helper()
	srv := httptest.NewServer(handler)
	t.Cleanup(srv.Close)
	reviewer, err := NewReviewer(&rest.Config{Host: srv.URL})
	require.NoError(t, err)
	return &authenticator{reviewer: reviewer, audiences: audiences,
		tokens: newTTLCache[*User](clk), refused: newTTLCache[struct{}](clk)}
}

func bearer(token string) *http.Request {
	r := httptest.NewRequest(http.MethodGet, "/pods", nil)
	r.Header.Set("Authorization", "Bearer "+token)
	return r
}

// TestAuthenticator_TokenAudiences sends tokens minted for the API server
// and for another audience (a token a pod got for a vault, say, with
// `kubectl create token --audience vault`): only the API server's is
// accepted, whether the node names the audience (--token-audiences) or
// leaves it to the API server (the kubelet's default). With an audience
// set, the node also refuses a review that answers for another audience.
func TestAuthenticator_TokenAudiences(t *testing.T) {
	const apiAud = "https://kubernetes.default.svc.cluster.local"
	newAPI := func() *audienceAPIServer {
		return &audienceAPIServer{
			apiAudiences: []string{apiAud},
			tokens:       map[string][]string{"api-token": {apiAud}, "vault-token": {"vault"}, "lying-token": {"vault"}},
			lax:          map[string]bool{"lying-token": true},
		}
	}
	clk := clocktesting.NewFakePassiveClock(time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC))

	t.Run("audience set", func(t *testing.T) {
		api := newAPI()
		a := authenticatorFor(t, api, []string{apiAud}, clk)
		u, err := a.authenticate(bearer("api-token"))
		require.NoError(t, err)
		require.Equal(t, "alice", u.Name)
		_, err = a.authenticate(bearer("vault-token"))
		require.ErrorIs(t, err, errUnauthenticated, "a token minted for another audience")
		_, err = a.authenticate(bearer("lying-token"))
		require.ErrorIs(t, err, errUnauthenticated, "a review answering for another audience than asked")
		require.Equal(t, [][]string{{apiAud}, {apiAud}, {apiAud}}, api.asked, "spec.audiences is the audience set")
	})
	t.Run("kubelet default: the API server's audiences", func(t *testing.T) {
		api := newAPI()
		a := authenticatorFor(t, api, nil, clk)
		_, err := a.authenticate(bearer("api-token"))
		require.NoError(t, err)
		_, err = a.authenticate(bearer("vault-token"))
		require.ErrorIs(t, err, errUnauthenticated, "the API server checks the token against its own audiences")
		require.Equal(t, [][]string{nil, nil}, api.asked, "no spec.audiences, as the kubelet")
	})
}

// TestAuthenticator_RefusedTokensCached checks the failure cache: a
// refused token is reviewed once per 2 minutes however often it is sent,
// while a review that failed (the API server unreachable) is not cached.
func TestAuthenticator_RefusedTokensCached(t *testing.T) {
	clk := clocktesting.NewFakePassiveClock(time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC))
	var mu sync.Mutex
	reviews, down := 0, false
	api := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		reviews++
		if down {
			http.Error(w, `{"kind":"Status","message":"etcd unavailable"}`, http.StatusServiceUnavailable)
			return
		}
		var tr authnv1.TokenReview
		_ = json.NewDecoder(r.Body).Decode(&tr)
		w.WriteHeader(http.StatusCreated)
		_ = json.NewEncoder(w).Encode(tr) // never authenticated
	})
	count := func() int { mu.Lock(); defer mu.Unlock(); return reviews }
	a := authenticatorFor(t, api, nil, clk)

	for range 100 {
		_, err := a.authenticate(bearer("bad"))
		require.ErrorIs(t, err, errUnauthenticated)
	}
	require.Equal(t, 1, count(), "100 requests with one bad token: one review")
	clk.SetTime(clk.Now().Add(refusedTokenCacheTTL))
	_, err := a.authenticate(bearer("bad"))
	require.ErrorIs(t, err, errUnauthenticated)
	require.Equal(t, 2, count(), "reviewed again after the failure TTL")

	mu.Lock()
	down = true
	mu.Unlock()
	for range 2 {
		_, err = a.authenticate(bearer("other"))
		require.Error(t, err)
		require.False(t, errors.Is(err, errUnauthenticated), "a failed review is an error (500), not a refusal: %v", err)
	}
	require.Equal(t, 4, count(), "a failed review is not cached")
}

// TestServer_TokenAudiencesConfigured checks that Config.TokenAudiences
// reaches the authenticator.
func TestServer_TokenAudiencesConfigured(t *testing.T) {
	s, err := New(Config{NodeName: "n", CertDir: filepath.Join(t.TempDir(), "pki"), TokenAudiences: []string{"a", "b"}}, Deps{})
	require.NoError(t, err)
	require.Equal(t, []string{"a", "b"}, s.authn.audiences)
}

// wsRequest is a WebSocket upgrade of /pods whose Sec-WebSocket-Protocol
// list carries protocols (e.g. a token entry beside "v5.channel.k8s.io").
func wsRequest(protocols ...string) *http.Request {
	r := httptest.NewRequest(http.MethodGet, "/pods", nil)
	r.Header.Set("Connection", "Upgrade")
	r.Header.Set("Upgrade", "websocket")
	r.Header.Set("Sec-WebSocket-Protocol", strings.Join(protocols, ", "))
	return r
}

func wsToken(token string) string {
	return wsTokenPrefix + base64.RawURLEncoding.EncodeToString([]byte(token))
}

// TestAuthenticator_WebSocketProtocolToken: a WebSocket client's bearer
// token in Sec-WebSocket-Protocol is a token like the Authorization
// header's, as the kubelet's authenticator reads it. The attack it closes:
// with --anonymous-auth, a refused token sent there was ignored and the
// request served as system:anonymous; now it is 401, as the kubelet
// answers a bad token. A good one authenticates its user.
func TestAuthenticator_WebSocketProtocolToken(t *testing.T) {
	const apiAud = "https://kubernetes.default.svc.cluster.local"
	clk := clocktesting.NewFakePassiveClock(time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC))
	api := &audienceAPIServer{apiAudiences: []string{apiAud}, tokens: map[string][]string{"api-token": {apiAud}}}
	a := authenticatorFor(t, api, nil, clk)
	a.anonymous = true

	_, err := a.authenticate(wsRequest("v5.channel.k8s.io", wsToken("bad-token")))
	require.ErrorIs(t, err, errUnauthenticated, "a refused token in the WebSocket protocols must not be anonymous")
	_, err = a.authenticate(wsRequest(wsTokenPrefix + "!!not-base64"))
	require.ErrorIs(t, err, errUnauthenticated, "an undecodable token entry")
	_, err = a.authenticate(wsRequest(wsTokenPrefix))
	require.ErrorIs(t, err, errUnauthenticated, "an empty token entry")

	r := wsRequest("v5.channel.k8s.io", wsToken("api-token"))
	u, err := a.authenticate(r)
	require.NoError(t, err)
	require.Equal(t, "alice", u.Name)
	require.Equal(t, "v5.channel.k8s.io", r.Header.Get("Sec-WebSocket-Protocol"), "the token entry is removed, the others kept")

	// Not an upgrade: the header is no credential, as for the kubelet.
	plain := httptest.NewRequest(http.MethodGet, "/pods", nil)
	plain.Header.Set("Sec-WebSocket-Protocol", wsToken("bad-token"))
	u, err = a.authenticate(plain)
	require.NoError(t, err)
	require.Equal(t, anonymousUser, u.Name)
}

// TestAuthenticator_AcceptedTokenNotPassedOn: once a token is accepted it
// is removed from the request, fresh or cached, so the handlers behind
// (the streaming proxy to the runtime's server) never forward the
// caller's credential, as the kubelet's bearer-token authenticator does.
func TestAuthenticator_AcceptedTokenNotPassedOn(t *testing.T) {
	const apiAud = "https://kubernetes.default.svc.cluster.local"
	clk := clocktesting.NewFakePassiveClock(time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC))
	api := &audienceAPIServer{apiAudiences: []string{apiAud}, tokens: map[string][]string{"api-token": {apiAud}}}
	a := authenticatorFor(t, api, nil, clk)
	for i, what := range []string{"reviewed", "cached"} {
		r := bearer("api-token")
		_, err := a.authenticate(r)
		require.NoError(t, err, what)
		require.Empty(t, r.Header.Get("Authorization"), "%s: the token is still on the request", what)
		require.Len(t, api.asked, 1, "%d: the second is the cache's", i)
	}
	// A refused one is left as it was (the request ends with 401 anyway).
	r := bearer("bad-token")
	_, err := a.authenticate(r)
	require.ErrorIs(t, err, errUnauthenticated)
	require.Equal(t, "Bearer bad-token", r.Header.Get("Authorization"))
}
