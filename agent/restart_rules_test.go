package agent

import (
	"testing"

	"github.com/stretchr/testify/assert"
	v1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	"github.com/minikubelet/minikubelet/agent/podstatus"
)

// exitedCS is the status of a container that exited with code (as
// agent/podstatus's tests build it).
func exitedCS(name string, code int32) v1.ContainerStatus {
	f := false
	return v1.ContainerStatus{Name: name, ContainerID: "containerd://" + name, Started: &f, Ready: code == 0,
		State: v1.ContainerState{Terminated: &v1.ContainerStateTerminated{ExitCode: code}}}
}

// A container a rule restarts keeps a Never pod Running, and the plan
// starts it again (conformance: "Container Restart Rules should restart
// container on rule match").
func TestRestartRules_PlanAndPhase(t *testing.T) {
	pod := &v1.Pod{Spec: v1.PodSpec{
		RestartPolicy: v1.RestartPolicyNever,
		Containers: []v1.Container{{Name: "main", Image: "i", RestartPolicy: ptr.To(v1.ContainerRestartPolicyNever),
			RestartPolicyRules: []v1.ContainerRestartRule{{Action: v1.ContainerRestartRuleActionRestart,
				ExitCodes: &v1.ContainerRestartRuleOnExitCodes{Operator: v1.ContainerRestartRuleOnExitCodesOpIn, Values: []int32{42}}}}}},
	}}
	st := &podState{sandboxes: []*sandboxInfo{readySandbox()}}
	st.containers = []*containerInfo{ctr(pod, "main", exited, 42, 3)}
	act := computePodActions(pod, st, probeView{})
	assert.Equal(t, []int{0}, act.ContainersToStart)
	assert.False(t, act.KillPod)
	status := &v1.PodStatus{ContainerStatuses: []v1.ContainerStatus{exitedCS("main", 42)}}
	assert.Equal(t, v1.PodRunning, podstatus.Phase(pod, status))

	st.containers = []*containerInfo{ctr(pod, "main", exited, 1, 3)}
	act = computePodActions(pod, st, probeView{})
	assert.Empty(t, act.ContainersToStart)
	assert.True(t, act.KillPod, "no rule matches: the pod is done")
	status = &v1.PodStatus{ContainerStatuses: []v1.ContainerStatus{exitedCS("main", 1)}}
	assert.Equal(t, v1.PodFailed, podstatus.Phase(pod, status))
}

// A container whose own restartPolicy Never keeps it stopped ends an
// Always pod (conformance: "Container Restart Rules should restart
// container on container-level restart policy Never" waits for the pod to
// stop running, with no restart).
func TestRestartRules_OwnNeverEndsAnAlwaysPod(t *testing.T) {
	pod := &v1.Pod{Spec: v1.PodSpec{
		RestartPolicy: v1.RestartPolicyAlways,
		Containers:    []v1.Container{{Name: "main", Image: "i", RestartPolicy: ptr.To(v1.ContainerRestartPolicyNever)}},
	}}
	st := &podState{sandboxes: []*sandboxInfo{readySandbox()}}
	st.containers = []*containerInfo{ctr(pod, "main", exited, 1, 3)}
	act := computePodActions(pod, st, probeView{})
	assert.Empty(t, act.ContainersToStart)
	assert.True(t, act.KillPod)
	assert.Equal(t, v1.PodFailed, podstatus.Phase(pod, &v1.PodStatus{ContainerStatuses: []v1.ContainerStatus{exitedCS("main", 1)}}))
	assert.Equal(t, v1.PodSucceeded, podstatus.Phase(pod, &v1.PodStatus{ContainerStatuses: []v1.ContainerStatus{exitedCS("main", 0)}}))

	// Its sandbox, killed because the pod was done, does not come back
	// with the container restarted (conformance "container-level restart
	// policy Never" saw restartCount 1).
	stopped := readySandbox()
	stopped.ready = false
	st = &podState{sandboxes: []*sandboxInfo{stopped}, containers: []*containerInfo{ctr(pod, "main", exited, 1, 3)}}
	act = computePodActions(pod, st, probeView{})
	assert.False(t, act.CreateSandbox, "no new sandbox for a container its own policy keeps stopped: %v", act)
	assert.Empty(t, act.ContainersToStart)

	// Beside a container under the pod's Always, the pod runs on.
	pod.Spec.Containers = append(pod.Spec.Containers, v1.Container{Name: "side", Image: "i"})
	assert.Equal(t, v1.PodRunning, podstatus.Phase(pod, &v1.PodStatus{ContainerStatuses: []v1.ContainerStatus{exitedCS("main", 1), exitedCS("side", 1)}}))
}
