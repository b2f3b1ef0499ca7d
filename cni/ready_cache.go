package cni

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"
)

// ReadyReuse is how long a NetworkReady=true answer of the runtime stands
// for the next ones while the pod network's config files are unchanged:
// the kubelet's period (its runtime-status loop asks every 5 s, and every
// pod's sync reads the last answer).
const ReadyReuse = 5 * time.Second

// ReadyFunc asks the runtime for its NetworkReady condition.
type ReadyFunc func(context.Context) (ok bool, reason, message string, err error)

// ReadyCache remembers the runtime's last NetworkReady=true, so that the
// pods starting within ReadyReuse of it do not each ask the runtime's
// Status (a CRI call per pod, which the kubelet does not make either).
// Unlike the kubelet's answer it stands only while the node's conflist is
// the file it was when it was asked (device, inode, size, modification and
// change time) and the first CNI config of the conf dir by name: a
// conflist removed, replaced or edited, or another config added before it,
// is seen at the next pod's start, which asks again (a stat and a read of
// the conf dir instead of a CRI call). What the stamp cannot see (the
// runtime restarting without its network, for up to ReadyReuse) reaches
// RunPodSandbox, which fails with the runtime's CNI error and is retried,
// as with the kubelet. A not-ready answer or an error is never remembered.
// The nil *ReadyCache asks every time.
type ReadyCache struct {
	mu sync.Mutex
	// stamp is the config files' stamp read before the last ready answer
	// ("" when the last answer was not ready); at is when it was asked.
	stamp string
	at    time.Time
	// asked is when the newest answer recorded was asked: an answer asked
	// before it (concurrent asks) does not replace it.
	asked time.Time
	// now is time.Now (tests set it).
	now func() time.Time
}

// NewReadyCache is a ReadyCache on the given clock (tests); the zero
// ReadyCache uses time.Now.
func NewReadyCache(now func() time.Time) *ReadyCache {
	return &ReadyCache{now: now}
}

func (c *ReadyCache) clock() time.Time {
	if c.now != nil {
		return c.now()
	}
	return time.Now()
}

// Ask asks the runtime and remembers a ready answer.
func (c *ReadyCache) Ask(ctx context.Context, cfg Config, ask ReadyFunc) (ok bool, reason, message string, err error) {
	if c == nil {
		return ask(ctx)
	}
	stamp, at := confStamp(cfg), c.clock()
	ok, reason, message, err = ask(ctx)
	c.mu.Lock()
	defer c.mu.Unlock()
	if at.Before(c.asked) {
		return ok, reason, message, err // a newer answer is recorded
	}
	c.asked = at
	if ok && err == nil && stamp != "" {
		c.stamp, c.at = stamp, at
	} else {
		c.stamp = ""
	}
	return ok, reason, message, err
}

// Reuse answers ready without asking while the last ready answer is
// younger than ReadyReuse and the config files are unchanged since; else
// it asks (Ask).
func (c *ReadyCache) Reuse(ctx context.Context, cfg Config, ask ReadyFunc) (ok bool, reason, message string, err error) {
	if c == nil {
		return ask(ctx)
	}
	if stamp := confStamp(cfg); stamp != "" {
		c.mu.Lock()
		hit := stamp == c.stamp && c.clock().Sub(c.at) < ReadyReuse
		c.mu.Unlock()
		if hit {
			return true, "", "", nil
		}
	}
	return c.Ask(ctx, cfg, ask)
}

// confStamp is the stamp of the node's conflist, "" when it cannot be
// read, is not a regular file, or is not the config the runtime uses: the
// first CNI config in the conf dir by name (containerd's choice, as
// shadowingConfigs warns at install). Then nothing is reused.
func confStamp(cfg Config) string {
	cfg = cfg.WithDefaults()
	ours := ConfPath(cfg)
	entries, err := os.ReadDir(cfg.ConfDir) // sorted by name
	if err != nil {
		return ""
	}
	first := ""
	for _, e := range entries {
		if !e.IsDir() && slices.Contains(confExtensions, filepath.Ext(e.Name())) {
			first = e.Name()
			break
		}
	}
	if first != filepath.Base(ours) {
		return ""
	}
	fi, err := os.Lstat(ours)
	if err != nil || !fi.Mode().IsRegular() {
		return ""
	}
	return fileStamp(fi)
}
