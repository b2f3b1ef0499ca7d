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
// Status (a CRI call per pod, which the kubelet does not make either), and
// lets the starts that find no standing answer share the question in
// flight (110 pods created together ask once).
// Unlike the kubelet's answer it stands only while the node's conflist is
// the file it was when it was asked (device, inode, size, modification and
// change time) and the first CNI config of the conf dir by name: a
// conflist removed, replaced or edited, or another config added before it,
// is seen at the next pod's start, which asks again (a stat and a read of
// the conf dir instead of a CRI call). What the stamp cannot see: the
// runtime restarting without its network, and an edit that keeps the size
// within the timestamps' granularity (a few ms) of the write before it,
// for up to ReadyReuse. Such a start reaches RunPodSandbox, which fails
// with the runtime's CNI error and is retried, as with the kubelet. A
// not-ready answer or an error is never remembered. The nil *ReadyCache
// asks every time.
type ReadyCache struct {
	mu sync.Mutex
	// stamp is the conflist's stamp read before the newest recorded
	// answer, if that answer was ready ("" otherwise); at is when that
	// question was asked.
	stamp string
	at    time.Time
	// seq numbers the questions as they begin; recorded is the number of
	// the newest one whose answer is recorded: an answer to an older
	// question (concurrent asks) does not replace it.
	seq, recorded uint64
	// flight is the newest question in flight (nil: none); joined counts
	// the starts that waited on one (tests).
	flight *readyFlight
	joined int
	// now is time.Now (tests set it).
	now func() time.Time
}

// readyFlight is a question in flight; its answer is set before done is
// closed.
type readyFlight struct {
	stamp           string
	done            chan struct{}
	ok              bool
	reason, message string
	err             error
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
	f := &readyFlight{stamp: confStamp(cfg), done: make(chan struct{})}
	c.mu.Lock()
	c.seq++
	n, at := c.seq, c.clock()
	c.flight = f
	c.mu.Unlock()
	f.ok, f.reason, f.message, f.err = ask(ctx)
	c.mu.Lock()
	if c.flight == f {
		c.flight = nil
	}
	if n > c.recorded {
		c.recorded = n
		if f.ok && f.err == nil && f.stamp != "" {
			c.stamp, c.at = f.stamp, at
		} else {
			c.stamp = ""
		}
	}
	c.mu.Unlock()
	close(f.done)
	return f.ok, f.reason, f.message, f.err
}

// Reuse answers ready without asking while the last ready answer is
// younger than ReadyReuse and the conflist is unchanged since; else it
// shares the answer of the question in flight, asked about the same
// conflist, unless that fails; else it asks (Ask).
func (c *ReadyCache) Reuse(ctx context.Context, cfg Config, ask ReadyFunc) (ok bool, reason, message string, err error) {
	if c == nil {
		return ask(ctx)
	}
	if stamp := confStamp(cfg); stamp != "" {
		c.mu.Lock()
		hit := stamp == c.stamp && c.clock().Sub(c.at) < ReadyReuse
		f := c.flight
		join := !hit && f != nil && f.stamp == stamp
		if join {
			c.joined++
		}
		c.mu.Unlock()
		if hit {
			return true, "", "", nil
		}
		if join {
			select {
			case <-f.done:
				if f.err == nil { // an error may be the asker's own (its context)
					return f.ok, f.reason, f.message, nil
				}
			case <-ctx.Done():
				return false, "", "", ctx.Err()
			}
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
