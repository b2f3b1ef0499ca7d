package agent

import (
	"io"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// ObserveRuntimeOp records one CRI call in the runtime operation metrics;
// cmd hooks it into the CRI decorator.
func (a *Agent) ObserveRuntimeOp(verb string, d time.Duration, err error) {
	a.metrics.ObserveRuntimeOp(verb, d, err)
}

// WriteMetrics writes the agent's metrics in the Prometheus text format.
func (a *Agent) WriteMetrics(w io.Writer) error { return a.metrics.Write(w) }

// MetricsRegisterer is the registry of the agent's metrics (served at
// /metrics), for collaborators with metrics of their own (image GC).
func (a *Agent) MetricsRegisterer() prometheus.Registerer { return a.metrics.Registry }

// countRunningPods counts pods whose newest sandbox is ready.
func (a *Agent) countRunningPods() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.readySandboxes
}
