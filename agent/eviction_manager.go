package agent

// The eviction manager (issue #21), the kubelet's pkg/kubelet/eviction
// eviction_manager.go wired to this agent: every Period (the kubelet's
// 10 s monitoring interval) it observes the node's eviction signals,
// decides which thresholds are met (package eviction: hard ones at once,
// soft ones after their grace period, met ones until the minimum reclaim
// is back), sets the pressure conditions (held for the pressure transition
// period), reclaims node-level resources for disk signals (dead containers,
// then unused images) and, when that was not enough, evicts at most one
// pod per cycle: the first of the kubelet's ranking. An evicted pod's
// containers are killed with the eviction grace period, its emptyDirs
// go, and it ends Failed with reason Evicted and the kubelet's message; it
// is never restarted (its worker keeps it evicted until its source drops
// it).
//
// Every cycle, pressure or not, local storage limits are checked first
// (the kubelet's localStorageEviction, eviction/local.go and
// eviction_local.go): a pod past an emptyDir sizeLimit or its
// ephemeral-storage limits is evicted, and the cycle ends there.
//
// Critical pods, which the kubelet never evicts (kubelettypes.IsCriticalPod:
// static pods, mirror pods, priority >= system-cluster-critical's), are
// here the pods of the manifest directory (the static pods) and pods with
// a priority of at least 2000000000. Pods of the local API and of the
// cluster are evictable: they are what the kubelet's API-server pods are.

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/minikubelet/minikubelet/agent/api"
	"github.com/minikubelet/minikubelet/agent/eviction"
	"github.com/minikubelet/minikubelet/agent/safepath"
	"github.com/minikubelet/minikubelet/agent/source"
	"github.com/minikubelet/minikubelet/agent/volume"
)

// The kubelet's constants (pkg/kubelet/eviction).
const (
	// DefaultEvictionPeriod is the kubelet's evictionMonitoringPeriod.
	DefaultEvictionPeriod = 10 * time.Second
	// DefaultPressureTransitionPeriod is evictionPressureTransitionPeriod.
	DefaultPressureTransitionPeriod = 5 * time.Minute
	// immediateEvictionGracePeriodSeconds is the grace period of a pod
	// evicted for a hard threshold.
	immediateEvictionGracePeriodSeconds = 1
	// criticalPriority is scheduling.SystemCriticalPriority: pods at or
	// above it are critical.
	criticalPriority = 2000000000
	// maxEvictionRecords bounds the evictions kept for describe node.
	maxEvictionRecords = 10
	// podCleanupTimeout bounds the wait for an evicted pod's cleanup
	// before the next cycle (the kubelet's).
	podCleanupTimeout = 30 * time.Second
	// nodeConditionMessageFmt is the kubelet's admission message under
	// pressure.
	nodeConditionMessageFmt = "The node had condition: %v. "
)

// EvictionObservation is one look at the node: each signal's available
// amount and capacity, and the filesystems behind the disk signals.
type EvictionObservation struct {
	Signals map[eviction.Signal]eviction.Observation
	// NodeFsPath is the agent's root dir; ImageFsPath the runtime's image
	// filesystem mountpoint ("" if unknown).
	NodeFsPath, ImageFsPath string
	// SameFs is set when the image filesystem is the node filesystem:
	// then reclaiming nodefs removes images too, as in the kubelet.
	SameFs bool
	// Errors are the signals that could not be observed, with why.
	Errors []string
}

// EvictionStats measures the node and its pods; the real one reads the
// host (eviction_stats.go), tests pass fakes.
type EvictionStats interface {
	// Observe measures every signal it can.
	Observe(ctx context.Context) EvictionObservation
	// PodStats measures the pods' usage; a pod without stats is missing
	// from the map. disk asks for disk usage as well (costly: walks of
	// the pods' files, run per pod in the background and waited for a
	// bounded time; eviction_podfs.go).
	PodStats(ctx context.Context, pods []*v1.Pod, disk bool) map[types.UID]*eviction.PodStats
	// LocalStorage measures what the pods' local storage limits are
	// checked against; a pod without stats is missing from the map.
	LocalStorage(ctx context.Context, pods []*v1.Pod) map[types.UID]*eviction.LocalStorageUsage
}

