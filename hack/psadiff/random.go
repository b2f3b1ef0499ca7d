// Command psadiff checks the node's Pod Security checks
// (agent/node/podsecurity.go, copied in by run.sh) against
// k8s.io/pod-security-admission/policy at the same version: random pods,
// and pods one or two changes away from a restricted one, must be admitted
// or refused alike at baseline and restricted (latest). Its own module, as
// hack/cluster: the main module does not link pod-security-admission.
package main

import (
	"fmt"
	"math/rand"
	"os"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/pod-security-admission/api"
	"k8s.io/pod-security-admission/policy"
)

func pick[T any](r *rand.Rand, xs ...T) T { return xs[r.Intn(len(xs))] }
func p[T any](v T) *T                     { return &v }

func randSC(r *rand.Rand) *v1.SecurityContext {
	if r.Intn(4) == 0 {
		return nil
	}
	sc := &v1.SecurityContext{}
	if r.Intn(3) == 0 {
		sc.Privileged = p(r.Intn(2) == 0)
	}
	if r.Intn(2) == 0 {
		caps := &v1.Capabilities{}
		for range r.Intn(3) {
			caps.Add = append(caps.Add, v1.Capability(pick(r, "CHOWN", "NET_BIND_SERVICE", "SYS_PTRACE", "ALL", "NET_RAW", "KILL")))
		}
		for range r.Intn(3) {
			caps.Drop = append(caps.Drop, v1.Capability(pick(r, "ALL", "NET_RAW", "all")))
		}
		sc.Capabilities = caps
	}
	if r.Intn(3) == 0 {
		sc.AllowPrivilegeEscalation = p(r.Intn(2) == 0)
	}
	if r.Intn(3) == 0 {
		sc.RunAsNonRoot = p(r.Intn(2) == 0)
	}
	if r.Intn(3) == 0 {
		sc.RunAsUser = p(int64(pick(r, 0, 1000)))
	}
	if r.Intn(3) == 0 {
		sc.SeccompProfile = &v1.SeccompProfile{Type: pick(r, v1.SeccompProfileTypeRuntimeDefault, v1.SeccompProfileTypeLocalhost, v1.SeccompProfileTypeUnconfined)}
	}
	if r.Intn(5) == 0 {
		sc.AppArmorProfile = &v1.AppArmorProfile{Type: pick(r, v1.AppArmorProfileTypeRuntimeDefault, v1.AppArmorProfileTypeLocalhost, v1.AppArmorProfileTypeUnconfined)}
	}
	if r.Intn(5) == 0 {
		sc.ProcMount = p(pick(r, v1.DefaultProcMount, v1.UnmaskedProcMount))
	}
	if r.Intn(5) == 0 {
		sc.SELinuxOptions = &v1.SELinuxOptions{Type: pick(r, "", "container_t", "spc_t", "container_engine_t"), User: pick(r, "", "", "u"), Role: pick(r, "", "", "r")}
	}
	if r.Intn(8) == 0 {
		sc.WindowsOptions = &v1.WindowsSecurityContextOptions{HostProcess: p(r.Intn(2) == 0)}
	}
	return sc
}

func randContainer(r *rand.Rand, name string) v1.Container {
	c := v1.Container{Name: name, Image: "i", SecurityContext: randSC(r)}
	if r.Intn(4) == 0 {
		c.Ports = []v1.ContainerPort{{ContainerPort: 80, HostPort: int32(pick(r, 0, 8080))}}
	}
	if r.Intn(5) == 0 {
		c.LivenessProbe = &v1.Probe{ProbeHandler: v1.ProbeHandler{HTTPGet: &v1.HTTPGetAction{Host: pick(r, "", "h")}}}
	}
	if r.Intn(5) == 0 {
		c.ReadinessProbe = &v1.Probe{ProbeHandler: v1.ProbeHandler{TCPSocket: &v1.TCPSocketAction{Host: pick(r, "", "h")}}}
	}
	if r.Intn(6) == 0 {
		c.Lifecycle = &v1.Lifecycle{PreStop: &v1.LifecycleHandler{HTTPGet: &v1.HTTPGetAction{Host: pick(r, "", "h")}}, PostStart: &v1.LifecycleHandler{TCPSocket: &v1.TCPSocketAction{Host: pick(r, "", "h")}}}
	}
	return c
}

