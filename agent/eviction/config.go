package eviction

// What the manager (manager.go) is configured with and what it asks of the
// engine: its configuration, the engine's narrow interfaces (Pods,
// StatsProvider, Reclaimer) and what it reports (PressureCondition,
// Record).

import (
	"context"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// NodeObservation is one look at the node: each signal's available
// amount and capacity, and the filesystems behind the disk signals.
type NodeObservation struct {
	Signals map[Signal]Observation
	// NodeFsPath is the agent's root dir; ImageFsPath the runtime's image
	// filesystem mountpoint ("" if unknown).
	NodeFsPath, ImageFsPath string
	// SameFs is set when the image filesystem is the node filesystem:
	// then reclaiming nodefs removes images too, as in the kubelet.
	SameFs bool
	// Errors are the signals that could not be observed, with why.
	Errors []string
}

// StatsProvider measures the node and its pods; the real one reads the
// host (agent/eviction/hoststats), tests pass fakes.
type StatsProvider interface {
	// Observe measures every signal it can.
	Observe(ctx context.Context) NodeObservation
	// PodStats measures the pods' usage; a pod without stats is missing
	// from the map. disk asks for disk usage as well (costly: walks of
	// the pods' files, run per pod in the background and waited for a
	// bounded time; agent/eviction/hoststats/podfs.go).
	PodStats(ctx context.Context, pods []*v1.Pod, disk bool) map[types.UID]*PodStats
	// LocalStorage measures what the pods' local storage limits are
	// checked against; a pod without stats is missing from the map.
	LocalStorage(ctx context.Context, pods []*v1.Pod) map[types.UID]*LocalStorageUsage
}

// Reclaimer frees node-level resources before pods are evicted
// for disk pressure (agent/gc).
type Reclaimer interface {
	// DeleteDeadContainers removes dead containers and sandboxes.
	DeleteDeadContainers(ctx context.Context) error
	// DeleteUnusedImages removes every unused image.
	DeleteUnusedImages(ctx context.Context) error
}

// Config configures the eviction manager (serve's --eviction-*).
type Config struct {
	// Thresholds are the hard and soft thresholds (ParseThresholds).
	Thresholds []Threshold
	// MinimumReclaim is --eviction-minimum-reclaim, by signal.
	MinimumReclaim map[Signal]Value
	// MaxPodGracePeriod is the grace period of pods evicted for a soft
	// threshold, in seconds, or the pod's own if shorter
	// (--eviction-max-pod-grace-period; the kubelet's default 0 kills at
	// once).
	MaxPodGracePeriod int64
	// PressureTransitionPeriod holds a pressure condition after its last
	// crossing (0: DefaultPressureTransitionPeriod).
	PressureTransitionPeriod time.Duration
	// Period is how often the node is observed (0: DefaultPeriod).
	Period time.Duration
	// VolumeStatsAggPeriod is how often each pod's files are walked, 1 to
	// 2 periods apart (0: DefaultVolumeStatsAggPeriod); the walks of one
	// cycle take a tenth of Period at most (agent/eviction/hoststats/podfs.go).
	VolumeStatsAggPeriod time.Duration
	// Stats measures; Reclaim frees (nil: nothing is reclaimed).
	Stats   StatsProvider
	Reclaim Reclaimer
}

// Record is one eviction, for describe node.
type Record struct {
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

// Pods is what the engine offers the manager.
type Pods interface {
	// Evictable returns the pods eviction may pick, sorted by UID: those
	// the engine runs that are neither terminating nor evicted, not in a
	// terminal phase, and not critical (IsCritical).
	Evictable() []*v1.Pod
	// Evict marks the pod evicted: the engine kills it with grace (in
	// seconds), publishes it Failed/Evicted with message (and the
	// DisruptionTarget condition when disruption is set) and records an
	// event. False if the pod is gone, already evicted or over.
	Evict(uid types.UID, grace int64, message string, disruption bool) bool
	// CleanedUp returns the channels closed once the evicted pod was
	// cleaned up (containers dead, volumes removed), and once it is gone;
	// nil if the engine does not know it or did not evict it.
	CleanedUp(uid types.UID) (cleanedUp, gone <-chan struct{})
}

// CycleStats is implemented by a StatsProvider whose measurements run in
// the background: BeginCycle gives them a new cycle's budget at each
// cycle's start; StopMeasuring ends them when the loop stops.
type CycleStats interface {
	BeginCycle()
	StopMeasuring()
}

// WithDefaults is cfg with its zero periods set to the kubelet's.
func (cfg Config) WithDefaults() Config {
	if cfg.Period <= 0 {
		cfg.Period = DefaultPeriod
	}
	if cfg.PressureTransitionPeriod <= 0 {
		cfg.PressureTransitionPeriod = DefaultPressureTransitionPeriod
	}
	if cfg.VolumeStatsAggPeriod <= 0 {
		cfg.VolumeStatsAggPeriod = DefaultVolumeStatsAggPeriod
	}
	return cfg
}
