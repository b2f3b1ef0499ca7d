package volume

// The service account token cache, the kubelet's token manager
// (pkg/kubelet/token): a token is requested from a TokenSource (in cluster
// mode, the API server's TokenRequest API: agent/cluster), cached per
// namespace, service account, audience, expiration and pod UID, handed out
// again until it is older than 80 % of its lifetime or 24 h, and dropped
// when the pod's volumes go. A refresh that fails while the old token is
// still valid keeps the old token (the next sync tries again). Writing the
// token into the pod's projected volume is token_files.go's; who may have
// one is the engine's admission (agent/token.go).

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
)

// TokenSource issues service account tokens; in cluster mode the API
// server's TokenRequest API (cluster.TokenSource).
type TokenSource interface {
	// Token requests a token of the pod's service account
	// (pod.Spec.ServiceAccountName in pod.Namespace) bound to the pod (its
	// name and UID), for src.Audience (empty: the API server's default
	// audiences) and src.ExpirationSeconds (always set: the agent defaults
	// it). expires is when the issuer says the token expires.
	Token(ctx context.Context, pod *v1.Pod, src *v1.ServiceAccountTokenProjection) (token []byte, expires time.Time, err error)
}

// The kubelet's token manager constants.
const (
	// defaultTokenExpirationSeconds is the API's default expirationSeconds.
	defaultTokenExpirationSeconds = 3600
	// tokenMaxAge is when a token is refreshed whatever its lifetime.
	tokenMaxAge = 24 * time.Hour
	// tokenRefreshFraction of its lifetime is when a token is refreshed.
	tokenRefreshFraction = 0.8
	// tokenRequestTimeout bounds one request: volume setup has no context
	// of its own, and a pod waits for its token anyway.
	tokenRequestTimeout = 15 * time.Second
	// tokenRetryAfter spaces the refresh attempts of a token that is still
	// valid after one failed: a pod syncing often while the API server is
	// away does not wait on a request at every sync.
	tokenRetryAfter = 10 * time.Second
)

// tokenKey identifies a cached token (the kubelet's keyFunc).
type tokenKey struct {
	namespace, serviceAccount, audience string
	expirationSeconds                   int64
	podUID                              types.UID
}

// tokenEntry is one cached token; fetch serialises the requests for its
// key (the containers of a pod set up its volumes concurrently). The other
// fields are guarded by tokenCache.mu.
type tokenEntry struct {
	fetch   sync.Mutex
	token   []byte
	fetched time.Time // when it was received (this node's clock)
	expires time.Time
	failed  time.Time // when a refresh last failed
}

// TokenCache is the agent's token manager; nil when there is no source.
type TokenCache struct {
	source TokenSource
	clock  clock.PassiveClock
	logger *slog.Logger

	mu      sync.Mutex
	entries map[tokenKey]*tokenEntry
}

// NewTokenCache returns the cache of a token source (nil for none).
func NewTokenCache(src TokenSource, clk clock.PassiveClock, logger *slog.Logger) *TokenCache {
	if src == nil {
		return nil
	}
	return &TokenCache{source: src, clock: clk, logger: logger, entries: map[tokenKey]*tokenEntry{}}
}

// Token returns the token of src for pod: the cached one while it is
// fresh, else a new one. A failed refresh keeps a token that has not
// expired yet (logged); without one the error says what to do.
func (c *TokenCache) Token(pod *v1.Pod, src *v1.ServiceAccountTokenProjection) ([]byte, error) {
	req := src.DeepCopy()
	if req.ExpirationSeconds == nil {
		exp := int64(defaultTokenExpirationSeconds)
		req.ExpirationSeconds = &exp
	}
	key := tokenKey{namespace: pod.Namespace, serviceAccount: pod.Spec.ServiceAccountName, audience: req.Audience,
		expirationSeconds: *req.ExpirationSeconds, podUID: pod.UID}
	now := c.clock.Now()
	c.mu.Lock()
	c.pruneLocked(now)
	e := c.entries[key]
	if e == nil {
		e = &tokenEntry{}
		c.entries[key] = e
	}
	c.mu.Unlock()

	e.fetch.Lock()
	defer e.fetch.Unlock()
	c.mu.Lock()
	cached, fetched, expires, failed := e.token, e.fetched, e.expires, e.failed
	c.mu.Unlock()
	now = c.clock.Now()
	if cached != nil && !TokenNeedsRefresh(now, fetched, expires) {
		return cached, nil
	}
	if cached != nil && now.Before(expires) && now.Sub(failed) < tokenRetryAfter {
		return cached, nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), tokenRequestTimeout)
	tok, exp, err := c.source.Token(ctx, pod, req)
	cancel()
	if err == nil && len(tok) == 0 {
		err = fmt.Errorf("the API server returned an empty token")
	}
	if err != nil {
		if cached != nil && now.Before(expires) {
			c.mu.Lock()
			e.failed = now
			c.mu.Unlock()
			c.logger.Warn("Service account token refresh failed; keeping the current token until it expires",
				"pod", pod.Namespace+"/"+pod.Name, "serviceAccount", key.serviceAccount, "expires", expires, "err", err)
			return cached, nil
		}
		return nil, fmt.Errorf("cannot get a token for service account %s/%s (the pod waits and retries): %w", key.namespace, key.serviceAccount, err)
	}
	c.mu.Lock()
	e.token, e.fetched, e.expires = tok, now, exp
	c.mu.Unlock()
	return tok, nil
}

// TokenNeedsRefresh is the kubelet's requiresRefresh: expired, older than
// 24 h, or older than 80 % of its lifetime. The lifetime is measured from
// when the token arrived, so a server that shortens the requested one
// (--service-account-max-token-expiration) is followed. (The kubelet adds
// up to 10 s of jitter; the agent's syncs are spread already.)
func TokenNeedsRefresh(now, fetched, expires time.Time) bool {
	if !now.Before(expires) {
		return true
	}
	age := now.Sub(fetched)
	ttl := expires.Sub(fetched)
	return age >= tokenMaxAge || age >= time.Duration(float64(ttl)*tokenRefreshFraction)
}

// pruneLocked drops the expired tokens (the kubelet's cleanup): a pod
// whose teardown never finished leaves nothing behind for long.
func (c *TokenCache) pruneLocked(now time.Time) {
	for k, e := range c.entries {
		if e.token != nil && !now.Before(e.expires) {
			delete(c.entries, k)
		}
	}
}

// Forget drops the tokens of a pod (its volumes are gone).
func (c *TokenCache) Forget(uid types.UID) {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for k := range c.entries {
		if k.podUID == uid {
			delete(c.entries, k)
		}
	}
}

// Size is the number of cached tokens (tests).
func (c *TokenCache) Size() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for _, e := range c.entries {
		if e.token != nil {
			n++
		}
	}
	return n
}
