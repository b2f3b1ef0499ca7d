package agent

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/utils/ptr"

	"github.com/minikubelet/minikubelet/agent/node"
	"github.com/minikubelet/minikubelet/agent/podspec"
)

// securedPod is a pod with one container and the given security contexts.
func securedPod(psc *v1.PodSecurityContext, sc *v1.SecurityContext) *v1.Pod {
	p := basePod()
	p.Namespace, p.UID = "default", "uid-1"
	p.Spec.SecurityContext = psc
	p.Spec.Containers[0].SecurityContext = sc
	return p
}

// setImage puts an image with the given user into the fake image service.
func setImage(h *harness, name string, uid *int64, username string) {
	h.fake.Images.Lock()
	defer h.fake.Images.Unlock()
	img := &runtimeapi.Image{Id: name, RepoTags: []string{name}, Username: username}
	if uid != nil {
		img.Uid = &runtimeapi.Int64Value{Value: *uid}
	}
	h.fake.Images.FakeImageService.Images[name] = img
}

func TestApplyImageUser(t *testing.T) {
	h := newHarness(t)
	uid := int64(1001)
	setImage(h, "reg.local/numeric:1", &uid, "")
	setImage(h, "reg.local/named:1", nil, "nginx")
	setImage(h, "reg.local/root:1", nil, "")
	tests := []struct {
		name, image  string
		sc           *v1.SecurityContext
		wantUser     *runtimeapi.Int64Value
		wantUsername string
	}{
		{name: "numeric image user", image: "reg.local/numeric:1", wantUser: &runtimeapi.Int64Value{Value: 1001}},
		{name: "named image user", image: "reg.local/named:1", wantUsername: "nginx"},
		{name: "no image user is root", image: "reg.local/root:1", wantUser: &runtimeapi.Int64Value{Value: 0}},
		{name: "runAsUser wins", image: "reg.local/named:1", sc: &v1.SecurityContext{RunAsUser: ptr.To[int64](7)}, wantUser: &runtimeapi.Int64Value{Value: 7}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := securedPod(nil, tc.sc)
			p.Spec.Containers[0].Image = tc.image
			c := &p.Spec.Containers[0]
			sc, err := podspec.ContainerSecurityContext(p, c, podspec.SeccompProfileRoot(h.agent.cfg.SeccompProfileRoot, h.agent.cfg.RootDir))
			require.NoError(t, err)
			cfg := &runtimeapi.ContainerConfig{Linux: &runtimeapi.LinuxContainerConfig{SecurityContext: sc}}
			require.NoError(t, h.agent.applyImageUser(context.Background(), newPodWorker(h.agent, p), c, cfg, nil))
			assert.Equal(t, tc.wantUser, sc.RunAsUser)
			assert.Equal(t, tc.wantUsername, sc.RunAsUsername)
		})
	}
}

func TestAgent_RunAsNonRootWithRootImageIsCreateContainerConfigError(t *testing.T) {
	h := newHarness(t)
	setImage(h, "reg.local/root:1", nil, "")
	pod := testPod(t, `
apiVersion: v1
kind: Pod
metadata: {name: nonroot, uid: u-1}
spec:
  securityContext: {runAsNonRoot: true}
  containers: [{name: app, image: reg.local/root:1}]
`)
	h.agent.SetPods([]*v1.Pod{pod})
	p := h.rec.waitStatus(t, "CreateContainerConfigError", func(p *v1.Pod) bool {
		w := p.Status.ContainerStatuses[0].State.Waiting
		return w != nil && w.Reason == "CreateContainerConfigError"
	})
	assert.Equal(t, `container has runAsNonRoot and image will run as root (pod: "nonroot_default(u-1)", container: app)`,
		p.Status.ContainerStatuses[0].State.Waiting.Message)
	assert.NotContains(t, strings.Join(h.fake.Calls(), "\n"), "CreateContainer app")
}

func TestAgent_AdmissionRefusesSecurity(t *testing.T) {
	tests := []struct {
		name       string
		manifest   string
		level      node.PodSecurityLevel // "": the default, baseline
		wantReason string
		wantMsg    string
	}{
		{
			name: "privileged under the default level",
			manifest: `
apiVersion: v1
kind: Pod
metadata: {name: priv}
spec:
  containers: [{name: app, image: reg.local/x:1, securityContext: {privileged: true}}]
`,
			wantReason: "PodSecurityForbidden",
			wantMsg:    `violates PodSecurity "baseline:latest", this node's level for local pods: spec.containers[0].securityContext.privileged: privileged: must not be true`,
		},
		{
			name: "privileged with --pod-security=privileged",
			manifest: `
apiVersion: v1
kind: Pod
metadata: {name: priv}
spec:
  containers: [{name: app, image: reg.local/x:1, securityContext: {privileged: true}}]
`,
			level: node.PodSecurityPrivileged,
		},
		{
			// The kubelet's sysctl check, behind the node's level.
			name:  "unsafe sysctl",
			level: node.PodSecurityPrivileged,
			manifest: `
apiVersion: v1
kind: Pod
metadata: {name: sysctl}
spec:
  securityContext: {sysctls: [{name: net.core.somaxconn, value: "1024"}]}
  containers: [{name: app, image: reg.local/x:1}]
`,
			wantReason: "SysctlForbidden",
			wantMsg:    `forbidden sysctl: "net.core.somaxconn" not allowlisted`,
		},
		{
			name: "supplementalGroupsPolicy Strict",
			manifest: `
apiVersion: v1
kind: Pod
metadata: {name: strict}
spec:
  securityContext: {supplementalGroups: [4000], supplementalGroupsPolicy: Strict}
  containers: [{name: app, image: reg.local/x:1}]
`,
			wantReason: "SupplementalGroupsPolicyNotSupported",
			wantMsg:    "SupplementalGroupsPolicy=Strict is not supported in this node",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t)
			if tc.level != "" {
				h.agent.cfg.PodSecurity = tc.level
			}
			pod := testPod(t, tc.manifest)
			h.agent.SetPods([]*v1.Pod{pod})
			if tc.wantReason == "" {
				h.rec.waitStatus(t, "Running", phaseIs(v1.PodRunning))
				return
			}
			got, ok := h.agent.GetPod(pod.UID)
			require.True(t, ok)
			assert.Equal(t, v1.PodFailed, got.Status.Phase)
			assert.Equal(t, tc.wantReason, got.Status.Reason)
			assert.Contains(t, got.Status.Message, tc.wantMsg)
			assert.Empty(t, without(h.fake.Calls(), observeCalls...))
		})
	}
}

