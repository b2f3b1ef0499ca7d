package eviction

// The eviction manager (issue #21), the kubelet's pkg/kubelet/eviction
// eviction_manager.go: every Period (the kubelet's 10 s monitoring
// interval) it observes the node's eviction signals, decides which
// thresholds are met (thresholds.go: hard ones at once, soft ones after
// their grace period, met ones until the minimum reclaim is back), sets
// the pressure conditions (held for the pressure transition period),
// reclaims node-level resources for disk signals (dead containers, then
// unused images) and, when that was not enough, evicts at most one pod per
// cycle: the first of the kubelet's ranking (ranking.go). The engine
// (package agent) kills an evicted pod's containers with the eviction
// grace period, removes its emptyDirs, and publishes it Failed with reason
// Evicted and the kubelet's message; it is never restarted.
//
// Every cycle, pressure or not, local storage limits are checked first
// (the kubelet's localStorageEviction, local.go and manager_local.go): a
// pod past an emptyDir sizeLimit or its ephemeral-storage limits is
// evicted, and the cycle ends there.
//
// Critical pods, which the kubelet never evicts (kubelettypes.IsCriticalPod:
// static pods, mirror pods, priority >= system-cluster-critical's), are
// here the pods of the manifest directory (the static pods) and pods with
// a priority of at least 2000000000. Pods of the local API and of the
// cluster are evictable: they are what the kubelet's API-server pods are.
//
// The manager sees the engine through three narrow interfaces: Pods (the
// pods it may rank, a way to evict one, whether an evicted one was cleaned
// up), StatsProvider (the node's signals and the pods' usage) and
// Reclaimer (agent/gc). The engine builds it (NewManager), runs its loop
// (Run) and asks it one question at admission (Admit).

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	v1 "k8s.io/api/core/v1"
	"k8s.io/utils/clock"

	"github.com/minikubelet/minikubelet/agent/podspec"
	"github.com/minikubelet/minikubelet/agent/source"
)

// The kubelet's constants (pkg/kubelet/eviction).
const (
	// DefaultPeriod is the kubelet's evictionMonitoringPeriod.
	DefaultPeriod = 10 * time.Second
	// DefaultPressureTransitionPeriod is evictionPressureTransitionPeriod.
	DefaultPressureTransitionPeriod = 5 * time.Minute
	// immediateEvictionGracePeriodSeconds is the grace period of a pod
	// evicted for a hard threshold.
	immediateEvictionGracePeriodSeconds = 1
	// CriticalPriority is scheduling.SystemCriticalPriority: pods at or
	// above it are critical.
	CriticalPriority = 2000000000
	// maxRecords bounds the evictions kept for describe node.
	maxRecords = 10
	// podCleanupTimeout bounds the wait for an evicted pod's cleanup
	// before the next cycle (the kubelet's).
	podCleanupTimeout = 30 * time.Second
	// nodeConditionMessageFmt is the kubelet's admission message under
	// pressure.
	nodeConditionMessageFmt = "The node had condition: %v. "
	// DefaultVolumeStatsAggPeriod is the kubelet's volumeStatsAggPeriod:
	// a pod's files are walked again 1 to 2 periods after the last walk
	// (agent/eviction/hoststats/podfs.go).
	DefaultVolumeStatsAggPeriod = time.Minute
)

// Manager is the eviction loop; its goroutine owns the tracking state, mu
// guards what others read.
type Manager struct {
	cfg    Config
	pods   Pods
	clock  clock.WithTicker
	logger *slog.Logger

	tracker *Tracker
	// lastMet are the thresholds met (after grace) at the last cycle,
	// kept met until their minimum reclaim is back.
	lastMet []Threshold
	// conditionLastObserved is when each condition's signal last crossed.
	conditionLastObserved map[v1.NodeConditionType]time.Time

	evictions    *prometheus.CounterVec
	syncDuration prometheus.Histogram

	// mu guards the fields below.
	mu         sync.Mutex
	conditions map[v1.NodeConditionType]*PressureCondition
	last       NodeObservation
	lastTime   time.Time
	records    []Record
	status     LoopStatusLite
}

