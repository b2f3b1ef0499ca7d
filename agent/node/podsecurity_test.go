package node

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	"github.com/minikubelet/minikubelet/agent/manifest"
)

// testPod is the one pod of a manifest, prepared as the sources prepare
// it (the engine's tests have the same helper).
func testPod(t *testing.T, text string) *v1.Pod {
	t.Helper()
	pods, err := manifest.PrepareManifest([]byte(text), "test.yaml", "node-1")
	require.NoError(t, err)
	require.Len(t, pods, 1)
	return pods[0]
}

// restrictedOK is a pod the restricted level admits; the cases below
// change one thing of it.
const restrictedOK = `
apiVersion: v1
kind: Pod
metadata: {name: ok}
spec:
  securityContext: {runAsNonRoot: true, seccompProfile: {type: RuntimeDefault}}
  volumes:
  - {name: cm, configMap: {name: c}}
  - {name: scratch, emptyDir: {}}
  initContainers:
  - name: init
    image: reg.local/x:1
    securityContext: {allowPrivilegeEscalation: false, capabilities: {drop: [ALL]}}
  containers:
  - name: app
    image: reg.local/x:1
    ports: [{containerPort: 80}]
    securityContext: {allowPrivilegeEscalation: false, capabilities: {drop: [ALL], add: [NET_BIND_SERVICE]}}
`

