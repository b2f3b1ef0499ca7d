package kubeletserver

import (
	"context"
	"encoding/json"
	"io"
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
prober_probe_total{container="c",namespace="default",pod="web",probe_type="Readiness",result="successful"} 3
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
prober_probe_total{container="c",namespace="default",pod="web",probe_type="Readiness",result="successful"} 3
`, body)
}
