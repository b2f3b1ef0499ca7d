package node

import (
	"os"
	"path/filepath"
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
