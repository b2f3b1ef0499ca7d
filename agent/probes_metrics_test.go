package agent

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"

	"github.com/minikubelet/minikubelet/agent/node"
	"github.com/minikubelet/minikubelet/probes"
)

// prober_probe_total carries the pod's UID (pod_uid, as the kubelet's):
// the kubelet server keeps only the series of the pods the cluster sees by
// it, and a static pod's under its mirror's name.
func TestAgent_ProbeMetricCarriesPodUID(t *testing.T) {
	h := newHarness(t)
	h.agent.cfg.PodSecurity = node.PodSecurityPrivileged // twoContainers has a hostPort, which baseline refuses
	pod := testPod(t, twoContainers)
	h.agent.SetPods([]*v1.Pod{pod})
	h.rec.waitStatus(t, "Running", phaseIs(v1.PodRunning))
	h.agent.countProbeResult(probes.Update{PodUID: pod.UID, ContainerName: "web", Kind: probes.Readiness, Result: probes.Success})

	var out bytes.Buffer
	require.NoError(t, h.agent.WriteMetrics(&out))
	require.Contains(t, out.String(), `prober_probe_total{container="web",namespace="demo",pod="web",pod_uid="`+string(pod.UID)+`",probe_type="Readiness",result="successful"} 1`)
}
