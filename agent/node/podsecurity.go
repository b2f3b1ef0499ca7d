package node

// The node's Pod Security policy for local pods (the manifest directory,
// the local API, `minikubelet run`): the Pod Security Standards' levels
// and checks, as k8s.io/pod-security-admission/policy v0.37 evaluates them
// at version "latest" (check_*.go there; the reason texts are its
// ForbiddenReason strings). The kubelet has no such policy: a cluster's
// API server enforces the standards (Pod Security Admission) before a pod
// reaches a node. Local pods never pass an API server, so without this the
// local API, the manifest directory and `run` would hand anyone who may
// create a pod the host (hostPID with CAP_SYS_PTRACE reads every host file
// through /proc/<pid>/root). Cluster pods are left to the API server's
// Pod Security Admission, as with the kubelet: the engine, which knows
// where a pod comes from, holds them to PodSecurityPrivileged
// (its isClusterPod).
//
// Unlike Pod Security Admission, which names containers, each problem
// names its field path, and all of them are reported at once.
//
// Why not import k8s.io/pod-security-admission/policy: its api package
// imports k8s.io/component-base/version (another module), its results name
// containers rather than field paths (which the node's messages need), and
// the checks are a page of rules; podsecurity_test.go holds the cases.

import (
	"fmt"
	"slices"
	"strings"

	v1 "k8s.io/api/core/v1"
)

// PodSecurityLevel is a Pod Security Standards level.
type PodSecurityLevel string

// The three levels of the Pod Security Standards.
const (
	PodSecurityPrivileged PodSecurityLevel = "privileged"
	PodSecurityBaseline   PodSecurityLevel = "baseline"
	PodSecurityRestricted PodSecurityLevel = "restricted"
)

// DefaultPodSecurity is the level of local pods unless --pod-security
// says otherwise (docs/security.md says why baseline).
const DefaultPodSecurity = PodSecurityBaseline

// ParsePodSecurityLevel checks a --pod-security value.
func ParsePodSecurityLevel(s string) (PodSecurityLevel, error) {
	switch l := PodSecurityLevel(s); l {
	case PodSecurityPrivileged, PodSecurityBaseline, PodSecurityRestricted:
		return l, nil
	}
	return "", fmt.Errorf("%q is not a Pod Security Standards level: use privileged, baseline or restricted", s)
}

// AdmitReasonPodSecurity is the admission reason of a local pod the node's
// policy refuses.
const AdmitReasonPodSecurity = "PodSecurityForbidden"

// podSecurityProblem is one field that breaks the level.
type podSecurityProblem struct {
	// path is the field path (spec.containers[0].securityContext.privileged).
	path string
	// reason is the standard's name of the check (Pod Security
	// Admission's ForbiddenReason: "host namespaces", "privileged", ...).
	reason string
	// detail says what is wrong and what is allowed.
	detail string
}

func (p podSecurityProblem) String() string {
	return p.path + ": " + p.reason + ": " + p.detail
}

// The allowed values of the checks (pod-security-admission v0.37, latest).
var (
	// capabilities_baseline: the container runtime's default set.
	pssBaselineCapabilities = []string{"AUDIT_WRITE", "CHOWN", "DAC_OVERRIDE", "FOWNER", "FSETID", "KILL", "MKNOD",
		"NET_BIND_SERVICE", "SETFCAP", "SETGID", "SETPCAP", "SETUID", "SYS_CHROOT"}
	// sysctls (v1.37): compared by name as written (slashes are not
	// normalised, as in Pod Security Admission).
	pssSafeSysctls = []string{"kernel.shm_rmid_forced", "net.ipv4.ip_local_port_range", "net.ipv4.tcp_syncookies",
		"net.ipv4.ping_group_range", "net.ipv4.ip_unprivileged_port_start", "net.ipv4.ip_local_reserved_ports",
		"net.ipv4.tcp_keepalive_time", "net.ipv4.tcp_fin_timeout", "net.ipv4.tcp_keepalive_intvl",
		"net.ipv4.tcp_keepalive_probes", "net.ipv4.tcp_rmem", "net.ipv4.tcp_wmem",
		"net.ipv4.tcp_slow_start_after_idle", "net.ipv4.tcp_notsent_lowat"}
	// seLinuxOptions (v1.31): the types a pod may set.
	pssSELinuxTypes = []string{"", "container_t", "container_init_t", "container_kvm_t", "container_engine_t"}
)

