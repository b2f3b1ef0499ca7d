package eviction

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"
)

// Signal is an eviction signal, as the kubelet names it.
type Signal string

// The kubelet's eviction signals on Linux.
const (
	SignalMemoryAvailable   Signal = "memory.available"
	SignalNodeFsAvailable   Signal = "nodefs.available"
	SignalNodeFsInodesFree  Signal = "nodefs.inodesFree"
	SignalImageFsAvailable  Signal = "imagefs.available"
	SignalImageFsInodesFree Signal = "imagefs.inodesFree"
	SignalPIDAvailable      Signal = "pid.available"
	// SignalAllocatableMemoryAvailable is node allocatable memory minus
	// the pods' working set (the kubepods cgroup): a threshold on it
	// counts the pods only, whatever else runs on the machine.
	SignalAllocatableMemoryAvailable Signal = "allocatableMemory.available"
)

// signals are the known signals with the resource each one starves.
var signals = map[Signal]string{
	SignalMemoryAvailable:   "memory",
	SignalNodeFsAvailable:   "ephemeral-storage",
	SignalNodeFsInodesFree:  "inodes",
	SignalImageFsAvailable:  "ephemeral-storage",
	SignalImageFsInodesFree: "inodes",
	SignalPIDAvailable:      "pids",

	SignalAllocatableMemoryAvailable: "memory",
}

// Resource is the resource a signal's pressure starves, as the eviction
// message names it ("memory", "ephemeral-storage", "inodes", "pids").
func (s Signal) Resource() string { return signals[s] }

// Value is a threshold's level: an absolute quantity or a percentage of
// the capacity.
type Value struct {
	// Quantity is the absolute level; nil when Percentage is used.
	Quantity *resource.Quantity
	// Percentage is the level as a fraction of capacity (0.1 for 10%).
	Percentage float64
}

// Threshold is one eviction threshold: the signal is below Value. Hard
// thresholds have no grace period; soft ones must hold that long.
type Threshold struct {
	Signal Signal
	Value  Value
	// GracePeriod is how long a soft threshold must be met before pods
	// are evicted; 0 for hard thresholds.
	GracePeriod time.Duration
}

// String renders the threshold in flag syntax ("memory.available<100Mi").
func (t Threshold) String() string {
	if t.Value.Quantity != nil {
		return fmt.Sprintf("%s<%s", t.Signal, t.Value.Quantity.String())
	}
	return fmt.Sprintf("%s<%g%%", t.Signal, t.Value.Percentage*100)
}

// Level is the threshold's level in bytes (or inodes, or pids) for a
// resource of the given capacity.
func (t Threshold) Level(capacity int64) int64 {
	if t.Value.Quantity != nil {
		return t.Value.Quantity.Value()
	}
	return int64(t.Value.Percentage * float64(capacity))
}

// DefaultEvictionHard is the kubelet's default --eviction-hard on Linux
// (pkg/kubelet/apis/config/v1beta1/defaults_linux.go).
const DefaultEvictionHard = "memory.available<100Mi,nodefs.available<10%,nodefs.inodesFree<5%,imagefs.available<15%,imagefs.inodesFree<5%"

// ParseThresholds parses --eviction-hard, --eviction-soft and
// --eviction-soft-grace-period ("memory.available=1m30s,..."), as the
// kubelet's ParseThresholdConfig: every soft threshold needs a grace
// period, and a signal appears at most once per list. Thresholds of 0
// (e.g. "memory.available<0%") are dropped: they turn the signal off.
func ParseThresholds(hard, soft, softGrace string) ([]Threshold, error) {
	var out []Threshold
	hs, err := parseList(hard)
	if err != nil {
		return nil, fmt.Errorf("--eviction-hard: %w", err)
	}
	out = append(out, hs...)
	ss, err := parseList(soft)
	if err != nil {
		return nil, fmt.Errorf("--eviction-soft: %w", err)
	}
	grace, err := parseGrace(softGrace)
	if err != nil {
		return nil, fmt.Errorf("--eviction-soft-grace-period: %w", err)
	}
	for _, t := range ss {
		g, ok := grace[t.Signal]
		if !ok {
			return nil, fmt.Errorf("--eviction-soft %s has no grace period in --eviction-soft-grace-period", t)
		}
		t.GracePeriod = g
		out = append(out, t)
	}
	for s := range grace {
		if !slices.ContainsFunc(ss, func(t Threshold) bool { return t.Signal == s }) {
			return nil, fmt.Errorf("--eviction-soft-grace-period names %s, which has no soft threshold", s)
		}
	}
	return slices.DeleteFunc(out, func(t Threshold) bool {
		return t.Value.Quantity != nil && t.Value.Quantity.IsZero() || t.Value.Quantity == nil && t.Value.Percentage == 0
	}), nil
}

