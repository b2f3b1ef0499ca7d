package agent

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/minikubelet/minikubelet/agent/userns"
)

// sandboxRecorder is configRecorder that also keeps the sandbox configs,
// by pod name.
type sandboxRecorder struct {
	*configRecorder
	smu       sync.Mutex
	sandboxes map[string]*runtimeapi.PodSandboxConfig
}

func (r *sandboxRecorder) RunPodSandbox(ctx context.Context, cfg *runtimeapi.PodSandboxConfig, handler string) (string, error) {
	id, err := r.FakeRuntime.RunPodSandbox(ctx, cfg, handler)
	if err == nil {
		r.smu.Lock()
		r.sandboxes[cfg.GetMetadata().GetName()] = cfg
		r.smu.Unlock()
	}
	return id, err
}

func (r *sandboxRecorder) sandbox(name string) *runtimeapi.PodSandboxConfig {
	r.smu.Lock()
	defer r.smu.Unlock()
	return r.sandboxes[name]
}

// newUserNSHarness is newHarness on a runtime of the given version that
// reports these runtime handlers, recording the configs it is given.
func newUserNSHarness(t *testing.T, version string, handlers ...*runtimeapi.RuntimeHandler) (*harness, *sandboxRecorder) {
	t.Helper()
	h, rec := newImageVolumeHarness(t, version)
	h.fake.Runtime.SetRuntimeHandlers(handlers...)
	sr := &sandboxRecorder{configRecorder: rec, sandboxes: map[string]*runtimeapi.PodSandboxConfig{}}
	h.agent.runtime = sr
	return h, sr
}

// containerd 2.x with runc 1.2+: the default handler ("") has the feature.
var usernsHandler = &runtimeapi.RuntimeHandler{Name: "", Features: &runtimeapi.RuntimeHandlerFeatures{UserNamespaces: true}}

func usernsPod(t *testing.T, name string) *v1.Pod {
	return testPod(t, `
apiVersion: v1
kind: Pod
metadata: {name: `+name+`, namespace: demo}
spec:
  hostUsers: false
  volumes: [{name: scratch, emptyDir: {}}]
  containers:
  - name: app
    image: reg.local/app:1
    volumeMounts: [{name: scratch, mountPath: /scratch}]
`)
}

// wantUserNS is the CRI user namespace of a pod given host IDs from host.
func wantUserNS(host uint32) string {
	return userns.Mapping{HostID: host, Length: 65536}.CRI().String()
}

// waitRunning waits until each named pod has had a Running status.
func waitRunning(t *testing.T, r *recorder, names ...string) {
	t.Helper()
	require.Eventually(t, func() bool {
		r.mu.Lock()
		defer r.mu.Unlock()
		running := map[string]bool{}
		for _, p := range r.statuses {
			running[p.Name] = running[p.Name] || p.Status.Phase == v1.PodRunning
		}
		for _, n := range names {
			if !running[n] {
				return false
			}
		}
		return true
	}, 10*time.Second, 10*time.Millisecond, "pods %v Running", names)
}

// Pods with hostUsers: false run in user namespaces of their own: the
// sandbox and each container get mode POD with the pod's range (the first
// from 65536, above the host's IDs, the next one after it), recorded in the
// pod's directory; once a pod is gone its range is given to the next pod.
func TestAgent_UserNamespace_PerPodRanges(t *testing.T) {
	h, rec := newUserNSHarness(t, "v2.4.2", usernsHandler)
	first, second := usernsPod(t, "first"), usernsPod(t, "second")
	h.agent.SetPods([]*v1.Pod{first, second})
	waitRunning(t, h.rec, "first", "second")

	got := map[string]string{}
	for _, name := range []string{"first", "second"} {
		sb := rec.sandbox(name)
		require.NotNil(t, sb, name)
		got[name] = sb.GetLinux().GetSecurityContext().GetNamespaceOptions().GetUsernsOptions().String()
	}
	// SetPods admits in order, but the workers run concurrently: either
	// pod may have taken the first range.
	assert.ElementsMatch(t, []string{wantUserNS(65536), wantUserNS(131072)}, []string{got["first"], got["second"]})
	// The container's user namespace is its sandbox's. (configRecorder
	// keeps containers by name: both are "app", the later one wins.)
	ctr := rec.config("app")
	require.NotNil(t, ctr)
	ctrNS := ctr.GetLinux().GetSecurityContext().GetNamespaceOptions().GetUsernsOptions()
	assert.Contains(t, []string{got["first"], got["second"]}, ctrNS.String())
	// Every mount, the volume's and the engine's own (/etc/hosts, the
	// termination log), carries the mappings: the runtime idmaps them.
	require.NotEmpty(t, ctr.GetMounts())
	for _, m := range ctr.GetMounts() {
		require.Len(t, m.GetUidMappings(), 1, m.GetContainerPath())
		assert.Equal(t, ctrNS.GetUids()[0].String(), m.GetUidMappings()[0].String(), m.GetContainerPath())
		assert.Equal(t, ctrNS.GetGids()[0].String(), m.GetGidMappings()[0].String(), m.GetContainerPath())
	}

	file := filepath.Join(h.agent.podDir(first), userns.MappingsFile)
	b, err := os.ReadFile(file)
	require.NoError(t, err, "the mapping is kept in the pod's directory")
	assert.Contains(t, string(b), `"uidMappings"`)

	// The first pod goes: its directory, and its range, with it.
	h.agent.SetPods([]*v1.Pod{second})
	require.Eventually(t, func() bool {
		_, err := os.Stat(file)
		return os.IsNotExist(err)
	}, 10*time.Second, 20*time.Millisecond, "the first pod's mapping file is removed with the pod")
	third := usernsPod(t, "third")
	h.agent.SetPods([]*v1.Pod{second, third})
	waitRunning(t, h.rec, "third")
	assert.Equal(t, got["first"], rec.sandbox("third").GetLinux().GetSecurityContext().GetNamespaceOptions().GetUsernsOptions().String(),
		"the freed range is the lowest free one again")
}

