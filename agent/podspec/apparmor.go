package podspec

// AppArmor, as the kubelet's pkg/security/apparmor (which profile a
// container asks for, and whether a pod needs AppArmor at all) and
// kuberuntime's getAppArmorProfile (the profile for the CRI).

import (
	"errors"
	"fmt"
	"strings"

	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// AppArmorRequired reports whether the pod asks for an AppArmor profile
// other than unconfined: by its own field, a container's, or the deprecated
// annotation (pkg/security/apparmor isRequired). The kubelet refuses such a
// pod on a host without AppArmor.
func AppArmorRequired(pod *v1.Pod) bool {
	if sc := pod.Spec.SecurityContext; sc != nil && sc.AppArmorProfile != nil && sc.AppArmorProfile.Type != v1.AppArmorProfileTypeUnconfined {
		return true
	}
	required := false
	visitContainers(pod, func(c *v1.Container) {
		if c.SecurityContext != nil && c.SecurityContext.AppArmorProfile != nil && c.SecurityContext.AppArmorProfile.Type != v1.AppArmorProfileTypeUnconfined {
			required = true
		}
	})
	if required {
		return true
	}
	for k, v := range pod.Annotations {
		if strings.HasPrefix(k, v1.DeprecatedAppArmorBetaContainerAnnotationKeyPrefix) && v != v1.DeprecatedAppArmorBetaProfileNameUnconfined {
			return true
		}
	}
	return false
}

// ValidateAppArmor refuses a Localhost profile without a name, which the
// API server's validation lets through in the deprecated annotation
// (pkg/security/apparmor's validator, once the host is known to enforce).
func ValidateAppArmor(pod *v1.Pod) error {
	var err error
	visitContainers(pod, func(c *v1.Container) {
		p := AppArmorProfileOf(pod, c)
		if err == nil && p != nil && p.Type == v1.AppArmorProfileTypeLocalhost && (p.LocalhostProfile == nil || strings.TrimSpace(*p.LocalhostProfile) == "") {
			err = fmt.Errorf("invalid empty AppArmor profile name (container %q)", c.Name)
		}
	})
	return err
}

// AppArmorProfileOf is the profile container c asks for: its own field,
// else the deprecated annotation (static pods may carry only that), else
// the pod's field; nil when none is set.
func AppArmorProfileOf(pod *v1.Pod, c *v1.Container) *v1.AppArmorProfile {
	if c.SecurityContext != nil && c.SecurityContext.AppArmorProfile != nil {
		return c.SecurityContext.AppArmorProfile
	}
	if val, ok := pod.Annotations[v1.DeprecatedAppArmorBetaContainerAnnotationKeyPrefix+c.Name]; ok {
		switch {
		case val == v1.DeprecatedAppArmorBetaProfileRuntimeDefault:
			return &v1.AppArmorProfile{Type: v1.AppArmorProfileTypeRuntimeDefault}
		case val == v1.DeprecatedAppArmorBetaProfileNameUnconfined:
			return &v1.AppArmorProfile{Type: v1.AppArmorProfileTypeUnconfined}
		case strings.HasPrefix(val, v1.DeprecatedAppArmorBetaProfileNamePrefix):
			name := strings.TrimPrefix(val, v1.DeprecatedAppArmorBetaProfileNamePrefix)
			return &v1.AppArmorProfile{Type: v1.AppArmorProfileTypeLocalhost, LocalhostProfile: &name}
		}
		// An invalid value: as if unset (the kubelet's).
	}
	if sc := pod.Spec.SecurityContext; sc != nil && sc.AppArmorProfile != nil {
		return sc.AppArmorProfile
	}
	return nil
}

// AppArmorForCRI is container c's profile for the CRI, and its deprecated
// string form (older runtimes read that); nil and "" when none is set (the
// runtime's default then applies).
func AppArmorForCRI(pod *v1.Pod, c *v1.Container) (*runtimeapi.SecurityProfile, string, error) {
	p := AppArmorProfileOf(pod, c)
	if p == nil {
		return nil, "", nil
	}
	switch p.Type {
	case v1.AppArmorProfileTypeRuntimeDefault:
		return &runtimeapi.SecurityProfile{ProfileType: runtimeapi.SecurityProfile_RuntimeDefault}, v1.DeprecatedAppArmorBetaProfileRuntimeDefault, nil
	case v1.AppArmorProfileTypeUnconfined:
		return &runtimeapi.SecurityProfile{ProfileType: runtimeapi.SecurityProfile_Unconfined}, v1.DeprecatedAppArmorBetaProfileNameUnconfined, nil
	case v1.AppArmorProfileTypeLocalhost:
		if p.LocalhostProfile == nil {
			return nil, "", errors.New("missing localhost apparmor profile name")
		}
		return &runtimeapi.SecurityProfile{ProfileType: runtimeapi.SecurityProfile_Localhost, LocalhostRef: *p.LocalhostProfile},
			v1.DeprecatedAppArmorBetaProfileNamePrefix + *p.LocalhostProfile, nil
	}
	return nil, "", fmt.Errorf("unknown apparmor profile type: %q", p.Type)
}

// visitContainers calls f for every init, app and ephemeral container.
func visitContainers(pod *v1.Pod, f func(*v1.Container)) {
	for i := range pod.Spec.InitContainers {
		f(&pod.Spec.InitContainers[i])
	}
	for i := range pod.Spec.Containers {
		f(&pod.Spec.Containers[i])
	}
	for i := range pod.Spec.EphemeralContainers {
		f((*v1.Container)(&pod.Spec.EphemeralContainers[i].EphemeralContainerCommon))
	}
}
