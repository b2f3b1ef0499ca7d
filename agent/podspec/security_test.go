package podspec

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/utils/ptr"
)

// basePod is a pod with one container, as the API server would hold it
// without defaults.
func basePod() *v1.Pod {
	return &v1.Pod{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec: v1.PodSpec{
			Containers: []v1.Container{{Name: "web", Image: "nginx:1.27"}},
		},
	}
}

// securedPod is a pod with one container and the given security contexts.
func securedPod(psc *v1.PodSecurityContext, sc *v1.SecurityContext) *v1.Pod {
	p := basePod()
	p.Namespace, p.UID = "default", "uid-1"
	p.Spec.SecurityContext = psc
	p.Spec.Containers[0].SecurityContext = sc
	return p
}

func TestSandboxSecurityContext(t *testing.T) {
	runtimeDefault := &runtimeapi.SecurityProfile{ProfileType: runtimeapi.SecurityProfile_RuntimeDefault}
	tests := []struct {
		name   string
		mutate func(*v1.Pod)
		want   *runtimeapi.LinuxSandboxSecurityContext
	}{
		{
			name:   "nothing set: RuntimeDefault seccomp, pid per container",
			mutate: func(*v1.Pod) {},
			want: &runtimeapi.LinuxSandboxSecurityContext{
				NamespaceOptions: &runtimeapi.NamespaceOption{Pid: runtimeapi.NamespaceMode_CONTAINER},
				Seccomp:          runtimeDefault,
			},
		},
		{
			name: "pod user, group, fsGroup then supplementalGroups",
			mutate: func(p *v1.Pod) {
				p.Spec.SecurityContext = &v1.PodSecurityContext{
					RunAsUser: ptr.To[int64](1000), RunAsGroup: ptr.To[int64](3000),
					FSGroup: ptr.To[int64](2000), SupplementalGroups: []int64{4000, 5000},
					// The sandbox runs RuntimeDefault whatever the pod asks.
					SeccompProfile: &v1.SeccompProfile{Type: v1.SeccompProfileTypeUnconfined},
				}
			},
			want: &runtimeapi.LinuxSandboxSecurityContext{
				NamespaceOptions:   &runtimeapi.NamespaceOption{Pid: runtimeapi.NamespaceMode_CONTAINER},
				RunAsUser:          &runtimeapi.Int64Value{Value: 1000},
				RunAsGroup:         &runtimeapi.Int64Value{Value: 3000},
				SupplementalGroups: []int64{2000, 4000, 5000},
				Seccomp:            runtimeDefault,
			},
		},
		{
			name: "shareProcessNamespace: pid POD",
			mutate: func(p *v1.Pod) {
				p.Spec.ShareProcessNamespace = ptr.To(true)
			},
			want: &runtimeapi.LinuxSandboxSecurityContext{
				NamespaceOptions: &runtimeapi.NamespaceOption{Pid: runtimeapi.NamespaceMode_POD},
				Seccomp:          runtimeDefault,
			},
		},
		{
			name: "hostPID wins over shareProcessNamespace; host namespaces",
			mutate: func(p *v1.Pod) {
				p.Spec.HostPID, p.Spec.HostNetwork, p.Spec.HostIPC = true, true, true
				p.Spec.ShareProcessNamespace = ptr.To(true)
			},
			want: &runtimeapi.LinuxSandboxSecurityContext{
				NamespaceOptions: &runtimeapi.NamespaceOption{Network: runtimeapi.NamespaceMode_NODE, Pid: runtimeapi.NamespaceMode_NODE, Ipc: runtimeapi.NamespaceMode_NODE},
				Seccomp:          runtimeDefault,
			},
		},
		{
			name: "a privileged init container makes the sandbox privileged",
			mutate: func(p *v1.Pod) {
				p.Spec.InitContainers = []v1.Container{{Name: "init", Image: "busybox", SecurityContext: &v1.SecurityContext{Privileged: ptr.To(true)}}}
			},
			want: &runtimeapi.LinuxSandboxSecurityContext{
				NamespaceOptions: &runtimeapi.NamespaceOption{Pid: runtimeapi.NamespaceMode_CONTAINER},
				Privileged:       true,
				Seccomp:          runtimeDefault,
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := securedPod(nil, nil)
			tc.mutate(p)
			assert.Equal(t, tc.want, SandboxSecurityContext(p))
		})
	}
}

