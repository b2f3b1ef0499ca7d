package userns

import (
	"fmt"

	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// Wanted reports whether the pod asks for a user namespace of its own
// (hostUsers: false; unset means true).
func Wanted(pod *v1.Pod) bool {
	return pod.Spec.HostUsers != nil && !*pod.Spec.HostUsers
}

// HandlerSupports is the kubelet's HandlerSupportsUserNamespaces: the
// named handler ("" the default one) is listed with the user_namespaces
// feature.
func HandlerSupports(handlers []*runtimeapi.RuntimeHandler, name string) bool {
	for _, h := range handlers {
		if h.GetName() == name {
			return h.GetFeatures().GetUserNamespaces()
		}
	}
	return false
}

// Refusal is the message refusing a pod with hostUsers: false on a runtime
// of this name and version that does not support user namespaces.
func Refusal(name, version string) string {
	return fmt.Sprintf("spec.hostUsers: false needs user namespaces, and this node's runtime, %s %s, does not support them (its CRI Status reports no user_namespaces feature for its default handler): leave spec.hostUsers out or set it to true, or run the pod on a node with containerd 2.0 or later, runc 1.2 or later and Linux 6.3 or later",
		name, version)
}
