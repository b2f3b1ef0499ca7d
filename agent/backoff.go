package agent

import (
	"fmt"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/minikubelet/minikubelet/agent/podspec"
)

// backoff is the kubelet's per-key exponential backoff (client-go
// flowcontrol.Backoff as the kubelet configures it, kubelet-facts §1):
// the first call to next creates an entry holding the initial delay, each
// later call doubles it up to max. An entry expires when the reference time
// passed to next lies more than expireAfter past the entry's last update
// (the kubelet's override: a container that ran 10 minutes starts over).
type backoff struct {
	initial, max, expireAfter time.Duration

	mu      sync.Mutex
	entries map[string]*backoffEntry
}

type backoffEntry struct {
	delay      time.Duration
	lastUpdate time.Time
}

func newBackoff(initial, max time.Duration) *backoff {
	if max < initial {
		initial = max
	}
	return &backoff{initial: initial, max: max, expireAfter: 2 * max, entries: map[string]*backoffEntry{}}
}

// inBackoffSince reports whether key is still backing off at now, counting
// from ref (a container's finish time), and the current delay.
func (b *backoff) inBackoffSince(key string, ref, now time.Time) (bool, time.Duration) {
	b.mu.Lock()
	defer b.mu.Unlock()
	e, ok := b.entries[key]
	if !ok || b.expired(e, ref) {
		return false, 0
	}
	return now.Sub(ref) < e.delay, e.delay
}

// next records an attempt at ref: a new or expired entry starts at the
// initial delay, an existing one doubles (capped).
func (b *backoff) next(key string, ref time.Time) {
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

// reset forgets key (its pod was removed).
func (b *backoff) reset(key string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	delete(b.entries, key)
}

func (b *backoff) expired(e *backoffEntry, ref time.Time) bool {
	return ref.Sub(e.lastUpdate) > b.expireAfter
}

// inBackoffSinceUpdate reports whether key is backing off at now, counting
// from its last update (the image pull rule).
func (b *backoff) inBackoffSinceUpdate(key string, now time.Time) (bool, time.Duration) {
	b.mu.Lock()
	defer b.mu.Unlock()
	e, ok := b.entries[key]
	if !ok || now.Sub(e.lastUpdate) > b.expireAfter {
		return false, 0
	}
	return now.Sub(e.lastUpdate) < e.delay, e.lastUpdate.Add(e.delay).Sub(now)
}

func (a *Agent) imageInBackoff(pod *v1.Pod, c *v1.Container) bool {
	in, _ := a.imageBackoff.inBackoffSinceUpdate(imageBackoffKey(pod, c), a.clock.Now())
	return in
}

// crashBackoffKey is the kubelet's stable key: a spec change gets a fresh
// back-off.
func crashBackoffKey(pod *v1.Pod, c *v1.Container) string {
	return fmt.Sprintf("%s_%s_%s_%s_%s", pod.Name, pod.Namespace, pod.UID, c.Name, podspec.ContainerHash(c))
}

func imageBackoffKey(pod *v1.Pod, c *v1.Container) string {
	return imageRefBackoffKey(pod, c.Image)
}

// imageRefBackoffKey is the kubelet's image pull back-off key, the pod and
// the image: a container's and an image volume's pulls of the same image
// share it.
func imageRefBackoffKey(pod *v1.Pod, image string) string {
	return fmt.Sprintf("%s_%s", pod.UID, image)
}
