package podspec

// Security contexts: what the pod's and the containers' securityContext
// become in the CRI (LinuxSandboxSecurityContext, LinuxContainerSecurityContext),
// as the kubelet builds them (k8s pkg/kubelet/kuberuntime
// security_context*.go, kuberuntime_sandbox.go, pkg/securitycontext).
// Admission of the same fields is agent/node's (AdmitSecurity); their
// validation is agent/manifest's.

import (
	"errors"
	"fmt"
	"path/filepath"
	"slices"

	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/minikubelet/minikubelet/agent/manifest"
)

// NamespaceOptions maps hostNetwork/hostPID/hostIPC to CRI namespace modes.
// PID is per container unless the node's is asked for, or the pod's
// (shareProcessNamespace), exactly as the kubelet sets it; the CRI's zero
// value would mean POD, so it must be explicit.
//
// The user namespace (UsernsOptions) is the engine's to fill in, from the
// pod's allocated ID range (SandboxInputs/ContainerInputs.UserNamespace).
// A pod in the node's user namespace gets none: the kubelet sends mode
// NODE, which containerd treats exactly as no option (and containerd 1.6
// does not know the field), so the configs of such pods stay as they were.
func NamespaceOptions(pod *v1.Pod) *runtimeapi.NamespaceOption {
	ns := &runtimeapi.NamespaceOption{
		Network: runtimeapi.NamespaceMode_POD,
		Pid:     runtimeapi.NamespaceMode_CONTAINER,
		Ipc:     runtimeapi.NamespaceMode_POD,
	}
	if pod.Spec.HostNetwork {
		ns.Network = runtimeapi.NamespaceMode_NODE
	}
	if pod.Spec.HostPID {
		ns.Pid = runtimeapi.NamespaceMode_NODE
	} else if pod.Spec.ShareProcessNamespace != nil && *pod.Spec.ShareProcessNamespace {
		ns.Pid = runtimeapi.NamespaceMode_POD
	}
	if pod.Spec.HostIPC {
		ns.Ipc = runtimeapi.NamespaceMode_NODE
	}
	return ns
}

// isPrivileged reports whether the container asks to be privileged.
func isPrivileged(c *v1.Container) bool {
	return c.SecurityContext != nil && c.SecurityContext.Privileged != nil && *c.SecurityContext.Privileged
}

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

// SandboxSecurityContext is the sandbox's security context, as the kubelet's
// generatePodSandboxLinuxConfig builds it: privileged if any container is,
// seccomp always RuntimeDefault (the pause process needs no more), the pod's
// user, group and groups.
func SandboxSecurityContext(pod *v1.Pod) *runtimeapi.LinuxSandboxSecurityContext {
	sc := &runtimeapi.LinuxSandboxSecurityContext{
		NamespaceOptions: NamespaceOptions(pod),
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

// PodSysctls are the pod's sysctls in dotted form (nil when none).
func PodSysctls(pod *v1.Pod) map[string]string {
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

// SeccompProfile converts a seccomp profile (nil: Unconfined, the kubelet's
// default without --seccomp-default); a Localhost profile lives under root.
func SeccompProfile(sp *v1.SeccompProfile, root string) (*runtimeapi.SecurityProfile, error) {
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
			LocalhostRef: filepath.Join(root, *sp.LocalhostProfile),
		}, nil
	}
	return &runtimeapi.SecurityProfile{ProfileType: runtimeapi.SecurityProfile_Unconfined}, nil
}

// ContainerSecurityContext converts the container's effective security
// context into the CRI's, as the kubelet's determineEffectiveSecurityContext
// does. The image's user is added later (ApplyImageUser), once known.
func ContainerSecurityContext(pod *v1.Pod, c *v1.Container, seccompRoot string) (*runtimeapi.LinuxContainerSecurityContext, error) {
	eff := effectiveSecurityContext(pod, c)
	sc := &runtimeapi.LinuxContainerSecurityContext{
		NamespaceOptions:   NamespaceOptions(pod),
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
	if sc.Seccomp, err = SeccompProfile(eff.SeccompProfile, seccompRoot); err != nil {
		return nil, err
	}
	// Admission refused a profile the host cannot enforce
	// (agent/node: AdmitAppArmor).
	if sc.Apparmor, sc.ApparmorProfile, err = AppArmorForCRI(pod, c); err != nil {
		return nil, err
	}
	return sc, nil
}

// VerifyRunAsNonRoot refuses a container with runAsNonRoot that would run
// as root, or whose user cannot be told, with the kubelet's texts.
func VerifyRunAsNonRoot(pod *v1.Pod, c *v1.Container, uid *int64, username string) error {
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

// ApplyImageUser completes the container's CRI security context with the
// image's user (uid, else username; the engine asks the runtime's
// ImageStatus: no user at all is uid 0) when the manifest names none, so
// that containerd and the runAsNonRoot check agree, and runs the
// runAsNonRoot check (VerifyRunAsNonRoot), whose error carries the
// kubelet's message.
func ApplyImageUser(pod *v1.Pod, c *v1.Container, cfg *runtimeapi.ContainerConfig, uid *int64, username string) error {
	if err := VerifyRunAsNonRoot(pod, c, uid, username); err != nil {
		return err
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
