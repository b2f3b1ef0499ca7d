package node

import (
	"os"
	"path/filepath"

	v1 "k8s.io/api/core/v1"

	"github.com/minikubelet/minikubelet/agent/podspec"
)

// SysDir is the host's sysfs, where AppArmorEnabled looks.
const SysDir = "/sys"

// AppArmorEnabled reports whether the kernel under sysDir (SysDir on the
// host) enforces AppArmor, as the kubelet decides at start (its fork of
// libcontainer's apparmor.IsEnabled): the securityfs directory
// kernel/security/apparmor exists and module/apparmor/parameters/enabled
// says Y. The kubelet refuses pods asking for a profile when it does not.
func AppArmorEnabled(sysDir string) bool {
	if _, err := os.Stat(filepath.Join(sysDir, "kernel", "security", "apparmor")); err != nil {
		return false
	}
	buf, err := os.ReadFile(filepath.Join(sysDir, "module", "apparmor", "parameters", "enabled"))
	return err == nil && len(buf) > 1 && buf[0] == 'Y'
}

// admitReasonAppArmor is the kubelet's reason for a pod refused for its
// AppArmor profile (lifecycle.AppArmorNotAdmittedReason).
const admitReasonAppArmor = "AppArmor"

// AdmitAppArmor refuses a pod that asks for an AppArmor profile other than
// unconfined (field or deprecated annotation) when the host does not
// enforce AppArmor (enabled: AppArmorEnabled at start), and one with an
// empty Localhost profile name, with the kubelet's reason and message (its
// appArmorAdmitHandler): running it without the confinement it asked for
// would be silently weaker. As the kubelet, a pod past Pending (running
// before a restart) is not judged again. Where the host enforces AppArmor,
// the profiles reach the runtime (podspec.AppArmorForCRI).
func AdmitAppArmor(pod *v1.Pod, enabled bool) (reason, message string) {
	if pod.Status.Phase != "" && pod.Status.Phase != v1.PodPending {
		return "", ""
	}
	if !podspec.AppArmorRequired(pod) {
		return "", ""
	}
	if !enabled {
		return admitReasonAppArmor, "Cannot enforce AppArmor: AppArmor is not enabled on the host"
	}
	if err := podspec.ValidateAppArmor(pod); err != nil {
		return admitReasonAppArmor, "Cannot enforce AppArmor: " + err.Error()
	}
	return "", ""
}
