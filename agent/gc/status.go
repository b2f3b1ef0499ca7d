package gc

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// LoopStatus is a GC loop's health (house style rule 18).
type LoopStatus struct {
	// Runs and Failures count the loop's runs, failed ones included in
	// Runs.
	Runs, Failures int
	// ConsecutiveFailures counts failures since the last success.
	ConsecutiveFailures int
	// LastError is the last failure's message.
	LastError string
	// LastSuccess is when a run last succeeded.
	LastSuccess time.Time
	// Removed counts what the loop removed since start.
	Removed int
	// Busy is the wall time the loop spent working (collections and
	// pressure checks), for the bench's cost of housekeeping.
	Busy time.Duration
}

// registerStatus registers the health of a loop (house style rule 18) as
// gauges on reg: its consecutive failures and the time of its last
// success, labelled with the loop's name.
func registerStatus(reg prometheus.Registerer, loop string, status func() LoopStatus) error {
	for _, g := range []prometheus.Collector{
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name:        "minikubelet_gc_consecutive_failures",
			Help:        "Garbage collection runs that failed since the last success, by loop (image, container).",
			ConstLabels: prometheus.Labels{"loop": loop},
		}, func() float64 { return float64(status().ConsecutiveFailures) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name:        "minikubelet_gc_last_success_timestamp_seconds",
			Help:        "When a garbage collection run last succeeded (Unix time; 0: never), by loop (image, container).",
			ConstLabels: prometheus.Labels{"loop": loop},
		}, func() float64 {
			t := status().LastSuccess
			if t.IsZero() {
				return 0
			}
			return float64(t.UnixNano()) / 1e9
		}),
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name:        "minikubelet_gc_busy_seconds_total",
			Help:        "Wall time garbage collection spent working (collections, pressure checks), by loop (image, container).",
			ConstLabels: prometheus.Labels{"loop": loop},
		}, func() float64 { return status().Busy.Seconds() }),
	} {
		if err := reg.Register(g); err != nil {
			return err
		}
	}
	return nil
}
