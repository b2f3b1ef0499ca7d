package metrics

import (
	"bytes"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The exposition keeps the kubelet's names (docs and the e2e tests read
// them); a CRI call's error counts by verb, and the running pods gauge
// asks at each scrape.
func TestMetrics_Write(t *testing.T) {
	pods := 2
	m := New(func() int { return pods })
	m.ObserveRuntimeOp("RunPodSandbox", time.Second, errors.New("boom"))
	m.IPsReleased.Inc()
	var out bytes.Buffer
	require.NoError(t, m.Write(&out))
	for _, want := range []string{
		"kubelet_running_pods 2",
		`kubelet_runtime_operations_errors_total{operation_type="RunPodSandbox"} 1`,
		`kubelet_runtime_operations_duration_seconds_count{operation_type="RunPodSandbox"} 1`,
		"minikubelet_ipam_leaked_ips_released_total 1",
		"minikubelet_container_restarts_total 0",
		"minikubelet_runtime_stuck_tasks_removed_total 0",
		"kubelet_evented_pleg_connection_success_count 0",
	} {
		assert.Contains(t, out.String(), want)
	}
}

// ForgetPod drops the pod's probe series only.
func TestMetrics_ForgetPod(t *testing.T) {
	m := New(func() int { return 0 })
	m.ProbeTotal.WithLabelValues("Readiness", "successful", "web", "web", "demo", "u1").Inc()
	m.ProbeTotal.WithLabelValues("Readiness", "successful", "web", "web", "demo", "u2").Inc()
	m.ForgetPod("u1")
	var out bytes.Buffer
	require.NoError(t, m.Write(&out))
	assert.NotContains(t, out.String(), `pod_uid="u1"`)
	assert.Contains(t, out.String(), `pod_uid="u2"`)
}
