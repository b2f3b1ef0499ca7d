package hoststats

// What pods write on the node filesystem outside their writable layers
// (pod directory, log directory, unlinked files held open), measured in
// the background for the eviction manager, one pod's measurement never
// waiting for another's.
//
// Each measurement walks each directory once: the pod directory with its
// disk emptyDirs as subtrees of the same walk, the log directory with
// each container's. Walks cost CPU by the entry: a pod of 300k empty
// files, walked at every 10 s cycle, cost the daemon 3.9 s of CPU a
// minute (from 0.03 s per 30 s idle).
//
// So, as the kubelet's volume stats cache (server/stats
// fs_resource_analyzer.go, volume_stat_calculator.go: one calculator per
// pod, wait.JitterUntil(calc, volumeStatsAggPeriod = 1 m, 1.0)), a pod is
// measured again only period to 2*period after its last measurement ended
// (--volume-stats-agg-period, 1 m; jittered so that pods started together
// do not walk together), and each cycle judges it on its latest figure.
// Unlike the kubelet, the walks of all pods together get a budget of walk
// time per eviction cycle (a tenth of the cycle's period, about 10 % of a
// core): a walk that uses up the cycle's budget pauses where it is
// (volume.UsageLimits.Pace, its directories held open) and carries on at
// the next cycle, so that many pods with big trees cost a bounded share of
// a core, and every pod is still measured whole, later. Meanwhile a pod
// counts as the larger of its latest figure and what the paused walk found
// so far (a lower bound of its usage now): a walk cut off is never a pod
// at 0, and a pod whose first walk takes many cycles is evicted as soon as
// what was counted passes its limit.
//
// The cheap parts are measured every cycle: the writable layers (the
// runtime's ContainerStats) and containerd's per-sandbox files
// (sandboxfiles.go).

import (
	"context"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"

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
	// podFilesJitter is the kubelet's jitter factor of that period
	// (volumeStatCalculator's wait.JitterUntil(..., 1.0, ...)).
	podFilesJitter = 1.0
	// podFilesBudgetShare: the walks of one eviction cycle may take
	// 1/podFilesBudgetShare of its period (1 s of every 10 s).
	podFilesBudgetShare = 10
)

// podFilesPart names the directory a measurement walks.
type podFilesPart int

const (
	podDirPart podFilesPart = iota
	logDirPart
)

// walkPacer is called by a measurement's walks before each batch of
// entries with what the walk of part found so far; it blocks while the
// cycle's walk budget is spent and returns an error when the walk must
// stop.
type walkPacer func(ctx context.Context, part podFilesPart, sofar volume.Usage) error

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
	// Partial is set on a figure raised to what a walk still running
	// found so far: lower bounds.
	Partial bool
}

// measurePodFiles is one measurement of the pod's files: a walk of the
// pod directory and one of its log directory (volume.DiskUsageWithSubtrees:
// by descriptor, never following a link or entering a mount, bounded),
// and the unlinked files its processes hold open. pace (nil: none) is
// called between batches of each walk's entries.
func (h *Provider) measurePodFiles(ctx context.Context, p *v1.Pod, pace walkPacer) *podFiles {
	out := &podFiles{EmptyDirs: map[string]volume.Usage{}, ContainerLogs: map[string]volume.Usage{}}
	podDir := h.eng.PodDir(p)
	emptyDirs := map[string]string{} // subtree -> volume name
	var subs []string
	for i := range p.Spec.Volumes {
		vol := &p.Spec.Volumes[i]
		if vol.EmptyDir == nil || vol.EmptyDir.Medium == v1.StorageMediumMemory {
			continue
		}
		rel, err := filepath.Rel(podDir, h.eng.EmptyDirPath(p, vol.Name))
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
	paced := func(part podFilesPart) volume.UsageLimits {
		lim := volume.DefaultUsageLimits
		if pace != nil {
			lim.Pace = func(ctx context.Context, sofar volume.Usage) error { return pace(ctx, part, sofar) }
		}
		return lim
	}
	podLim := paced(podDirPart)
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
	out.Logs, got, out.LogsErr = walk(ctx, h.eng.PodLogDir(p), paced(logDirPart), names)
	for name, u := range got {
		out.ContainerLogs[name] = u
	}
	out.Held, out.HeldOK = h.heldDeleted(p)
	return out
}

// podFilesCache runs the measurements on the schedule of the file comment
// and keeps each pod's latest.
type podFilesCache struct {
	measure func(ctx context.Context, p *v1.Pod, pace walkPacer) *podFiles
	// alive reports whether the pod is still the agent's.
	alive func(types.UID) bool
	wait  time.Duration
	// period: a pod is measured again period to period*(1+podFilesJitter)
	// after its last measurement ended (0: at every call). budget bounds
	// the walk time of all measurements between two cycle calls (0: no
	// bound).
	period, budget time.Duration
	// clock is wall time (walks take real time whatever the agent's
	// clock); rand is in [0, 1).
	clock clock.PassiveClock
	rand  func() float64
	// onWalk counts a measurement done, onWalkTime the walk time charged,
	// onPause a walk paused for the budget (each may be nil).
	onWalk     func()
	onWalkTime func(time.Duration)
	onPause    func()

	mu   sync.Mutex
	pods map[types.UID]*podFilesEntry
	// used is the walk time charged since the cycle began; spent is
	// closed once it reaches the budget, resume at the next cycle.
	used          time.Duration
	spent, resume chan struct{}
	// walks counts the measurements running.
	walks sync.WaitGroup
}

// podFilesEntry is one pod's measurements.
type podFilesEntry struct {
	// latest is the last complete measurement (nil before the first).
	latest *podFiles
	// running is closed when the measurement in flight ends; nil when
	// none is. partFiles and partLogs are what its walks found so far.
	running             chan struct{}
	partFiles, partLogs volume.Usage
	// next is when the pod is due for its next measurement.
	next time.Time
	// wanted is when a call last asked for the pod.
	wanted time.Time
	// ctx ends the pod's measurements once it is dropped.
	ctx    context.Context
	cancel context.CancelFunc
}

func newPodFilesCache(measure func(context.Context, *v1.Pod, walkPacer) *podFiles, alive func(types.UID) bool) *podFilesCache {
	return &podFilesCache{measure: measure, alive: alive, wait: podFilesWait, clock: clock.RealClock{}, rand: rand.Float64,
		pods: map[types.UID]*podFilesEntry{}, spent: make(chan struct{}), resume: make(chan struct{})}
}

// cycle begins an eviction cycle: the walk budget is whole again and the
// walks paused for want of it carry on.
func (c *podFilesCache) cycle() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.used = 0
	close(c.resume)
	c.resume = make(chan struct{})
	select {
	case <-c.spent:
		c.spent = make(chan struct{})
	default:
	}
}

