package agent

import (
	"testing"

	"github.com/stretchr/testify/assert"
	v1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
)

func TestContainerShouldRestart(t *testing.T) {
	in42 := []v1.ContainerRestartRule{{Action: v1.ContainerRestartRuleActionRestart,
		ExitCodes: &v1.ContainerRestartRuleOnExitCodes{Operator: v1.ContainerRestartRuleOnExitCodesOpIn, Values: []int32{42}}}}
	notIn0 := []v1.ContainerRestartRule{{Action: v1.ContainerRestartRuleActionRestart,
		ExitCodes: &v1.ContainerRestartRuleOnExitCodes{Operator: v1.ContainerRestartRuleOnExitCodesOpNotIn, Values: []int32{0}}}}
	for _, tc := range []struct {
		name      string
		podPolicy v1.RestartPolicy
		policy    *v1.ContainerRestartPolicy
		rules     []v1.ContainerRestartRule
		exit      int32
		want      bool
	}{
		{name: "pod Never", podPolicy: v1.RestartPolicyNever, exit: 1, want: false},
		{name: "pod OnFailure, failed", podPolicy: v1.RestartPolicyOnFailure, exit: 1, want: true},
		{name: "pod Always, succeeded", podPolicy: v1.RestartPolicyAlways, exit: 0, want: true},
		{name: "container Always wins over pod Never", podPolicy: v1.RestartPolicyNever, policy: ptr.To(v1.ContainerRestartPolicyAlways), exit: 0, want: true},
		{name: "container Never wins over pod Always", podPolicy: v1.RestartPolicyAlways, policy: ptr.To(v1.ContainerRestartPolicyNever), exit: 1, want: false},
		{name: "rule In matches", podPolicy: v1.RestartPolicyNever, policy: ptr.To(v1.ContainerRestartPolicyNever), rules: in42, exit: 42, want: true},
		{name: "rule In does not match: the container's policy", podPolicy: v1.RestartPolicyNever, policy: ptr.To(v1.ContainerRestartPolicyNever), rules: in42, exit: 1, want: false},
		{name: "rule NotIn matches", podPolicy: v1.RestartPolicyNever, policy: ptr.To(v1.ContainerRestartPolicyNever), rules: notIn0, exit: 3, want: true},
		{name: "rule NotIn does not match, OnFailure", podPolicy: v1.RestartPolicyNever, policy: ptr.To(v1.ContainerRestartPolicyOnFailure), rules: notIn0, exit: 0, want: false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pod := &v1.Pod{Spec: v1.PodSpec{RestartPolicy: tc.podPolicy}}
			c := &v1.Container{Name: "c", RestartPolicy: tc.policy, RestartPolicyRules: tc.rules}
			assert.Equal(t, tc.want, containerShouldRestart(c, pod, tc.exit))
		})
	}
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
	assert.Equal(t, v1.PodRunning, podPhase(pod, status))

	st.containers = []*containerInfo{ctr(pod, "main", exited, 1, 3)}
	act = computePodActions(pod, st, probeView{})
	assert.Empty(t, act.ContainersToStart)
	assert.True(t, act.KillPod, "no rule matches: the pod is done")
	status = &v1.PodStatus{ContainerStatuses: []v1.ContainerStatus{exitedCS("main", 1)}}
	assert.Equal(t, v1.PodFailed, podPhase(pod, status))
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
	assert.Equal(t, v1.PodFailed, podPhase(pod, &v1.PodStatus{ContainerStatuses: []v1.ContainerStatus{exitedCS("main", 1)}}))
	assert.Equal(t, v1.PodSucceeded, podPhase(pod, &v1.PodStatus{ContainerStatuses: []v1.ContainerStatus{exitedCS("main", 0)}}))

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
	assert.Equal(t, v1.PodRunning, podPhase(pod, &v1.PodStatus{ContainerStatuses: []v1.ContainerStatus{exitedCS("main", 1), exitedCS("side", 1)}}))
}
