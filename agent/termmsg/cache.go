package termmsg

import "sync"

// maxCachedTerminationMessages bounds Cache; past it the
// cache starts over (re-reading a message is correct, only slower).
const maxCachedTerminationMessages = 4096

// Cache remembers the termination message of each exited
// container instance, so the files are read once, not on every status
// computation. The zero value is ready to use; safe for concurrent use.
type Cache struct {
	// mu guards byID.
	mu sync.Mutex
	// byID maps container IDs to their message ("" is a valid message).
	byID map[string]string
}

// Get returns the cached message of container id, calling read (without the
// lock held) to fill the cache on a miss.
func (c *Cache) Get(id string, read func() string) string {
	c.mu.Lock()
	msg, ok := c.byID[id]
	c.mu.Unlock()
	if ok {
		return msg
	}
	msg = read()
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.byID == nil || len(c.byID) >= maxCachedTerminationMessages {
		c.byID = make(map[string]string)
	}
	c.byID[id] = msg
	return msg
}

// Forget drops removed containers from the cache.
func (c *Cache) Forget(ids ...string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, id := range ids {
		delete(c.byID, id)
	}
}

// Len is the number of cached messages (the daemon's debug counters).
func (c *Cache) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.byID)
}
