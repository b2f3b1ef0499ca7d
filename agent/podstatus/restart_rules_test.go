package podstatus

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
			assert.Equal(t, tc.want, ContainerShouldRestart(c, pod, tc.exit))
		})
	}
}