func TestPodSysctls(t *testing.T) {
	assert.Nil(t, PodSysctls(securedPod(nil, nil)))
	p := securedPod(&v1.PodSecurityContext{Sysctls: []v1.Sysctl{
		{Name: "kernel.shm_rmid_forced", Value: "1"},
		{Name: "net/ipv4/conf/eth0.100/rp_filter", Value: "2"},
	}}, nil)
	assert.Equal(t, map[string]string{"kernel.shm_rmid_forced": "1", "net.ipv4.conf.eth0/100.rp_filter": "2"}, PodSysctls(p))
}

func TestContainerSecurityContext(t *testing.T) {
	unconfined := &runtimeapi.SecurityProfile{ProfileType: runtimeapi.SecurityProfile_Unconfined}
	// base is what every container gets when nothing is set.
	base := func() *runtimeapi.LinuxContainerSecurityContext {
		return &runtimeapi.LinuxContainerSecurityContext{
			NamespaceOptions: &runtimeapi.NamespaceOption{Pid: runtimeapi.NamespaceMode_CONTAINER},
			MaskedPaths:      defaultMaskedPaths,
			ReadonlyPaths:    defaultReadonlyPaths,
			Seccomp:          unconfined,
		}
	}
	tests := []struct {
		name    string
		psc     *v1.PodSecurityContext
		sc      *v1.SecurityContext
		want    func(*runtimeapi.LinuxContainerSecurityContext)
		wantErr string
	}{
		{name: "nothing set", want: func(*runtimeapi.LinuxContainerSecurityContext) {}},
		{
			name: "pod level user, group, groups, seccomp",
			psc: &v1.PodSecurityContext{RunAsUser: ptr.To[int64](1000), RunAsGroup: ptr.To[int64](3000), FSGroup: ptr.To[int64](2000),
				SupplementalGroups: []int64{4000}, SeccompProfile: &v1.SeccompProfile{Type: v1.SeccompProfileTypeRuntimeDefault}},
			want: func(w *runtimeapi.LinuxContainerSecurityContext) {
				w.RunAsUser = &runtimeapi.Int64Value{Value: 1000}
				w.RunAsGroup = &runtimeapi.Int64Value{Value: 3000}
				w.SupplementalGroups = []int64{2000, 4000}
				w.Seccomp = &runtimeapi.SecurityProfile{ProfileType: runtimeapi.SecurityProfile_RuntimeDefault}
			},
		},
		{
			name: "container overrides pod user, group and seccomp",
			psc: &v1.PodSecurityContext{RunAsUser: ptr.To[int64](1000), RunAsGroup: ptr.To[int64](3000),
				SeccompProfile: &v1.SeccompProfile{Type: v1.SeccompProfileTypeRuntimeDefault}},
			sc: &v1.SecurityContext{RunAsUser: ptr.To[int64](2000), RunAsGroup: ptr.To[int64](4000),
				SeccompProfile: &v1.SeccompProfile{Type: v1.SeccompProfileTypeUnconfined}},
			want: func(w *runtimeapi.LinuxContainerSecurityContext) {
				w.RunAsUser = &runtimeapi.Int64Value{Value: 2000}
				w.RunAsGroup = &runtimeapi.Int64Value{Value: 4000}
			},
		},
		{
			name: "capabilities",
			sc:   &v1.SecurityContext{Capabilities: &v1.Capabilities{Add: []v1.Capability{"NET_ADMIN", "SYS_TIME"}, Drop: []v1.Capability{"ALL"}}},
			want: func(w *runtimeapi.LinuxContainerSecurityContext) {
				w.Capabilities = &runtimeapi.Capability{AddCapabilities: []string{"NET_ADMIN", "SYS_TIME"}, DropCapabilities: []string{"ALL"}}
			},
		},
		{
			name: "privileged, read-only root",
			sc:   &v1.SecurityContext{Privileged: ptr.To(true), ReadOnlyRootFilesystem: ptr.To(true)},
			want: func(w *runtimeapi.LinuxContainerSecurityContext) {
				w.Privileged, w.ReadonlyRootfs = true, true
			},
		},
		{
			name: "allowPrivilegeEscalation false: no_new_privs",
			sc:   &v1.SecurityContext{AllowPrivilegeEscalation: ptr.To(false)},
			want: func(w *runtimeapi.LinuxContainerSecurityContext) { w.NoNewPrivs = true },
		},
		{
			name: "allowPrivilegeEscalation true: no no_new_privs",
			sc:   &v1.SecurityContext{AllowPrivilegeEscalation: ptr.To(true)},
			want: func(*runtimeapi.LinuxContainerSecurityContext) {},
		},
		{
			name: "procMount Unmasked: nothing masked",
			sc:   &v1.SecurityContext{ProcMount: ptr.To(v1.UnmaskedProcMount)},
			want: func(w *runtimeapi.LinuxContainerSecurityContext) {
				w.MaskedPaths, w.ReadonlyPaths = []string{}, []string{}
			},
		},
		{
			name: "procMount Default: the kubelet's paths",
			sc:   &v1.SecurityContext{ProcMount: ptr.To(v1.DefaultProcMount)},
			want: func(*runtimeapi.LinuxContainerSecurityContext) {},
		},
		{
			name: "seccomp Localhost under the profile root",
			psc:  &v1.PodSecurityContext{SeccompProfile: &v1.SeccompProfile{Type: v1.SeccompProfileTypeLocalhost, LocalhostProfile: ptr.To("profiles/audit.json")}},
			want: func(w *runtimeapi.LinuxContainerSecurityContext) {
				w.Seccomp = &runtimeapi.SecurityProfile{ProfileType: runtimeapi.SecurityProfile_Localhost, LocalhostRef: "/var/lib/minikubelet/seccomp/profiles/audit.json"}
			},
		},
		{
			name:    "seccomp Localhost without a profile",
			sc:      &v1.SecurityContext{SeccompProfile: &v1.SeccompProfile{Type: v1.SeccompProfileTypeLocalhost}},
			wantErr: "localhostProfile must be set if seccompProfile type is Localhost",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := securedPod(tc.psc, tc.sc)
			got, err := ContainerSecurityContext(p, &p.Spec.Containers[0], "/var/lib/minikubelet/seccomp")
			if tc.wantErr != "" {
				require.EqualError(t, err, tc.wantErr)
				return
			}
			require.NoError(t, err)
			want := base()
			tc.want(want)
			assert.Equal(t, want, got)
		})
	}

	t.Run("seccomp profile root", func(t *testing.T) {
		p := securedPod(nil, &v1.SecurityContext{SeccompProfile: &v1.SeccompProfile{Type: v1.SeccompProfileTypeLocalhost, LocalhostProfile: ptr.To("x.json")}})
		got, err := ContainerSecurityContext(p, &p.Spec.Containers[0], "/etc/seccomp")
		require.NoError(t, err)
		assert.Equal(t, "/etc/seccomp/x.json", got.Seccomp.LocalhostRef)
	})
}

