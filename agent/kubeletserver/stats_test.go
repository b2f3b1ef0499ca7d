package kubeletserver

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/require"
	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"
)

// fakeSummary returns a one-pod summary and records the last request.
type fakeSummary struct{ only *bool }

func (f *fakeSummary) Summary(_ context.Context, only bool) (*statsapi.Summary, error) {
	f.only = &only
	cpu := uint64(42)
	return &statsapi.Summary{Node: statsapi.NodeStats{NodeName: "node-a", CPU: &statsapi.CPUStats{UsageNanoCores: &cpu}},
		Pods: []statsapi.PodStats{{PodRef: statsapi.PodReference{Name: "web", Namespace: "default", UID: "u"}}}}, nil
}

type fakeMetrics struct{}

func (fakeMetrics) WriteMetrics(w io.Writer) error {
	_, err := io.WriteString(w, `# HELP kubelet_running_pods Number of pods.
# TYPE kubelet_running_pods gauge
kubelet_running_pods 1
# HELP prober_probe_total Cumulative number of probes.
# TYPE prober_probe_total counter
prober_probe_total{container="c",namespace="default",pod="web",pod_uid="uid-web",probe_type="Readiness",result="successful"} 3
# HELP prober_probe_total_other Not it.
# TYPE prober_probe_total_other counter
prober_probe_total_other 1
`)
	return err
}

func TestServer_StatsSummary(t *testing.T) {
	h := newHarness(t)
	admin := h.ca.client(t, "admin", "system:masters")
	code, body := h.do(t, "GET", "/stats/summary", &admin, "")
	require.Equal(t, 200, code, body)
	var s statsapi.Summary
	require.NoError(t, json.Unmarshal([]byte(body), &s))
	require.Equal(t, "node-a", s.Node.NodeName)
	require.Equal(t, uint64(42), *s.Node.CPU.UsageNanoCores)
	require.Equal(t, "web", s.Pods[0].PodRef.Name)

	code, body = h.do(t, "GET", "/stats/summary?only_cpu_and_memory=yes-please", &admin, "")
	require.Equal(t, 400, code, body)
	require.Contains(t, body, "only_cpu_and_memory")

	// Authorized as nodes/stats: a user the SubjectAccessReview refuses
	// gets 403 naming the subresource.
	bob := h.ca.client(t, "bob")
	code, body = h.do(t, "GET", "/stats/summary", &bob, "")
	require.Equal(t, 403, code)
	require.Contains(t, body, "subresource=stats")
}

func TestServer_StatsSummaryOnlyCPUAndMemory(t *testing.T) {
	h := newHarness(t)
	admin := h.ca.client(t, "admin", "system:masters")
	code, body := h.do(t, "GET", "/stats/summary?only_cpu_and_memory=true", &admin, "")
	require.Equal(t, 200, code, body)
	require.True(t, *h.summary.only, "metrics-server's query reaches the provider")
	code, body = h.do(t, "GET", "/stats/summary", &admin, "")
	require.Equal(t, 200, code, body)
	require.False(t, *h.summary.only)
}

func TestServer_ProbeMetrics(t *testing.T) {
	h := newHarness(t)
	admin := h.ca.client(t, "admin", "system:masters")
	code, body := h.do(t, "GET", "/metrics/probes", &admin, "")
	require.Equal(t, 200, code, body)
	require.Equal(t, `# HELP prober_probe_total Cumulative number of probes.
# TYPE prober_probe_total counter
prober_probe_total{container="c",namespace="default",pod="web",pod_uid="uid-web",probe_type="Readiness",result="successful"} 3
`, body)
}

// The daemon counts the probes of every pod it runs; a cluster caller of
// /metrics or /metrics/probes sees those of the pods Pods lists only: the
// static pod etcd under its mirror's name etcd-node-a, not the node's own
// pod secret, nor a sample whose pod cannot be told (no pod_uid).
func TestServer_ProbeMetrics_OnlyThePodsTheClusterSees(t *testing.T) {
	text := `# HELP kubelet_running_pods Number of pods.
# TYPE kubelet_running_pods gauge
kubelet_running_pods 3
# HELP prober_probe_total Cumulative number of probes.
# TYPE prober_probe_total counter
prober_probe_total{container="c",namespace="default",pod="etcd",pod_uid="uid-etcd",probe_type="Liveness",result="successful"} 2
prober_probe_total{container="c",namespace="default",pod="secret",pod_uid="uid-secret",probe_type="Readiness",result="failed"} 1
prober_probe_total{container="c",namespace="default",pod="web",pod_uid="uid-web",probe_type="Readiness",result="successful"} 3
prober_probe_total{container="c",namespace="default",pod="anon",probe_type="Readiness",result="successful"} 4
`
	s, err := New(Config{NodeName: "node-a", CertDir: t.TempDir()}, Deps{Pods: viewPods{}, Metrics: textMetrics(text)})
	require.NoError(t, err)
	want := `prober_probe_total{container="c",namespace="default",pod="etcd-node-a",pod_uid="uid-etcd",probe_type="Liveness",result="successful"} 2
prober_probe_total{container="c",namespace="default",pod="web",pod_uid="uid-web",probe_type="Readiness",result="successful"} 3
`
	for path, handler := range map[string]http.HandlerFunc{"/metrics": s.metrics, "/metrics/probes": s.probeMetrics} {
		rec := httptest.NewRecorder()
		handler(rec, httptest.NewRequest("GET", path, nil))
		got := rec.Body.String()
		require.Contains(t, got, "# TYPE prober_probe_total counter\n"+want, path)
		require.NotContains(t, got, "secret", path)
		require.NotContains(t, got, `pod="anon"`, path)
		require.NotContains(t, got, `pod="etcd"`, path)
		if path == "/metrics" {
			require.Contains(t, got, "\nkubelet_running_pods 3\n", "the node's own series stay whole")
		}
	}
}

// textMetrics writes a fixed text exposition.
type textMetrics string

func (m textMetrics) WriteMetrics(w io.Writer) error {
	_, err := io.WriteString(w, string(m))
	return err
}
