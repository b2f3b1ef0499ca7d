package main

import (
	"math/rand"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// restrictedBase is a pod the restricted level admits, with an init, an
// app and an ephemeral container.
func restrictedBase() *v1.Pod {
	sc := func() *v1.SecurityContext {
		return &v1.SecurityContext{AllowPrivilegeEscalation: p(false), Capabilities: &v1.Capabilities{Drop: []v1.Capability{"ALL"}}}
	}
	return &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "x"}, Spec: v1.PodSpec{
		SecurityContext:     &v1.PodSecurityContext{RunAsNonRoot: p(true), SeccompProfile: &v1.SeccompProfile{Type: v1.SeccompProfileTypeRuntimeDefault}},
		InitContainers:      []v1.Container{{Name: "init", SecurityContext: sc()}},
		Containers:          []v1.Container{{Name: "app0", SecurityContext: sc()}},
		EphemeralContainers: []v1.EphemeralContainer{{EphemeralContainerCommon: v1.EphemeralContainerCommon{Name: "eph", SecurityContext: sc()}}},
		Volumes:             []v1.Volume{{Name: "e", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}}},
	}}
}

// nearPod is restrictedBase with zero to two changes that matter to a level.
func nearPod(r *rand.Rand) *v1.Pod {
	pod := restrictedBase()
	s := &pod.Spec
	cs := []*v1.Container{&s.InitContainers[0], &s.Containers[0], (*v1.Container)(&s.EphemeralContainers[0].EphemeralContainerCommon)}
	muts := []func(c *v1.Container){
		func(c *v1.Container) { s.HostNetwork = true },
		func(c *v1.Container) { s.HostUsers = p(false) },
		func(c *v1.Container) { s.OS = &v1.PodOS{Name: v1.Windows} },
		func(c *v1.Container) { s.SecurityContext.RunAsNonRoot = nil },
		func(c *v1.Container) { s.SecurityContext.RunAsNonRoot = p(false) },
		func(c *v1.Container) { s.SecurityContext.RunAsUser = p(int64(0)) },
		func(c *v1.Container) { s.SecurityContext.SeccompProfile = nil },
		func(c *v1.Container) { s.SecurityContext.SeccompProfile.Type = v1.SeccompProfileTypeUnconfined },
		func(c *v1.Container) { s.SecurityContext.Sysctls = []v1.Sysctl{{Name: "net.ipv4.tcp_rmem"}} },
		func(c *v1.Container) { s.SecurityContext.Sysctls = []v1.Sysctl{{Name: "net.ipv4/tcp_rmem"}} },
		func(c *v1.Container) {
			s.Volumes[0].VolumeSource = v1.VolumeSource{HostPath: &v1.HostPathVolumeSource{}}
		},
		func(c *v1.Container) { s.Volumes[0].VolumeSource = v1.VolumeSource{CSI: &v1.CSIVolumeSource{}} },
		func(c *v1.Container) { s.Volumes[0].VolumeSource = v1.VolumeSource{} },
		func(c *v1.Container) { c.SecurityContext = nil },
		func(c *v1.Container) { c.SecurityContext.AllowPrivilegeEscalation = nil },
		func(c *v1.Container) { c.SecurityContext.AllowPrivilegeEscalation = p(true) },
		func(c *v1.Container) { c.SecurityContext.Capabilities = nil },
		func(c *v1.Container) { c.SecurityContext.Capabilities.Drop = nil },
		func(c *v1.Container) { c.SecurityContext.Capabilities.Add = []v1.Capability{"NET_BIND_SERVICE"} },
		func(c *v1.Container) { c.SecurityContext.Capabilities.Add = []v1.Capability{"CHOWN"} },
		func(c *v1.Container) { c.SecurityContext.Capabilities.Add = []v1.Capability{"SYS_ADMIN"} },
		func(c *v1.Container) { c.SecurityContext.RunAsNonRoot = p(false) },
		func(c *v1.Container) { c.SecurityContext.RunAsNonRoot = p(true) },
		func(c *v1.Container) { c.SecurityContext.RunAsUser = p(int64(0)) },
		func(c *v1.Container) {
			c.SecurityContext.SeccompProfile = &v1.SeccompProfile{Type: v1.SeccompProfileTypeLocalhost}
		},
		func(c *v1.Container) {
			c.SecurityContext.SeccompProfile = &v1.SeccompProfile{Type: v1.SeccompProfileTypeUnconfined}
		},
		func(c *v1.Container) { c.SecurityContext.ProcMount = p(v1.UnmaskedProcMount) },
		func(c *v1.Container) { c.SecurityContext.Privileged = p(true) },
		func(c *v1.Container) { c.SecurityContext.SELinuxOptions = &v1.SELinuxOptions{Level: "s0"} },
		func(c *v1.Container) {
			c.SecurityContext.AppArmorProfile = &v1.AppArmorProfile{Type: v1.AppArmorProfileTypeUnconfined}
		},
		func(c *v1.Container) { c.Ports = []v1.ContainerPort{{HostPort: 1}} },
		func(c *v1.Container) {
			c.StartupProbe = &v1.Probe{ProbeHandler: v1.ProbeHandler{HTTPGet: &v1.HTTPGetAction{Host: "h"}}}
		},
		func(c *v1.Container) {
			c.SecurityContext.WindowsOptions = &v1.WindowsSecurityContextOptions{HostProcess: p(true)}
		},
	}
	for range r.Intn(3) {
		c := cs[r.Intn(len(cs))]
		func() {
			defer func() { recover() }() // a mutation of a nil context
			muts[r.Intn(len(muts))](c)
		}()
	}
	return pod
}