func randPod(r *rand.Rand) *v1.Pod {
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "x"}}
	s := &pod.Spec
	s.HostNetwork, s.HostPID, s.HostIPC = r.Intn(6) == 0, r.Intn(6) == 0, r.Intn(6) == 0
	if r.Intn(5) == 0 {
		s.HostUsers = p(r.Intn(2) == 0)
	}
	if r.Intn(10) == 0 {
		s.OS = &v1.PodOS{Name: pick(r, v1.Linux, v1.Windows)}
	}
	if r.Intn(3) != 0 {
		psc := &v1.PodSecurityContext{}
		if r.Intn(2) == 0 {
			psc.RunAsNonRoot = p(r.Intn(3) != 0)
		}
		if r.Intn(3) == 0 {
			psc.RunAsUser = p(int64(pick(r, 0, 1000)))
		}
		if r.Intn(2) == 0 {
			psc.SeccompProfile = &v1.SeccompProfile{Type: pick(r, v1.SeccompProfileTypeRuntimeDefault, v1.SeccompProfileTypeLocalhost, v1.SeccompProfileTypeUnconfined)}
		}
		if r.Intn(5) == 0 {
			psc.AppArmorProfile = &v1.AppArmorProfile{Type: pick(r, v1.AppArmorProfileTypeRuntimeDefault, v1.AppArmorProfileTypeUnconfined)}
		}
		if r.Intn(4) == 0 {
			psc.Sysctls = []v1.Sysctl{{Name: pick(r, "net.ipv4.tcp_syncookies", "net.core.somaxconn", "net.ipv4.tcp_notsent_lowat", "kernel/shm_rmid_forced")}}
		}
		if r.Intn(5) == 0 {
			psc.SELinuxOptions = &v1.SELinuxOptions{Type: pick(r, "", "container_t", "spc_t"), User: pick(r, "", "u")}
		}
		if r.Intn(8) == 0 {
			psc.WindowsOptions = &v1.WindowsSecurityContextOptions{HostProcess: p(r.Intn(2) == 0)}
		}
		s.SecurityContext = psc
	}
	for i := range r.Intn(2) {
		s.InitContainers = append(s.InitContainers, randContainer(r, fmt.Sprint("init", i)))
	}
	for i := range 1 + r.Intn(2) {
		s.Containers = append(s.Containers, randContainer(r, fmt.Sprint("app", i)))
	}
	if r.Intn(4) == 0 {
		s.EphemeralContainers = []v1.EphemeralContainer{{EphemeralContainerCommon: v1.EphemeralContainerCommon(randContainer(r, "eph"))}}
	}
	for i := range r.Intn(3) {
		vs := pick(r,
			v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}},
			v1.VolumeSource{HostPath: &v1.HostPathVolumeSource{Path: "/"}},
			v1.VolumeSource{NFS: &v1.NFSVolumeSource{}},
			v1.VolumeSource{Secret: &v1.SecretVolumeSource{}},
			v1.VolumeSource{Image: &v1.ImageVolumeSource{}},
			v1.VolumeSource{GitRepo: &v1.GitRepoVolumeSource{}},
			v1.VolumeSource{})
		s.Volumes = append(s.Volumes, v1.Volume{Name: fmt.Sprint("v", i), VolumeSource: vs})
	}
	if r.Intn(6) == 0 {
		pod.Annotations = map[string]string{"container.apparmor.security.beta.kubernetes.io/app0": pick(r, "runtime/default", "unconfined", "localhost/x", "")}
	}
	return pod
}

func main() {
	eval, err := policy.NewEvaluator(policy.DefaultChecks(), nil)
	if err != nil {
		panic(err)
	}
	r := rand.New(rand.NewSource(1))
	n, disagree := 0, 0
	counts := map[string][2]int{}
	for i := range 400000 {
		pod := randPod(r)
		if i%2 == 1 {
			pod = nearPod(r)
		}
		for _, lv := range []struct {
			ours  PodSecurityLevel
			their api.Level
		}{{PodSecurityBaseline, api.LevelBaseline}, {PodSecurityRestricted, api.LevelRestricted}} {
			n++
			res := policy.AggregateCheckResults(eval.EvaluatePod(api.LevelVersion{Level: lv.their, Version: api.LatestVersion()}, &pod.ObjectMeta, &pod.Spec))
			ourOK := len(checkPodSecurity(pod, lv.ours)) == 0
			c := counts[string(lv.ours)]
			if ourOK {
				c[0]++
			} else {
				c[1]++
			}
			counts[string(lv.ours)] = c
			if ourOK != res.Allowed {
				disagree++
				if disagree < 5 {
					fmt.Printf("DISAGREE %s ours=%v psa=%v %s: %v\n", lv.ours, ourOK, res.Allowed, res.ForbiddenReason(), checkPodSecurity(pod, lv.ours))
				}
			}
		}
	}
	fmt.Printf("evaluations %d, disagreements %d, admitted/refused by level %v\n", n, disagree, counts)
	if disagree > 0 {
		os.Exit(1)
	}
}
