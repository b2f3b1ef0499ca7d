package agent

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/utils/ptr"

	"github.com/minikubelet/minikubelet/agent/manifest"
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
	v, err := a.podFieldValue(pod, "status.hostIPs", "")
	require.NoError(t, err)
	assert.Equal(t, "192.0.2.10,2001:db8::10", v)
}

// seLinuxOptions are passed to the runtime as the kubelet does (which
// applies them only where SELinux is on), not refused (issue #19).
func TestSELinuxOptions_PassedToTheRuntime(t *testing.T) {
	podOpts := &v1.SELinuxOptions{User: "system_u", Role: "system_r", Type: "spc_t", Level: "s0:c1,c2"}
	pod := securedPod(&v1.PodSecurityContext{SELinuxOptions: podOpts}, nil)
	manifest.SetPodDefaults(pod, "test.yaml", "node-1")
	assert.Empty(t, manifest.ValidatePod(pod))
	want := &runtimeapi.SELinuxOption{User: "system_u", Role: "system_r", Type: "spc_t", Level: "s0:c1,c2"}
	assert.Equal(t, want, sandboxSecurityContext(pod).SelinuxOptions)

	a := New(Config{RootDir: t.TempDir(), PodLogDir: t.TempDir(), ResolvConf: "/nonexistent", Network: testNetwork(t), HostIPs: []string{"192.0.2.1"}}, Deps{})
	sc, err := a.containerSecurityContext(pod, &pod.Spec.Containers[0])
	require.NoError(t, err)
	assert.Equal(t, want, sc.SelinuxOptions, "the pod's options are the container's default")

	pod.Spec.Containers[0].SecurityContext = &v1.SecurityContext{SELinuxOptions: &v1.SELinuxOptions{Level: "s0:c3"}}
	sc, err = a.containerSecurityContext(pod, &pod.Spec.Containers[0])
	require.NoError(t, err)
	assert.Equal(t, &runtimeapi.SELinuxOption{Level: "s0:c3"}, sc.SelinuxOptions, "the container's own win")
}

// spec.hostnameOverride names the pod (its kernel hostname) without a
// domain, with the API server's validation (issue #19).
func TestHostnameOverride(t *testing.T) {
	pod := basePod()
	pod.Spec.Hostname, pod.Spec.Subdomain = "h", "sub"
	pod.Spec.HostnameOverride = ptr.To("custom.example")
	host, err := sandboxHostname(pod, "cluster.local")
	require.NoError(t, err)
	assert.Equal(t, "custom.example", host)
	h, d := podHostnameAndDomain(pod, "cluster.local")
	assert.Equal(t, "custom.example", h)
	assert.Empty(t, d)
}