// TestCheckPodSecurity holds one case per rule of the Pod Security
// Standards (pod-security-admission v0.37's checks): the problems at
// baseline and at restricted, each "<field path>: <reason>".
func TestCheckPodSecurity(t *testing.T) {
	type want struct{ baseline, restricted []string }
	// both: the same problems at both levels.
	both := func(p ...string) want { return want{p, p} }
	tests := []struct {
		name   string
		mutate func(p *v1.Pod)
		want   want
	}{
		{"restricted pod", func(p *v1.Pod) {}, want{}},
		{"hostNetwork, hostPID, hostIPC", func(p *v1.Pod) { p.Spec.HostNetwork, p.Spec.HostPID, p.Spec.HostIPC = true, true, true },
			both("spec.hostNetwork: host namespaces", "spec.hostPID: host namespaces", "spec.hostIPC: host namespaces")},
		{"privileged init container", func(p *v1.Pod) { p.Spec.InitContainers[0].SecurityContext.Privileged = ptr.To(true) },
			both("spec.initContainers[0].securityContext.privileged: privileged")},
		{"privileged false", func(p *v1.Pod) { p.Spec.Containers[0].SecurityContext.Privileged = ptr.To(false) }, want{}},
		{"capability outside the default set", func(p *v1.Pod) {
			p.Spec.Containers[0].SecurityContext.Capabilities.Add = []v1.Capability{"NET_BIND_SERVICE", "SYS_PTRACE", "ALL"}
		}, want{
			baseline: []string{"spec.containers[0].securityContext.capabilities.add[1]: non-default capabilities", "spec.containers[0].securityContext.capabilities.add[2]: non-default capabilities"},
			restricted: []string{"spec.containers[0].securityContext.capabilities.add[1]: unrestricted capabilities",
				"spec.containers[0].securityContext.capabilities.add[2]: unrestricted capabilities"},
		}},
		{"capability of the default set", func(p *v1.Pod) {
			p.Spec.Containers[0].SecurityContext.Capabilities.Add = []v1.Capability{"CHOWN", "SYS_CHROOT", "AUDIT_WRITE"}
		}, want{restricted: []string{"spec.containers[0].securityContext.capabilities.add[0]: unrestricted capabilities",
			"spec.containers[0].securityContext.capabilities.add[1]: unrestricted capabilities", "spec.containers[0].securityContext.capabilities.add[2]: unrestricted capabilities"}}},
		{"capabilities not dropped", func(p *v1.Pod) { p.Spec.Containers[0].SecurityContext.Capabilities.Drop = []v1.Capability{"NET_RAW"} },
			want{restricted: []string{"spec.containers[0].securityContext.capabilities.drop: unrestricted capabilities"}}},
		{"hostPath volume", func(p *v1.Pod) {
			p.Spec.Volumes = append(p.Spec.Volumes, v1.Volume{Name: "host", VolumeSource: v1.VolumeSource{HostPath: &v1.HostPathVolumeSource{Path: "/etc"}}})
		}, want{baseline: []string{"spec.volumes[2].hostPath: hostPath volumes"}, restricted: []string{"spec.volumes[2].hostPath: restricted volume types"}}},
		{"nfs volume", func(p *v1.Pod) {
			p.Spec.Volumes[1] = v1.Volume{Name: "nfs", VolumeSource: v1.VolumeSource{NFS: &v1.NFSVolumeSource{Server: "s", Path: "/"}}}
		}, want{restricted: []string{"spec.volumes[1].nfs: restricted volume types"}}},
		{"allowed volume types", func(p *v1.Pod) {
			p.Spec.Volumes = append(p.Spec.Volumes,
				v1.Volume{Name: "s", VolumeSource: v1.VolumeSource{Secret: &v1.SecretVolumeSource{SecretName: "s"}}},
				v1.Volume{Name: "d", VolumeSource: v1.VolumeSource{DownwardAPI: &v1.DownwardAPIVolumeSource{}}},
				v1.Volume{Name: "p", VolumeSource: v1.VolumeSource{Projected: &v1.ProjectedVolumeSource{}}},
				v1.Volume{Name: "c", VolumeSource: v1.VolumeSource{PersistentVolumeClaim: &v1.PersistentVolumeClaimVolumeSource{ClaimName: "c"}}},
				v1.Volume{Name: "i", VolumeSource: v1.VolumeSource{Image: &v1.ImageVolumeSource{Reference: "r"}}})
		}, want{}},
		{"hostPort", func(p *v1.Pod) {
			p.Spec.Containers[0].Ports = append(p.Spec.Containers[0].Ports, v1.ContainerPort{ContainerPort: 81, HostPort: 8081})
		},
			both("spec.containers[0].ports[1].hostPort: hostPort")},
		{"seccomp Unconfined, pod and container", func(p *v1.Pod) {
			p.Spec.SecurityContext.SeccompProfile.Type = v1.SeccompProfileTypeUnconfined
			p.Spec.Containers[0].SecurityContext.SeccompProfile = &v1.SeccompProfile{Type: v1.SeccompProfileTypeUnconfined}
		}, want{
			baseline: []string{"spec.securityContext.seccompProfile.type: seccompProfile", "spec.containers[0].securityContext.seccompProfile.type: seccompProfile"},
			// The init container inherits nothing valid from the pod.
			restricted: []string{"spec.securityContext.seccompProfile.type: seccompProfile", "spec.initContainers[0].securityContext.seccompProfile.type: seccompProfile",
				"spec.containers[0].securityContext.seccompProfile.type: seccompProfile"},
		}},
		{"seccomp unset", func(p *v1.Pod) { p.Spec.SecurityContext.SeccompProfile = nil },
			want{restricted: []string{"spec.initContainers[0].securityContext.seccompProfile.type: seccompProfile", "spec.containers[0].securityContext.seccompProfile.type: seccompProfile"}}},
		{"seccomp Localhost on the containers only", func(p *v1.Pod) {
			p.Spec.SecurityContext.SeccompProfile = nil
			for _, c := range []*v1.Container{&p.Spec.InitContainers[0], &p.Spec.Containers[0]} {
				c.SecurityContext.SeccompProfile = &v1.SeccompProfile{Type: v1.SeccompProfileTypeLocalhost, LocalhostProfile: ptr.To("p.json")}
			}
		}, want{}},
		{"AppArmor Unconfined and the annotation", func(p *v1.Pod) {
			p.Spec.SecurityContext.AppArmorProfile = &v1.AppArmorProfile{Type: v1.AppArmorProfileTypeUnconfined}
			p.Spec.Containers[0].SecurityContext.AppArmorProfile = &v1.AppArmorProfile{Type: v1.AppArmorProfileTypeUnconfined}
			p.Annotations = map[string]string{"container.apparmor.security.beta.kubernetes.io/app": "unconfined",
				"container.apparmor.security.beta.kubernetes.io/init": "localhost/mine"}
		}, both("spec.securityContext.appArmorProfile.type: forbidden AppArmor profile",
			"metadata.annotations[container.apparmor.security.beta.kubernetes.io/app]: forbidden AppArmor profile",
			"spec.containers[0].securityContext.appArmorProfile.type: forbidden AppArmor profile")},
		{"procMount Unmasked", func(p *v1.Pod) { p.Spec.Containers[0].SecurityContext.ProcMount = ptr.To(v1.UnmaskedProcMount) },
			both("spec.containers[0].securityContext.procMount: procMount")},
		{"procMount Unmasked in a user namespace", func(p *v1.Pod) {
			p.Spec.HostUsers = ptr.To(false)
			p.Spec.Containers[0].SecurityContext.ProcMount = ptr.To(v1.UnmaskedProcMount)
		}, want{restricted: []string{"spec.containers[0].securityContext.procMount: procMount"}}},
		{"sysctls outside the safe set", func(p *v1.Pod) {
			p.Spec.SecurityContext.Sysctls = []v1.Sysctl{{Name: "net.ipv4.tcp_syncookies", Value: "1"}, {Name: "net.core.somaxconn", Value: "1"},
				{Name: "net.ipv4.tcp_notsent_lowat", Value: "1"}, {Name: "kernel/shm_rmid_forced", Value: "1"}}
		}, both("spec.securityContext.sysctls[1].name: forbidden sysctls", "spec.securityContext.sysctls[3].name: forbidden sysctls")},
		{"seLinuxOptions", func(p *v1.Pod) {
			p.Spec.SecurityContext.SELinuxOptions = &v1.SELinuxOptions{Type: "spc_t", Level: "s0:c1"}
			p.Spec.Containers[0].SecurityContext.SELinuxOptions = &v1.SELinuxOptions{Type: "container_engine_t", User: "system_u", Role: "system_r"}
			p.Spec.InitContainers[0].SecurityContext.SELinuxOptions = &v1.SELinuxOptions{Type: "container_init_t", Level: "s0"}
		}, both("spec.securityContext.seLinuxOptions.type: seLinuxOptions", "spec.containers[0].securityContext.seLinuxOptions.user: seLinuxOptions",
			"spec.containers[0].securityContext.seLinuxOptions.role: seLinuxOptions")},
		{"windows hostProcess", func(p *v1.Pod) {
			p.Spec.SecurityContext.WindowsOptions = &v1.WindowsSecurityContextOptions{HostProcess: ptr.To(true)}
			p.Spec.Containers[0].SecurityContext.WindowsOptions = &v1.WindowsSecurityContextOptions{HostProcess: ptr.To(true)}
		}, both("spec.securityContext.windowsOptions.hostProcess: hostProcess", "spec.containers[0].securityContext.windowsOptions.hostProcess: hostProcess")},
		{"probe and lifecycle hosts", func(p *v1.Pod) {
			c := &p.Spec.Containers[0]
			c.LivenessProbe = &v1.Probe{ProbeHandler: v1.ProbeHandler{HTTPGet: &v1.HTTPGetAction{Host: "169.254.169.254"}}}
			c.ReadinessProbe = &v1.Probe{ProbeHandler: v1.ProbeHandler{TCPSocket: &v1.TCPSocketAction{Host: "10.0.0.1"}}}
			c.StartupProbe = &v1.Probe{ProbeHandler: v1.ProbeHandler{HTTPGet: &v1.HTTPGetAction{}}}
			c.Lifecycle = &v1.Lifecycle{PreStop: &v1.LifecycleHandler{HTTPGet: &v1.HTTPGetAction{Host: "example.com"}}}
		}, both("spec.containers[0].livenessProbe.httpGet.host: probe or lifecycle host", "spec.containers[0].readinessProbe.tcpSocket.host: probe or lifecycle host",
			"spec.containers[0].lifecycle.preStop.httpGet.host: probe or lifecycle host")},
		{"allowPrivilegeEscalation", func(p *v1.Pod) {
			p.Spec.InitContainers[0].SecurityContext.AllowPrivilegeEscalation = nil
			p.Spec.Containers[0].SecurityContext.AllowPrivilegeEscalation = ptr.To(true)
		}, want{restricted: []string{"spec.initContainers[0].securityContext.allowPrivilegeEscalation: allowPrivilegeEscalation != false",
			"spec.containers[0].securityContext.allowPrivilegeEscalation: allowPrivilegeEscalation != false"}}},
		{"runAsNonRoot", func(p *v1.Pod) {
			p.Spec.SecurityContext.RunAsNonRoot = nil
			p.Spec.Containers[0].SecurityContext.RunAsNonRoot = ptr.To(false)
		}, want{restricted: []string{"spec.initContainers[0].securityContext.runAsNonRoot: runAsNonRoot != true",
			"spec.containers[0].securityContext.runAsNonRoot: runAsNonRoot != true"}}},
		{"runAsNonRoot false on the pod", func(p *v1.Pod) { p.Spec.SecurityContext.RunAsNonRoot = ptr.To(false) },
			want{restricted: []string{"spec.securityContext.runAsNonRoot: runAsNonRoot != true", "spec.initContainers[0].securityContext.runAsNonRoot: runAsNonRoot != true",
				"spec.containers[0].securityContext.runAsNonRoot: runAsNonRoot != true"}}},
		{"runAsUser 0", func(p *v1.Pod) {
			p.Spec.SecurityContext.RunAsUser = ptr.To(int64(0))
			p.Spec.Containers[0].SecurityContext.RunAsUser = ptr.To(int64(0))
			p.Spec.InitContainers[0].SecurityContext.RunAsUser = ptr.To(int64(1000))
		}, want{restricted: []string{"spec.securityContext.runAsUser: runAsUser=0", "spec.containers[0].securityContext.runAsUser: runAsUser=0"}}},
		{"root in a user namespace", func(p *v1.Pod) {
			p.Spec.HostUsers = ptr.To(false)
			p.Spec.SecurityContext.RunAsNonRoot = nil
			p.Spec.SecurityContext.RunAsUser = ptr.To(int64(0))
		}, want{}},
		{"container without a securityContext", func(p *v1.Pod) { p.Spec.Containers[0].SecurityContext = nil },
			want{restricted: []string{"spec.containers[0].securityContext.capabilities.drop: unrestricted capabilities",
				"spec.containers[0].securityContext.allowPrivilegeEscalation: allowPrivilegeEscalation != false"}}},
		{"ephemeral container", func(p *v1.Pod) {
			p.Spec.EphemeralContainers = []v1.EphemeralContainer{{EphemeralContainerCommon: v1.EphemeralContainerCommon{Name: "dbg", Image: "i",
				SecurityContext: &v1.SecurityContext{Capabilities: &v1.Capabilities{Add: []v1.Capability{"SYS_ADMIN"}}}}}}
		}, want{
			baseline: []string{"spec.ephemeralContainers[0].securityContext.capabilities.add[0]: non-default capabilities"},
			restricted: []string{"spec.ephemeralContainers[0].securityContext.capabilities.drop: unrestricted capabilities",
				"spec.ephemeralContainers[0].securityContext.capabilities.add[0]: unrestricted capabilities",
				"spec.ephemeralContainers[0].securityContext.allowPrivilegeEscalation: allowPrivilegeEscalation != false"},
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			for _, lv := range []struct {
				level PodSecurityLevel
				want  []string
			}{{PodSecurityBaseline, tc.want.baseline}, {PodSecurityRestricted, tc.want.restricted}, {PodSecurityPrivileged, nil}} {
				pod := testPod(t, restrictedOK)
				tc.mutate(pod)
				var got []string
				for _, p := range checkPodSecurity(pod, lv.level) {
					got = append(got, p.path+": "+p.reason)
					assert.NotEmpty(t, p.detail, p.path)
				}
				assert.Equal(t, lv.want, got, "level %s", lv.level)
			}
		})
	}
}