// EvictionReclaimer frees node-level resources before pods are evicted
// for disk pressure (agent/gc).
type EvictionReclaimer interface {
	// DeleteDeadContainers removes dead containers and sandboxes.
	DeleteDeadContainers(ctx context.Context) error
	// DeleteUnusedImages removes every unused image.
	DeleteUnusedImages(ctx context.Context) error
}

// EvictionConfig configures the eviction manager (serve's --eviction-*).
type EvictionConfig struct {
	// Thresholds are the hard and soft thresholds (eviction.ParseThresholds).
	Thresholds []eviction.Threshold
	// MinimumReclaim is --eviction-minimum-reclaim, by signal.
	MinimumReclaim map[eviction.Signal]eviction.Value
	// MaxPodGracePeriod is the grace period of pods evicted for a soft
	// threshold, in seconds, or the pod's own if shorter
	// (--eviction-max-pod-grace-period; the kubelet's default 0 kills at
	// once).
	MaxPodGracePeriod int64
	// PressureTransitionPeriod holds a pressure condition after its last
	// crossing (0: DefaultPressureTransitionPeriod).
	PressureTransitionPeriod time.Duration
	// Period is how often the node is observed (0: DefaultEvictionPeriod).
	Period time.Duration
	// VolumeStatsAggPeriod is how often each pod's files are walked, 1 to
	// 2 periods apart (0: DefaultVolumeStatsAggPeriod); the walks of one
	// cycle take a tenth of Period at most (eviction_podfs.go).
	VolumeStatsAggPeriod time.Duration
	// Stats measures; Reclaim frees (nil: nothing is reclaimed).
	Stats   EvictionStats
	Reclaim EvictionReclaimer
}

// EvictionRecord is one eviction, for describe node.
type EvictionRecord struct {
	Pod     string    `json:"pod"`
	UID     types.UID `json:"uid"`
	Signal  string    `json:"signal"`
	Time    time.Time `json:"time"`
	Message string    `json:"message"`
}

// PressureCondition is one node pressure condition with its last
// transition.
type PressureCondition struct {
	Type               v1.NodeConditionType
	Status             bool
	LastTransitionTime time.Time
}

// evictionManager is the agent's eviction loop; its goroutine owns the
// tracking state, mu guards what others read.
type evictionManager struct {
	a   *Agent
	cfg EvictionConfig

	tracker *eviction.Tracker
	// lastMet are the thresholds met (after grace) at the last cycle,
	// kept met until their minimum reclaim is back.
	lastMet []eviction.Threshold
	// conditionLastObserved is when each condition's signal last crossed.
	conditionLastObserved map[v1.NodeConditionType]time.Time

	evictions    *prometheus.CounterVec
	syncDuration prometheus.Histogram

	// mu guards the fields below.
	mu         sync.Mutex
	conditions map[v1.NodeConditionType]*PressureCondition
	last       EvictionObservation
	lastTime   time.Time
	records    []EvictionRecord
	status     LoopStatusLite
}

// LoopStatusLite is the eviction loop's record (house style 18).
type LoopStatusLite struct {
	Runs, Failures int
	LastError      string
	LastSuccess    time.Time
}

// signalCondition is the node condition each signal's pressure raises.
func signalCondition(s eviction.Signal) v1.NodeConditionType {
	switch s {
	case eviction.SignalMemoryAvailable, eviction.SignalAllocatableMemoryAvailable:
		return v1.NodeMemoryPressure
	case eviction.SignalPIDAvailable:
		return v1.NodePIDPressure
	}
	return v1.NodeDiskPressure
}

// signalOrder is the order in which met thresholds are acted on: memory
// first, as the kubelet's byEvictionPriority.
var _ api.NodeDescriber = (*Daemon)(nil)

var signalOrder = []eviction.Signal{
	eviction.SignalMemoryAvailable, eviction.SignalAllocatableMemoryAvailable,
	eviction.SignalNodeFsAvailable, eviction.SignalNodeFsInodesFree,
	eviction.SignalImageFsAvailable, eviction.SignalImageFsInodesFree,
	eviction.SignalPIDAvailable,
}

