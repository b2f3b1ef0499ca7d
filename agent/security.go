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
//	validation (manifest.ValidatePod) field values, the API server's messages
//	admission (admitSecurity)  the node's Pod Security level for local
//	                           pods (podsecurity.go), supplementalGroupsPolicy
//	                           Strict, sysctls
//	sandbox config             pod user/groups, sysctls, pid namespace,
//	                           sandbox seccomp RuntimeDefault
//	container config           effective context (container over pod)
//	before CreateContainer     runAsNonRoot against the image's user
//	volume setup               fsGroup ownership (agent/volume: fsgroup.go)

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/minikubelet/minikubelet/agent/manifest"
	"github.com/minikubelet/minikubelet/cri"
)

// The support tables and the validation of the security context types are
// agent/manifest's (security.go there).

// Admission.

// Admission reasons of the security checks: the kubelet's for sysctls and
// supplementalGroupsPolicy (the node's Pod Security level has its own,
// podsecurity.go).
const (
	admitReasonSysctlForbidden    = "SysctlForbidden"
	admitReasonSupplementalGroups = "SupplementalGroupsPolicyNotSupported"
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

// admitSysctls is the kubelet's sysctl admit handler: every sysctl must be
// safe or allowed, and not in a namespace the pod shares with the host.
func admitSysctls(pod *v1.Pod, allowed []string) (reason, message string) {
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

// admitSecurity checks what a node may refuse of a pod's security: a local
// pod that breaks the node's Pod Security level (--pod-security; a
// cluster pod is the API server's Pod Security Admission's to judge, as
// with the kubelet, which admits privileged pods), the Strict
// supplementalGroupsPolicy (containerd 1.6 cannot honour it), and sysctls.
// The reason is empty when the pod is fine.
func (a *Agent) admitSecurity(pod *v1.Pod) (reason, message string) {
	if reason, message := a.admitPodSecurity(pod); reason != "" {
		return reason, message
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
		m[manifest.NormalizeSysctl(s.Name)] = s.Value
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