// A pod asking for an AppArmor profile is refused as the kubelet refuses
// it where the host does not enforce AppArmor (reason AppArmor, nothing
// reaches the runtime): run, it would lack the confinement it asked for.
// Unconfined asks for nothing. Where the host enforces AppArmor, the pod
// runs with its profile, unless its Localhost profile has no name.
func TestAgent_AdmissionAppArmor(t *testing.T) {
	base := `
apiVersion: v1
kind: Pod
metadata: {name: aa}
spec:
  containers: [{name: app, image: reg.local/x:1}]
`
	localhost := func(name string) *v1.AppArmorProfile {
		return &v1.AppArmorProfile{Type: v1.AppArmorProfileTypeLocalhost, LocalhostProfile: &name}
	}
	tests := []struct {
		name       string
		enabled    bool
		mutate     func(*v1.Pod)
		wantReason string
		wantMsg    string
	}{
		{name: "container field, no AppArmor", mutate: func(p *v1.Pod) {
			p.Spec.Containers[0].SecurityContext = &v1.SecurityContext{AppArmorProfile: &v1.AppArmorProfile{Type: v1.AppArmorProfileTypeRuntimeDefault}}
		}, wantReason: "AppArmor", wantMsg: "Cannot enforce AppArmor: AppArmor is not enabled on the host"},
		{name: "pod field, no AppArmor", mutate: func(p *v1.Pod) {
			p.Spec.SecurityContext = &v1.PodSecurityContext{AppArmorProfile: localhost("k8s-deny-write")}
		}, wantReason: "AppArmor", wantMsg: "Cannot enforce AppArmor: AppArmor is not enabled on the host"},
		{name: "deprecated annotation, no AppArmor", mutate: func(p *v1.Pod) {
			p.Annotations[v1.DeprecatedAppArmorBetaContainerAnnotationKeyPrefix+"app"] = v1.DeprecatedAppArmorBetaProfileRuntimeDefault
		}, wantReason: "AppArmor", wantMsg: "Cannot enforce AppArmor: AppArmor is not enabled on the host"},
		{name: "unconfined, no AppArmor", mutate: func(p *v1.Pod) {
			p.Spec.Containers[0].SecurityContext = &v1.SecurityContext{AppArmorProfile: &v1.AppArmorProfile{Type: v1.AppArmorProfileTypeUnconfined}}
			p.Annotations[v1.DeprecatedAppArmorBetaContainerAnnotationKeyPrefix+"app"] = v1.DeprecatedAppArmorBetaProfileNameUnconfined
		}},
		{name: "localhost profile, AppArmor enabled", enabled: true, mutate: func(p *v1.Pod) {
			p.Spec.Containers[0].SecurityContext = &v1.SecurityContext{AppArmorProfile: localhost("k8s-deny-write")}
		}},
		{name: "localhost profile without a name, AppArmor enabled", enabled: true, mutate: func(p *v1.Pod) {
			p.Annotations[v1.DeprecatedAppArmorBetaContainerAnnotationKeyPrefix+"app"] = v1.DeprecatedAppArmorBetaProfileNamePrefix
		}, wantReason: "AppArmor", wantMsg: "Cannot enforce AppArmor: invalid empty AppArmor profile name"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t)
			h.agent.cfg.AppArmorEnabled = tc.enabled
			// As for a cluster pod, which the API server's Pod Security
			// Admission judged (baseline would refuse Unconfined first).
			h.agent.cfg.PodSecurity = node.PodSecurityPrivileged
			pod := testPod(t, base)
			if pod.Annotations == nil {
				pod.Annotations = map[string]string{}
			}
			tc.mutate(pod)
			h.agent.SetPods([]*v1.Pod{pod})
			if tc.wantReason == "" {
				h.rec.waitStatus(t, "Running", phaseIs(v1.PodRunning))
				return
			}
			got, ok := h.agent.GetPod(pod.UID)
			require.True(t, ok)
			assert.Equal(t, v1.PodFailed, got.Status.Phase)
			assert.Equal(t, tc.wantReason, got.Status.Reason)
			assert.Contains(t, got.Status.Message, tc.wantMsg)
			assert.Empty(t, without(h.fake.Calls(), observeCalls...), "nothing reaches the runtime")
		})
	}
}