// LoopStatusLite is the eviction loop's record (house style 18).
type LoopStatusLite struct {
	Runs, Failures int
	LastError      string
	LastSuccess    time.Time
}

// WalkConfigurer is implemented by a StatsProvider that walks the pods'
// files in the background (agent/eviction/hoststats): NewManager sets how
// often each pod's files are walked and how much walk time each cycle of
// period may take, and the walks' metrics go on reg with the manager's.
type WalkConfigurer interface {
	ConfigureWalks(period, cyclePeriod time.Duration, reg prometheus.Registerer) error
}

// NewManager builds the eviction manager over the engine's pods and
// registers its metrics on reg (and configures the stats provider's walks,
// WalkConfigurer); Run runs it.
func NewManager(cfg Config, pods Pods, clk clock.WithTicker, logger *slog.Logger, reg prometheus.Registerer) (*Manager, error) {
	if cfg.Stats == nil {
		return nil, errors.New("eviction: no stats provider")
	}
	cfg = cfg.WithDefaults()
	if w, ok := cfg.Stats.(WalkConfigurer); ok {
		if err := w.ConfigureWalks(cfg.VolumeStatsAggPeriod, cfg.Period, reg); err != nil {
			return nil, err
		}
	}
	m := &Manager{
		cfg: cfg, pods: pods, clock: clk, logger: logger, tracker: NewTracker(),
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
	now := clk.Now()
	for _, t := range []v1.NodeConditionType{v1.NodeMemoryPressure, v1.NodeDiskPressure, v1.NodePIDPressure} {
		m.conditions[t] = &PressureCondition{Type: t, LastTransitionTime: now}
	}
	for _, c := range []prometheus.Collector{m.evictions, m.syncDuration} {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("register eviction metrics: %w", err)
		}
	}
	for _, t := range []v1.NodeConditionType{v1.NodeMemoryPressure, v1.NodeDiskPressure, v1.NodePIDPressure} {
		g := prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name:        "minikubelet_node_pressure",
			Help:        "1 while the node condition (MemoryPressure, DiskPressure, PIDPressure) is true.",
			ConstLabels: prometheus.Labels{"condition": string(t)},
		}, func() float64 {
			if m.UnderPressure(t) {
				return 1
			}
			return 0
		})
		if err := reg.Register(g); err != nil {
			return nil, fmt.Errorf("register eviction metrics: %w", err)
		}
	}
	return m, nil
}

// Config returns the manager's configuration, defaults set.
func (m *Manager) Config() Config { return m.cfg }

// Run runs the eviction loop until ctx ends; a nil manager (eviction not
// enabled) returns at once.
func (m *Manager) Run(ctx context.Context) {
	if m == nil {
		return
	}
	t := m.clock.NewTicker(m.cfg.Period)
	defer t.Stop()
	cycles, _ := m.cfg.Stats.(CycleStats)
	if cycles != nil {
		defer cycles.StopMeasuring() // the pods' background measurements
	}
	for {
		if cycles != nil {
			cycles.BeginCycle() // the pods' walks get this cycle's budget
		}
		start := time.Now() // wall time: the cost, whatever the clock
		evicted := m.Synchronize(ctx)
		m.syncDuration.Observe(time.Since(start).Seconds())
		if len(evicted) > 0 {
			// As the kubelet (waitForPodsCleanup): the next cycle waits
			// until the evicted pods' containers are dead and their
			// volumes gone, or podCleanupTimeout, so that the usage they
			// free is seen before another pod is picked.
			m.WaitCleanup(ctx, evicted)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C():
		}
	}
}

