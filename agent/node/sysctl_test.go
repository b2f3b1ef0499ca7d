package node

import (
	"testing"

	"github.com/stretchr/testify/assert"
	v1 "k8s.io/api/core/v1"
)

func TestAdmitSysctls(t *testing.T) {
	tests := []struct {
		name        string
		sysctls     []string
		allowed     []string
		hostNetwork bool
		wantMsg     string
	}{
		{name: "none"},
		{name: "safe", sysctls: []string{"kernel.shm_rmid_forced", "net.ipv4.ip_local_port_range", "net.ipv4.tcp_wmem"}},
		{name: "safe with slashes", sysctls: []string{"net/ipv4/tcp_syncookies"}},
		{name: "unsafe", sysctls: []string{"net.core.somaxconn"}, wantMsg: `forbidden sysctl: "net.core.somaxconn" not allowlisted`},
		{name: "unsafe allowed by name", sysctls: []string{"net.core.somaxconn"}, allowed: []string{"net.core.somaxconn"}},
		{name: "unsafe allowed by glob", sysctls: []string{"net.core.somaxconn", "kernel.msgmax"}, allowed: []string{"net.core.*", "kernel.msg*"}},
		{name: "glob does not cover others", sysctls: []string{"net.ipv4.tcp_sack"}, allowed: []string{"net.core.*"}, wantMsg: `forbidden sysctl: "net.ipv4.tcp_sack" not allowlisted`},
		{name: "net sysctl with host network", sysctls: []string{"net.ipv4.tcp_syncookies"}, hostNetwork: true, wantMsg: `forbidden sysctl: "net.ipv4.tcp_syncookies" not allowed with host net enabled`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			psc := &v1.PodSecurityContext{}
			for _, s := range tc.sysctls {
				psc.Sysctls = append(psc.Sysctls, v1.Sysctl{Name: s, Value: "1"})
			}
			p := &v1.Pod{Spec: v1.PodSpec{SecurityContext: psc, Containers: []v1.Container{{Name: "app", Image: "img"}}}}
			p.Spec.HostNetwork = tc.hostNetwork
			reason, msg := AdmitSysctls(p, tc.allowed)
			assert.Equal(t, tc.wantMsg, msg)
			if tc.wantMsg != "" {
				assert.Equal(t, "SysctlForbidden", reason)
			} else {
				assert.Empty(t, reason)
			}
		})
	}
}