// pssContainer is one container of any kind with its field path.
type pssContainer struct {
	path string
	c    *v1.Container
}

// pssContainers are the pod's init, app and ephemeral containers, in that
// order (the policy's visitContainers).
func pssContainers(spec *v1.PodSpec) []pssContainer {
	var out []pssContainer
	for i := range spec.InitContainers {
		out = append(out, pssContainer{fmt.Sprintf("spec.initContainers[%d]", i), &spec.InitContainers[i]})
	}
	for i := range spec.Containers {
		out = append(out, pssContainer{fmt.Sprintf("spec.containers[%d]", i), &spec.Containers[i]})
	}
	for i := range spec.EphemeralContainers {
		out = append(out, pssContainer{fmt.Sprintf("spec.ephemeralContainers[%d]", i), (*v1.Container)(&spec.EphemeralContainers[i].EphemeralContainerCommon)})
	}
	return out
}

// checkPodSecurity lists every field of pod that breaks level (none for
// privileged).
func checkPodSecurity(pod *v1.Pod, level PodSecurityLevel) []podSecurityProblem {
	if level == PodSecurityPrivileged {
		return nil
	}
	restricted := level == PodSecurityRestricted
	spec := &pod.Spec
	psc := spec.SecurityContext
	windows := spec.OS != nil && spec.OS.Name == v1.Windows
	// hostUsers: false relaxes runAsNonRoot, runAsUser and the baseline
	// procMount check (v1.35).
	userNS := spec.HostUsers != nil && !*spec.HostUsers
	containers := pssContainers(spec)
	var out []podSecurityProblem
	add := func(path, reason, format string, args ...any) {
		out = append(out, podSecurityProblem{path: path, reason: reason, detail: fmt.Sprintf(format, args...)})
	}

	// Baseline.
	// hostNamespaces.
	for _, ns := range []struct {
		field string
		set   bool
	}{{"hostNetwork", spec.HostNetwork}, {"hostPID", spec.HostPID}, {"hostIPC", spec.HostIPC}} {
		if ns.set {
			add("spec."+ns.field, "host namespaces", "must be false or unset (the pod would share the host's namespace)")
		}
	}
	// windowsHostProcess.
	if psc != nil && psc.WindowsOptions != nil && psc.WindowsOptions.HostProcess != nil && *psc.WindowsOptions.HostProcess {
		add("spec.securityContext.windowsOptions.hostProcess", "hostProcess", "must not be true")
	}
	// sysctls.
	if psc != nil {
		for i, s := range psc.Sysctls {
			if !slices.Contains(pssSafeSysctls, s.Name) {
				add(fmt.Sprintf("spec.securityContext.sysctls[%d].name", i), "forbidden sysctls", "%q is not in the safe set (%s)", s.Name, strings.Join(pssSafeSysctls, ", "))
			}
		}
	}
	// seLinuxOptions, pod level.
	if psc != nil && psc.SELinuxOptions != nil {
		out = append(out, seLinuxProblems("spec.securityContext.seLinuxOptions", psc.SELinuxOptions)...)
	}
	// appArmorProfile, pod level and the deprecated annotations.
	if psc != nil && psc.AppArmorProfile != nil && !pssAppArmorType(psc.AppArmorProfile.Type) {
		add("spec.securityContext.appArmorProfile.type", "forbidden AppArmor profile", "%q is not allowed: RuntimeDefault, Localhost or unset", psc.AppArmorProfile.Type)
	}
	annotations := make([]string, 0, len(pod.Annotations))
	for k := range pod.Annotations {
		annotations = append(annotations, k)
	}
	slices.Sort(annotations)
	for _, k := range annotations {
		v := pod.Annotations[k]
		if strings.HasPrefix(k, v1.DeprecatedAppArmorBetaContainerAnnotationKeyPrefix) &&
			v != "" && v != v1.DeprecatedAppArmorBetaProfileRuntimeDefault && !strings.HasPrefix(v, v1.DeprecatedAppArmorBetaProfileNamePrefix) {
			add(fmt.Sprintf("metadata.annotations[%s]", k), "forbidden AppArmor profile", "%q is not allowed: %s, %s<profile> or empty",
				v, v1.DeprecatedAppArmorBetaProfileRuntimeDefault, v1.DeprecatedAppArmorBetaProfileNamePrefix)
		}
	}
	// seccompProfile, pod level (restricted: also required, below).
	podSeccompOK := false
	if psc != nil && psc.SeccompProfile != nil {
		if pssSeccompType(psc.SeccompProfile.Type) {
			podSeccompOK = true
		} else if !(restricted && windows) { // the restricted check, which overrides the baseline one, skips Windows pods
			add("spec.securityContext.seccompProfile.type", "seccompProfile", "%q is not allowed: RuntimeDefault or Localhost", psc.SeccompProfile.Type)
		}
	}
	// hostPathVolumes (restricted: restrictedVolumes instead).
	for i, vol := range spec.Volumes {
		if restricted {
			if t := pssRestrictedVolumeType(&vol); t != "" {
				add(fmt.Sprintf("spec.volumes[%d].%s", i, t), "restricted volume types",
					"volume %q uses %s: allowed are configMap, csi, downwardAPI, emptyDir, ephemeral, image, persistentVolumeClaim, projected, secret", vol.Name, t)
			}
		} else if vol.HostPath != nil {
			add(fmt.Sprintf("spec.volumes[%d].hostPath", i), "hostPath volumes", "volume %q must not be a hostPath (host files)", vol.Name)
		}
	}
	// Restricted, pod level.
	podNonRoot := false
	if restricted && !userNS {
		if psc != nil && psc.RunAsNonRoot != nil {
			if *psc.RunAsNonRoot {
				podNonRoot = true
			} else {
				add("spec.securityContext.runAsNonRoot", "runAsNonRoot != true", "must not be false")
			}
		}
		if psc != nil && psc.RunAsUser != nil && *psc.RunAsUser == 0 {
			add("spec.securityContext.runAsUser", "runAsUser=0", "must not be 0")
		}
	}

	for _, ct := range containers {
		c, p := ct.c, ct.path
		sc := c.SecurityContext
		scPath := p + ".securityContext"
		// privileged.
		if sc != nil && sc.Privileged != nil && *sc.Privileged {
			add(scPath+".privileged", "privileged", "must not be true (a privileged container has the host's devices and every capability)")
		}
		// capabilities: baseline, or restricted (which overrides it).
		if restricted && !windows {
			if sc == nil || sc.Capabilities == nil || !slices.Contains(sc.Capabilities.Drop, "ALL") {
				add(scPath+".capabilities.drop", "unrestricted capabilities", `must include "ALL"`)
			}
		}
		if sc != nil && sc.Capabilities != nil {
			for j, capability := range sc.Capabilities.Add {
				path := fmt.Sprintf("%s.capabilities.add[%d]", scPath, j)
				switch {
				case restricted && !windows:
					if capability != "NET_BIND_SERVICE" {
						add(path, "unrestricted capabilities", "%q may not be added: only NET_BIND_SERVICE", capability)
					}
				case restricted && windows:
					// The restricted check skips Windows pods and overrides the baseline one.
				case !slices.Contains(pssBaselineCapabilities, string(capability)):
					add(path, "non-default capabilities", "%q may not be added: only %s", capability, strings.Join(pssBaselineCapabilities, ", "))
				}
			}
		}
		// hostPorts.
		for j, port := range c.Ports {
			if port.HostPort != 0 {
				add(fmt.Sprintf("%s.ports[%d].hostPort", p, j), "hostPort", "%d: must be 0 or unset", port.HostPort)
			}
		}
		// hostProbesAndHostLifecycle (v1.34).
		for _, probe := range []struct {
			field string
			pr    *v1.Probe
		}{{"livenessProbe", c.LivenessProbe}, {"readinessProbe", c.ReadinessProbe}, {"startupProbe", c.StartupProbe}} {
			if probe.pr != nil {
				out = append(out, hostFieldProblems(p+"."+probe.field, probe.pr.HTTPGet, probe.pr.TCPSocket)...)
			}
		}
		if c.Lifecycle != nil {
			for _, h := range []struct {
				field string
				h     *v1.LifecycleHandler
			}{{"postStart", c.Lifecycle.PostStart}, {"preStop", c.Lifecycle.PreStop}} {
				if h.h != nil {
					out = append(out, hostFieldProblems(p+".lifecycle."+h.field, h.h.HTTPGet, h.h.TCPSocket)...)
				}
			}
		}
		if sc == nil {
			if restricted {
				out = append(out, restrictedContainerDefaults(p, scPath, windows, userNS, podNonRoot, podSeccompOK)...)
			}
			continue
		}
		// windowsHostProcess.
		if sc.WindowsOptions != nil && sc.WindowsOptions.HostProcess != nil && *sc.WindowsOptions.HostProcess {
			add(scPath+".windowsOptions.hostProcess", "hostProcess", "must not be true")
		}
		// procMount (baseline relaxed in a user namespace; restricted not).
		if sc.ProcMount != nil && *sc.ProcMount != v1.DefaultProcMount && (restricted || !userNS) {
			add(scPath+".procMount", "procMount", "%q is not allowed: Default or unset (the kernel's masks on /proc)", *sc.ProcMount)
		}
		// seLinuxOptions.
		if sc.SELinuxOptions != nil {
			out = append(out, seLinuxProblems(scPath+".seLinuxOptions", sc.SELinuxOptions)...)
		}
		// appArmorProfile.
		if sc.AppArmorProfile != nil && !pssAppArmorType(sc.AppArmorProfile.Type) {
			add(scPath+".appArmorProfile.type", "forbidden AppArmor profile", "%q is not allowed: RuntimeDefault, Localhost or unset", sc.AppArmorProfile.Type)
		}
		// seccompProfile (baseline; restricted requires it, below).
		if sc.SeccompProfile != nil && !pssSeccompType(sc.SeccompProfile.Type) && !(restricted && windows) {
			add(scPath+".seccompProfile.type", "seccompProfile", "%q is not allowed: RuntimeDefault or Localhost", sc.SeccompProfile.Type)
		}
		if !restricted {
			continue
		}
		// Restricted, per container.
		if !windows && (sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation) {
			add(scPath+".allowPrivilegeEscalation", "allowPrivilegeEscalation != false", "must be false")
		}
		if !userNS {
			if sc.RunAsNonRoot != nil {
				if !*sc.RunAsNonRoot {
					add(scPath+".runAsNonRoot", "runAsNonRoot != true", "must not be false")
				}
			} else if !podNonRoot {
				add(scPath+".runAsNonRoot", "runAsNonRoot != true", "must be true, here or in spec.securityContext.runAsNonRoot")
			}
			if sc.RunAsUser != nil && *sc.RunAsUser == 0 {
				add(scPath+".runAsUser", "runAsUser=0", "must not be 0")
			}
		}
		if !windows && sc.SeccompProfile == nil && !podSeccompOK {
			add(scPath+".seccompProfile.type", "seccompProfile", "must be RuntimeDefault or Localhost, here or in spec.securityContext.seccompProfile")
		}
	}
	return out
}

