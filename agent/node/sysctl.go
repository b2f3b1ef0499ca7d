package node

import (
	"fmt"
	"slices"
	"strings"

	v1 "k8s.io/api/core/v1"

	"github.com/minikubelet/minikubelet/agent/manifest"
)

// admitReasonSysctlForbidden is the kubelet's reason for a pod refused for
// its sysctls.
const admitReasonSysctlForbidden = "SysctlForbidden"

// safeSysctls is the kubelet's safe set (pkg/kubelet/sysctl/safe_sysctls.go):
// always allowed. The kubelet drops the newer ones on kernels that do not
// namespace them; minikubelet's kernels (≥ 4.15) namespace all of them.
var safeSysctls = []string{
	"kernel.shm_rmid_forced",
	"net.ipv4.ip_local_port_range",
	"net.ipv4.tcp_syncookies",
	"net.ipv4.ping_group_range",
	"net.ipv4.ip_unprivileged_port_start",
	"net.ipv4.ip_local_reserved_ports",
	"net.ipv4.tcp_keepalive_time",
	"net.ipv4.tcp_fin_timeout",
	"net.ipv4.tcp_keepalive_intvl",
	"net.ipv4.tcp_keepalive_probes",
	"net.ipv4.tcp_rmem",
	"net.ipv4.tcp_wmem",
}

// sysctlAllowed reports whether the dotted name is in the safe set or
// matches one of the allowed patterns (exact, or prefix*).
func sysctlAllowed(name string, allowed []string) bool {
	if slices.Contains(safeSysctls, name) {
		return true
	}
	for _, p := range allowed {
		p = manifest.NormalizeSysctl(p)
		if prefix, ok := strings.CutSuffix(p, "*"); ok && strings.HasPrefix(name, prefix) || p == name {
			return true
		}
	}
	return false
}

// AdmitSysctls is the kubelet's sysctl admit handler: every sysctl must be
// safe or allowed (--allowed-unsafe-sysctls), and not in a namespace the
// pod shares with the host. The reason is empty when the pod is fine.
func AdmitSysctls(pod *v1.Pod, allowed []string) (reason, message string) {
	if pod.Spec.SecurityContext == nil {
		return "", ""
	}
	for _, s := range pod.Spec.SecurityContext.Sysctls {
		name := manifest.NormalizeSysctl(s.Name)
		var err string
		switch ns := manifest.SysctlNamespace(name); {
		case !sysctlAllowed(name, allowed):
			err = fmt.Sprintf("%q not allowlisted", name)
		case ns == "ipc" && pod.Spec.HostIPC, ns == "net" && pod.Spec.HostNetwork:
			err = fmt.Sprintf("%q not allowed with host %s enabled", name, ns)
		}
		if err != "" {
			return admitReasonSysctlForbidden, "forbidden sysctl: " + err
		}
	}
	return "", ""
}