// EnableEviction sets up the eviction manager; RunEviction runs it. Call
// before the agent runs.
func (a *Agent) EnableEviction(cfg EvictionConfig) error {
	if cfg.Stats == nil {
		return errors.New("eviction: no stats provider")
	}
	if cfg.Period <= 0 {
		cfg.Period = DefaultEvictionPeriod
	}
	if cfg.PressureTransitionPeriod <= 0 {
		cfg.PressureTransitionPeriod = DefaultPressureTransitionPeriod
	}
	if cfg.VolumeStatsAggPeriod <= 0 {
		cfg.VolumeStatsAggPeriod = DefaultVolumeStatsAggPeriod
	}
	if h, ok := cfg.Stats.(*hostEvictionStats); ok {
		if err := h.configureWalks(cfg.VolumeStatsAggPeriod, cfg.Period, a.metrics.registry); err != nil {
			return err
		}
	}
	m := &evictionManager{
		a: a, cfg: cfg, tracker: eviction.NewTracker(),
		conditionLastObserved: map[v1.NodeConditionType]time.Time{},
		conditions:            map[v1.NodeConditionType]*PressureCondition{},
		evictions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "kubelet_evictions",
			Help: "Cumulative number of pod evictions by eviction signal.",
		}, []string{"eviction_signal"}),
		syncDuration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "minikubelet_eviction_sync_duration_seconds",
			Help:    "Wall time of one eviction manager cycle (observe, decide, and reclaim or evict when needed).",
			Buckets: []float64{0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10},
		}),
	}
	now := a.clock.Now()
	for _, t := range []v1.NodeConditionType{v1.NodeMemoryPressure, v1.NodeDiskPressure, v1.NodePIDPressure} {
		m.conditions[t] = &PressureCondition{Type: t, LastTransitionTime: now}
	}
	for _, c := range []prometheus.Collector{m.evictions, m.syncDuration} {
		if err := a.metrics.registry.Register(c); err != nil {
			return fmt.Errorf("register eviction metrics: %w", err)
		}
	}
	for _, t := range []v1.NodeConditionType{v1.NodeMemoryPressure, v1.NodeDiskPressure, v1.NodePIDPressure} {
		g := prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name:        "minikubelet_node_pressure",
			Help:        "1 while the node condition (MemoryPressure, DiskPressure, PIDPressure) is true.",
			ConstLabels: prometheus.Labels{"condition": string(t)},
		}, func() float64 {
			if m.underPressure(t) {
				return 1
			}
			return 0
		})
		if err := a.metrics.registry.Register(g); err != nil {
			return fmt.Errorf("register eviction metrics: %w", err)
		}
	}
	a.eviction = m
	return nil
}

// RunEviction runs the eviction loop until ctx ends (no-op unless
// EnableEviction was called).
func (a *Agent) RunEviction(ctx context.Context) {
	m := a.eviction
	if m == nil {
		return
	}
	t := a.clock.NewTicker(m.cfg.Period)
	defer t.Stop()
	if s, ok := m.cfg.Stats.(interface{ stopMeasuring() }); ok {
		defer s.stopMeasuring() // the pods' background measurements
	}
	cycles, _ := m.cfg.Stats.(interface{ beginCycle() })
	for {
		if cycles != nil {
			cycles.beginCycle() // the pods' walks get this cycle's budget
		}
		start := time.Now() // wall time: the cost, whatever the clock
		evicted := m.synchronize(ctx)
		m.syncDuration.Observe(time.Since(start).Seconds())
		if len(evicted) > 0 {
			// As the kubelet (waitForPodsCleanup): the next cycle waits
			// until the evicted pods' containers are dead and their
			// volumes gone, or podCleanupTimeout, so that the usage they
			// free is seen before another pod is picked.
			m.waitCleanup(ctx, evicted)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C():
		}
	}
}

// waitCleanup waits until the evicted pods were cleaned up (or are
// gone), podCleanupTimeout at most for them all.
func (m *evictionManager) waitCleanup(ctx context.Context, pods []*v1.Pod) {
	t := m.a.clock.NewTimer(podCleanupTimeout)
	defer t.Stop()
	for _, p := range pods {
		done, gone := m.a.evictionCleanedUp(p.UID)
		if done == nil {
			continue
		}
		select {
		case <-done:
		case <-gone:
		case <-t.C():
			m.a.logger.Warn("Evicted pod not cleaned up in time; observing again", "podUID", string(p.UID), "waited", podCleanupTimeout)
			return
		case <-ctx.Done():
			return
		}
	}
}