// restrictedContainerDefaults are the restricted problems of a container
// without a securityContext.
func restrictedContainerDefaults(p, scPath string, windows, userNS, podNonRoot, podSeccompOK bool) []podSecurityProblem {
	var out []podSecurityProblem
	if !windows {
		out = append(out, podSecurityProblem{scPath + ".allowPrivilegeEscalation", "allowPrivilegeEscalation != false", "must be false"})
	}
	if !userNS && !podNonRoot {
		out = append(out, podSecurityProblem{scPath + ".runAsNonRoot", "runAsNonRoot != true", "must be true, here or in spec.securityContext.runAsNonRoot"})
	}
	if !windows && !podSeccompOK {
		out = append(out, podSecurityProblem{scPath + ".seccompProfile.type", "seccompProfile", "must be RuntimeDefault or Localhost, here or in spec.securityContext.seccompProfile"})
	}
	return out
}

// seLinuxProblems checks SELinux options: a type of the allowed set, no
// user, no role.
func seLinuxProblems(path string, o *v1.SELinuxOptions) []podSecurityProblem {
	var out []podSecurityProblem
	if !slices.Contains(pssSELinuxTypes, o.Type) {
		out = append(out, podSecurityProblem{path + ".type", "seLinuxOptions", fmt.Sprintf("%q is not allowed: container_t, container_init_t, container_kvm_t, container_engine_t or unset", o.Type)})
	}
	if o.User != "" {
		out = append(out, podSecurityProblem{path + ".user", "seLinuxOptions", "may not be set"})
	}
	if o.Role != "" {
		out = append(out, podSecurityProblem{path + ".role", "seLinuxOptions", "may not be set"})
	}
	return out
}

