package metrics

import (
	"io"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/expfmt"
	"k8s.io/apimachinery/pkg/types"
)

// Metrics are the daemon's Prometheus metrics, kubelet-named where the
// kubelet has one (pkg/kubelet/metrics). The engine updates the exported
// collectors where the events happen.
type Metrics struct {
	// Registry is served at /metrics; collaborators with metrics of
	// their own (image and container GC, eviction) register there.
	Registry *prometheus.Registry

	PodStartSLI       prometheus.Histogram
	runningPods       prometheus.GaugeFunc
	RunningContainers *prometheus.GaugeVec
	runtimeOpsSeconds *prometheus.HistogramVec
	runtimeOpsErrors  *prometheus.CounterVec
	ProbeTotal        *prometheus.CounterVec
	Restarts          prometheus.Counter
	IPsReleased       prometheus.Counter
	StuckTasksRemoved prometheus.Counter
	EventedConns      prometheus.Counter
	EventedConnErrors prometheus.Counter
	EventedLatency    prometheus.Histogram
}

// New builds the metrics in a registry of their own; runningPods counts
// the pods whose newest sandbox is ready, read at each scrape.
func New(runningPods func() int) *Metrics {
	m := &Metrics{Registry: prometheus.NewRegistry()}
	m.PodStartSLI = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    "kubelet_pod_start_sli_duration_seconds",
		Help:    "Time from the pod being accepted to all its containers started, excluding image pulls.",
		Buckets: []float64{0.5, 1, 2, 3, 4, 5, 6, 8, 10, 20, 30, 45, 60, 120, 180, 240, 300, 360, 480, 600, 900, 1200, 1800, 2700, 3600},
	})
	m.runningPods = prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "kubelet_running_pods",
		Help: "Number of pods that have a running sandbox.",
	}, func() float64 { return float64(runningPods()) })
	m.RunningContainers = prometheus.NewGaugeVec(prometheus.GaugeOpts{
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
	m.ProbeTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "prober_probe_total",
		Help: "Cumulative number of a liveness, readiness or startup probe result changes, by result.",
	}, []string{"probe_type", "result", "container", "pod", "namespace", "pod_uid"})
	m.Restarts = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "minikubelet_container_restarts_total",
		Help: "Containers started again after an earlier instance exited.",
	})
	m.IPsReleased = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "minikubelet_ipam_leaked_ips_released_total",
		Help: "Host-local IP reservations of sandboxes the runtime no longer knows, released at start.",
	})
	m.StuckTasksRemoved = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "minikubelet_runtime_stuck_tasks_removed_total",
		Help: "containerd tasks left behind by a start cut short (cannot delete running task), deleted through containerd's task service.",
	})
	// The kubelet's evented PLEG metrics (CRI GetContainerEvents). A
	// connection counts once its first event arrived: a runtime without the
	// API (containerd 1.6) accepts the stream and only then answers
	// Unimplemented, an error here.
	m.EventedConns = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "kubelet_evented_pleg_connection_success_count",
		Help: "The number of times a streaming client was obtained to receive CRI Events.",
	})
	m.EventedConnErrors = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "kubelet_evented_pleg_connection_error_count",
		Help: "The number of errors encountered during the establishment of streaming connection with the CRI runtime.",
	})
	m.EventedLatency = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    "kubelet_evented_pleg_connection_latency_seconds",
		Help:    "The latency of streaming connection with the CRI runtime, measured in seconds.",
		Buckets: prometheus.DefBuckets,
	})
	m.Registry.MustRegister(m.PodStartSLI, m.runningPods, m.RunningContainers, m.runtimeOpsSeconds,
		m.runtimeOpsErrors, m.ProbeTotal, m.Restarts, m.IPsReleased, m.StuckTasksRemoved, m.EventedConns, m.EventedConnErrors, m.EventedLatency)
	return m
}

// ObserveRuntimeOp records one CRI call (hooked into cri.Instrumented).
func (m *Metrics) ObserveRuntimeOp(verb string, d time.Duration, err error) {
	m.runtimeOpsSeconds.WithLabelValues(verb).Observe(d.Seconds())
	if err != nil {
		m.runtimeOpsErrors.WithLabelValues(verb).Inc()
	}
}

// ForgetPod deletes the per-pod series of the pod uid (prober_probe_total),
// once its worker ended: the kubelet's prober workers delete theirs when
// they stop (ProberResults.Delete), so the series, like the pods, are
// bounded by the pods on the node, not by every pod it ever ran.
func (m *Metrics) ForgetPod(uid types.UID) {
	m.ProbeTotal.DeletePartialMatch(prometheus.Labels{"pod_uid": string(uid)})
}

// Write renders the metrics in the Prometheus text format.
func (m *Metrics) Write(w io.Writer) error {
	mfs, err := m.Registry.Gather()
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