// Conditions returns the pressure conditions, sorted by type.
func (m *evictionManager) Conditions() []PressureCondition {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []PressureCondition
	for _, c := range m.conditions {
		out = append(out, *c)
	}
	slices.SortFunc(out, func(x, y PressureCondition) int {
		return cmp.Compare(string(x.Type), string(y.Type))
	})
	return out
}

// underPressure reports whether condition t is true.
func (m *evictionManager) underPressure(t v1.NodeConditionType) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	c := m.conditions[t]
	return c != nil && c.Status
}

// crossed returns the thresholds the observation crosses now, grace
// periods aside.
func crossed(ths []eviction.Threshold, obs map[eviction.Signal]eviction.Observation) []eviction.Threshold {
	var out []eviction.Threshold
	for _, t := range ths {
		if o, ok := obs[t.Signal]; ok && o.Available < t.Level(o.Capacity) {
			out = append(out, t)
		}
	}
	return out
}

// synchronize is one cycle (the kubelet's synchronize); it returns the
// evicted pods, if any.
//
//  1. Observe the signals.
//  2. Thresholds met: crossed now, plus those met last cycle whose
//     minimum reclaim is not back; the conditions follow, held for the
//     transition period; soft thresholds count after their grace period.
//  3. Local storage limits, pressure or not: evict every pod past one;
//     done if any was.
//  4. Nothing met: done. Else act on the first met threshold by signal
//     order: for a disk signal, reclaim node-level resources and observe
//     again; done if no threshold is met any more, minimum reclaim
//     included.
//  5. Rank the evictable pods and evict the first one.
func (m *evictionManager) synchronize(ctx context.Context) []*v1.Pod {
	now := m.a.clock.Now()
	// Step 1: observe.
	obs := m.cfg.Stats.Observe(ctx)

	// Step 2: thresholds and conditions.
	cross := crossed(m.cfg.Thresholds, obs.Signals)
	for _, t := range m.lastMet {
		o, ok := obs.Signals[t.Signal]
		if ok && !slices.ContainsFunc(cross, func(c eviction.Threshold) bool { return c.String() == t.String() }) &&
			o.Available < t.Level(o.Capacity)+m.minReclaim(t.Signal, o.Capacity) {
			cross = append(cross, t)
		}
	}
	for _, t := range cross {
		m.conditionLastObserved[signalCondition(t.Signal)] = now
	}
	met := m.tracker.Met(m.cfg.Thresholds, obs.Signals, now)
	for _, t := range m.lastMet { // not yet resolved: still met
		if slices.ContainsFunc(cross, func(c eviction.Threshold) bool { return c.String() == t.String() }) &&
			!slices.ContainsFunc(met, func(c eviction.Threshold) bool { return c.String() == t.String() }) {
			met = append(met, t)
		}
	}
	m.lastMet = met
	m.setConditions(obs, now)

	// Step 3: local storage limits.
	if evicted := m.localStorageEviction(ctx, obs, now); len(evicted) > 0 {
		return evicted
	}
	if len(met) == 0 {
		return nil
	}

	// Step 4: the threshold to act on, reclaim first for disk.
	slices.SortStableFunc(met, func(x, y eviction.Threshold) int {
		return slices.Index(signalOrder, x.Signal) - slices.Index(signalOrder, y.Signal)
	})
	t := met[0]
	o := obs.Signals[t.Signal]
	m.a.logger.Warn("Eviction threshold met; attempting to reclaim", "signal", string(t.Signal), "threshold", t.String(),
		"available", o.Available, "capacity", o.Capacity)
	if m.reclaim(ctx, t, obs.SameFs) {
		// As the kubelet: no eviction when no threshold at all is met,
		// minimum reclaim included, grace periods aside.
		after := m.cfg.Stats.Observe(ctx)
		still := false
		for _, th := range m.cfg.Thresholds {
			if o2, ok := after.Signals[th.Signal]; ok && o2.Available < th.Level(o2.Capacity)+m.minReclaim(th.Signal, o2.Capacity) {
				still = true
			}
		}
		if !still {
			m.a.logger.Info("Node-level resources reclaimed; no pod evicted", "signal", string(t.Signal), "available", after.Signals[t.Signal].Available)
			return nil
		}
		if o2, ok := after.Signals[t.Signal]; ok {
			o = o2
		}
	}

	// Step 5: rank and evict one pod.
	pods := m.a.evictablePods()
	if len(pods) == 0 {
		m.a.logger.Warn("Eviction threshold met but no pod can be evicted", "signal", string(t.Signal))
		return nil
	}
	disk := t.Signal.Resource() != "memory" && t.Signal.Resource() != "pids"
	stats := m.cfg.Stats.PodStats(ctx, pods, disk)
	cands := make([]eviction.Candidate, 0, len(pods))
	for _, p := range pods {
		cands = append(cands, eviction.Candidate{Pod: p, Stats: stats[p.UID]})
	}
	eviction.Rank(t.Signal, cands)
	for _, c := range cands {
		// The kubelet's override: 1 s for a hard threshold; for a soft
		// one --eviction-max-pod-grace-period, or the pod's own if shorter
		// (the default 0 kills at once; killContainer's 2 s minimum
		// applies either way).
		grace := int64(immediateEvictionGracePeriodSeconds)
		if t.GracePeriod > 0 {
			grace = m.cfg.MaxPodGracePeriod
			if tg := c.Pod.Spec.TerminationGracePeriodSeconds; tg != nil {
				grace = min(grace, *tg)
			}
		}
		msg := eviction.Message(t, o.Available, c)
		if !m.a.evictPod(c.Pod.UID, grace, msg, true) {
			continue
		}
		m.record(c.Pod, string(t.Signal), grace, msg, now)
		return []*v1.Pod{c.Pod} // one per cycle, as the kubelet
	}
	return nil
}

