package agent

// What pods write on the node filesystem outside their writable layers
// (pod directory, log directory, unlinked files held open), measured in
// the background for the eviction manager, one pod's measurement never
// waiting for another's.
//
// Each measurement walks each directory once: the pod directory with its
// disk emptyDirs as subtrees of the same walk, the log directory with
// each container's. A pod of 2 Mi files costs about 5 s per walk: run in
// the cycle itself, one after the other, every such pod held back every
// other pod's eviction by that much (twice, when its emptyDir was walked
// alone and again inside the pod directory).
//
// The kubelet (server/stats fs_resource_analyzer.go,
// volume_stat_calculator.go) runs one calculator per pod that measures
// its volumes every volumeStatsAggPeriod (1 m, jittered) and the eviction
// manager reads the cached figures. Here each eviction cycle (10 s, 1 s in
// the e2e tests) starts a fresh measurement of each pod it asks about,
// unless one is still running, and waits for them podFilesWait at most:
// a pod past a limit is evicted within the cycle in which it crossed it
// (the kubelet may take a minute longer, which the e2e tests and a
// filling disk do not have), while a pod whose walk is slow costs the
// cycle podFilesWait at most and is judged on its own latest complete
// figure. There is no measurement between cycles (no walk of pods
// nobody asks about): the cost is what the cycles ask for, a walk per pod
// per cycle at most, never two at once for one pod.

import (
	"context"
	"path/filepath"
	"strings"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/minikubelet/minikubelet/agent/volume"
)

const (
	// podFilesWait bounds how long one call waits for the measurements it
	// started (and for the first figure of a pod still being measured).
	podFilesWait = time.Second
	// podFilesIdle is how long a pod's figure is kept once nobody asks
	// for it (an evicted pod's, a pod's measured under disk pressure
	// only); a pod gone from the agent is dropped at the next call.
	podFilesIdle = time.Minute
)

// podFiles is one measurement of a pod's files.
type podFiles struct {
	// Files is the pod directory (its pinned subPath mounts left out);
	// EmptyDirs the disk emptyDirs in it, by volume name. FilesErr is set
	// when it could not be opened.
	Files     volume.Usage
	EmptyDirs map[string]volume.Usage
	FilesErr  error
	// Logs is the pod's log directory; ContainerLogs each container's
	// directory in it, by container name.
	Logs          volume.Usage
	ContainerLogs map[string]volume.Usage
	LogsErr       error
	// Held is heldDeleted's figure; HeldOK whether the pod's processes
	// could be listed.
	Held   int64
	HeldOK bool
}

// measurePodFiles is one measurement of the pod's files: a walk of the
// pod directory and one of its log directory (volume.DiskUsageWithSubtrees:
// by descriptor, never following a link or entering a mount, bounded),
// and the unlinked files its processes hold open.
func (h *hostEvictionStats) measurePodFiles(ctx context.Context, p *v1.Pod) *podFiles {
	out := &podFiles{EmptyDirs: map[string]volume.Usage{}, ContainerLogs: map[string]volume.Usage{}}
	podDir := h.a.podDir(p)
	vols := h.a.volumes()
	emptyDirs := map[string]string{} // subtree -> volume name
	var subs []string
	for i := range p.Spec.Volumes {
		vol := &p.Spec.Volumes[i]
		if vol.EmptyDir == nil || vol.EmptyDir.Medium == v1.StorageMediumMemory {
			continue
		}
		rel, err := filepath.Rel(podDir, vols.EmptyDirPath(p, vol.Name))
		if err != nil || rel == "." || strings.HasPrefix(rel, "..") {
			continue
		}
		rel = filepath.ToSlash(rel)
		emptyDirs[rel] = vol.Name
		subs = append(subs, rel)
	}
	walk := h.walk
	if walk == nil {
		walk = volume.DiskUsageWithSubtrees
	}
	podLim := volume.DefaultUsageLimits
	podLim.SkipTop = []string{volume.SubPathsDirName}
	var got map[string]volume.Usage
	out.Files, got, out.FilesErr = walk(ctx, podDir, podLim, subs)
	for rel, u := range got {
		out.EmptyDirs[emptyDirs[rel]] = u
	}

	var names []string
	for _, list := range [][]v1.Container{p.Spec.InitContainers, p.Spec.Containers} {
		for i := range list {
			names = append(names, list[i].Name)
		}
	}
	out.Logs, got, out.LogsErr = walk(ctx, podLogDir(h.a.cfg.PodLogDir, p), volume.DefaultUsageLimits, names)
	for name, u := range got {
		out.ContainerLogs[name] = u
	}
	out.Held, out.HeldOK = h.heldDeleted(p)
	return out
}

