package agent

import (
	"io"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/expfmt"
	"k8s.io/apimachinery/pkg/types"
)

// metrics are the daemon's Prometheus metrics, kubelet-named where the
// kubelet has one (pkg/kubelet/metrics).
type metrics struct {
	registry *prometheus.Registry

	podStartSLI       prometheus.Histogram
	runningPods       prometheus.GaugeFunc
	runningContainers *prometheus.GaugeVec
	runtimeOpsSeconds *prometheus.HistogramVec
	runtimeOpsErrors  *prometheus.CounterVec
	probeTotal        *prometheus.CounterVec
	restarts          prometheus.Counter
	ipsReleased       prometheus.Counter
	stuckTasksRemoved prometheus.Counter
	eventedConns      prometheus.Counter
	eventedConnErrors prometheus.Counter
	eventedLatency    prometheus.Histogram
}

func newMetrics(a *Agent) *metrics {
	m := &metrics{registry: prometheus.NewRegistry()}
	m.podStartSLI = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    "kubelet_pod_start_sli_duration_seconds",
		Help:    "Time from the pod being accepted to all its containers started, excluding image pulls.",
		Buckets: []float64{0.5, 1, 2, 3, 4, 5, 6, 8, 10, 20, 30, 45, 60, 120, 180, 240, 300, 360, 480, 600, 900, 1200, 1800, 2700, 3600},
	})
	m.runningPods = prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "kubelet_running_pods",
		Help: "Number of pods that have a running sandbox.",
	}, func() float64 { return float64(a.countRunningPods()) })
	m.runningContainers = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "kubelet_running_containers",
		Help: "Number of containers by state, as of the last relist.",
	}, []string{"container_state"})
	m.runtimeOpsSeconds = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "kubelet_runtime_operations_duration_seconds",
		Help:    "Duration in seconds of CRI operations, by operation type.",
		Buckets: prometheus.ExponentialBuckets(.005, 2.5, 14),
	}, []string{"operation_type"})
	m.runtimeOpsErrors = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "kubelet_runtime_operations_errors_total",
		Help: "Cumulative number of CRI operation errors by operation type.",
	}, []string{"operation_type"})
	// pod_uid as the kubelet's: the kubelet server keeps only the series
	// of the pods the cluster sees by it.
	m.probeTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "prober_probe_total",
		Help: "Cumulative number of a liveness, readiness or startup probe result changes, by result.",
	}, []string{"probe_type", "result", "container", "pod", "namespace", "pod_uid"})
	m.restarts = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "minikubelet_container_restarts_total",
		Help: "Containers started again after an earlier instance exited.",
	})
	m.ipsReleased = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "minikubelet_ipam_leaked_ips_released_total",
		Help: "Host-local IP reservations of sandboxes the runtime no longer knows, released at start.",
	})
	m.stuckTasksRemoved = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "minikubelet_runtime_stuck_tasks_removed_total",
		Help: "containerd tasks left behind by a start cut short (cannot delete running task), deleted through containerd's task service.",
	})
	// The kubelet's evented PLEG metrics (CRI GetContainerEvents). A
	// connection counts once its first event arrived: a runtime without the
	// API (containerd 1.6) accepts the stream and only then answers
	// Unimplemented, an error here.
	m.eventedConns = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "kubelet_evented_pleg_connection_success_count",
		Help: "The number of times a streaming client was obtained to receive CRI Events.",
	})
	m.eventedConnErrors = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "kubelet_evented_pleg_connection_error_count",
		Help: "The number of errors encountered during the establishment of streaming connection with the CRI runtime.",
	})
	m.eventedLatency = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    "kubelet_evented_pleg_connection_latency_seconds",
		Help:    "The latency of streaming connection with the CRI runtime, measured in seconds.",
		Buckets: prometheus.DefBuckets,
	})
	m.registry.MustRegister(m.podStartSLI, m.runningPods, m.runningContainers, m.runtimeOpsSeconds,
		m.runtimeOpsErrors, m.probeTotal, m.restarts, m.ipsReleased, m.stuckTasksRemoved, m.eventedConns, m.eventedConnErrors, m.eventedLatency)
	return m
}

// observeRuntimeOp records one CRI call (hooked into cri.Instrumented).
func (m *metrics) observeRuntimeOp(verb string, d time.Duration, err error) {
	m.runtimeOpsSeconds.WithLabelValues(verb).Observe(d.Seconds())
	if err != nil {
		m.runtimeOpsErrors.WithLabelValues(verb).Inc()
	}
}

// forgetPod deletes the per-pod series of the pod uid (prober_probe_total),
// once its worker ended: the kubelet's prober workers delete theirs when
// they stop (ProberResults.Delete), so the series, like the pods, are
// bounded by the pods on the node, not by every pod it ever ran.
func (m *metrics) forgetPod(uid types.UID) {
	m.probeTotal.DeletePartialMatch(prometheus.Labels{"pod_uid": string(uid)})
}

// write renders the metrics in the Prometheus text format.
func (m *metrics) write(w io.Writer) error {
	mfs, err := m.registry.Gather()
	if err != nil {
		return err
	}
	enc := expfmt.NewEncoder(w, expfmt.NewFormat(expfmt.TypeTextPlain))
	for _, mf := range mfs {
		if err := enc.Encode(mf); err != nil {
			return err
		}
	}
	return nil
}

// ObserveRuntimeOp records one CRI call in the runtime operation metrics;
// cmd hooks it into the CRI decorator.
func (a *Agent) ObserveRuntimeOp(verb string, d time.Duration, err error) {
	a.metrics.observeRuntimeOp(verb, d, err)
}

// WriteMetrics writes the agent's metrics in the Prometheus text format.
func (a *Agent) WriteMetrics(w io.Writer) error { return a.metrics.write(w) }

// countRunningPods counts pods whose newest sandbox is ready.
func (a *Agent) countRunningPods() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.readySandboxes
}