// record counts and keeps an eviction, and logs it.
func (m *evictionManager) record(pod *v1.Pod, signal string, grace int64, msg string, now time.Time) {
	m.evictions.WithLabelValues(signal).Inc()
	m.mu.Lock()
	m.records = append(m.records, EvictionRecord{Pod: pod.Namespace + "/" + pod.Name, UID: pod.UID, Signal: signal, Time: now, Message: msg})
	if len(m.records) > maxEvictionRecords {
		m.records = m.records[len(m.records)-maxEvictionRecords:]
	}
	m.mu.Unlock()
	m.a.logger.Warn("Evicted a pod", "pod", pod.Namespace+"/"+pod.Name, "podUID", string(pod.UID),
		"signal", signal, "gracePeriod", grace, "message", msg)
}

// minReclaim is the signal's minimum reclaim for capacity.
func (m *evictionManager) minReclaim(s eviction.Signal, capacity int64) int64 {
	if v, ok := m.cfg.MinimumReclaim[s]; ok {
		return v.Amount(capacity)
	}
	return 0
}

// reclaim frees node-level resources for a disk threshold, as the
// kubelet's reclaimNodeLevelResources: nodefs by dead containers (and
// images when imagefs is the same filesystem), imagefs by dead
// containers and unused images. It reports whether it tried.
func (m *evictionManager) reclaim(ctx context.Context, t eviction.Threshold, sameFs bool) bool {
	if m.cfg.Reclaim == nil {
		return false
	}
	var images bool
	switch t.Signal {
	case eviction.SignalNodeFsAvailable, eviction.SignalNodeFsInodesFree:
		images = sameFs
	case eviction.SignalImageFsAvailable, eviction.SignalImageFsInodesFree:
		images = true
	default:
		return false
	}
	if err := m.cfg.Reclaim.DeleteDeadContainers(ctx); err != nil {
		m.a.logger.Warn("Eviction reclaim: removing dead containers failed", "err", err)
	}
	if images {
		if err := m.cfg.Reclaim.DeleteUnusedImages(ctx); err != nil {
			m.a.logger.Warn("Eviction reclaim: removing unused images failed", "err", err)
		}
	}
	return true
}

