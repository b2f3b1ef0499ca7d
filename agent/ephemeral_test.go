package agent

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/utils/ptr"

	"github.com/minikubelet/minikubelet/agent/manifest"
	"github.com/minikubelet/minikubelet/agent/podspec"
)

// An ephemeral container added to a running pod (the API's
// ephemeralcontainers subresource, kubectl debug) is started once in the
// pod's sandbox and reported in ephemeralContainerStatuses; the app
// container is left alone; one that exits is not started again
// (conformance: "Ephemeral Containers will start an ephemeral container in
// an existing pod", "should update the ephemeral containers").
func TestAgent_EphemeralContainerStarted(t *testing.T) {
	h := newHarness(t)
	pod := testPod(t, `
apiVersion: v1
kind: Pod
metadata: {name: target}
spec:
  containers: [{name: app, image: reg.local/x:1}]
`)
	h.agent.SetPods([]*v1.Pod{pod})
	h.rec.waitStatus(t, "Running", phaseIs(v1.PodRunning))
	h.waitCallsSettle(t)
	h.fake.Reset()

	debug := pod.DeepCopy()
	debug.Spec.EphemeralContainers = []v1.EphemeralContainer{{EphemeralContainerCommon: v1.EphemeralContainerCommon{
		Name: "debugger", Image: "reg.local/x:1", Command: []string{"sh"}, Stdin: true, TTY: true,
	}}}
	manifest.SetPodDefaults(debug, "test.yaml", "node-1")
	assert.Equal(t, v1.PullIfNotPresent, debug.Spec.EphemeralContainers[0].ImagePullPolicy, "defaulted as a container")
	require.Empty(t, manifest.ValidatePod(debug), "an ephemeral container is a supported field")
	h.agent.SetPods([]*v1.Pod{debug})
	got := h.rec.waitStatus(t, "the ephemeral container running", func(p *v1.Pod) bool {
		return len(p.Status.EphemeralContainerStatuses) == 1 && p.Status.EphemeralContainerStatuses[0].State.Running != nil
	})
	assert.Equal(t, "debugger", got.Status.EphemeralContainerStatuses[0].Name)
	assert.Equal(t, v1.PodRunning, got.Status.Phase)
	h.waitCallsSettle(t)
	calls := strings.Join(h.fake.Calls(), "\n")
	assert.Contains(t, calls, "CreateContainer debugger attempt=0")
	assert.NotContains(t, calls, "StopContainer app", "the app container is left alone")
	assert.NotContains(t, calls, "RunPodSandbox", "in the pod's own sandbox")

	// Stopped, it is not started again.
	id := strings.TrimPrefix(got.Status.EphemeralContainerStatuses[0].ContainerID, "containerd://")
	require.NoError(t, h.fake.Runtime.StopContainer(context.Background(), id, 0))
	h.fake.Reset()
	for range 3 { // resyncs
		h.clock.Step(time.Minute)
		h.waitCallsSettle(t)
	}
	assert.NotContains(t, strings.Join(h.fake.Calls(), "\n"), "CreateContainer debugger")
}

// A privileged ephemeral container (or one with hostPID's capabilities) is
// not started under the default level: admission saw only the pod's own
// containers. Its own index is named.
func TestAgent_PrivilegedEphemeralContainerRefused(t *testing.T) {
	h := newHarness(t)
	pod := testPod(t, `
apiVersion: v1
kind: Pod
metadata: {name: target}
spec:
  containers: [{name: app, image: reg.local/x:1}]
`)
	h.agent.SetPods([]*v1.Pod{pod})
	h.rec.waitStatus(t, "Running", phaseIs(v1.PodRunning))
	debug := pod.DeepCopy()
	debug.Spec.EphemeralContainers = []v1.EphemeralContainer{
		{EphemeralContainerCommon: v1.EphemeralContainerCommon{Name: "plain", Image: "reg.local/x:1"}},
		{EphemeralContainerCommon: v1.EphemeralContainerCommon{
			Name: "root", Image: "reg.local/x:1", SecurityContext: &v1.SecurityContext{Privileged: ptr.To(true),
				Capabilities: &v1.Capabilities{Add: []v1.Capability{"SYS_PTRACE"}}},
		}},
	}
	h.agent.SetPods([]*v1.Pod{debug})
	got := h.rec.waitStatus(t, "the ephemeral container refused", func(p *v1.Pod) bool {
		for _, s := range p.Status.EphemeralContainerStatuses {
			if s.Name == "root" && s.State.Waiting != nil && s.State.Waiting.Reason == "CreateContainerConfigError" {
				return true
			}
		}
		return false
	})
	var msg string
	for _, s := range got.Status.EphemeralContainerStatuses {
		if s.Name == "root" {
			msg = s.State.Waiting.Message
		}
	}
	assert.Contains(t, msg, `ephemeral container "root": violates PodSecurity "baseline:latest"`)
	assert.Contains(t, msg, "spec.ephemeralContainers[1].securityContext.privileged: privileged: must not be true")
	assert.Contains(t, msg, `spec.ephemeralContainers[1].securityContext.capabilities.add[0]: non-default capabilities: "SYS_PTRACE" may not be added`)
	assert.Contains(t, msg, "--pod-security=privileged")
	h.waitCallsSettle(t)
	assert.NotContains(t, strings.Join(h.fake.Calls(), "\n"), "CreateContainer root")
	assert.Contains(t, strings.Join(h.fake.Calls(), "\n"), "CreateContainer plain", "a baseline ephemeral container starts")
}

