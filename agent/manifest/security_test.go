package manifest

import (
	"reflect"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"
)

func TestValidateAllowedUnsafeSysctls(t *testing.T) {
	assert.NoError(t, ValidateAllowedUnsafeSysctls([]string{"net.core.*", "kernel.msgmax", "net/ipv4/tcp_sack", "kernel.shm*"}))
	assert.ErrorContains(t, ValidateAllowedUnsafeSysctls([]string{"kernel.panic"}), "not known to be namespaced")
	assert.ErrorContains(t, ValidateAllowedUnsafeSysctls([]string{"vm.*"}), "not known to be namespaced")
	assert.ErrorContains(t, ValidateAllowedUnsafeSysctls([]string{"net.*.x"}), "prefix followed by *")
}

func TestValidatePod_Security(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(*v1.Pod)
		want   []string
	}{
		{name: "valid", mutate: func(p *v1.Pod) {
			p.Spec.SecurityContext = &v1.PodSecurityContext{RunAsUser: ptr.To[int64](1000), FSGroup: ptr.To[int64](2000),
				Sysctls:             []v1.Sysctl{{Name: "net/ipv4/tcp_syncookies", Value: "1"}},
				FSGroupChangePolicy: ptr.To(v1.FSGroupChangeOnRootMismatch),
				SeccompProfile:      &v1.SeccompProfile{Type: v1.SeccompProfileTypeLocalhost, LocalhostProfile: ptr.To("a/b.json")}}
			p.Spec.Containers[0].SecurityContext = &v1.SecurityContext{AllowPrivilegeEscalation: ptr.To(false), Capabilities: &v1.Capabilities{Add: []v1.Capability{"NET_ADMIN"}}}
		}},
		{name: "negative ids", mutate: func(p *v1.Pod) {
			p.Spec.SecurityContext = &v1.PodSecurityContext{RunAsUser: ptr.To[int64](-1), SupplementalGroups: []int64{-2}}
			p.Spec.Containers[0].SecurityContext = &v1.SecurityContext{RunAsGroup: ptr.To[int64](-3)}
		}, want: []string{
			"spec.containers[0].securityContext.runAsGroup: Invalid value: -3: must be between 0 and 2147483647, inclusive",
			"spec.securityContext.runAsUser: Invalid value: -1: must be between 0 and 2147483647, inclusive",
			"spec.securityContext.supplementalGroups[0]: Invalid value: -2: must be between 0 and 2147483647, inclusive",
		}},
		{name: "shareProcessNamespace with hostPID", mutate: func(p *v1.Pod) {
			p.Spec.ShareProcessNamespace, p.Spec.HostPID = ptr.To(true), true
			p.Spec.SecurityContext = &v1.PodSecurityContext{RunAsUser: ptr.To[int64](1)}
		}, want: []string{"spec.shareProcessNamespace: Invalid value: true: ShareProcessNamespace and HostPID cannot both be enabled"}},
		{name: "sysctls", mutate: func(p *v1.Pod) {
			p.Spec.HostNetwork = true
			p.Spec.SecurityContext = &v1.PodSecurityContext{Sysctls: []v1.Sysctl{{Name: "Bad Name"}, {Name: "kernel.msgmax"}, {Name: "kernel.msgmax"}, {Name: "net.core.somaxconn"}}}
		}, want: []string{
			`spec.securityContext.sysctls[0].name: Invalid value: "Bad Name": must have at most 253 characters and match regex ^([a-z0-9]([-_a-z0-9]*[a-z0-9])?[\./])*[a-z0-9]([-_a-z0-9]*[a-z0-9])?$`,
			`spec.securityContext.sysctls[2].name: Duplicate value: "kernel.msgmax"`,
			`spec.securityContext.sysctls[3].name: Invalid value: "net.core.somaxconn": may not be specified when 'hostNetwork' is true`,
		}},
		{name: "seccomp", mutate: func(p *v1.Pod) {
			p.Spec.SecurityContext = &v1.PodSecurityContext{SeccompProfile: &v1.SeccompProfile{Type: v1.SeccompProfileTypeLocalhost}}
			p.Spec.Containers[0].SecurityContext = &v1.SecurityContext{SeccompProfile: &v1.SeccompProfile{Type: v1.SeccompProfileTypeLocalhost, LocalhostProfile: ptr.To("../x")}}
		}, want: []string{
			`spec.containers[0].securityContext.seccompProfile.localhostProfile: Invalid value: "../x": must not contain '..'`,
			"spec.securityContext.seccompProfile.localhostProfile: Required value: must be set when seccomp type is Localhost",
		}},
		{name: "procMount Unmasked", mutate: func(p *v1.Pod) {
			p.Spec.Containers[0].SecurityContext = &v1.SecurityContext{ProcMount: ptr.To(v1.UnmaskedProcMount)}
		}, want: []string{"spec.containers[0].securityContext.procMount: Invalid value: \"Unmasked\": `hostUsers` must be false to use `Unmasked`"}},
		{name: "procMount Unmasked in a user namespace", mutate: func(p *v1.Pod) {
			p.Spec.HostUsers = ptr.To(false)
			p.Spec.Containers[0].SecurityContext = &v1.SecurityContext{ProcMount: ptr.To(v1.UnmaskedProcMount)}
		}},
		{name: "hostUsers false with the host's namespaces", mutate: func(p *v1.Pod) {
			p.Spec.HostUsers = ptr.To(false)
			p.Spec.HostNetwork, p.Spec.HostPID, p.Spec.HostIPC = true, true, true
		}, want: []string{
			"spec.hostNetwork: Forbidden: when `hostUsers` is false",
			"spec.HostPID: Forbidden: when `hostUsers` is false",
			"spec.HostIPC: Forbidden: when `hostUsers` is false",
		}},
		{name: "hostUsers true with the host's namespaces", mutate: func(p *v1.Pod) {
			p.Spec.HostUsers = ptr.To(true)
			p.Spec.HostNetwork, p.Spec.HostPID, p.Spec.HostIPC = true, true, true
		}},
		{name: "no escalation yet privileged", mutate: func(p *v1.Pod) {
			p.Spec.Containers[0].SecurityContext = &v1.SecurityContext{AllowPrivilegeEscalation: ptr.To(false), Privileged: ptr.To(true)}
		}, want: []string{"spec.containers[0].securityContext: Invalid value: \"\": cannot set `allowPrivilegeEscalation` to false and `privileged` to true"}},
		{name: "AppArmor is admission's to judge", mutate: func(p *v1.Pod) {
			p.Spec.SecurityContext = &v1.PodSecurityContext{SELinuxOptions: &v1.SELinuxOptions{Level: "s0"}}
			p.Spec.Containers[0].SecurityContext = &v1.SecurityContext{AppArmorProfile: &v1.AppArmorProfile{Type: v1.AppArmorProfileTypeRuntimeDefault}}
		}},
		{name: "supplementalGroupsPolicy Merge is the default", mutate: func(p *v1.Pod) {
			p.Spec.SecurityContext = &v1.PodSecurityContext{SupplementalGroupsPolicy: ptr.To(v1.SupplementalGroupsPolicyMerge)}
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := securedPod(nil, nil)
			SetPodDefaults(p, "test.yaml", "node-1")
			tc.mutate(p)
			var got []string
			for _, e := range ValidatePod(p) {
				got = append(got, e.Error())
			}
			assert.Equal(t, tc.want, got)
		})
	}
}