// hostFieldProblems refuses a host in a probe or lifecycle handler (the
// node would connect to another machine on the pod's behalf).
func hostFieldProblems(path string, httpGet *v1.HTTPGetAction, tcp *v1.TCPSocketAction) []podSecurityProblem {
	var out []podSecurityProblem
	if httpGet != nil && httpGet.Host != "" {
		out = append(out, podSecurityProblem{path + ".httpGet.host", "probe or lifecycle host", fmt.Sprintf("%q: must be empty (the pod's IP)", httpGet.Host)})
	}
	if tcp != nil && tcp.Host != "" {
		out = append(out, podSecurityProblem{path + ".tcpSocket.host", "probe or lifecycle host", fmt.Sprintf("%q: must be empty (the pod's IP)", tcp.Host)})
	}
	return out
}

func pssSeccompType(t v1.SeccompProfileType) bool {
	return t == v1.SeccompProfileTypeRuntimeDefault || t == v1.SeccompProfileTypeLocalhost
}

func pssAppArmorType(t v1.AppArmorProfileType) bool {
	return t == v1.AppArmorProfileTypeRuntimeDefault || t == v1.AppArmorProfileTypeLocalhost
}

// pssRestrictedVolumeType is the field name of a volume type the
// restricted level refuses ("" when allowed; "unknown" for none known).
func pssRestrictedVolumeType(vol *v1.Volume) string {
	vs := &vol.VolumeSource
	switch {
	case vs.ConfigMap != nil, vs.CSI != nil, vs.DownwardAPI != nil, vs.EmptyDir != nil, vs.Ephemeral != nil,
		vs.Image != nil, vs.PersistentVolumeClaim != nil, vs.Projected != nil, vs.Secret != nil:
		return ""
	case vs.HostPath != nil:
		return "hostPath"
	case vs.GCEPersistentDisk != nil:
		return "gcePersistentDisk"
	case vs.AWSElasticBlockStore != nil:
		return "awsElasticBlockStore"
	case vs.GitRepo != nil:
		return "gitRepo"
	case vs.NFS != nil:
		return "nfs"
	case vs.ISCSI != nil:
		return "iscsi"
	case vs.Glusterfs != nil:
		return "glusterfs"
	case vs.RBD != nil:
		return "rbd"
	case vs.FlexVolume != nil:
		return "flexVolume"
	case vs.Cinder != nil:
		return "cinder"
	case vs.CephFS != nil:
		return "cephfs"
	case vs.Flocker != nil:
		return "flocker"
	case vs.FC != nil:
		return "fc"
	case vs.AzureFile != nil:
		return "azureFile"
	case vs.VsphereVolume != nil:
		return "vsphereVolume"
	case vs.Quobyte != nil:
		return "quobyte"
	case vs.AzureDisk != nil:
		return "azureDisk"
	case vs.PhotonPersistentDisk != nil:
		return "photonPersistentDisk"
	case vs.PortworxVolume != nil:
		return "portworxVolume"
	case vs.ScaleIO != nil:
		return "scaleIO"
	case vs.StorageOS != nil:
		return "storageos"
	}
	return "unknown"
}

// AdmitPodSecurity refuses a pod that breaks level, with every problem.
// The reason is empty when the pod is fine.
func AdmitPodSecurity(pod *v1.Pod, level PodSecurityLevel) (reason, message string) {
	problems := checkPodSecurity(pod, level)
	if len(problems) == 0 {
		return "", ""
	}
	return AdmitReasonPodSecurity, podSecurityMessage(level, problems)
}

// podSecurityMessage lists the problems and says what to do.
func podSecurityMessage(level PodSecurityLevel, problems []podSecurityProblem) string {
	var b strings.Builder
	fmt.Fprintf(&b, "violates PodSecurity %q, this node's level for local pods: ", string(level)+":latest")
	for i, p := range problems {
		if i > 0 {
			b.WriteString("; ")
		}
		b.WriteString(p.String())
	}
	b.WriteString(". Change the pod, or start the agent with --pod-security=privileged (any pod may then have the host)")
	return b.String()
}