func TestComputePodActions_Ephemeral(t *testing.T) {
	pod := planPod()
	pod.Spec.EphemeralContainers = []v1.EphemeralContainer{{EphemeralContainerCommon: v1.EphemeralContainerCommon{Name: "dbg", Image: "i"}}}
	st := initialized(pod)
	act := computePodActions(pod, st, probeView{})
	assert.Equal(t, []int{0}, act.EphemeralContainersToStart)
	assert.True(t, act.changesRuntime())
	assert.Empty(t, act.ContainersToStart)

	st.containers = append([]*containerInfo{{id: "dbg-9", name: "dbg", sandboxID: "sb1", state: exited, exitCode: 1, createdAt: 9}}, st.containers...)
	act = computePodActions(pod, st, probeView{})
	assert.Empty(t, act.EphemeralContainersToStart, "an ephemeral container runs once")
	assert.False(t, act.changesRuntime())

	st = initialized(pod)
	now := metav1.Now()
	pod.DeletionTimestamp = &now
	assert.Empty(t, computePodActions(pod, st, probeView{}).EphemeralContainersToStart, "not in a pod being deleted")
}

// kubectl debug --target: an ephemeral container naming a target joins the
// running target's PID namespace (CRI TARGET); a target not running is a
// CreateContainerConfigError.
func TestTargetPIDNamespace(t *testing.T) {
	h := newHarness(t)
	pod := testPod(t, `
apiVersion: v1
kind: Pod
metadata: {name: target}
spec:
  containers: [{name: app, image: reg.local/x:1}]
`)
	h.agent.SetPods([]*v1.Pod{pod})
	got := h.rec.waitStatus(t, "Running", phaseIs(v1.PodRunning))
	appID := strings.TrimPrefix(got.Status.ContainerStatuses[0].ContainerID, "containerd://")
	debug := pod.DeepCopy()
	debug.Spec.EphemeralContainers = []v1.EphemeralContainer{{TargetContainerName: "app",
		EphemeralContainerCommon: v1.EphemeralContainerCommon{Name: "debugger", Image: "reg.local/x:1"}}}
	cfg := &runtimeapi.ContainerConfig{Linux: &runtimeapi.LinuxContainerConfig{
		SecurityContext: &runtimeapi.LinuxContainerSecurityContext{NamespaceOptions: podspec.NamespaceOptions(debug)}}}
	require.NoError(t, h.agent.targetPIDNamespace(context.Background(), debug, manifest.EphemeralContainer(&debug.Spec.EphemeralContainers[0]), cfg))
	ns := cfg.Linux.SecurityContext.NamespaceOptions
	assert.Equal(t, runtimeapi.NamespaceMode_TARGET, ns.Pid)
	assert.Equal(t, appID, ns.TargetId)
	assert.Equal(t, runtimeapi.NamespaceMode_POD, ns.Network, "the rest stays the pod's")

	debug.Spec.EphemeralContainers[0].TargetContainerName = "gone"
	err := h.agent.targetPIDNamespace(context.Background(), debug, manifest.EphemeralContainer(&debug.Spec.EphemeralContainers[0]), cfg)
	require.ErrorIs(t, err, ErrCreateContainerConfig)
	assert.Contains(t, err.Error(), `target container "gone" is not running`)
}