// parseList parses "signal<value,signal<value".
func parseList(s string) ([]Threshold, error) {
	var out []Threshold
	seen := map[Signal]bool{}
	for _, item := range strings.Split(s, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			continue
		}
		name, val, ok := strings.Cut(item, "<")
		if !ok {
			return nil, fmt.Errorf("%q: want signal<value (only < is supported)", item)
		}
		sig := Signal(strings.TrimSpace(name))
		if _, known := signals[sig]; !known {
			return nil, fmt.Errorf("%q: unknown eviction signal %q", item, sig)
		}
		if seen[sig] {
			return nil, fmt.Errorf("%q: signal %s given twice", item, sig)
		}
		seen[sig] = true
		v, err := parseValue(strings.TrimSpace(val))
		if err != nil {
			return nil, fmt.Errorf("%q: %w", item, err)
		}
		out = append(out, Threshold{Signal: sig, Value: v})
	}
	return out, nil
}

// parseValue parses "10%" or a quantity ("100Mi").
func parseValue(s string) (Value, error) {
	if p, ok := strings.CutSuffix(s, "%"); ok {
		var f float64
		if _, err := fmt.Sscanf(p, "%g", &f); err != nil || f < 0 || f > 100 {
			return Value{}, fmt.Errorf("percentage %q must be between 0%% and 100%%", s)
		}
		return Value{Percentage: f / 100}, nil
	}
	q, err := resource.ParseQuantity(s)
	if err != nil {
		return Value{}, fmt.Errorf("quantity %q: %w", s, err)
	}
	if q.Sign() < 0 {
		return Value{}, errors.New("a threshold must not be negative")
	}
	return Value{Quantity: &q}, nil
}

// parseGrace parses "signal=duration,...".
func parseGrace(s string) (map[Signal]time.Duration, error) {
	out := map[Signal]time.Duration{}
	for _, item := range strings.Split(s, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			continue
		}
		name, val, ok := strings.Cut(item, "=")
		if !ok {
			return nil, fmt.Errorf("%q: want signal=duration", item)
		}
		sig := Signal(strings.TrimSpace(name))
		if _, known := signals[sig]; !known {
			return nil, fmt.Errorf("%q: unknown eviction signal %q", item, sig)
		}
		d, err := time.ParseDuration(strings.TrimSpace(val))
		if err != nil || d < 0 {
			return nil, fmt.Errorf("%q: grace period must be a non-negative duration", item)
		}
		out[sig] = d
	}
	return out, nil
}

// Observation is one signal's measurement: what is available of what
// capacity (bytes, inodes or pids).
type Observation struct {
	Available, Capacity int64
}

// Tracker remembers when each soft threshold was first met, so that a soft
// threshold counts only once it has been met for its grace period (the
// kubelet's thresholdsFirstObservedAt). Not safe for concurrent use: the
// monitor's goroutine owns it.
type Tracker struct {
	// firstMet holds when each threshold (by its String) was first met in
	// the current run of observations that met it.
	firstMet map[string]time.Time
}

// NewTracker returns a tracker with nothing observed.
func NewTracker() *Tracker { return &Tracker{firstMet: map[string]time.Time{}} }

// Met returns the thresholds met by the observations at now: hard ones at
// once, soft ones once met for their grace period. A signal without an
// observation meets nothing.
func (tr *Tracker) Met(thresholds []Threshold, obs map[Signal]Observation, now time.Time) []Threshold {
	var out []Threshold
	for _, t := range thresholds {
		o, ok := obs[t.Signal]
		key := t.String()
		if !ok || o.Available >= t.Level(o.Capacity) {
			delete(tr.firstMet, key)
			continue
		}
		first, seen := tr.firstMet[key]
		if !seen {
			first = now
			tr.firstMet[key] = now
		}
		if now.Sub(first) >= t.GracePeriod {
			out = append(out, t)
		}
	}
	return out
}

// ParseMinimumReclaim parses --eviction-minimum-reclaim
// ("memory.available=0Mi,nodefs.available=500Mi", values as quantities or
// percentages of capacity), as the kubelet: once a threshold is met, it
// stays met until the signal is back above its level plus this amount.
func ParseMinimumReclaim(s string) (map[Signal]Value, error) {
	out := map[Signal]Value{}
	for _, item := range strings.Split(s, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			continue
		}
		name, val, ok := strings.Cut(item, "=")
		if !ok {
			return nil, fmt.Errorf("--eviction-minimum-reclaim %q: want signal=quantity", item)
		}
		sig := Signal(strings.TrimSpace(name))
		if _, known := signals[sig]; !known {
			return nil, fmt.Errorf("--eviction-minimum-reclaim %q: unknown eviction signal %q", item, sig)
		}
		v, err := parseValue(strings.TrimSpace(val))
		if err != nil {
			return nil, fmt.Errorf("--eviction-minimum-reclaim %q: %w", item, err)
		}
		out[sig] = v
	}
	return out, nil
}

// Amount is the value in bytes (or inodes, or pids) for a resource of
// the given capacity.
func (v Value) Amount(capacity int64) int64 {
	if v.Quantity != nil {
		return v.Quantity.Value()
	}
	return int64(v.Percentage * float64(capacity))
}
