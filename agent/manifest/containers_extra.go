package manifest

// Validation and the support check of two fields the engine acts on:
// spec.ephemeralContainers (agent/ephemeral.go runs them) and a
// container's own restartPolicy and restartPolicyRules
// (ContainerRestartRules; agent/podstatus decides restarts).

import (
	"slices"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// EphemeralContainer is the Container an ephemeral container runs as: the
// API keeps EphemeralContainerCommon field for field the same as Container.
func EphemeralContainer(ec *v1.EphemeralContainer) *v1.Container {
	c := v1.Container(ec.EphemeralContainerCommon)
	return &c
}

// checkEphemeralSupport checks the ephemeral containers of spec as
// containers (targetContainerName, the field they add, is supported: the
// engine joins the target's PID namespace).
func checkEphemeralSupport(spec *v1.PodSpec, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	for i := range spec.EphemeralContainers {
		p := path.Child("ephemeralContainers").Index(i)
		errs = append(errs, checkContainerSupport(EphemeralContainer(&spec.EphemeralContainers[i]), nil, p)...)
	}
	return errs
}

// validateRestartRules checks an app container's restartPolicy and
// restartPolicyRules, with the API's rules.
func validateRestartRules(c *v1.Container, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	policies := []string{string(v1.ContainerRestartPolicyAlways), string(v1.ContainerRestartPolicyOnFailure), string(v1.ContainerRestartPolicyNever)}
	if c.RestartPolicy != nil && !slices.Contains(policies, string(*c.RestartPolicy)) {
		errs = append(errs, field.NotSupported(fldPath.Child("restartPolicy"), *c.RestartPolicy, policies))
	}
	if len(c.RestartPolicyRules) > 0 && c.RestartPolicy == nil {
		errs = append(errs, field.Required(fldPath.Child("restartPolicy"), "must be set when restartPolicyRules are"))
	}
	for i, r := range c.RestartPolicyRules {
		p := fldPath.Child("restartPolicyRules").Index(i)
		if r.Action != v1.ContainerRestartRuleActionRestart {
			errs = append(errs, field.NotSupported(p.Child("action"), r.Action, []string{string(v1.ContainerRestartRuleActionRestart)}))
		}
		if r.ExitCodes == nil {
			errs = append(errs, field.Required(p.Child("exitCodes"), ""))
			continue
		}
		ops := []string{string(v1.ContainerRestartRuleOnExitCodesOpIn), string(v1.ContainerRestartRuleOnExitCodesOpNotIn)}
		if !slices.Contains(ops, string(r.ExitCodes.Operator)) {
			errs = append(errs, field.NotSupported(p.Child("exitCodes", "operator"), r.ExitCodes.Operator, ops))
		}
	}
	return errs
}
