package manifest

import (
	"fmt"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Pod priority for pods without an API server: the two built-in
// PriorityClasses every cluster has resolve to their values, as the API
// server's Priority admission plugin resolves them
// (plugin/pkg/admission/priority, scheduling.SystemPriorityClasses). A
// cluster pod arrives with spec.priority already set by its API server.
const (
	// SystemNodeCritical is the highest built-in class (kube-proxy, CNI
	// agents), scheduling.SystemNodeCritical.
	SystemNodeCritical = "system-node-critical"
	// SystemClusterCritical is the class of cluster add-ons (CoreDNS).
	SystemClusterCritical = "system-cluster-critical"
	// SystemCriticalPriority is system-cluster-critical's value; pods at or
	// above it are critical (scheduling.SystemCriticalPriority).
	SystemCriticalPriority int32 = 2000000000
)

// builtinPriorities are the built-in classes' values.
var builtinPriorities = map[string]int32{
	SystemNodeCritical:    SystemCriticalPriority + 1000,
	SystemClusterCritical: SystemCriticalPriority,
}

// setPriorityDefault sets spec.priority from a built-in class when the pod
// gives none (the Priority admission plugin's resolution).
func setPriorityDefault(spec *v1.PodSpec) {
	if v, ok := builtinPriorities[spec.PriorityClassName]; ok && spec.Priority == nil {
		spec.Priority = &v
	}
}

// validatePriority refuses what the Priority admission plugin would: a
// spec.priority other than its class's value (0 without a class). A class
// this node cannot resolve (PriorityClasses live in an API server) needs
// spec.priority, which a cluster pod's API server has set.
func validatePriority(spec *v1.PodSpec, path *field.Path) field.ErrorList {
	class := spec.PriorityClassName
	if class == "" {
		// No class: the API server computes the default, 0 here (no
		// globalDefault class exists without an API server).
		if spec.Priority != nil && *spec.Priority != 0 {
			return field.ErrorList{field.Forbidden(path.Child("priority"), fmt.Sprintf(
				"the integer value of priority (%d) must not be provided in pod spec; priority admission controller computed 0 from the given PriorityClass name", *spec.Priority))}
		}
		return nil
	}
	if v, ok := builtinPriorities[class]; ok {
		if spec.Priority != nil && *spec.Priority != v {
			return field.ErrorList{field.Forbidden(path.Child("priority"), fmt.Sprintf(
				"the integer value of priority (%d) must not be provided in pod spec; priority admission controller computed %d from the given PriorityClass name", *spec.Priority, v))}
		}
		return nil
	}
	if spec.Priority == nil {
		return field.ErrorList{field.Invalid(path.Child("priorityClassName"), class, fmt.Sprintf(
			"no PriorityClass %q on this node: only %s and %s resolve without an API server; give spec.priority as well, or use one of those",
			class, SystemNodeCritical, SystemClusterCritical))}
	}
	return nil
}
