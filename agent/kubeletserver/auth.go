package kubeletserver

import (
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"

	authnv1 "k8s.io/api/authentication/v1"
	authzv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
)

// User is an authenticated caller.
type User struct {
	Name   string
	UID    string
	Groups []string
	Extra  map[string]authzv1.ExtraValue
}

// Reviewer asks the API server about a caller: who a bearer token belongs
// to (TokenReview) and whether a user may do something (SubjectAccessReview).
type Reviewer interface {
	ReviewToken(ctx context.Context, review *authnv1.TokenReview) (*authnv1.TokenReview, error)
	ReviewAccess(ctx context.Context, review *authzv1.SubjectAccessReview) (*authzv1.SubjectAccessReview, error)
}

// errUnauthenticated means the request carries no credentials this server
// accepts: 401.
var errUnauthenticated = errors.New("unauthorized")

// The anonymous user and group, as the API server and the kubelet name
// them (k8s.io/apiserver's user.Anonymous and user.AllUnauthenticated).
const (
	anonymousUser  = "system:anonymous"
	anonymousGroup = "system:unauthenticated"
	// authenticatedGroup is every authenticated user's group.
	authenticatedGroup = "system:authenticated"
)

// authenticator decides who sent a request: the subject of a client
// certificate that chains to the client CA (CN the user, O the groups), or
// else the user of a bearer token the API server's TokenReview accepts.
// A request with no credentials at all is anonymous: refused, or with
// --anonymous-auth the user system:anonymous. Credentials that fail (a
// refused token, a certificate of another CA) are never anonymous, as in
// the kubelet (a union authenticator that fails on error before the
// anonymous one).
type authenticator struct {
	// anonymous lets requests without credentials in as anonymousUser.
	anonymous bool
	// clientCAs verifies client certificates; nil accepts none.
	clientCAs *x509.CertPool
	// reviewer checks bearer tokens; nil accepts none.
	reviewer Reviewer
	// audiences are the TokenReview's spec.audiences; a token is accepted
	// only if the review's status.audiences names one of them. Empty: the
	// API server's own audiences (its --api-audiences), as the kubelet.
	audiences []string
	// tokens caches authenticated tokens' users, and refused caches the
	// tokens the API server refused, both keyed by the token's SHA-256.
	// Apart, so that a flood of bad tokens filling refused never drops the
	// users of good ones.
	tokens  *ttlCache[*User]
	refused *ttlCache[struct{}]
}

// authenticate returns the request's user, errUnauthenticated, or another
// error when the TokenReview itself failed.
func (a *authenticator) authenticate(r *http.Request) (*User, error) {
	if u := a.certUser(r); u != nil {
		return u, nil
	}
	token, ok, err := requestToken(r)
	if err != nil {
		return nil, errUnauthenticated
	}
	if !ok && a.anonymous && !a.presentedCert(r) {
		return &User{Name: anonymousUser, Groups: []string{anonymousGroup}}, nil
	}
	if !ok || a.reviewer == nil {
		return nil, errUnauthenticated
	}
	sum := sha256.Sum256([]byte(token))
	key := hex.EncodeToString(sum[:])
	if u, ok := a.tokens.get(key); ok {
		stripToken(r)
		return u, nil
	}
	if _, ok := a.refused.get(key); ok {
		return nil, errUnauthenticated
	}
	spec := authnv1.TokenReviewSpec{Token: token, Audiences: slices.Clone(a.audiences)}
	res, err := a.reviewer.ReviewToken(r.Context(), &authnv1.TokenReview{Spec: spec})
	if err != nil {
		// Not cached, as the kubelet's (cacheErrs false): the API server
		// being away says nothing about the token.
		return nil, fmt.Errorf("token review: %w", err)
	}
	if !res.Status.Authenticated || !a.audienceAccepted(res.Status.Audiences) {
		a.refused.put(key, struct{}{}, refusedTokenCacheTTL)
		return nil, errUnauthenticated
	}
	ui := res.Status.User
	u := &User{Name: ui.Username, UID: ui.UID, Groups: ui.Groups}
	if len(ui.Extra) > 0 {
		u.Extra = make(map[string]authzv1.ExtraValue, len(ui.Extra))
		for k, v := range ui.Extra {
			u.Extra[k] = authzv1.ExtraValue(v)
		}
	}
	u.Groups = withAuthenticatedGroup(u.Groups)
	a.tokens.put(key, u, tokenCacheTTL)
	stripToken(r)
	return u, nil
}

// withAuthenticatedGroup adds system:authenticated to an authenticated
// user's groups, as the API server's authenticated-group adder does for the
// kubelet (so RBAC bindings to that group apply to certificate users too).
func withAuthenticatedGroup(groups []string) []string {
	if slices.Contains(groups, authenticatedGroup) {
		return groups
	}
	return append(slices.Clone(groups), authenticatedGroup)
}