// Admit is the kubelet's eviction admit handler, the one question the
// engine asks at admission: under MemoryPressure alone, BestEffort pods
// are refused; under any other pressure every pod is; critical pods
// always pass. An empty reason admits the pod; a nil manager (eviction
// not enabled) admits every pod.
func (m *Manager) Admit(pod *v1.Pod) (reason, message string) {
	if m == nil || IsCritical(pod) {
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
	if len(on) == 1 && on[0] == v1.NodeMemoryPressure && podspec.QOSClass(pod) != v1.PodQOSBestEffort {
		return "", ""
	}
	return Reason, fmt.Sprintf(nodeConditionMessageFmt, on)
}

// signalCondition is the node condition each signal's pressure raises.
func signalCondition(s Signal) v1.NodeConditionType {
	switch s {
	case SignalMemoryAvailable, SignalAllocatableMemoryAvailable:
		return v1.NodeMemoryPressure
	case SignalPIDAvailable:
		return v1.NodePIDPressure
	}
	return v1.NodeDiskPressure
}

// SignalOrder is the order in which met thresholds are acted on: memory
// first, as the kubelet's byEvictionPriority.
var SignalOrder = []Signal{
	SignalMemoryAvailable, SignalAllocatableMemoryAvailable,
	SignalNodeFsAvailable, SignalNodeFsInodesFree,
	SignalImageFsAvailable, SignalImageFsInodesFree,
	SignalPIDAvailable,
}

// WaitCleanup waits until the evicted pods were cleaned up (or are
// gone), podCleanupTimeout at most for them all.
func (m *Manager) WaitCleanup(ctx context.Context, pods []*v1.Pod) {
	t := m.clock.NewTimer(podCleanupTimeout)
	defer t.Stop()
	for _, p := range pods {
		done, gone := m.pods.CleanedUp(p.UID)
		if done == nil {
			continue
		}
		select {
		case <-done:
		case <-gone:
		case <-t.C():
			m.logger.Warn("Evicted pod not cleaned up in time; observing again", "podUID", string(p.UID), "waited", podCleanupTimeout)
			return
		case <-ctx.Done():
			return
		}
	}
}

// Conditions returns the pressure conditions, sorted by type.
func (m *Manager) Conditions() []PressureCondition {
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

// UnderPressure reports whether condition t is true.
func (m *Manager) UnderPressure(t v1.NodeConditionType) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	c := m.conditions[t]
	return c != nil && c.Status
}

// NodePressure reports the memory, disk and PID pressure conditions, for
// the cluster's Node status; ok is false for a nil manager (eviction not
// enabled).
func (m *Manager) NodePressure() (memory, disk, pid, ok bool) {
	if m == nil {
		return false, false, false, false
	}
	return m.UnderPressure(v1.NodeMemoryPressure), m.UnderPressure(v1.NodeDiskPressure), m.UnderPressure(v1.NodePIDPressure), true
}

// crossed returns the thresholds the observation crosses now, grace
// periods aside.
func crossed(ths []Threshold, obs map[Signal]Observation) []Threshold {
	var out []Threshold
	for _, t := range ths {
		if o, ok := obs[t.Signal]; ok && o.Available < t.Level(o.Capacity) {
			out = append(out, t)
		}
	}
	return out
}

// Synchronize is one cycle (the kubelet's synchronize); it returns the
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
func (m *Manager) Synchronize(ctx context.Context) []*v1.Pod {
	now := m.clock.Now()
	// Step 1: observe.
	obs := m.cfg.Stats.Observe(ctx)

	// Step 2: thresholds and conditions.
	cross := crossed(m.cfg.Thresholds, obs.Signals)
	for _, t := range m.lastMet {
		o, ok := obs.Signals[t.Signal]
		if ok && !slices.ContainsFunc(cross, func(c Threshold) bool { return c.String() == t.String() }) &&
			o.Available < t.Level(o.Capacity)+m.minReclaim(t.Signal, o.Capacity) {
			cross = append(cross, t)
		}
	}
	for _, t := range cross {
		m.conditionLastObserved[signalCondition(t.Signal)] = now
	}
	met := m.tracker.Met(m.cfg.Thresholds, obs.Signals, now)
	for _, t := range m.lastMet { // not yet resolved: still met
		if slices.ContainsFunc(cross, func(c Threshold) bool { return c.String() == t.String() }) &&
			!slices.ContainsFunc(met, func(c Threshold) bool { return c.String() == t.String() }) {
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
	slices.SortStableFunc(met, func(x, y Threshold) int {
		return slices.Index(SignalOrder, x.Signal) - slices.Index(SignalOrder, y.Signal)
	})
	t := met[0]
	o := obs.Signals[t.Signal]
	m.logger.Warn("Eviction threshold met; attempting to reclaim", "signal", string(t.Signal), "threshold", t.String(),
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
			m.logger.Info("Node-level resources reclaimed; no pod evicted", "signal", string(t.Signal), "available", after.Signals[t.Signal].Available)
			return nil
		}
		if o2, ok := after.Signals[t.Signal]; ok {
			o = o2
		}
	}

	// Step 5: rank and evict one pod.
	pods := m.pods.Evictable()
	if len(pods) == 0 {
		m.logger.Warn("Eviction threshold met but no pod can be evicted", "signal", string(t.Signal))
		return nil
	}
	disk := t.Signal.Resource() != "memory" && t.Signal.Resource() != "pids"
	stats := m.cfg.Stats.PodStats(ctx, pods, disk)
	cands := make([]Candidate, 0, len(pods))
	for _, p := range pods {
		cands = append(cands, Candidate{Pod: p, Stats: stats[p.UID]})
	}
	Rank(t.Signal, cands)
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
		msg := Message(t, o.Available, c)
		if !m.pods.Evict(c.Pod.UID, grace, msg, true) {
			continue
		}
		m.record(c.Pod, string(t.Signal), grace, msg, now)
		return []*v1.Pod{c.Pod} // one per cycle, as the kubelet
	}
	return nil
}

// record counts and keeps an eviction, and logs it.
func (m *Manager) record(pod *v1.Pod, signal string, grace int64, msg string, now time.Time) {
	m.evictions.WithLabelValues(signal).Inc()
	m.mu.Lock()
	m.records = append(m.records, Record{Pod: pod.Namespace + "/" + pod.Name, UID: pod.UID, Signal: signal, Time: now, Message: msg})
	if len(m.records) > maxRecords {
		m.records = m.records[len(m.records)-maxRecords:]
	}
	m.mu.Unlock()
	m.logger.Warn("Evicted a pod", "pod", pod.Namespace+"/"+pod.Name, "podUID", string(pod.UID),
		"signal", signal, "gracePeriod", grace, "message", msg)
}

// minReclaim is the signal's minimum reclaim for capacity.
func (m *Manager) minReclaim(s Signal, capacity int64) int64 {
	if v, ok := m.cfg.MinimumReclaim[s]; ok {
		return v.Amount(capacity)
	}
	return 0
}

// reclaim frees node-level resources for a disk threshold, as the
// kubelet's reclaimNodeLevelResources: nodefs by dead containers (and
// images when imagefs is the same filesystem), imagefs by dead
// containers and unused images. It reports whether it tried.
func (m *Manager) reclaim(ctx context.Context, t Threshold, sameFs bool) bool {
	if m.cfg.Reclaim == nil {
		return false
	}
	var images bool
	switch t.Signal {
	case SignalNodeFsAvailable, SignalNodeFsInodesFree:
		images = sameFs
	case SignalImageFsAvailable, SignalImageFsInodesFree:
		images = true
	default:
		return false
	}
	if err := m.cfg.Reclaim.DeleteDeadContainers(ctx); err != nil {
		m.logger.Warn("Eviction reclaim: removing dead containers failed", "err", err)
	}
	if images {
		if err := m.cfg.Reclaim.DeleteUnusedImages(ctx); err != nil {
			m.logger.Warn("Eviction reclaim: removing unused images failed", "err", err)
		}
	}
	return true
}

// setConditions sets each condition from when its signal last crossed,
// held for the transition period, and records the observation.
func (m *Manager) setConditions(obs NodeObservation, now time.Time) {
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
			m.logger.Info("Node pressure condition changed", "condition", string(t), "status", on)
		}
	}
}

// Snapshot returns the last observation and the eviction records.
func (m *Manager) Snapshot() (NodeObservation, time.Time, []Record) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.last, m.lastTime, slices.Clone(m.records)
}

// IsCritical reports whether the kubelet would treat pod as critical:
// here, a static pod (manifest directory) or one of system-critical
// priority. See the file comment.
func IsCritical(pod *v1.Pod) bool {
	if pod.Annotations[source.AnnotationConfigSource] == source.SourceFile {
		return true
	}
	return pod.Spec.Priority != nil && *pod.Spec.Priority >= CriticalPriority
}