// TestCheckSupport_SecurityTables sets every refused field of the security
// tables, one at a time, and expects one Forbidden error at its path.
func TestCheckSupport_SecurityTables(t *testing.T) {
	targets := []struct {
		tbl  *ruleTable
		get  func(*v1.Pod) reflect.Value
		path string
	}{
		{&podSecurityContextRules, func(p *v1.Pod) reflect.Value { return reflect.ValueOf(p.Spec.SecurityContext).Elem() }, "spec.securityContext"},
		{&securityContextRules, func(p *v1.Pod) reflect.Value { return reflect.ValueOf(p.Spec.Containers[0].SecurityContext).Elem() }, "spec.containers[0].securityContext"},
	}
	for _, tg := range targets {
		for _, name := range jsonFieldNames(tg.tbl.typ) {
			r := tg.tbl.rules[name]
			if r.supported {
				continue
			}
			t.Run(tg.path+"."+name, func(t *testing.T) {
				p := securedPod(&v1.PodSecurityContext{}, &v1.SecurityContext{})
				setJSONField(t, tg.get(p), name, r.unset)
				errs := checkSupport(p)
				require.Len(t, errs, 1, "%v", errs)
				assert.Equal(t, field.ErrorTypeForbidden, errs[0].Type)
				assert.Equal(t, tg.path+"."+name, errs[0].Field)
				assert.Equal(t, r.note, errs[0].Detail)
			})
		}
	}
}

func TestNormalizeSysctl(t *testing.T) {
	for in, want := range map[string]string{
		"kernel.shm_rmid_forced":           "kernel.shm_rmid_forced",
		"kernel/shm_rmid_forced":           "kernel.shm_rmid_forced",
		"net/ipv4/conf/eno2.100/rp_filter": "net.ipv4.conf.eno2/100.rp_filter",
		"net.ipv4.conf.eno2/100.rp_filter": "net.ipv4.conf.eno2/100.rp_filter",
	} {
		assert.Equal(t, want, NormalizeSysctl(in), in)
	}
}

// securedPod is a pod with one container and the given security contexts.
func securedPod(psc *v1.PodSecurityContext, sc *v1.SecurityContext) *v1.Pod {
	p := basePod()
	p.Namespace, p.UID = "default", "uid-1"
	p.Spec.SecurityContext = psc
	p.Spec.Containers[0].SecurityContext = sc
	return p
}