// podFilesCache runs the measurements and keeps each pod's latest.
type podFilesCache struct {
	measure func(ctx context.Context, p *v1.Pod) *podFiles
	// alive reports whether the pod is still the agent's.
	alive func(types.UID) bool
	wait  time.Duration

	mu   sync.Mutex
	pods map[types.UID]*podFilesEntry
	// walks counts the measurements running.
	walks sync.WaitGroup
}

// podFilesEntry is one pod's measurements.
type podFilesEntry struct {
	// latest is the last complete measurement (nil before the first).
	latest *podFiles
	// running is closed when the measurement in flight ends; nil when
	// none is.
	running chan struct{}
	// wanted is when a call last asked for the pod.
	wanted time.Time
	// ctx ends the pod's measurements once it is dropped.
	ctx    context.Context
	cancel context.CancelFunc
}

func newPodFilesCache(measure func(context.Context, *v1.Pod) *podFiles, alive func(types.UID) bool) *podFilesCache {
	return &podFilesCache{measure: measure, alive: alive, wait: podFilesWait, pods: map[types.UID]*podFilesEntry{}}
}

// get starts a measurement of each pod that has none in flight, waits
// until those and the pods' first measurements end or c.wait passes
// (or ctx ends), and returns each pod's latest figure; a pod with none
// yet is missing. Pods nobody asked for in podFilesIdle, and those
// gone from the agent, are dropped and their measurements stopped. The
// times are wall times: walks take real time whatever the agent's clock.
func (c *podFilesCache) get(ctx context.Context, pods []*v1.Pod) map[types.UID]*podFiles {
	now := time.Now()
	asked := make(map[types.UID]bool, len(pods))
	for _, p := range pods {
		asked[p.UID] = true
	}
	var waits []chan struct{}
	c.mu.Lock()
	for uid, e := range c.pods {
		if !asked[uid] && (now.Sub(e.wanted) > podFilesIdle || !c.alive(uid)) {
			e.cancel()
			delete(c.pods, uid)
		}
	}
	for _, p := range pods {
		e := c.pods[p.UID]
		if e == nil {
			e = &podFilesEntry{}
			e.ctx, e.cancel = context.WithCancel(context.Background())
			c.pods[p.UID] = e
		}
		e.wanted = now
		switch {
		case e.running == nil:
			c.start(e, p)
			waits = append(waits, e.running)
		case e.latest == nil:
			waits = append(waits, e.running) // the first: worth a wait
		}
		// Else a measurement of an earlier call still runs (a slow
		// walk): the pod is judged on its latest figure, and nobody waits.
	}
	c.mu.Unlock()

	t := time.NewTimer(c.wait)
	defer t.Stop()
wait:
	for _, ch := range waits {
		select {
		case <-ch:
		case <-t.C:
			break wait
		case <-ctx.Done():
			break wait
		}
	}

	out := make(map[types.UID]*podFiles, len(pods))
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, p := range pods {
		if e := c.pods[p.UID]; e != nil && e.latest != nil {
			out[p.UID] = e.latest
		}
	}
	return out
}

// start runs a measurement of p for e in its own goroutine. c.mu is held.
func (c *podFilesCache) start(e *podFilesEntry, p *v1.Pod) {
	done := make(chan struct{})
	e.running = done
	c.walks.Add(1)
	go func() {
		defer c.walks.Done()
		got := c.measure(e.ctx, p)
		c.mu.Lock()
		defer c.mu.Unlock()
		if e.ctx.Err() == nil { // else dropped: a walk cut short is no figure
			e.latest = got
		}
		e.running = nil
		close(done)
	}()
}

// stop ends every measurement and waits for them.
func (c *podFilesCache) stop() {
	c.mu.Lock()
	for uid, e := range c.pods {
		e.cancel()
		delete(c.pods, uid)
	}
	c.mu.Unlock()
	c.walks.Wait()
}
