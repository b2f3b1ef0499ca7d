package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
)

// Issue #29 item 1, the attack: a local pod with hostPID and
// capabilities.add [ALL] (SYS_PTRACE is enough) reads any host file
// through /proc/<host pid>/root and nsenters PID 1. A daemon started
// without flags holds local pods to the baseline Pod Security level: the
// pod is refused, through the local API and the manifest directory alike,
// naming both fields with the standard's reasons, and nothing of it
// reaches the runtime. With --pod-security=privileged the same pod runs.
func TestPodSecurity_HostPIDAllCapsRefusedByDefault(t *testing.T) {
	const apiPod, staticPod = "e2e-psa-hostpid", "e2e-psa-static"
	attack := func(name string) *v1.Pod {
		p := boundaryPod(name)
		p.Spec.HostPID = true
		// What the attack runs; it never gets to.
		p.Spec.Containers[0].Command = []string{"sh", "-c", "cat /proc/1/root/etc/shadow; trap 'exit 0' TERM; sleep 3600 & wait"}
		p.Spec.Containers[0].SecurityContext = &v1.SecurityContext{Capabilities: &v1.Capabilities{Add: []v1.Capability{"ALL"}}}
		return p
	}
	wantProblems := []string{
		`violates PodSecurity "baseline:latest"`,
		"spec.hostPID: host namespaces",
		`spec.containers[0].securityContext.capabilities.add[0]: non-default capabilities: "ALL" may not be added`,
		"--pod-security=privileged",
	}

	t.Run("default level refuses", func(t *testing.T) {
		d := newDaemon(t, []string{apiPod, staticPod})
		d.start(t)
		c, cancel := shortCtx()
		_, err := d.api().CreatePod(c, attack(apiPod))
		cancel()
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(d.manifests, staticPod+".yaml"), []byte(`apiVersion: v1
kind: Pod
metadata: {name: `+staticPod+`}
spec:
  hostPID: true
  containers:
  - name: c
    image: `+suite.registry+`/minikubelet/busybox:1.36
    command: ["sh", "-c", "cat /proc/1/root/etc/shadow; sleep 3600"]
    securityContext: {capabilities: {add: [SYS_PTRACE]}}
`), 0o644))
		for _, name := range []string{apiPod, staticPod} {
			got := d.waitPod(t, name, "rejected", scaled(30*time.Second), func(p *v1.Pod) bool {
				return p != nil && p.Status.Phase == v1.PodFailed
			})
			assert.Equal(t, "PodSecurityForbidden", got.Status.Reason, name)
			for _, want := range wantProblems {
				if name == staticPod {
					want = strings.ReplaceAll(want, `"ALL"`, `"SYS_PTRACE"`)
				}
				assert.Contains(t, got.Status.Message, want, name)
			}
			assert.Empty(t, podSandboxes(t, name), "%s: nothing reached the runtime", name)
		}
		out, _ := d.out.snapshot()
		assert.Contains(t, out, "Pod Security level of local pods", "the daemon says its level at start")
	})

	t.Run("privileged level admits", func(t *testing.T) {
		d := newDaemon(t, []string{apiPod}, "--pod-security=privileged")
		d.start(t)
		c, cancel := shortCtx()
		_, err := d.api().CreatePod(c, attack(apiPod))
		cancel()
		require.NoError(t, err)
		d.waitPod(t, apiPod, "Running", scaled(time.Minute), func(p *v1.Pod) bool {
			return p != nil && p.Status.Phase == v1.PodRunning
		})
	})
}
