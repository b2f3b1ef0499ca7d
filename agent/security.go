package agent

// Security contexts: what the pod's and the containers' securityContext
// become in the CRI (LinuxSandboxSecurityContext, LinuxContainerSecurityContext),
// checked as the API server validates them and as the kubelet admits and
// starts them (k8s pkg/kubelet/kuberuntime security_context*.go,
// kuberuntime_sandbox.go, pkg/securitycontext, pkg/kubelet/sysctl,
// pkg/volume/volume_linux.go).
//
// Where each rule runs:
//
//	validation (ValidatePod)   field values, the API server's messages
//	admission (admitSecurity)  privileged without --allow-privileged,
//	                           supplementalGroupsPolicy Strict, sysctls
//	sandbox config             pod user/groups, sysctls, pid namespace,
//	                           sandbox seccomp RuntimeDefault
//	container config           effective context (container over pod)
//	before CreateContainer     runAsNonRoot against the image's user
//	volume setup               fsGroup ownership (applyFSGroup)

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"syscall"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/minikubelet/minikubelet/cri"
)

// Support tables (support.go) of the security context types.

// seLinuxNote says what becomes of seLinuxOptions: the kubelet hands them to
// the runtime (the sandbox's and each container's SELinuxOption), which
// applies them only where SELinux is enabled; minikubelet does the same
// rather than refusing pods written for SELinux clusters.
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
	"appArmorProfile":          ruleRefused(reasonNever + ": AppArmor is not available on minikubelet's nodes"),
	"seLinuxChangePolicy":      ruleInert("SELinux is not used on minikubelet's nodes"),
}}

