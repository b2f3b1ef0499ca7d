package kubeletserver

import (
	"sync"
	"time"

	"k8s.io/utils/clock"
)

// The kubelet's cache lifetimes for the API server's answers
// (--authentication-token-webhook-cache-ttl, --authorization-webhook-cache-
// authorized-ttl and -unauthorized-ttl defaults): every `kubectl logs` or
// metrics scrape would otherwise cost one or two API calls.
//
// A refused token is cached too, for the same 2 minutes: the kubelet's
// token cache has one TTL for both answers (k8s.io/apiserver's
// DelegatingAuthenticatorConfig passes --authentication-token-webhook-
// cache-ttl as cache.New's successTTL and failureTTL). A caller repeating
// a bad token then costs one TokenReview per 2 minutes, not one per
// request. A review that failed (API server unreachable) is not cached.
const (
	tokenCacheTTL        = 2 * time.Minute
	refusedTokenCacheTTL = 2 * time.Minute
	allowedCacheTTL      = 5 * time.Minute
	deniedCacheTTL       = 30 * time.Second
	// maxCacheEntries bounds each cache; a full cache drops its expired
	// entries, and if that frees nothing, everything.
	maxCacheEntries = 4096
)

// ttlCache is a map whose entries expire. It is safe for concurrent use.
type ttlCache[V any] struct {
	clock clock.PassiveClock
	// mu guards entries.
	mu      sync.Mutex
	entries map[string]ttlEntry[V]
}

type ttlEntry[V any] struct {
	value   V
	expires time.Time
}

func newTTLCache[V any](clk clock.PassiveClock) *ttlCache[V] {
	return &ttlCache[V]{clock: clk, entries: make(map[string]ttlEntry[V])}
}

// get returns the unexpired value under key.
func (c *ttlCache[V]) get(key string) (V, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.entries[key]
	if !ok || !c.clock.Now().Before(e.expires) {
		var zero V
		return zero, false
	}
	return e.value, true
}

// put stores value under key for ttl.
func (c *ttlCache[V]) put(key string, value V, ttl time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.clock.Now()
	if len(c.entries) >= maxCacheEntries {
		for k, e := range c.entries {
			if !now.Before(e.expires) {
				delete(c.entries, k)
			}
		}
		if len(c.entries) >= maxCacheEntries {
			clear(c.entries)
		}
	}
	c.entries[key] = ttlEntry[V]{value: value, expires: now.Add(ttl)}
}
