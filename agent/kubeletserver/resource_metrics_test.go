package kubeletserver

import (
	"context"
	"errors"
	"net/http/httptest"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// fakeStats returns fixed container stats, or err.
type fakeStats struct {
	stats []*runtimeapi.ContainerStats
	err   error
}

var _ ContainerStats = fakeStats{}

func (f fakeStats) ListContainerStats(context.Context, *runtimeapi.ContainerStatsFilter) ([]*runtimeapi.ContainerStats, error) {
	return f.stats, f.err
}

// containerStats is the runtime's stats of a container of pod default/pod
// (the CRI labels: the node's name of the pod, and its UID uid-<pod>).
func containerStats(pod, container string, cpuNanos, mem uint64, at time.Time) *runtimeapi.ContainerStats {
	return &runtimeapi.ContainerStats{
		Attributes: &runtimeapi.ContainerAttributes{Labels: map[string]string{
			labelPodName: pod, labelPodNamespace: "default", labelPodUID: "uid-" + pod, labelContainerName: container,
		}},
		Cpu:    &runtimeapi.CpuUsage{Timestamp: at.UnixNano(), UsageCoreNanoSeconds: &runtimeapi.UInt64Value{Value: cpuNanos}},
		Memory: &runtimeapi.MemoryUsage{Timestamp: at.UnixNano(), WorkingSetBytes: &runtimeapi.UInt64Value{Value: mem}},
	}
}

func TestServer_ResourceMetrics(t *testing.T) {
	at := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	ms := strconv.FormatInt(at.UnixMilli(), 10)
	node := func() (float64, uint64, time.Time, error) { return 1234.5, 2 << 30, at, nil }
	stats := fakeStats{stats: []*runtimeapi.ContainerStats{
		containerStats("web", "app", 1_500_000_000, 10<<20, at),
		containerStats("web", "side", 500_000_000, 5<<20, at),
		{Attributes: &runtimeapi.ContainerAttributes{Labels: map[string]string{"other": "x"}}}, // not ours
	}}
	serve := func(deps Deps) string {
		deps.Pods = fakePods{}
		s, err := New(Config{NodeName: "node-a", CertDir: t.TempDir()}, deps)
		require.NoError(t, err)
		rec := httptest.NewRecorder()
		s.resourceMetrics(rec, httptest.NewRequest("GET", "/metrics/resource", nil))
		require.Equal(t, 200, rec.Code)
		return rec.Body.String()
	}

	got := serve(Deps{ContainerStats: stats, NodeUsage: node})
	require.Equal(t, `# HELP container_cpu_usage_seconds_total [STABLE] Cumulative cpu time consumed by the container in core-seconds
# TYPE container_cpu_usage_seconds_total counter
container_cpu_usage_seconds_total{container="app",namespace="default",pod="web"} 1.5 `+ms+`
container_cpu_usage_seconds_total{container="side",namespace="default",pod="web"} 0.5 `+ms+`
# HELP container_memory_working_set_bytes [STABLE] Current working set of the container in bytes
# TYPE container_memory_working_set_bytes gauge
container_memory_working_set_bytes{container="app",namespace="default",pod="web"} 1.048576e+07 `+ms+`
container_memory_working_set_bytes{container="side",namespace="default",pod="web"} 5.24288e+06 `+ms+`
# HELP node_cpu_usage_seconds_total [STABLE] Cumulative cpu time consumed by the node in core-seconds
# TYPE node_cpu_usage_seconds_total counter
node_cpu_usage_seconds_total 1234.5 `+ms+`
# HELP node_memory_working_set_bytes [STABLE] Current working set of the node in bytes
# TYPE node_memory_working_set_bytes gauge
node_memory_working_set_bytes 2.147483648e+09 `+ms+`
# HELP pod_cpu_usage_seconds_total [STABLE] Cumulative cpu time consumed by the pod in core-seconds
# TYPE pod_cpu_usage_seconds_total counter
pod_cpu_usage_seconds_total{namespace="default",pod="web"} 2 `+ms+`
# HELP pod_memory_working_set_bytes [STABLE] Current working set of the pod in bytes
# TYPE pod_memory_working_set_bytes gauge
pod_memory_working_set_bytes{namespace="default",pod="web"} 1.572864e+07 `+ms+`
# HELP scrape_error [ALPHA] 1 if there was an error while getting container metrics, 0 otherwise
# TYPE scrape_error gauge
scrape_error 0
`, got)

	got = serve(Deps{ContainerStats: fakeStats{err: errors.New("runtime down")}, NodeUsage: node})
	require.Contains(t, got, "\nscrape_error 1\n")
	require.Contains(t, got, "node_cpu_usage_seconds_total 1234.5", "the node's series survive a runtime failure")
	require.NotContains(t, got, "container_cpu_usage_seconds_total{")
}

// The cluster's view of the node (Pods, daemon.ClusterView) has the pod web
// and the static pod etcd under its mirror's name, etcd-node-a; the node
// also runs its own pod secret (the local API's). Its series, named as the
// runtime names it, would tell a cluster caller with nodes/metrics (and
// metrics-server) of a pod the cluster cannot see, and etcd's would name a
// pod the API server does not have.
func TestServer_ResourceMetrics_OnlyThePodsTheClusterSees(t *testing.T) {
	at := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	s, err := New(Config{NodeName: "node-a", CertDir: t.TempDir()}, Deps{Pods: viewPods{}, ContainerStats: fakeStats{stats: []*runtimeapi.ContainerStats{
		containerStats("web", "app", 1_000_000_000, 1<<20, at),
		containerStats("etcd", "etcd", 2_000_000_000, 2<<20, at),
		containerStats("secret", "app", 3_000_000_000, 3<<20, at),
	}}})
	require.NoError(t, err)
	rec := httptest.NewRecorder()
	s.resourceMetrics(rec, httptest.NewRequest("GET", "/metrics/resource", nil))
	require.Equal(t, 200, rec.Code)
	got := rec.Body.String()
	require.NotContains(t, got, "secret", "the node's own pod")
	require.NotContains(t, got, `pod="etcd"`, "the static pod under its own name")
	ms := " " + strconv.FormatInt(at.UnixMilli(), 10) + "\n"
	for _, series := range []string{
		`container_cpu_usage_seconds_total{container="etcd",namespace="default",pod="etcd-node-a"} 2` + ms,
		`pod_cpu_usage_seconds_total{namespace="default",pod="etcd-node-a"} 2` + ms,
		`pod_cpu_usage_seconds_total{namespace="default",pod="web"} 1` + ms,
	} {
		require.Contains(t, got, series)
	}
}

// viewPods is the cluster's view of a node that runs web, the static pod
// etcd (as its mirror etcd-node-a, with the static pod's UID) and a pod of
// its own that the view leaves out.
type viewPods struct{ fakePods }

func (viewPods) ListPods(string) []*v1.Pod {
	mirror := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "etcd-node-a", UID: "uid-etcd"}}
	return []*v1.Pod{webPod(), mirror}
}