// Fields of spec.containers[*].securityContext.
var securityContextRules = ruleTable{typ: reflect.TypeFor[v1.SecurityContext](), path: "spec.containers[*].securityContext", rules: map[string]fieldRule{
	"capabilities":             ruleOK,
	"privileged":               ruleLimited("only when the agent runs with --allow-privileged (else rejected at admission: PrivilegedForbidden)"),
	"seLinuxOptions":           ruleLimited(seLinuxNote + "; overrides spec.securityContext.seLinuxOptions"),
	"windowsOptions":           ruleInert("Windows only; ignored on Linux, as the kubelet does"),
	"runAsUser":                ruleLimited("overrides spec.securityContext.runAsUser"),
	"runAsGroup":               ruleLimited("overrides spec.securityContext.runAsGroup"),
	"runAsNonRoot":             ruleLimited("overrides spec.securityContext.runAsNonRoot"),
	"readOnlyRootFilesystem":   ruleOK,
	"allowPrivilegeEscalation": ruleLimited("false sets no_new_privs; unset leaves it off, as the kubelet does"),
	"procMount":                ruleLimited("Default (the kubelet's masked and read-only /proc paths); Unmasked needs hostUsers: false, which is not supported"),
	"seccompProfile":           ruleLimited("overrides spec.securityContext.seccompProfile"),
	"appArmorProfile":          ruleRefused(reasonNever + ": AppArmor is not available on minikubelet's nodes"),
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

// Validation: the API server's rules (ValidatePodSecurityContext,
// ValidateSecurityContext) for the supported fields.

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
		switch ns := sysctlNamespace(normalizeSysctl(s.Name)); {
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
		case hasBacksteps(*sp.LocalhostProfile):
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

// Admission.

// Admission reasons of the security checks: the kubelet's for sysctls and
// supplementalGroupsPolicy; minikubelet's own for privileged containers
// (the kubelet refuses them in the API server instead).
const (
	admitReasonSysctlForbidden     = "SysctlForbidden"
	admitReasonSupplementalGroups  = "SupplementalGroupsPolicyNotSupported"
	admitReasonPrivilegedForbidden = "PrivilegedForbidden"
)

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

// normalizeSysctl turns a slash-separated sysctl name into the dotted form:
// when the first separator is '/', dots and slashes swap
// ("net/ipv4/conf/eth0.100/rp_filter" → "net.ipv4.conf.eth0/100.rp_filter").
func normalizeSysctl(name string) string {
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

// sysctlNamespace is the kernel namespace ("ipc", "net") a dotted sysctl
// belongs to, "" when it is not namespaced (pkg/kubelet/sysctl/namespace.go).
func sysctlNamespace(name string) string {
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
		name := normalizeSysctl(p)
		prefix, glob := strings.CutSuffix(name, "*")
		if strings.Contains(prefix, "*") || (!glob && !sysctlNameRE.MatchString(name)) {
			return fmt.Errorf("sysctl pattern %q: must be a sysctl name, or a prefix followed by *", p)
		}
		if sysctlNamespace(prefix) == "" {
			return fmt.Errorf("sysctl pattern %q: the sysctls are not known to be namespaced", p)
		}
	}
	return nil
}

// sysctlAllowed reports whether the dotted name is in the safe set or
// matches one of the allowed patterns (exact, or prefix*).
func sysctlAllowed(name string, allowed []string) bool {
	if slices.Contains(safeSysctls, name) {
		return true
	}
	for _, p := range allowed {
		p = normalizeSysctl(p)
		if prefix, ok := strings.CutSuffix(p, "*"); ok && strings.HasPrefix(name, prefix) || p == name {
			return true
		}
	}
	return false
}

// admitSysctls is the kubelet's sysctl admit handler: every sysctl must be
// safe or allowed, and not in a namespace the pod shares with the host.
func admitSysctls(pod *v1.Pod, allowed []string) (reason, message string) {
	if pod.Spec.SecurityContext == nil {
		return "", ""
	}
	for _, s := range pod.Spec.SecurityContext.Sysctls {
		name := normalizeSysctl(s.Name)
		var err string
		switch ns := sysctlNamespace(name); {
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

// admitSecurity checks what a node may refuse of a pod's security: a
// privileged container without --allow-privileged, the Strict
// supplementalGroupsPolicy (containerd 1.6 cannot honour it), and sysctls.
// The reason is empty when the pod is fine.
func (a *Agent) admitSecurity(pod *v1.Pod) (reason, message string) {
	if !a.cfg.AllowPrivileged {
		for _, cs := range []struct {
			kind string
			list []v1.Container
		}{{"initContainers", pod.Spec.InitContainers}, {"containers", pod.Spec.Containers}} {
			for i, c := range cs.list {
				if isPrivileged(&c) {
					return admitReasonPrivilegedForbidden, fmt.Sprintf("container %q is privileged (spec.%s[%d].securityContext.privileged), which this node refuses: start the agent with --allow-privileged to allow it", c.Name, cs.kind, i)
				}
			}
		}
	}
	if sc := pod.Spec.SecurityContext; sc != nil && sc.SupplementalGroupsPolicy != nil && *sc.SupplementalGroupsPolicy == v1.SupplementalGroupsPolicyStrict {
		return admitReasonSupplementalGroups, "SupplementalGroupsPolicy=Strict is not supported in this node"
	}
	return admitSysctls(pod, a.cfg.AllowedUnsafeSysctls)
}

// isPrivileged reports whether the container asks to be privileged.
func isPrivileged(c *v1.Container) bool {
	return c.SecurityContext != nil && c.SecurityContext.Privileged != nil && *c.SecurityContext.Privileged
}

// CRI conversion.

// defaultMaskedPaths and defaultReadonlyPaths are the /proc and /sys paths
// the kubelet masks and makes read-only for procMount Default
// (pkg/securitycontext/util.go).
var (
	defaultMaskedPaths = []string{
		"/proc/asound", "/proc/acpi", "/proc/kcore", "/proc/keys", "/proc/latency_stats",
		"/proc/timer_list", "/proc/timer_stats", "/proc/sched_debug", "/proc/scsi",
		"/sys/firmware", "/sys/devices/virtual/powercap",
	}
	defaultReadonlyPaths = []string{
		"/proc/bus", "/proc/fs", "/proc/irq", "/proc/sys", "/proc/sysrq-trigger",
	}
)

// seccompProfileRoot is where Localhost seccomp profiles live.
func (a *Agent) seccompProfileRoot() string {
	if a.cfg.SeccompProfileRoot != "" {
		return a.cfg.SeccompProfileRoot
	}
	return filepath.Join(a.cfg.RootDir, "seccomp")
}

// podSupplementalGroups is fsGroup followed by spec.securityContext's
// supplementalGroups, the kubelet's order.
func podSupplementalGroups(sc *v1.PodSecurityContext) []int64 {
	if sc == nil {
		return nil
	}
	var groups []int64
	if sc.FSGroup != nil {
		groups = append(groups, *sc.FSGroup)
	}
	return append(groups, sc.SupplementalGroups...)
}

// sandboxSecurityContext is the sandbox's security context, as the kubelet's
// generatePodSandboxLinuxConfig builds it: privileged if any container is,
// seccomp always RuntimeDefault (the pause process needs no more), the pod's
// user, group and groups.
func sandboxSecurityContext(pod *v1.Pod) *runtimeapi.LinuxSandboxSecurityContext {
	sc := &runtimeapi.LinuxSandboxSecurityContext{
		NamespaceOptions: namespaceOptions(pod),
		Seccomp:          &runtimeapi.SecurityProfile{ProfileType: runtimeapi.SecurityProfile_RuntimeDefault},
	}
	for _, list := range [][]v1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for i := range list {
			sc.Privileged = sc.Privileged || isPrivileged(&list[i])
		}
	}
	if psc := pod.Spec.SecurityContext; psc != nil {
		if psc.RunAsUser != nil {
			sc.RunAsUser = &runtimeapi.Int64Value{Value: *psc.RunAsUser}
		}
		if psc.RunAsGroup != nil {
			sc.RunAsGroup = &runtimeapi.Int64Value{Value: *psc.RunAsGroup}
		}
		sc.SupplementalGroups = podSupplementalGroups(psc)
		sc.SelinuxOptions = seLinuxOption(psc.SELinuxOptions)
	}
	return sc
}

// seLinuxOption converts SELinux options for the CRI (nil stays nil).
func seLinuxOption(o *v1.SELinuxOptions) *runtimeapi.SELinuxOption {
	if o == nil {
		return nil
	}
	return &runtimeapi.SELinuxOption{User: o.User, Role: o.Role, Type: o.Type, Level: o.Level}
}

// podSysctls are the pod's sysctls in dotted form (nil when none).
func podSysctls(pod *v1.Pod) map[string]string {
	psc := pod.Spec.SecurityContext
	if psc == nil || len(psc.Sysctls) == 0 {
		return nil
	}
	m := make(map[string]string, len(psc.Sysctls))
	for _, s := range psc.Sysctls {
		m[normalizeSysctl(s.Name)] = s.Value
	}
	return m
}

// effectiveSecurityContext merges the pod's security context into the
// container's: the container's user, group, runAsNonRoot and seccomp win
// (pkg/securitycontext DetermineEffectiveSecurityContext). The result is
// never nil.
func effectiveSecurityContext(pod *v1.Pod, c *v1.Container) *v1.SecurityContext {
	eff := &v1.SecurityContext{}
	if c.SecurityContext != nil {
		eff = c.SecurityContext.DeepCopy()
	}
	psc := pod.Spec.SecurityContext
	if psc == nil {
		return eff
	}
	if eff.RunAsUser == nil {
		eff.RunAsUser = psc.RunAsUser
	}
	if eff.RunAsGroup == nil {
		eff.RunAsGroup = psc.RunAsGroup
	}
	if eff.RunAsNonRoot == nil {
		eff.RunAsNonRoot = psc.RunAsNonRoot
	}
	if eff.SeccompProfile == nil {
		eff.SeccompProfile = psc.SeccompProfile
	}
	if eff.SELinuxOptions == nil && psc.SELinuxOptions != nil {
		eff.SELinuxOptions = psc.SELinuxOptions.DeepCopy()
	}
	return eff
}

// seccompProfile converts a seccomp profile (nil: Unconfined, the kubelet's
// default without --seccomp-default).
func (a *Agent) seccompProfile(sp *v1.SeccompProfile) (*runtimeapi.SecurityProfile, error) {
	if sp == nil {
		return &runtimeapi.SecurityProfile{ProfileType: runtimeapi.SecurityProfile_Unconfined}, nil
	}
	switch sp.Type {
	case v1.SeccompProfileTypeRuntimeDefault:
		return &runtimeapi.SecurityProfile{ProfileType: runtimeapi.SecurityProfile_RuntimeDefault}, nil
	case v1.SeccompProfileTypeLocalhost:
		if sp.LocalhostProfile == nil || *sp.LocalhostProfile == "" {
			return nil, errors.New("localhostProfile must be set if seccompProfile type is Localhost")
		}
		return &runtimeapi.SecurityProfile{
			ProfileType:  runtimeapi.SecurityProfile_Localhost,
			LocalhostRef: filepath.Join(a.seccompProfileRoot(), *sp.LocalhostProfile),
		}, nil
	}
	return &runtimeapi.SecurityProfile{ProfileType: runtimeapi.SecurityProfile_Unconfined}, nil
}

// containerSecurityContext converts the container's effective security
// context into the CRI's, as the kubelet's determineEffectiveSecurityContext
// does. The image's user is added later (applyImageUser), once known.
func (a *Agent) containerSecurityContext(pod *v1.Pod, c *v1.Container) (*runtimeapi.LinuxContainerSecurityContext, error) {
	eff := effectiveSecurityContext(pod, c)
	sc := &runtimeapi.LinuxContainerSecurityContext{
		NamespaceOptions:   namespaceOptions(pod),
		SupplementalGroups: podSupplementalGroups(pod.Spec.SecurityContext),
		MaskedPaths:        slices.Clone(defaultMaskedPaths),
		ReadonlyPaths:      slices.Clone(defaultReadonlyPaths),
	}
	if eff.ProcMount != nil && *eff.ProcMount == v1.UnmaskedProcMount {
		sc.MaskedPaths, sc.ReadonlyPaths = []string{}, []string{}
	}
	if caps := eff.Capabilities; caps != nil {
		sc.Capabilities = &runtimeapi.Capability{}
		for _, c := range caps.Add {
			sc.Capabilities.AddCapabilities = append(sc.Capabilities.AddCapabilities, string(c))
		}
		for _, c := range caps.Drop {
			sc.Capabilities.DropCapabilities = append(sc.Capabilities.DropCapabilities, string(c))
		}
	}
	if eff.Privileged != nil {
		sc.Privileged = *eff.Privileged
	}
	if eff.RunAsUser != nil {
		sc.RunAsUser = &runtimeapi.Int64Value{Value: *eff.RunAsUser}
	}
	if eff.RunAsGroup != nil {
		sc.RunAsGroup = &runtimeapi.Int64Value{Value: *eff.RunAsGroup}
	}
	if eff.ReadOnlyRootFilesystem != nil {
		sc.ReadonlyRootfs = *eff.ReadOnlyRootFilesystem
	}
	sc.SelinuxOptions = seLinuxOption(eff.SELinuxOptions)
	// no_new_privs only when allowPrivilegeEscalation is explicitly false
	// (pkg/securitycontext AddNoNewPrivileges).
	if eff.AllowPrivilegeEscalation != nil {
		sc.NoNewPrivs = !*eff.AllowPrivilegeEscalation
	}
	var err error
	if sc.Seccomp, err = a.seccompProfile(eff.SeccompProfile); err != nil {
		return nil, err
	}
	return sc, nil
}

// imageUser returns the user the image runs as, from the runtime's
// ImageStatus: a numeric uid, or a user name; no user at all is root
// (kubelet getImageUser). known is the image's status when the caller
// already holds it (nil: asked here).
func (a *Agent) imageUser(ctx context.Context, image string, known *runtimeapi.Image) (*int64, string, error) {
	img := known
	if img == nil {
		st, err := a.images.ImageStatus(ctx, &runtimeapi.ImageSpec{Image: image}, false)
		if err != nil {
			return nil, "", err
		}
		img = st.GetImage()
	}
	if img != nil {
		if img.GetUid() != nil {
			uid := img.GetUid().GetValue()
			return &uid, "", nil
		}
		if img.GetUsername() != "" {
			return nil, img.GetUsername(), nil
		}
	}
	root := int64(0)
	return &root, "", nil
}

// verifyRunAsNonRoot refuses a container with runAsNonRoot that would run
// as root, or whose user cannot be told, with the kubelet's texts.
func verifyRunAsNonRoot(pod *v1.Pod, c *v1.Container, uid *int64, username string) error {
	eff := effectiveSecurityContext(pod, c)
	if eff.RunAsNonRoot == nil || !*eff.RunAsNonRoot {
		return nil
	}
	podRef := fmt.Sprintf("%s_%s(%s)", pod.Name, pod.Namespace, pod.UID)
	if eff.RunAsUser != nil {
		if *eff.RunAsUser == 0 {
			return fmt.Errorf("container's runAsUser breaks non-root policy (pod: %q, container: %s)", podRef, c.Name)
		}
		return nil
	}
	switch {
	case uid != nil && *uid == 0:
		return fmt.Errorf("container has runAsNonRoot and image will run as root (pod: %q, container: %s)", podRef, c.Name)
	case uid == nil && username != "":
		return fmt.Errorf("container has runAsNonRoot and image has non-numeric user (%s), cannot verify user is non-root (pod: %q, container: %s)", username, podRef, c.Name)
	}
	return nil
}

// applyImageUser completes the container's CRI security context with the
// image's user when the manifest names none (so that containerd and the
// runAsNonRoot check agree), and runs the runAsNonRoot check. Failures are
// CreateContainerConfigError with the kubelet's message and event. img is
// the image's status if the caller holds it (nil: asked here).
func (a *Agent) applyImageUser(ctx context.Context, pw *podWorker, c *v1.Container, cfg *runtimeapi.ContainerConfig, img *runtimeapi.Image) error {
	pod := pw.pod()
	uid, username, err := a.imageUser(ctx, c.Image, img)
	if err == nil {
		err = verifyRunAsNonRoot(pod, c, uid, username)
	} else {
		err = fmt.Errorf("inspect image %q: %s", c.Image, cri.Message(err))
	}
	if err != nil {
		pw.containerEvent(c.Name, v1.EventTypeWarning, "Failed", "Error: %v", err)
		return newReasonError(ErrCreateContainerConfig, "%v", err)
	}
	sc := cfg.GetLinux().GetSecurityContext()
	if sc != nil && sc.RunAsUser == nil {
		if uid != nil {
			sc.RunAsUser = &runtimeapi.Int64Value{Value: *uid}
		} else if username != "" {
			sc.RunAsUsername = username
		}
	}
	return nil
}

// fsGroup.

// Permission bits SetVolumeOwnership adds (pkg/volume/volume_linux.go).
const (
	fsGroupRWMask   = fs.FileMode(0o660)
	fsGroupROMask   = fs.FileMode(0o440)
	fsGroupExecMask = fs.FileMode(0o110)
)

// applyFSGroup gives the volume at dir to group gid as the kubelet's
// SetVolumeOwnership does for a writable volume: every file and directory
// gets group gid and g+rw (directories also g+x and setgid, so new files
// inherit the group); symlinks get the group only. With policy
// OnRootMismatch nothing is done when dir already has the group and the
// bits. emptyDir calls it once, when the volume is created; others
// (configMap, secret, downwardAPI, projected) use applyFSGroupReadOnly.
func applyFSGroup(dir string, gid int64, policy *v1.PodFSGroupChangePolicy) error {
	return setVolumeOwnership(dir, gid, policy, false)
}

// applyFSGroupReadOnly is applyFSGroup for the volumes the kubelet treats as
// read-only (configMap, secret, downwardAPI, projected): g+r instead of g+rw.
func applyFSGroupReadOnly(dir string, gid int64, policy *v1.PodFSGroupChangePolicy) error {
	return setVolumeOwnership(dir, gid, policy, true)
}

func setVolumeOwnership(dir string, gid int64, policy *v1.PodFSGroupChangePolicy, readOnly bool) error {
	mask := fsGroupRWMask
	if readOnly {
		mask = fsGroupROMask
	}
	if policy != nil && *policy == v1.FSGroupChangeOnRootMismatch && !ownershipMismatch(dir, gid, mask) {
		return nil
	}
	var errs []error
	walkErr := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if err := os.Lchown(p, -1, int(gid)); err != nil {
			errs = append(errs, err)
		}
		// chmod follows symlinks: leave their targets alone.
		if d.Type()&fs.ModeSymlink != 0 {
			return nil
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		m := mask
		if info.IsDir() {
			m |= os.ModeSetgid | fsGroupExecMask
		}
		if err := os.Chmod(p, info.Mode()|m); err != nil {
			errs = append(errs, err)
		}
		return nil
	})
	if walkErr != nil {
		errs = append(errs, walkErr)
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("set volume ownership of %s to group %d: %w", dir, gid, err)
	}
	return nil
}

// ownershipMismatch reports whether dir lacks group gid, the mask's bits
// (plus g+x) or setgid: OnRootMismatch then changes the whole volume.
func ownershipMismatch(dir string, gid int64, mask fs.FileMode) bool {
	fi, err := os.Stat(dir)
	if err != nil || !fi.IsDir() {
		return true
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok || int64(st.Gid) != gid {
		return true
	}
	want := mask | fsGroupExecMask
	return fi.Mode().Perm()&want != want || fi.Mode()&os.ModeSetgid == 0
}

// podFSGroup is the pod's fsGroup and change policy (nil when unset).
func podFSGroup(pod *v1.Pod) (*int64, *v1.PodFSGroupChangePolicy) {
	if sc := pod.Spec.SecurityContext; sc != nil {
		return sc.FSGroup, sc.FSGroupChangePolicy
	}
	return nil, nil
}