// get starts a measurement of each pod that is due and has none in
// flight, waits until those and the pods' first measurements end, the
// cycle's walk budget is spent or c.wait passes (or ctx ends), and
// returns each pod's figure: its latest, raised to what a walk still
// running found so far; a pod with neither is missing. Pods nobody asked
// for in podFilesIdle, and those gone from the agent, are dropped and
// their measurements stopped.
func (c *podFilesCache) get(ctx context.Context, pods []*v1.Pod) map[types.UID]*podFiles {
	now := c.clock.Now()
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
		case e.running == nil && !now.Before(e.next):
			c.start(e, p)
			waits = append(waits, e.running)
		case e.running != nil && e.latest == nil:
			waits = append(waits, e.running) // the first: worth a wait
		}
		// Else the pod is not due, or a measurement of an earlier call
		// still runs (a big tree, or paused): it is judged on its
		// figure, and nobody waits.
	}
	spent := c.spent
	c.mu.Unlock()

	t := time.NewTimer(c.wait)
	defer t.Stop()
wait:
	for _, ch := range waits {
		select {
		case <-ch:
		case <-spent: // the walks left are paused until the next cycle
			break wait
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
		if e := c.pods[p.UID]; e != nil {
			if f := e.figure(); f != nil {
				out[p.UID] = f
			}
		}
	}
	return out
}

// figure is the pod's latest figure raised to what the running walks
// found so far (a lower bound of its usage now), or nil when it has
// neither.
func (e *podFilesEntry) figure() *podFiles {
	if e.running == nil || e.partFiles.Inodes == 0 && e.partLogs.Inodes == 0 {
		return e.latest
	}
	f := &podFiles{EmptyDirs: map[string]volume.Usage{}, ContainerLogs: map[string]volume.Usage{}}
	if e.latest != nil {
		*f = *e.latest // its maps are never written once stored
	}
	f.Partial = true
	raise := func(u *volume.Usage, err *error, part volume.Usage) {
		if u.Incomplete != "" && *err == nil {
			return // unmeasurable stays so until a walk finishes whole
		}
		if *err != nil || part.Bytes > u.Bytes || part.Inodes > u.Inodes {
			*u, *err = volume.Usage{Bytes: max(part.Bytes, u.Bytes), Inodes: max(part.Inodes, u.Inodes)}, nil
		}
	}
	raise(&f.Files, &f.FilesErr, e.partFiles)
	raise(&f.Logs, &f.LogsErr, e.partLogs)
	return f
}

// start runs a measurement of p for e in its own goroutine. c.mu is held.
func (c *podFilesCache) start(e *podFilesEntry, p *v1.Pod) {
	done := make(chan struct{})
	e.running = done
	e.partFiles, e.partLogs = volume.Usage{}, volume.Usage{}
	c.walks.Add(1)
	go func() {
		defer c.walks.Done()
		mark := c.clock.Now() // this walk's time not charged yet
		pace := func(ctx context.Context, part podFilesPart, sofar volume.Usage) error {
			c.mu.Lock()
			defer c.mu.Unlock()
			if part == podDirPart {
				e.partFiles = sofar
			} else {
				e.partLogs = sofar
			}
			mark = c.charge(mark)
			for c.budget > 0 && c.used >= c.budget {
				resume := c.resume
				if c.onPause != nil {
					c.onPause()
				}
				c.mu.Unlock()
				select {
				case <-resume:
				case <-ctx.Done():
					c.mu.Lock()
					return ctx.Err()
				}
				c.mu.Lock()
				mark = c.clock.Now() // paused time is no walk time
			}
			return nil
		}
		got := c.measure(e.ctx, p, pace)
		c.mu.Lock()
		defer c.mu.Unlock()
		now := c.charge(mark)
		if e.ctx.Err() == nil { // else dropped: a walk cut short is no figure
			e.latest = got
			if c.period > 0 {
				e.next = now.Add(c.period + time.Duration(c.rand()*podFilesJitter*float64(c.period)))
			}
			if c.onWalk != nil {
				c.onWalk()
			}
		}
		e.running = nil
		e.partFiles, e.partLogs = volume.Usage{}, volume.Usage{}
		close(done)
	}()
}

// charge adds the walk time since mark to the cycle's and returns now.
// c.mu is held.
func (c *podFilesCache) charge(mark time.Time) time.Time {
	now := c.clock.Now()
	d := now.Sub(mark)
	c.used += d
	if c.onWalkTime != nil {
		c.onWalkTime(d)
	}
	if c.budget > 0 && c.used >= c.budget {
		select {
		case <-c.spent:
		default:
			close(c.spent)
		}
	}
	return now
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
