package agent

import (
	v1 "k8s.io/api/core/v1"

	"github.com/minikubelet/minikubelet/agent/podspec"
)

// admitReasonAppArmor is the kubelet's reason for a pod refused for its
// AppArmor profile (lifecycle.AppArmorNotAdmittedReason).
const admitReasonAppArmor = "AppArmor"

// admitAppArmor refuses a pod that asks for an AppArmor profile other than
// unconfined (field or deprecated annotation) when the host does not
// enforce AppArmor, and one with an empty Localhost profile name, with the
// kubelet's reason and message (its appArmorAdmitHandler): running it
// without the confinement it asked for would be silently weaker. As the
// kubelet, a pod past Pending (running before a restart) is not judged
// again. Where the host enforces AppArmor, the profiles reach the runtime
// (podspec.AppArmorForCRI).
func (a *Agent) admitAppArmor(pod *v1.Pod) (reason, message string) {
	if pod.Status.Phase != "" && pod.Status.Phase != v1.PodPending {
		return "", ""
	}
	if !podspec.AppArmorRequired(pod) {
		return "", ""
	}
	if !a.cfg.AppArmorEnabled {
		return admitReasonAppArmor, "Cannot enforce AppArmor: AppArmor is not enabled on the host"
	}
	if err := podspec.ValidateAppArmor(pod); err != nil {
		return admitReasonAppArmor, "Cannot enforce AppArmor: " + err.Error()
	}
	return "", ""
}