// A pod in the node's user namespace gets no user namespace option, as
// before (the kubelet's mode NODE means the same to containerd).
func TestAgent_UserNamespace_HostUsersPodsUnchanged(t *testing.T) {
	h, rec := newUserNSHarness(t, "v2.4.2", usernsHandler)
	h.agent.SetPods([]*v1.Pod{testPod(t, `
apiVersion: v1
kind: Pod
metadata: {name: plain, namespace: demo}
spec:
  hostUsers: true
  containers: [{name: app, image: reg.local/app:1}]
`)})
	p := h.rec.waitStatus(t, "Running", phaseIs(v1.PodRunning))
	assert.Nil(t, rec.sandbox("plain").GetLinux().GetSecurityContext().GetNamespaceOptions().GetUsernsOptions())
	assert.Nil(t, rec.config("app").GetLinux().GetSecurityContext().GetNamespaceOptions().GetUsernsOptions())
	for _, m := range rec.config("app").GetMounts() {
		assert.Nil(t, m.GetUidMappings(), m.GetContainerPath())
	}
	_, err := os.Stat(filepath.Join(h.agent.podDir(p), userns.MappingsFile))
	assert.True(t, os.IsNotExist(err), "no range is taken")
}

// On a runtime without user namespaces (containerd 1.6 reports no runtime
// handlers; containerd 2.x with runc 1.1 reports the default handler
// without the feature) a pod with hostUsers: false fails before anything
// of it is created, with a reason naming the field and what to do; no
// range is taken; a pod without it runs.
func TestAgent_UserNamespace_RefusedWithoutRuntimeSupport(t *testing.T) {
	for _, tc := range []struct {
		name, version string
		handlers      []*runtimeapi.RuntimeHandler
	}{
		{"containerd 1.6", "v1.6.38", nil},
		{"containerd 2.4 with runc 1.1", "v2.4.2", []*runtimeapi.RuntimeHandler{
			{Name: "", Features: &runtimeapi.RuntimeHandlerFeatures{RecursiveReadOnlyMounts: true}},
			{Name: "runc", Features: &runtimeapi.RuntimeHandlerFeatures{RecursiveReadOnlyMounts: true}},
		}},
		{"only another handler has it", "v2.4.2", []*runtimeapi.RuntimeHandler{
			{Name: "crun", Features: &runtimeapi.RuntimeHandlerFeatures{UserNamespaces: true}},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h, _ := newUserNSHarness(t, tc.version, tc.handlers...)
			pod := usernsPod(t, "userns")
			h.agent.SetPods([]*v1.Pod{pod})
			p := h.rec.waitStatus(t, "Failed", phaseIs(v1.PodFailed))
			assert.Equal(t, "UserNamespacesNotSupported", p.Status.Reason)
			assert.Equal(t, "spec.hostUsers: false needs user namespaces, and this node's runtime, containerd "+tc.version+", does not support them (its CRI Status reports no user_namespaces feature for its default handler): leave spec.hostUsers out or set it to true, or run the pod on a node with containerd 2.0 or later, runc 1.2 or later and Linux 6.3 or later", p.Status.Message)
			assert.Contains(t, h.rec.reasons(), "UserNamespacesNotSupported")
			h.waitCallsSettle(t)
			for _, c := range h.fake.Calls() {
				for _, verb := range []string{"RunPodSandbox", "PullImage", "CreateContainer"} {
					assert.False(t, strings.HasPrefix(c, verb), "nothing is created: %s", c)
				}
			}
			_, err := os.Stat(filepath.Join(h.agent.podDir(pod), userns.MappingsFile))
			assert.True(t, os.IsNotExist(err), "no range is taken")

			plain := testPod(t, `
apiVersion: v1
kind: Pod
metadata: {name: plain, namespace: demo}
spec:
  containers: [{name: app, image: reg.local/app:1}]
`)
			h.agent.SetPods([]*v1.Pod{pod, plain})
			h.rec.waitStatus(t, "plain Running", func(p *v1.Pod) bool { return p.Name == "plain" && p.Status.Phase == v1.PodRunning })
		})
	}
}
