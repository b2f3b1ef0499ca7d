package podstatus

// Container-level restart policy and restart rules (ContainerRestartRules,
// beta in Kubernetes 1.34+): a regular container's restartPolicy overrides
// the pod's for that container, and its restartPolicyRules, tried first
// and in order, restart it on a matching exit code (the kubelet's
// podutil.ContainerShouldRestart).

import (
	"slices"

	v1 "k8s.io/api/core/v1"
)

// ContainerShouldRestart reports whether app container c, which exited
// with exitCode, is started again.
func ContainerShouldRestart(c *v1.Container, pod *v1.Pod, exitCode int32) bool {
	policy := v1.ContainerRestartPolicy(pod.Spec.RestartPolicy)
	if c.RestartPolicy != nil {
		for _, r := range c.RestartPolicyRules {
			if r.Action != v1.ContainerRestartRuleActionRestart || r.ExitCodes == nil {
				continue
			}
			in := slices.Contains(r.ExitCodes.Values, exitCode)
			switch r.ExitCodes.Operator {
			case v1.ContainerRestartRuleOnExitCodesOpIn:
				if in {
					return true
				}
			case v1.ContainerRestartRuleOnExitCodesOpNotIn:
				if !in {
					return true
				}
			}
		}
		policy = *c.RestartPolicy
	}
	switch policy {
	case v1.ContainerRestartPolicyAlways:
		return true
	case v1.ContainerRestartPolicyOnFailure:
		return exitCode != 0
	}
	return false
}

// willRestart reports whether app container c, whose status is cs, has
// stopped and is started again by its own restartPolicy or rules (a pod
// being deleted restarts nothing).
func willRestart(pod *v1.Pod, c *v1.Container, cs *v1.ContainerStatus) bool {
	if c.RestartPolicy == nil || pod.DeletionTimestamp != nil {
		return false
	}
	t := cs.State.Terminated
	if t == nil && cs.State.Waiting != nil {
		t = cs.LastTerminationState.Terminated
	}
	return t != nil && ContainerShouldRestart(c, pod, t.ExitCode)
}
