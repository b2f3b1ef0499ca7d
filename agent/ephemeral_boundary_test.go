package agent

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/minikubelet/minikubelet/agent/manifest"
	"github.com/minikubelet/minikubelet/agent/podspec"
	"github.com/minikubelet/minikubelet/agent/volume"
)

// The hostPath guard lets a pod mount the pod log directory read-only
// only; it runs at admission, over the containers the pod has then. A pod
// admitted with the log directory mounted read-only then gets an
// ephemeral container (kubectl debug: the one spec change the API server
// allows that adds mounts) that mounts the same volume writable: that
// container must not start, or the guard is bypassed (a writable log
// directory lets the pod plant links and FIFOs where the agent reads
// other pods' logs).
//
// The pod is a cluster pod: the node's Pod Security level refuses every
// hostPath of a local pod unless it is privileged, which lifts the guard;
// cluster pods are left to the API server's Pod Security Admission, and
// the guard holds for them.
func TestAgent_EphemeralContainerCannotWidenHostPathGuard(t *testing.T) {
	h := newHarness(t)
	h.agent.tokens = volume.NewTokenCache(&fakeTokens{clock: h.clock}, h.clock, h.agent.logger) // cluster mode
	pod := testPod(t, fmt.Sprintf(`
apiVersion: v1
kind: Pod
metadata: {name: reader, annotations: {kubernetes.io/config.source: cluster}}
spec:
  containers:
  - name: app
    image: reg.local/x:1
    volumeMounts: [{name: logs, mountPath: /logs, readOnly: true}]
  volumes:
  - name: logs
    hostPath: {path: %s}
`, h.agent.cfg.PodLogDir))
	h.agent.SetPods([]*v1.Pod{pod})
	h.rec.waitStatus(t, "Running", phaseIs(v1.PodRunning))

	debug := pod.DeepCopy()
	debug.Spec.EphemeralContainers = []v1.EphemeralContainer{
		{EphemeralContainerCommon: v1.EphemeralContainerCommon{Name: "ro", Image: "reg.local/x:1",
			VolumeMounts: []v1.VolumeMount{{Name: "logs", MountPath: "/logs", ReadOnly: true}}}},
		{EphemeralContainerCommon: v1.EphemeralContainerCommon{Name: "writer", Image: "reg.local/x:1",
			VolumeMounts: []v1.VolumeMount{{Name: "logs", MountPath: "/logs"}}}},
	}
	h.agent.SetPods([]*v1.Pod{debug})
	got := h.rec.waitStatus(t, "the writable ephemeral mount refused", func(p *v1.Pod) bool {
		for _, s := range p.Status.EphemeralContainerStatuses {
			if s.Name == "writer" && s.State.Waiting != nil && s.State.Waiting.Reason == "CreateContainerConfigError" {
				return true
			}
		}
		return false
	})
	for _, s := range got.Status.EphemeralContainerStatuses {
		if s.Name == "writer" {
			assert.Contains(t, s.State.Waiting.Message, "reaches minikubelet's own state")
		}
	}
	h.waitCallsSettle(t)
	calls := strings.Join(h.fake.Calls(), "\n")
	assert.NotContains(t, calls, "CreateContainer writer", "the ephemeral container that mounts the log dir writable never starts")
	require.Contains(t, calls, "CreateContainer ro", "a read-only one still does")
}

// An ephemeral container naming as its target a container that only
// another pod has (kubectl debug --target=db on a pod without db) never
// joins that pod's PID namespace: the target is looked up among its own
// pod's containers only.
func TestTargetPIDNamespace_OtherPodsContainerRefused(t *testing.T) {
	h := newHarness(t)
	victim := testPod(t, `
apiVersion: v1
kind: Pod
metadata: {name: victim}
spec:
  containers: [{name: db, image: reg.local/x:1}]
`)
	attacker := testPod(t, `
apiVersion: v1
kind: Pod
metadata: {name: attacker}
spec:
  containers: [{name: app, image: reg.local/x:1}]
`)
	h.agent.SetPods([]*v1.Pod{victim, attacker})
	running := func(name string) int {
		cs, err := h.fake.Runtime.ListContainers(context.Background(), &runtimeapi.ContainerFilter{
			State:         &runtimeapi.ContainerStateValue{State: runtimeapi.ContainerState_CONTAINER_RUNNING},
			LabelSelector: map[string]string{podspec.LabelContainerName: name}})
		require.NoError(t, err)
		return len(cs)
	}
	require.Eventually(t, func() bool { return running("db") == 1 && running("app") == 1 }, 10*time.Second, 10*time.Millisecond,
		"the other pod's db and the attacker's app run")
	debug := attacker.DeepCopy()
	debug.Spec.EphemeralContainers = []v1.EphemeralContainer{{TargetContainerName: "db",
		EphemeralContainerCommon: v1.EphemeralContainerCommon{Name: "debugger", Image: "reg.local/x:1"}}}
	cfg := &runtimeapi.ContainerConfig{Linux: &runtimeapi.LinuxContainerConfig{
		SecurityContext: &runtimeapi.LinuxContainerSecurityContext{NamespaceOptions: podspec.NamespaceOptions(debug)}}}
	err := h.agent.targetPIDNamespace(context.Background(), debug, manifest.EphemeralContainer(&debug.Spec.EphemeralContainers[0]), cfg)
	require.ErrorIs(t, err, ErrCreateContainerConfig)
	assert.Contains(t, err.Error(), `target container "db" is not running`)
	assert.Empty(t, cfg.Linux.SecurityContext.NamespaceOptions.TargetId)
}