// setConditions sets each condition from when its signal last crossed,
// held for the transition period, and records the observation.
func (m *evictionManager) setConditions(obs EvictionObservation, now time.Time) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.last, m.lastTime = obs, now
	m.status.Runs++
	m.status.LastSuccess = now
	for t, c := range m.conditions {
		last, ok := m.conditionLastObserved[t]
		on := ok && now.Sub(last) < m.cfg.PressureTransitionPeriod
		if on != c.Status {
			c.Status, c.LastTransitionTime = on, now
			m.a.logger.Info("Node pressure condition changed", "condition", string(t), "status", on)
		}
	}
}

// snapshot returns the last observation and the eviction records.
func (m *evictionManager) snapshot() (EvictionObservation, time.Time, []EvictionRecord) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.last, m.lastTime, slices.Clone(m.records)
}

// isCritical reports whether the kubelet would treat pod as critical:
// here, a static pod (manifest directory) or one of system-critical
// priority. See the file comment.
func isCritical(pod *v1.Pod) bool {
	if pod.Annotations[source.AnnotationConfigSource] == source.SourceFile {
		return true
	}
	return pod.Spec.Priority != nil && *pod.Spec.Priority >= criticalPriority
}

// evictablePods are the pods eviction may pick: those with a worker that
// is neither terminating nor evicted, not in a terminal phase, and not
// critical.
func (a *Agent) evictablePods() []*v1.Pod {
	a.mu.Lock()
	workers := make([]*podWorker, 0, len(a.workers))
	for _, w := range a.workers {
		workers = append(workers, w)
	}
	a.mu.Unlock()
	var out []*v1.Pod
	for _, w := range workers {
		w.mu.Lock()
		pod, phase, skip := w.spec, w.status.Phase, w.terminating || w.evicted != nil
		w.mu.Unlock()
		if skip || phase == v1.PodSucceeded || phase == v1.PodFailed || isCritical(pod) {
			continue
		}
		out = append(out, pod)
	}
	slices.SortFunc(out, func(x, y *v1.Pod) int { return cmp.Compare(string(x.UID), string(y.UID)) })
	return out
}

// podEviction is what the eviction manager decided for a pod.
type podEviction struct {
	grace   int64
	message string
	at      time.Time
	// disruption adds the DisruptionTarget condition to the status: the
	// kubelet adds it for pressure evictions, not for local storage
	// limit evictions (its evictPod gets no condition there).
	disruption bool
}

// evictionCleanedUp reports whether the worker's pod was evicted and
// cleaned up (its containers dead, its volumes removed): syncEvicted
// finished it.
func (w *podWorker) evictionCleanedUp() bool {
	w.mu.Lock()
	ev := w.evicted
	w.mu.Unlock()
	return ev != nil && w.isFinished()
}

