package podspec

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/utils/ptr"

	"github.com/minikubelet/minikubelet/agent/manifest"
)

// seLinuxOptions are passed to the runtime as the kubelet does (which
// applies them only where SELinux is on), not refused (issue #19).
func TestSELinuxOptions_PassedToTheRuntime(t *testing.T) {
	podOpts := &v1.SELinuxOptions{User: "system_u", Role: "system_r", Type: "spc_t", Level: "s0:c1,c2"}
	pod := securedPod(&v1.PodSecurityContext{SELinuxOptions: podOpts}, nil)
	manifest.SetPodDefaults(pod, "test.yaml", "node-1")
	assert.Empty(t, manifest.ValidatePod(pod))
	want := &runtimeapi.SELinuxOption{User: "system_u", Role: "system_r", Type: "spc_t", Level: "s0:c1,c2"}
	assert.Equal(t, want, SandboxSecurityContext(pod).SelinuxOptions)

	sc, err := ContainerSecurityContext(pod, &pod.Spec.Containers[0], "/seccomp")
	require.NoError(t, err)
	assert.Equal(t, want, sc.SelinuxOptions, "the pod's options are the container's default")

	pod.Spec.Containers[0].SecurityContext = &v1.SecurityContext{SELinuxOptions: &v1.SELinuxOptions{Level: "s0:c3"}}
	sc, err = ContainerSecurityContext(pod, &pod.Spec.Containers[0], "/seccomp")
	require.NoError(t, err)
	assert.Equal(t, &runtimeapi.SELinuxOption{Level: "s0:c3"}, sc.SelinuxOptions, "the container's own win")
}

// spec.hostnameOverride names the pod (its kernel hostname) without a
// domain, with the API server's validation (issue #19).
func TestHostnameOverride(t *testing.T) {
	pod := basePod()
	pod.Spec.Hostname, pod.Spec.Subdomain = "h", "sub"
	pod.Spec.HostnameOverride = ptr.To("custom.example")
	host, err := SandboxHostname(pod, "cluster.local")
	require.NoError(t, err)
	assert.Equal(t, "custom.example", host)
	h, d := PodHostnameAndDomain(pod, "cluster.local")
	assert.Equal(t, "custom.example", h)
	assert.Empty(t, d)
}