// The attack of issue #29: hostPID and capabilities ALL read the host
// through /proc/<pid>/root. Every problem is named at once, with the
// standard's reason and what to do.
func TestCheckPodSecurity_HostPIDAllCapsMessage(t *testing.T) {
	pod := testPod(t, `
apiVersion: v1
kind: Pod
metadata: {name: attack}
spec:
  hostPID: true
  containers:
  - name: app
    image: reg.local/x:1
    securityContext: {capabilities: {add: [ALL]}}
`)
	problems := checkPodSecurity(pod, PodSecurityBaseline)
	require.Len(t, problems, 2)
	assert.Equal(t, `violates PodSecurity "baseline:latest", this node's level for local pods: `+
		`spec.hostPID: host namespaces: must be false or unset (the pod would share the host's namespace); `+
		`spec.containers[0].securityContext.capabilities.add[0]: non-default capabilities: "ALL" may not be added: only AUDIT_WRITE, CHOWN, DAC_OVERRIDE, FOWNER, FSETID, KILL, MKNOD, NET_BIND_SERVICE, SETFCAP, SETGID, SETPCAP, SETUID, SYS_CHROOT. `+
		`Change the pod, or start the agent with --pod-security=privileged (any pod may then have the host)`,
		podSecurityMessage(PodSecurityBaseline, problems))
}

func TestParsePodSecurityLevel(t *testing.T) {
	for _, s := range []string{"privileged", "baseline", "restricted"} {
		l, err := ParsePodSecurityLevel(s)
		require.NoError(t, err)
		assert.Equal(t, PodSecurityLevel(s), l)
	}
	for _, s := range []string{"", "Baseline", "restricted:v1.30", "none"} {
		_, err := ParsePodSecurityLevel(s)
		assert.ErrorContains(t, err, "use privileged, baseline or restricted", s)
	}
}
