package agent

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
)

// The node's addresses reach status.hostIP(s) and, for a host-network pod,
// its pod IPs, as the kubelet fills them (issue #19).
func TestPodStatus_HostIPs(t *testing.T) {
	a := New(Config{NodeName: "node-1", RootDir: t.TempDir(), PodLogDir: t.TempDir(), ResolvConf: "/nonexistent", Network: testNetwork(t),
		HostIPs: []string{"192.0.2.10", "2001:db8::10"}}, Deps{})
	for _, tc := range []struct {
		name        string
		hostNetwork bool
		sandboxIP   string
		wantPodIPs  []v1.PodIP
	}{
		{name: "pod network", sandboxIP: "10.88.0.7", wantPodIPs: []v1.PodIP{{IP: "10.88.0.7"}}},
		{name: "host network", hostNetwork: true, wantPodIPs: []v1.PodIP{{IP: "192.0.2.10"}, {IP: "2001:db8::10"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pod := basePod()
			pod.Namespace, pod.UID = "default", "uid-1"
			pod.Spec.HostNetwork = tc.hostNetwork
			w := newPodWorker(a, pod)
			st := &podState{sandboxes: []*sandboxInfo{{id: "sb", ready: true, ip: tc.sandboxIP, hostNetwork: tc.hostNetwork}}}
			got := a.computePodStatus(w, pod, st)
			assert.Equal(t, "192.0.2.10", got.HostIP)
			assert.Equal(t, []v1.HostIP{{IP: "192.0.2.10"}, {IP: "2001:db8::10"}}, got.HostIPs)
			assert.Equal(t, tc.wantPodIPs, got.PodIPs)
			assert.Equal(t, tc.wantPodIPs[0].IP, got.PodIP)
		})
	}
	pod := basePod()
	pod.Spec.Containers[0].Env = []v1.EnvVar{{Name: "H", ValueFrom: &v1.EnvVarSource{FieldRef: &v1.ObjectFieldSelector{FieldPath: "status.hostIPs"}}}}
	_, env, _, err := a.containerEnv(pod, &pod.Spec.Containers[0], "")
	require.NoError(t, err)
	assert.Equal(t, "192.0.2.10,2001:db8::10", env["H"])
}

// A pod that turned terminal after its sandbox went keeps the IPs its last
// status had (node e2e PodIPs: no non-Pending status without them); a
// running pod whose sandbox is not ready shows none.
func TestPodStatus_TerminalKeepsPodIPs(t *testing.T) {
	a := New(Config{NodeName: "node-1", RootDir: t.TempDir(), PodLogDir: t.TempDir(), ResolvConf: "/nonexistent", Network: testNetwork(t),
		HostIPs: []string{"192.0.2.10"}}, Deps{})
	pod := basePod()
	pod.Namespace, pod.UID = "default", "uid-1"
	pod.Spec.RestartPolicy = v1.RestartPolicyNever
	w := newPodWorker(a, pod)
	w.status = v1.PodStatus{Phase: v1.PodRunning, PodIP: "10.88.0.7", PodIPs: []v1.PodIP{{IP: "10.88.0.7"}}}

	// Running, sandbox gone: no IP (nothing serves it).
	got := a.computePodStatus(w, pod, &podState{})
	require.NotEqual(t, v1.PodFailed, got.Phase)
	assert.Empty(t, got.PodIP)

	// Failed: the IPs stay.
	w.status = v1.PodStatus{Phase: v1.PodFailed, PodIP: "10.88.0.7", PodIPs: []v1.PodIP{{IP: "10.88.0.7"}}}
	got = a.computePodStatus(w, pod, &podState{})
	require.Equal(t, v1.PodFailed, got.Phase)
	assert.Equal(t, "10.88.0.7", got.PodIP)
	assert.Equal(t, []v1.PodIP{{IP: "10.88.0.7"}}, got.PodIPs)
}
