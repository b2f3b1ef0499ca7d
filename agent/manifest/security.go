package manifest

// The security context types: their support tables (support.go) and the
// API server's rules (ValidatePodSecurityContext, ValidateSecurityContext)
// for the supported fields, sysctl names included. What they become in the
// CRI is agent/podspec's (security.go), their admission agent/node's
// (AdmitSecurity, podsecurity.go).

import (
	"fmt"
	"path"
	"reflect"
	"regexp"
	"slices"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// seLinuxNote says what becomes of seLinuxOptions: the kubelet hands them to
// the runtime (the sandbox's and each container's SELinuxOption), which
// applies them only where SELinux is enabled; minikubelet does the same
// rather than refusing pods written for SELinux clusters.
// appArmorNote is what becomes of an AppArmor profile (agent/node: apparmor.go).
const appArmorNote = "a profile other than Unconfined is rejected at admission (AppArmor) on hosts without AppArmor, as the kubelet does; elsewhere passed to the runtime"

const seLinuxNote = "passed to the runtime as the kubelet does; it applies them only on hosts with SELinux enabled"

// Fields of spec.securityContext.
var podSecurityContextRules = ruleTable{typ: reflect.TypeFor[v1.PodSecurityContext](), path: "spec.securityContext", rules: map[string]fieldRule{
	"seLinuxOptions":           ruleLimited(seLinuxNote),
	"windowsOptions":           ruleInert("Windows only; ignored on Linux, as the kubelet does"),
	"runAsUser":                ruleLimited("the sandbox's and, unless a container sets its own, the containers' user"),
	"runAsGroup":               ruleLimited("the sandbox's and, unless a container sets its own, the containers' primary group"),
	"runAsNonRoot":             ruleLimited("checked against runAsUser or the image's user before the container is created (CreateContainerConfigError)"),
	"supplementalGroups":       ruleOK,
	"supplementalGroupsPolicy": ruleLimited("Merge; Strict needs containerd 2.0, so a Strict pod is rejected at admission (SupplementalGroupsPolicyNotSupported), as the kubelet does on such nodes"),
	"fsGroup":                  ruleLimited("a supplemental group of every container; emptyDir volumes are given to it (group owner, setgid, g+rw) when created"),
	"sysctls":                  ruleLimited("the kubelet's safe set; others only when allowed with --allowed-unsafe-sysctls (else rejected at admission: SysctlForbidden)"),
	"fsGroupChangePolicy":      ruleOK,
	"seccompProfile":           ruleLimited("RuntimeDefault, Unconfined, Localhost (localhostProfile relative to --seccomp-profile-root); containers without one run Unconfined, as the kubelet without --seccomp-default"),
	"appArmorProfile":          ruleLimited(appArmorNote),
	"seLinuxChangePolicy":      ruleInert("SELinux is not used on minikubelet's nodes"),
}}

// Fields of spec.containers[*].securityContext.
var securityContextRules = ruleTable{typ: reflect.TypeFor[v1.SecurityContext](), path: "spec.containers[*].securityContext", rules: map[string]fieldRule{
	"capabilities":             ruleOK,
	"privileged":               ruleLimited("a local pod only with --pod-security=privileged (else rejected at admission: PodSecurityForbidden); a cluster pod as its API server admits it"),
	"seLinuxOptions":           ruleLimited(seLinuxNote + "; overrides spec.securityContext.seLinuxOptions"),
	"windowsOptions":           ruleInert("Windows only; ignored on Linux, as the kubelet does"),
	"runAsUser":                ruleLimited("overrides spec.securityContext.runAsUser"),
	"runAsGroup":               ruleLimited("overrides spec.securityContext.runAsGroup"),
	"runAsNonRoot":             ruleLimited("overrides spec.securityContext.runAsNonRoot"),
	"readOnlyRootFilesystem":   ruleOK,
	"allowPrivilegeEscalation": ruleLimited("false sets no_new_privs; unset leaves it off, as the kubelet does"),
	"procMount":                ruleLimited("Default (the kubelet's masked and read-only /proc paths); Unmasked (none masked or read-only) only with hostUsers: false"),
	"seccompProfile":           ruleLimited("overrides spec.securityContext.seccompProfile"),
	"appArmorProfile":          ruleLimited(appArmorNote + "; overrides spec.securityContext.appArmorProfile"),
}}

// Fields of spec.containers[*].securityContext.capabilities.
var capabilitiesRules = ruleTable{typ: reflect.TypeFor[v1.Capabilities](), path: "spec.containers[*].securityContext.capabilities", rules: map[string]fieldRule{
	"add":  ruleLimited("names without the CAP_ prefix, or ALL, as the runtime expects"),
	"drop": ruleLimited("names without the CAP_ prefix, or ALL"),
}}

// Fields of seccompProfile (pod and container level).
var seccompProfileRules = ruleTable{typ: reflect.TypeFor[v1.SeccompProfile](), path: "spec.*.securityContext.seccompProfile", rules: map[string]fieldRule{
	"type":             ruleOK,
	"localhostProfile": ruleLimited("a relative path under --seccomp-profile-root (default <root-dir>/seccomp)"),
}}

// checkPodSecuritySupport refuses the unsupported fields of the pod's
// security context.
func checkPodSecuritySupport(sc *v1.PodSecurityContext, path *field.Path) field.ErrorList {
	if sc == nil {
		return nil
	}
	errs := refuseSet(reflect.ValueOf(*sc), &podSecurityContextRules, nil, path)
	if sc.SeccompProfile != nil {
		errs = append(errs, refuseSet(reflect.ValueOf(*sc.SeccompProfile), &seccompProfileRules, nil, path.Child("seccompProfile"))...)
	}
	return errs
}

// checkContainerSecuritySupport refuses the unsupported fields of a
// container's security context.
func checkContainerSecuritySupport(sc *v1.SecurityContext, path *field.Path) field.ErrorList {
	if sc == nil {
		return nil
	}
	errs := refuseSet(reflect.ValueOf(*sc), &securityContextRules, nil, path)
	if sc.Capabilities != nil {
		errs = append(errs, refuseSet(reflect.ValueOf(*sc.Capabilities), &capabilitiesRules, nil, path.Child("capabilities"))...)
	}
	if sc.SeccompProfile != nil {
		errs = append(errs, refuseSet(reflect.ValueOf(*sc.SeccompProfile), &seccompProfileRules, nil, path.Child("seccompProfile"))...)
	}
	return errs
}

const sysctlMaxLength = 253

// sysctlNameRE is the API's sysctl name pattern (dots or slashes).
var sysctlNameRE = regexp.MustCompile(`^([a-z0-9]([-_a-z0-9]*[a-z0-9])?[\./])*[a-z0-9]([-_a-z0-9]*[a-z0-9])?$`)

// validatePodSecurity checks spec.securityContext and shareProcessNamespace.
func validatePodSecurity(spec *v1.PodSpec, fldPath *field.Path) field.ErrorList {
	sc := spec.SecurityContext
	if sc == nil {
		return nil
	}
	var errs field.ErrorList
	p := fldPath.Child("securityContext")
	if sc.FSGroup != nil {
		for _, msg := range validation.IsValidGroupID(*sc.FSGroup) {
			errs = append(errs, field.Invalid(p.Child("fsGroup"), *sc.FSGroup, msg))
		}
	}
	if sc.RunAsUser != nil {
		for _, msg := range validation.IsValidUserID(*sc.RunAsUser) {
			errs = append(errs, field.Invalid(p.Child("runAsUser"), *sc.RunAsUser, msg))
		}
	}
	if sc.RunAsGroup != nil {
		for _, msg := range validation.IsValidGroupID(*sc.RunAsGroup) {
			errs = append(errs, field.Invalid(p.Child("runAsGroup"), *sc.RunAsGroup, msg))
		}
	}
	for i, g := range sc.SupplementalGroups {
		for _, msg := range validation.IsValidGroupID(g) {
			errs = append(errs, field.Invalid(p.Child("supplementalGroups").Index(i), g, msg))
		}
	}
	if spec.ShareProcessNamespace != nil && *spec.ShareProcessNamespace && spec.HostPID {
		errs = append(errs, field.Invalid(fldPath.Child("shareProcessNamespace"), true, "ShareProcessNamespace and HostPID cannot both be enabled"))
	}
	names := map[string]bool{}
	for i, s := range sc.Sysctls {
		np := p.Child("sysctls").Index(i).Child("name")
		switch {
		case s.Name == "":
			errs = append(errs, field.Required(np, ""))
		case len(s.Name) > sysctlMaxLength || !sysctlNameRE.MatchString(s.Name):
			errs = append(errs, field.Invalid(np, s.Name, fmt.Sprintf("must have at most %d characters and match regex %s", sysctlMaxLength, sysctlNameRE)))
		case names[s.Name]:
			errs = append(errs, field.Duplicate(np, s.Name))
		}
		names[s.Name] = true
		switch ns := SysctlNamespace(NormalizeSysctl(s.Name)); {
		case ns == "net" && spec.HostNetwork:
			errs = append(errs, field.Invalid(np, s.Name, "may not be specified when 'hostNetwork' is true"))
		case ns == "ipc" && spec.HostIPC:
			errs = append(errs, field.Invalid(np, s.Name, "may not be specified when 'hostIPC' is true"))
		}
	}
	if pol := sc.FSGroupChangePolicy; pol != nil {
		supported := []string{string(v1.FSGroupChangeOnRootMismatch), string(v1.FSGroupChangeAlways)}
		if !slices.Contains(supported, string(*pol)) {
			errs = append(errs, field.NotSupported(p.Child("fsGroupChangePolicy"), *pol, supported))
		}
	}
	if pol := sc.SupplementalGroupsPolicy; pol != nil {
		supported := []string{string(v1.SupplementalGroupsPolicyMerge), string(v1.SupplementalGroupsPolicyStrict)}
		if !slices.Contains(supported, string(*pol)) {
			errs = append(errs, field.NotSupported(p.Child("supplementalGroupsPolicy"), *pol, supported))
		}
	}
	errs = append(errs, validateSeccompProfile(sc.SeccompProfile, p.Child("seccompProfile"))...)
	return errs
}

// validateHostUsers is the API server's validateHostUsers (v1.37, the
// UserNamespacesHostNetworkSupport gate off, its default): a pod in a user
// namespace of its own shares no other namespace with the host. The paths
// HostPID and HostIPC are the API server's own spelling. volumeDevices,
// which it forbids too, are refused for every pod (support.go).
func validateHostUsers(spec *v1.PodSpec, fldPath *field.Path) field.ErrorList {
	if spec.HostUsers == nil || *spec.HostUsers {
		return nil
	}
	var errs field.ErrorList
	if spec.HostNetwork {
		errs = append(errs, field.Forbidden(fldPath.Child("hostNetwork"), "when `hostUsers` is false"))
	}
	if spec.HostPID {
		errs = append(errs, field.Forbidden(fldPath.Child("HostPID"), "when `hostUsers` is false"))
	}
	if spec.HostIPC {
		errs = append(errs, field.Forbidden(fldPath.Child("HostIPC"), "when `hostUsers` is false"))
	}
	return errs
}

// validateContainerSecurity checks one container's securityContext.
func validateContainerSecurity(sc *v1.SecurityContext, spec *v1.PodSpec, fldPath *field.Path) field.ErrorList {
	if sc == nil {
		return nil
	}
	var errs field.ErrorList
	if sc.RunAsUser != nil {
		for _, msg := range validation.IsValidUserID(*sc.RunAsUser) {
			errs = append(errs, field.Invalid(fldPath.Child("runAsUser"), *sc.RunAsUser, msg))
		}
	}
	if sc.RunAsGroup != nil {
		for _, msg := range validation.IsValidGroupID(*sc.RunAsGroup) {
			errs = append(errs, field.Invalid(fldPath.Child("runAsGroup"), *sc.RunAsGroup, msg))
		}
	}
	if pm := sc.ProcMount; pm != nil {
		supported := []string{string(v1.DefaultProcMount), string(v1.UnmaskedProcMount)}
		if !slices.Contains(supported, string(*pm)) {
			errs = append(errs, field.NotSupported(fldPath.Child("procMount"), *pm, supported))
		}
		hostUsers := spec.HostUsers == nil || *spec.HostUsers
		if hostUsers && *pm == v1.UnmaskedProcMount {
			errs = append(errs, field.Invalid(fldPath.Child("procMount"), *pm, "`hostUsers` must be false to use `Unmasked`"))
		}
	}
	errs = append(errs, validateSeccompProfile(sc.SeccompProfile, fldPath.Child("seccompProfile"))...)
	if sc.AllowPrivilegeEscalation != nil && !*sc.AllowPrivilegeEscalation {
		// The API server reports these on the whole securityContext.
		if sc.Privileged != nil && *sc.Privileged {
			errs = append(errs, field.Invalid(fldPath, "", "cannot set `allowPrivilegeEscalation` to false and `privileged` to true"))
		}
		if sc.Capabilities != nil && slices.Contains(sc.Capabilities.Add, "CAP_SYS_ADMIN") {
			errs = append(errs, field.Invalid(fldPath, "", "cannot set `allowPrivilegeEscalation` to false and `capabilities.Add` CAP_SYS_ADMIN"))
		}
	}
	return errs
}

// validateSeccompProfile is the API's validateSeccompProfileField.
func validateSeccompProfile(sp *v1.SeccompProfile, fldPath *field.Path) field.ErrorList {
	if sp == nil {
		return nil
	}
	var errs field.ErrorList
	switch sp.Type {
	case v1.SeccompProfileTypeLocalhost:
		lp := fldPath.Child("localhostProfile")
		switch {
		case sp.LocalhostProfile == nil:
			errs = append(errs, field.Required(lp, "must be set when seccomp type is Localhost"))
		case path.IsAbs(*sp.LocalhostProfile):
			errs = append(errs, field.Invalid(lp, *sp.LocalhostProfile, "must be a relative path"))
		case HasBacksteps(*sp.LocalhostProfile):
			errs = append(errs, field.Invalid(lp, *sp.LocalhostProfile, "must not contain '..'"))
		}
	case v1.SeccompProfileTypeRuntimeDefault, v1.SeccompProfileTypeUnconfined:
		if sp.LocalhostProfile != nil {
			errs = append(errs, field.Invalid(fldPath.Child("localhostProfile"), *sp.LocalhostProfile, "can only be set when seccomp type is Localhost"))
		}
	case "":
		errs = append(errs, field.Required(fldPath.Child("type"), "type is required when seccompProfile is set"))
	default:
		errs = append(errs, field.NotSupported(fldPath.Child("type"), sp.Type, []string{
			string(v1.SeccompProfileTypeLocalhost), string(v1.SeccompProfileTypeRuntimeDefault), string(v1.SeccompProfileTypeUnconfined)}))
	}
	return errs
}

// NormalizeSysctl turns a slash-separated sysctl name into the dotted form:
// when the first separator is '/', dots and slashes swap
// ("net/ipv4/conf/eth0.100/rp_filter" → "net.ipv4.conf.eth0/100.rp_filter").
func NormalizeSysctl(name string) string {
	i := strings.IndexAny(name, "./")
	if i < 0 || name[i] == '.' {
		return name
	}
	return strings.Map(func(r rune) rune {
		switch r {
		case '.':
			return '/'
		case '/':
			return '.'
		}
		return r
	}, name)
}

// SysctlNamespace is the kernel namespace ("ipc", "net") a dotted sysctl
// belongs to, "" when it is not namespaced (pkg/kubelet/sysctl/namespace.go).
func SysctlNamespace(name string) string {
	if name == "kernel.sem" {
		return "ipc"
	}
	for _, p := range []string{"kernel.shm", "kernel.msg", "fs.mqueue."} {
		if strings.HasPrefix(name, p) {
			return "ipc"
		}
	}
	if strings.HasPrefix(name, "net.") {
		return "net"
	}
	return ""
}

// ValidateAllowedUnsafeSysctls checks --allowed-unsafe-sysctls patterns as
// the kubelet does at start: a name or a prefix ending in "*", of a sysctl
// the kernel namespaces (others would change the whole node).
func ValidateAllowedUnsafeSysctls(patterns []string) error {
	for _, p := range patterns {
		name := NormalizeSysctl(p)
		prefix, glob := strings.CutSuffix(name, "*")
		if strings.Contains(prefix, "*") || (!glob && !sysctlNameRE.MatchString(name)) {
			return fmt.Errorf("sysctl pattern %q: must be a sysctl name, or a prefix followed by *", p)
		}
		if SysctlNamespace(prefix) == "" {
			return fmt.Errorf("sysctl pattern %q: the sysctls are not known to be namespaced", p)
		}
	}
	return nil
}
