package node

// The security admit handlers together, in the order the engine asks them.

import v1 "k8s.io/api/core/v1"

// admitReasonSupplementalGroups is the kubelet's reason for a pod asking
// for the Strict supplementalGroupsPolicy.
const admitReasonSupplementalGroups = "SupplementalGroupsPolicyNotSupported"

// AdmitSecurity checks what a node may refuse of a pod's security: the
// node's Pod Security level (AdmitPodSecurity; the engine passes
// PodSecurityPrivileged for a cluster pod, the API server's Pod Security
// Admission's to judge, as with the kubelet, which admits privileged
// pods), AppArmor against whether the host enforces it, the Strict
// supplementalGroupsPolicy (containerd 1.6 cannot honour it) and sysctls
// against --allowed-unsafe-sysctls. The reason is empty when the pod is
// fine.
func AdmitSecurity(pod *v1.Pod, level PodSecurityLevel, appArmorEnabled bool, allowedSysctls []string) (reason, message string) {
	if reason, message := AdmitPodSecurity(pod, level); reason != "" {
		return reason, message
	}
	if reason, message := AdmitAppArmor(pod, appArmorEnabled); reason != "" {
		return reason, message
	}
	if sc := pod.Spec.SecurityContext; sc != nil && sc.SupplementalGroupsPolicy != nil && *sc.SupplementalGroupsPolicy == v1.SupplementalGroupsPolicyStrict {
		return admitReasonSupplementalGroups, "SupplementalGroupsPolicy=Strict is not supported in this node"
	}
	return AdmitSysctls(pod, allowedSysctls)
}
