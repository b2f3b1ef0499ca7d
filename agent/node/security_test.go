package node

import (
	"testing"

	"github.com/stretchr/testify/assert"
	v1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
)

// AdmitSecurity asks the handlers in order: the first refusal wins.
func TestAdmitSecurity(t *testing.T) {
	strict := v1.SupplementalGroupsPolicyStrict
	for _, tc := range []struct {
		name       string
		pod        func(*v1.Pod)
		level      PodSecurityLevel
		wantReason string
	}{
		{name: "fine", level: PodSecurityBaseline},
		{name: "privileged under baseline", level: PodSecurityBaseline, wantReason: AdmitReasonPodSecurity, pod: func(p *v1.Pod) {
			p.Spec.Containers[0].SecurityContext = &v1.SecurityContext{Privileged: ptr.To(true)}
		}},
		{name: "AppArmor where the host has none", level: PodSecurityPrivileged, wantReason: admitReasonAppArmor, pod: func(p *v1.Pod) {
			p.Spec.Containers[0].SecurityContext = &v1.SecurityContext{AppArmorProfile: &v1.AppArmorProfile{Type: v1.AppArmorProfileTypeRuntimeDefault}}
		}},
		{name: "Strict supplementalGroupsPolicy", level: PodSecurityPrivileged, wantReason: admitReasonSupplementalGroups, pod: func(p *v1.Pod) {
			p.Spec.SecurityContext = &v1.PodSecurityContext{SupplementalGroupsPolicy: &strict}
		}},
		{name: "unsafe sysctl", level: PodSecurityPrivileged, wantReason: admitReasonSysctlForbidden, pod: func(p *v1.Pod) {
			p.Spec.SecurityContext = &v1.PodSecurityContext{Sysctls: []v1.Sysctl{{Name: "net.core.somaxconn", Value: "1024"}}}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := &v1.Pod{Spec: v1.PodSpec{Containers: []v1.Container{{Name: "app", Image: "x"}}}}
			if tc.pod != nil {
				tc.pod(p)
			}
			reason, _ := AdmitSecurity(p, tc.level, false, nil)
			assert.Equal(t, tc.wantReason, reason)
		})
	}
}