// evictionCleanedUp returns the channels closed once the evicted pod uid
// was cleaned up, and once its worker is gone (deleted meanwhile); nil if
// it has no worker or was not evicted.
func (a *Agent) evictionCleanedUp(uid types.UID) (cleanedUp, gone <-chan struct{}) {
	a.mu.Lock()
	w := a.workers[uid]
	a.mu.Unlock()
	if w == nil {
		return nil, nil
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.evicted == nil {
		return nil, nil
	}
	return w.finished, w.done
}

// evictPod marks the pod's worker evicted and wakes it: its next sync
// kills the pod with grace and publishes Failed/Evicted (with the
// DisruptionTarget condition when disruption is set). False if the pod
// has no worker (gone meanwhile), is already evicted, or is over
// (finished: its phase turned terminal after the eviction manager
// ranked it).
func (a *Agent) evictPod(uid types.UID, grace int64, message string, disruption bool) bool {
	a.mu.Lock()
	w := a.workers[uid]
	a.mu.Unlock()
	if w == nil {
		return false
	}
	w.mu.Lock()
	if w.evicted != nil || w.terminating || w.isFinished() {
		w.mu.Unlock()
		return false
	}
	w.evicted = &podEviction{grace: grace, message: message, at: a.clock.Now(), disruption: disruption}
	// A sync in flight (a hook, a pull) must not hold the kill up: the
	// next sync kills the pod (syncEvicted).
	w.cancelSyncLocked(errPodEvicted)
	w.mu.Unlock()
	w.event(v1.EventTypeWarning, eviction.Reason, "%s", message)
	w.trigger()
	return true
}

// evictedStatus is st as an evicted pod's: Failed, reason Evicted, the
// message, and the DisruptionTarget condition the kubelet adds for a
// pressure eviction.
func evictedStatus(st v1.PodStatus, ev *podEviction) v1.PodStatus {
	st.Phase, st.Reason, st.Message = v1.PodFailed, eviction.Reason, ev.message
	if !ev.disruption {
		return st
	}
	cond := v1.PodCondition{Type: v1.DisruptionTarget, Status: v1.ConditionTrue, Reason: v1.PodReasonTerminationByKubelet,
		Message: ev.message, LastTransitionTime: metav1.NewTime(ev.at)}
	i := slices.IndexFunc(st.Conditions, func(c v1.PodCondition) bool { return c.Type == v1.DisruptionTarget })
	if i >= 0 {
		st.Conditions[i] = cond
	} else {
		st.Conditions = append(st.Conditions, cond)
	}
	return st
}

// syncEvicted is syncPod for an evicted pod: kill whatever runs with the
// eviction grace period, remove the pod's volumes (an evicted pod's
// emptyDirs are what disk pressure wants back; the kubelet's volume
// manager tears a terminated pod's volumes down), and publish
// Failed/Evicted. Nothing is ever started again.
//
// Once cleaned up, the pod is finished (podWorker.finished): a sync does
// nothing, container GC removes the pod's dead containers and logs
// (podGoneForGC), and the status published at the cleanup (the
// containers' last states) stays as it was, as the kubelet's status of a
// terminated pod does, instead of being computed again from a runtime
// that no longer has them.
func (a *Agent) syncEvicted(ctx context.Context, w *podWorker, ev *podEviction) time.Duration {
	pod := w.pod()
	// Nothing of it runs again: no probe either.
	a.probes.RemovePod(pod.UID)
	st, err := a.observePod(ctx, pod)
	if err != nil {
		w.logger.Warn("Observe pod failed", "err", err)
		return a.cfg.ErrorBackoff
	}
	if podKillChanges(w, st) {
		if err := a.killPod(ctx, w, st, ev.grace); err != nil {
			w.logger.Warn("Kill evicted pod failed", "err", err)
			return a.cfg.ErrorBackoff
		}
		if st, err = a.observePod(ctx, pod); err != nil {
			w.logger.Warn("Observe pod failed", "err", err)
			return a.cfg.ErrorBackoff
		}
	}
	w.setObserved(st)
	if err := a.removePodVolumes(pod); err != nil {
		w.logger.Warn("Remove the evicted pod's volumes failed", "err", err)
		w.setStatus(evictedStatus(a.computePodStatus(w, pod, st), ev))
		return a.cfg.ErrorBackoff
	}
	w.setStatus(evictedStatus(a.computePodStatus(w, pod, st), ev))
	a.finishPod(w, true) // final_status.go: kept for a local-API pod
	return a.cfg.ResyncPeriod
}

// admitPressure is the kubelet's eviction admit handler: under
// MemoryPressure alone, BestEffort pods are refused; under any other
// pressure every pod is; critical pods always pass. a.mu may be held.
func (a *Agent) admitPressure(pod *v1.Pod) (reason, message string) {
	m := a.eviction
	if m == nil || isCritical(pod) {
		return "", ""
	}
	var on []v1.NodeConditionType
	for _, c := range m.Conditions() {
		if c.Status {
			on = append(on, c.Type)
		}
	}
	if len(on) == 0 {
		return "", ""
	}
	if len(on) == 1 && on[0] == v1.NodeMemoryPressure && podQOSClass(pod) != v1.PodQOSBestEffort {
		return "", ""
	}
	return eviction.Reason, fmt.Sprintf(nodeConditionMessageFmt, on)
}

// NodePressure reports the pressure conditions, for the cluster's Node
// status; ok is false without an eviction manager.
func (a *Agent) NodePressure() (memory, disk, pid, ok bool) {
	m := a.eviction
	if m == nil {
		return false, false, false, false
	}
	return m.underPressure(v1.NodeMemoryPressure), m.underPressure(v1.NodeDiskPressure), m.underPressure(v1.NodePIDPressure), true
}

// removePodVolumes unmounts and removes the pod's volume directories
// (emptyDirs, projected data) once its containers are dead, and trims its
// termination-message files (eviction_reclaim.go); the pod dir itself
// stays until the pod goes (it marks the pod cgroup as this agent's).
// safepath.RemoveAll removes symlinks a pod left, never their targets, and
// stops at a mount still there instead of emptying it.
func (a *Agent) removePodVolumes(pod *v1.Pod) error {
	if err := a.trimTerminationMessageFiles(pod); err != nil {
		return err
	}
	if err := a.volumes().UnmountPodVolumes(pod); err != nil {
		return err
	}
	dir := filepath.Join(a.podDir(pod), "volumes")
	if err := volume.UnmountUnder(dir); err != nil {
		return err
	}
	return safepath.RemoveAll(dir)
}

// DescribeNode implements api.NodeDescriber: capacity and allocatable,
// the pressure conditions, the filesystems and signals at the last
// observation, the thresholds, and the last evictions.
func (d *Daemon) DescribeNode() (*api.NodeDetails, error) {
	a := d.a
	out := &api.NodeDetails{Capacity: a.cfg.Node.Capacity.DeepCopy(), Allocatable: a.cfg.Node.Allocatable.DeepCopy()}
	m := a.eviction
	if m == nil {
		return out, nil
	}
	for _, c := range m.Conditions() {
		nc := v1.NodeCondition{Type: c.Type, Status: v1.ConditionFalse, LastTransitionTime: metav1.NewTime(c.LastTransitionTime)}
		switch c.Type {
		case v1.NodeMemoryPressure:
			nc.Reason, nc.Message = "KubeletHasSufficientMemory", "kubelet has sufficient memory available"
			if c.Status {
				nc.Reason, nc.Message = "KubeletHasInsufficientMemory", "kubelet has insufficient memory available"
			}
		case v1.NodeDiskPressure:
			nc.Reason, nc.Message = "KubeletHasNoDiskPressure", "kubelet has no disk pressure"
			if c.Status {
				nc.Reason, nc.Message = "KubeletHasDiskPressure", "kubelet has disk pressure"
			}
		case v1.NodePIDPressure:
			nc.Reason, nc.Message = "KubeletHasSufficientPID", "kubelet has sufficient PID available"
			if c.Status {
				nc.Reason, nc.Message = "KubeletHasInsufficientPID", "kubelet has insufficient PID available"
			}
		}
		if c.Status {
			nc.Status = v1.ConditionTrue
		}
		out.Conditions = append(out.Conditions, nc)
	}
	obs, at, recs := m.snapshot()
	out.ObservedAt, out.Errors = at, obs.Errors
	fsOf := func(name, path string, bytes, inodes eviction.Signal) {
		b, ok := obs.Signals[bytes]
		if !ok {
			return
		}
		i := obs.Signals[inodes]
		out.Filesystems = append(out.Filesystems, api.Filesystem{Name: name, Path: path, CapacityBytes: b.Capacity, AvailableBytes: b.Available,
			InodesTotal: i.Capacity, InodesFree: i.Available})
	}
	fsOf("nodefs", obs.NodeFsPath, eviction.SignalNodeFsAvailable, eviction.SignalNodeFsInodesFree)
	fsOf("imagefs", obs.ImageFsPath, eviction.SignalImageFsAvailable, eviction.SignalImageFsInodesFree)
	for _, s := range signalOrder {
		if o, ok := obs.Signals[s]; ok {
			out.Signals = append(out.Signals, api.Signal{Name: string(s), Available: o.Available, Capacity: o.Capacity})
		}
	}
	for _, t := range m.cfg.Thresholds {
		th := t.String()
		if t.GracePeriod > 0 {
			th += fmt.Sprintf(" (soft, grace %s)", t.GracePeriod)
		}
		out.Thresholds = append(out.Thresholds, th)
	}
	for _, r := range recs {
		out.Evictions = append(out.Evictions, api.Eviction{Pod: r.Pod, Signal: r.Signal, Time: r.Time, Message: r.Message})
	}
	return out, nil
}
