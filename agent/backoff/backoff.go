package backoff

import (
	"sync"
	"time"
)

// Backoff is the kubelet's per-key exponential backoff (client-go
// flowcontrol.Backoff as the kubelet configures it, kubelet-facts §1):
// the first call to Next creates an entry holding the initial delay, each
// later call doubles it up to max. An entry expires when the reference time
// passed to Next lies more than expireAfter past the entry's last update
// (the kubelet's override: a container that ran 10 minutes starts over).
type Backoff struct {
	initial, max, expireAfter time.Duration

	mu      sync.Mutex
	entries map[string]*backoffEntry
}

type backoffEntry struct {
	delay      time.Duration
	lastUpdate time.Time
}

// New returns a back-off from initial to max whose entries expire
// expireAfter past their last update (0: twice max, client-go's default).
func New(initial, max, expireAfter time.Duration) *Backoff {
	if max < initial {
		initial = max
	}
	if expireAfter == 0 {
		expireAfter = 2 * max
	}
	return &Backoff{initial: initial, max: max, expireAfter: expireAfter, entries: map[string]*backoffEntry{}}
}

// InBackoffSince reports whether key is still backing off at now, counting
// from ref (a container's finish time), and the current delay.
func (b *Backoff) InBackoffSince(key string, ref, now time.Time) (bool, time.Duration) {
	b.mu.Lock()
	defer b.mu.Unlock()
	e, ok := b.entries[key]
	if !ok || b.expired(e, ref) {
		return false, 0
	}
	return now.Sub(ref) < e.delay, e.delay
}

// Next records an attempt at ref: a new or expired entry starts at the
// initial delay, an existing one doubles (capped).
func (b *Backoff) Next(key string, ref time.Time) {
	b.mu.Lock()
	defer b.mu.Unlock()
	e, ok := b.entries[key]
	if !ok || b.expired(e, ref) {
		b.entries[key] = &backoffEntry{delay: b.initial, lastUpdate: ref}
		return
	}
	e.delay = min(2*e.delay, b.max)
	e.lastUpdate = ref
}

// Reset forgets the keys (their pod was removed).
func (b *Backoff) Reset(keys ...string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, k := range keys {
		delete(b.entries, k)
	}
}

func (b *Backoff) expired(e *backoffEntry, ref time.Time) bool {
	return ref.Sub(e.lastUpdate) > b.expireAfter
}

// InBackoffSinceUpdate reports whether key is backing off at now, counting
// from its last update (the image pull rule).
func (b *Backoff) InBackoffSinceUpdate(key string, now time.Time) (bool, time.Duration) {
	b.mu.Lock()
	defer b.mu.Unlock()
	e, ok := b.entries[key]
	if !ok || now.Sub(e.lastUpdate) > b.expireAfter {
		return false, 0
	}
	return now.Sub(e.lastUpdate) < e.delay, e.lastUpdate.Add(e.delay).Sub(now)
}

// Len is the number of keys held (a leak check wants none once every pod
// is gone).
func (b *Backoff) Len() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.entries)
}

// TeardownRetry is the wait before the next attempt of a pod teardown that
// failed failures times in a row: 1 s, doubling, up to the kubelet's
// backOffPeriod of 10 s (its pod worker requeues a failed
// SyncTerminatingPod at 10–15 s, kubelet-facts §1.2). Sooner than the
// kubelet at first: a teardown cut short by a busy runtime mostly goes
// through at once. Never longer: a sandbox left behind holds its IP and
// its pod cgroup, and a capped 30 s let a teardown that failed for a
// minute under load stay undone for half a minute more.
func TeardownRetry(failures int) time.Duration {
	return min(time.Second<<min(max(failures, 1)-1, 4), 10*time.Second)
}