// audienceAccepted reports whether a review's status.audiences names one
// of the audiences asked for (always, when none was asked for). The API
// server checks the token against spec.audiences itself; this is
// k8s.io/apiserver's webhook token authenticator's second check, for an
// authenticator that answers for another audience than it was asked.
func (a *authenticator) audienceAccepted(got []string) bool {
	if len(a.audiences) == 0 {
		return true
	}
	for _, g := range got {
		if slices.Contains(a.audiences, g) {
			return true
		}
	}
	return false
}

// certUser is the user of the request's client certificate when it chains
// to the client CA and may authenticate clients (nil otherwise: the request
// may still carry a token).
func (a *authenticator) certUser(r *http.Request) *User {
	if a.clientCAs == nil || r.TLS == nil || len(r.TLS.PeerCertificates) == 0 {
		return nil
	}
	leaf := r.TLS.PeerCertificates[0]
	inter := x509.NewCertPool()
	for _, c := range r.TLS.PeerCertificates[1:] {
		inter.AddCert(c)
	}
	if _, err := leaf.Verify(x509.VerifyOptions{
		Roots:         a.clientCAs,
		Intermediates: inter,
		KeyUsages:     []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}); err != nil {
		return nil
	}
	if leaf.Subject.CommonName == "" {
		return nil
	}
	return &User{Name: leaf.Subject.CommonName, Groups: withAuthenticatedGroup(leaf.Subject.Organization)}
}

// presentedCert reports whether the request carries a client certificate
// the server would check (one that fails is an error, not anonymous).
func (a *authenticator) presentedCert(r *http.Request) bool {
	return a.clientCAs != nil && r.TLS != nil && len(r.TLS.PeerCertificates) > 0
}

// wsTokenPrefix marks a bearer token in a WebSocket request's
// Sec-WebSocket-Protocol list (base64url, unpadded), as browsers cannot set
// an Authorization header on a WebSocket: k8s.io/apiserver's
// websocket protocol authenticator, which the kubelet's authenticator
// includes.
const wsTokenPrefix = "base64url.bearer.authorization.k8s.io."

// requestToken is the request's bearer token: from the Authorization
// header, else, on a WebSocket upgrade, from its Sec-WebSocket-Protocol
// list. An error is a token entry that cannot be one (an empty or
// undecodable protocol token): such a request is refused, never anonymous.
func requestToken(r *http.Request) (string, bool, error) {
	if t, ok := bearerToken(r); ok {
		return t, true, nil
	}
	if !isWebSocket(r) {
		return "", false, nil
	}
	for _, v := range r.Header.Values("Sec-WebSocket-Protocol") {
		for _, p := range strings.Split(v, ",") {
			enc, ok := strings.CutPrefix(strings.TrimSpace(p), wsTokenPrefix)
			if !ok {
				continue
			}
			b, err := base64.RawURLEncoding.DecodeString(enc)
			if err != nil || len(b) == 0 {
				return "", false, errUnauthenticated
			}
			return string(b), true, nil
		}
	}
	return "", false, nil
}

// isWebSocket reports whether r asks to upgrade to a WebSocket.
func isWebSocket(r *http.Request) bool {
	return strings.EqualFold(r.Header.Get("Upgrade"), "websocket") &&
		slices.ContainsFunc(strings.Split(r.Header.Get("Connection"), ","), func(s string) bool {
			return strings.EqualFold(strings.TrimSpace(s), "upgrade")
		})
}

// stripToken removes an accepted token from the request, as the kubelet's
// authenticators do, so that no handler behind (the streaming proxy to the
// runtime) passes the caller's credential on.
func stripToken(r *http.Request) {
	r.Header.Del("Authorization")
	var keep []string
	for _, v := range r.Header.Values("Sec-WebSocket-Protocol") {
		for _, p := range strings.Split(v, ",") {
			if p = strings.TrimSpace(p); p != "" && !strings.HasPrefix(p, wsTokenPrefix) {
				keep = append(keep, p)
			}
		}
	}
	r.Header.Del("Sec-WebSocket-Protocol")
	if len(keep) > 0 {
		r.Header.Set("Sec-WebSocket-Protocol", strings.Join(keep, ","))
	}
}

// bearerToken is the token of an "Authorization: Bearer" header.
func bearerToken(r *http.Request) (string, bool) {
	h := strings.TrimSpace(r.Header.Get("Authorization"))
	scheme, token, ok := strings.Cut(h, " ")
	if !ok || !strings.EqualFold(scheme, "bearer") {
		return "", false
	}
	token = strings.TrimSpace(token)
	return token, token != ""
}

// attributes is what a request asks to do to the node, in the terms of a
// SubjectAccessReview's ResourceAttributes: one verb, and the nodes
// subresources that each allow it, asked in order until one does.
type attributes struct {
	Verb         string
	Subresources []string
}

