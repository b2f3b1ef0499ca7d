package podspec

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/utils/ptr"
)

// The container's AppArmor profile reaches the CRI as the kubelet sends
// it (kuberuntime getAppArmorProfile): its own field first, then the
// deprecated annotation, then the pod's field; with the deprecated string
// beside it.
func TestAppArmorForCRI(t *testing.T) {
	annotated := func(val string) *v1.Pod {
		p := securedPod(&v1.PodSecurityContext{AppArmorProfile: &v1.AppArmorProfile{Type: v1.AppArmorProfileTypeRuntimeDefault}}, nil)
		p.Annotations = map[string]string{v1.DeprecatedAppArmorBetaContainerAnnotationKeyPrefix + "web": val}
		return p
	}
	tests := []struct {
		name           string
		pod            *v1.Pod
		want           *runtimeapi.SecurityProfile
		wantDeprecated string
		required       bool
	}{
		{name: "none", pod: securedPod(nil, nil)},
		{name: "pod field", pod: securedPod(&v1.PodSecurityContext{AppArmorProfile: &v1.AppArmorProfile{Type: v1.AppArmorProfileTypeRuntimeDefault}}, nil),
			want: &runtimeapi.SecurityProfile{ProfileType: runtimeapi.SecurityProfile_RuntimeDefault}, wantDeprecated: "runtime/default", required: true},
		{name: "container field wins", pod: securedPod(&v1.PodSecurityContext{AppArmorProfile: &v1.AppArmorProfile{Type: v1.AppArmorProfileTypeRuntimeDefault}},
			&v1.SecurityContext{AppArmorProfile: &v1.AppArmorProfile{Type: v1.AppArmorProfileTypeLocalhost, LocalhostProfile: ptr.To("deny-write")}}),
			want: &runtimeapi.SecurityProfile{ProfileType: runtimeapi.SecurityProfile_Localhost, LocalhostRef: "deny-write"}, wantDeprecated: "localhost/deny-write", required: true},
		{name: "annotation before the pod's field", pod: annotated("unconfined"),
			want: &runtimeapi.SecurityProfile{ProfileType: runtimeapi.SecurityProfile_Unconfined}, wantDeprecated: "unconfined", required: true},
		{name: "annotation localhost", pod: annotated("localhost/audit-write"),
			want: &runtimeapi.SecurityProfile{ProfileType: runtimeapi.SecurityProfile_Localhost, LocalhostRef: "audit-write"}, wantDeprecated: "localhost/audit-write", required: true},
		{name: "unconfined only", pod: securedPod(nil, &v1.SecurityContext{AppArmorProfile: &v1.AppArmorProfile{Type: v1.AppArmorProfileTypeUnconfined}}),
			want: &runtimeapi.SecurityProfile{ProfileType: runtimeapi.SecurityProfile_Unconfined}, wantDeprecated: "unconfined"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, dep, err := AppArmorForCRI(tc.pod, &tc.pod.Spec.Containers[0])
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
			assert.Equal(t, tc.wantDeprecated, dep)
			assert.Equal(t, tc.required, AppArmorRequired(tc.pod))
			sc, err := ContainerSecurityContext(tc.pod, &tc.pod.Spec.Containers[0], "/seccomp")
			require.NoError(t, err)
			assert.Equal(t, tc.want, sc.Apparmor, "in the container's security context")
			assert.Equal(t, tc.wantDeprecated, sc.ApparmorProfile)
		})
	}
	empty := annotated("localhost/")
	require.ErrorContains(t, ValidateAppArmor(empty), `invalid empty AppArmor profile name (container "web")`)
	require.NoError(t, ValidateAppArmor(annotated("localhost/x")))
}