func TestVerifyRunAsNonRoot(t *testing.T) {
	root, user := int64(0), int64(1000)
	tests := []struct {
		name     string
		psc      *v1.PodSecurityContext
		sc       *v1.SecurityContext
		uid      *int64
		username string
		wantErr  string
	}{
		{name: "not asked: root image is fine", uid: &root},
		{name: "runAsNonRoot false", sc: &v1.SecurityContext{RunAsNonRoot: ptr.To(false)}, uid: &root},
		{
			name: "image runs as root", psc: &v1.PodSecurityContext{RunAsNonRoot: ptr.To(true)}, uid: &root,
			wantErr: `container has runAsNonRoot and image will run as root (pod: "web_default(uid-1)", container: web)`,
		},
		{name: "image runs as 1000", psc: &v1.PodSecurityContext{RunAsNonRoot: ptr.To(true)}, uid: &user},
		{
			name: "image has a user name", sc: &v1.SecurityContext{RunAsNonRoot: ptr.To(true)}, username: "nginx",
			wantErr: `container has runAsNonRoot and image has non-numeric user (nginx), cannot verify user is non-root (pod: "web_default(uid-1)", container: web)`,
		},
		{
			name: "runAsUser overrides a root image",
			psc:  &v1.PodSecurityContext{RunAsNonRoot: ptr.To(true), RunAsUser: ptr.To[int64](1000)}, uid: &root,
		},
		{
			name: "runAsUser 0 breaks the policy", sc: &v1.SecurityContext{RunAsNonRoot: ptr.To(true), RunAsUser: ptr.To[int64](0)}, uid: &user,
			wantErr: `container's runAsUser breaks non-root policy (pod: "web_default(uid-1)", container: web)`,
		},
		{
			name: "container runAsNonRoot false overrides the pod's", psc: &v1.PodSecurityContext{RunAsNonRoot: ptr.To(true)},
			sc: &v1.SecurityContext{RunAsNonRoot: ptr.To(false)}, uid: &root,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := securedPod(tc.psc, tc.sc)
			err := VerifyRunAsNonRoot(p, &p.Spec.Containers[0], tc.uid, tc.username)
			if tc.wantErr == "" {
				assert.NoError(t, err)
			} else {
				assert.EqualError(t, err, tc.wantErr)
			}
		})
	}
}