// requestAttributes maps a request to the kubelet's authorization
// attributes (pkg/kubelet/server/auth.go, with KubeletFineGrainedAuthz,
// GA and locked on since 1.36): the verb from the HTTP method, the nodes
// subresource from the path: /pods and /runningpods/ pods, /healthz
// healthz, /configz configz, each then proxy; /stats stats, /metrics
// metrics, /logs log; proxy for everything else, exec and logs of
// containers included.
//
// One deviation: exec, attach and port-forward are always verb create,
// whatever the method. The kubelet takes the method's verb, so a
// WebSocket upgrade (a GET) needs only get on nodes/proxy, which
// monitoring agents are commonly granted to scrape /metrics and /pods:
// with it they run commands in every container of the node, root
// included (kubernetes/kubernetes#136550 proposed this fix; upstream chose
// to document the risk). The API server itself, which is what kubectl
// exec goes through, holds create on nodes/proxy (system:kubelet-api-admin)
// and is not affected.
func requestAttributes(r *http.Request) attributes {
	a := attributes{Verb: verbFor(r.Method)}
	p := r.URL.Path
	under := func(prefix string) bool { return p == prefix || strings.HasPrefix(p, prefix+"/") }
	if under("/exec") || under("/attach") || under("/portForward") {
		a.Verb = "create"
	}
	switch {
	case under("/pods"), under("/runningpods"):
		a.Subresources = append(a.Subresources, "pods")
	case under("/healthz"):
		a.Subresources = append(a.Subresources, "healthz")
	case under("/configz"):
		a.Subresources = append(a.Subresources, "configz")
	}
	switch {
	case under("/stats"):
		a.Subresources = append(a.Subresources, "stats")
	case under("/metrics"):
		a.Subresources = append(a.Subresources, "metrics")
	case under("/logs"):
		a.Subresources = append(a.Subresources, "log")
	default:
		a.Subresources = append(a.Subresources, "proxy")
	}
	return a
}

// verbFor is the API verb of an HTTP method.
func verbFor(method string) string {
	switch method {
	case http.MethodGet, http.MethodHead:
		return "get"
	case http.MethodPost:
		return "create"
	case http.MethodPut:
		return "update"
	case http.MethodPatch:
		return "patch"
	case http.MethodDelete:
		return "delete"
	}
	return ""
}

// accessReview is the SubjectAccessReview asking whether u may do verb to
// the node's subresource.
func accessReview(u *User, node, verb, subresource string) *authzv1.SubjectAccessReview {
	return &authzv1.SubjectAccessReview{Spec: authzv1.SubjectAccessReviewSpec{
		User:   u.Name,
		UID:    u.UID,
		Groups: u.Groups,
		Extra:  u.Extra,
		ResourceAttributes: &authzv1.ResourceAttributes{
			Verb:        verb,
			Resource:    "nodes",
			Subresource: subresource,
			Name:        node,
		},
	}}
}

// decision is a SubjectAccessReview's answer.
type decision struct {
	allowed bool
	reason  string
}

// reviewKey is the cache key of a SubjectAccessReview: everything its
// answer depends on.
func reviewKey(sar *authzv1.SubjectAccessReview) string {
	b, _ := json.Marshal(sar.Spec)
	return string(b)
}

// restReviewer is a Reviewer over the API server's REST API: the two POSTs
// client-go's generated clients would make, without linking them.
type restReviewer struct {
	host   string
	client *http.Client
}

// NewReviewer returns a Reviewer that posts TokenReviews and
// SubjectAccessReviews with cfg's credentials (the node's own, which the
// Node authorizer allows to create both).
func NewReviewer(cfg *rest.Config) (Reviewer, error) {
	hc, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return nil, fmt.Errorf("review client: %w", err)
	}
	return &restReviewer{host: strings.TrimSuffix(cfg.Host, "/"), client: hc}, nil
}

func (c *restReviewer) ReviewToken(ctx context.Context, review *authnv1.TokenReview) (*authnv1.TokenReview, error) {
	review.APIVersion, review.Kind = "authentication.k8s.io/v1", "TokenReview"
	out := &authnv1.TokenReview{}
	return out, c.post(ctx, "/apis/authentication.k8s.io/v1/tokenreviews", review, out)
}

func (c *restReviewer) ReviewAccess(ctx context.Context, review *authzv1.SubjectAccessReview) (*authzv1.SubjectAccessReview, error) {
	review.APIVersion, review.Kind = "authorization.k8s.io/v1", "SubjectAccessReview"
	out := &authzv1.SubjectAccessReview{}
	return out, c.post(ctx, "/apis/authorization.k8s.io/v1/subjectaccessreviews", review, out)
}

// post sends in as JSON and decodes a 201/200 answer into out.
func (c *restReviewer) post(ctx context.Context, path string, in, out any) error {
	body, err := json.Marshal(in)
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.host+path, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	resp, err := c.client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusCreated && resp.StatusCode != http.StatusOK {
		var st metav1.Status
		if json.Unmarshal(b, &st) == nil && st.Message != "" {
			return fmt.Errorf("POST %s: %d: %s", path, resp.StatusCode, st.Message)
		}
		return fmt.Errorf("POST %s: %d: %s", path, resp.StatusCode, bytes.TrimSpace(b))
	}
	return json.Unmarshal(b, out)
}
