package agent

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/minikubelet/minikubelet/agent/podspec"
	"github.com/minikubelet/minikubelet/cri"
	"github.com/minikubelet/minikubelet/cri/critest"
)

// mountingRuntime makes the fake report what containerd reports and
// critest does not keep: the mounts of the container config and the
// absolute log path. It also keeps the configs.
type mountingRuntime struct {
	cri.Runtime
	fake *critest.Fake

	mu      sync.Mutex
	configs map[string]*runtimeapi.ContainerConfig // by container name
}

func (r *mountingRuntime) CreateContainer(ctx context.Context, sandboxID string, cfg *runtimeapi.ContainerConfig, sbCfg *runtimeapi.PodSandboxConfig) (string, error) {
	id, err := r.Runtime.CreateContainer(ctx, sandboxID, cfg, sbCfg)
	if err != nil {
		return id, err
	}
	rs := r.fake.Runtime
	rs.Lock()
	c := rs.Containers[id]
	c.Mounts = cfg.Mounts
	c.LogPath = filepath.Join(sbCfg.GetLogDirectory(), cfg.LogPath)
	rs.Unlock()
	r.mu.Lock()
	r.configs[cfg.GetMetadata().GetName()] = cfg
	r.mu.Unlock()
	return id, nil
}

func (r *mountingRuntime) config(name string) *runtimeapi.ContainerConfig {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.configs[name]
}

func TestCreateTerminationMessageFile(t *testing.T) {
	h := newHarness(t)
	pod := testPod(t, hookPod)
	p1, err := h.agent.createTerminationMessageFile(pod, "web")
	require.NoError(t, err)
	p2, err := h.agent.createTerminationMessageFile(pod, "web")
	require.NoError(t, err)
	assert.NotEqual(t, p1, p2, "each container instance gets its own file")
	for _, p := range []string{p1, p2} {
		assert.Equal(t, filepath.Join(h.agent.podDir(pod), "containers", "web"), filepath.Dir(p))
		assert.Regexp(t, regexp.MustCompile(`^[0-9a-f]{8}$`), filepath.Base(p))
		fi, err := os.Stat(p)
		require.NoError(t, err)
		assert.Equal(t, os.FileMode(0o666), fi.Mode().Perm(), "world-writable despite the umask")
		assert.Zero(t, fi.Size())
	}
}

func TestAgent_TerminationMessageFileMountedAndRead(t *testing.T) {
	h := newHarness(t)
	mr := &mountingRuntime{Runtime: h.fake.Runtime, fake: h.fake, configs: map[string]*runtimeapi.ContainerConfig{}}
	h.agent.runtime = mr
	pod := testPod(t, hookPod)
	pod.Spec.Containers[0].TerminationMessagePath = "/tmp/why"
	h.agent.SetPods([]*v1.Pod{pod})
	p := h.rec.waitStatus(t, "Running", phaseIs(v1.PodRunning))
	h.agent.stopWorkers()

	cfg := mr.config("web")
	require.NotNil(t, cfg)
	var hostPath string
	for _, m := range cfg.Mounts {
		if m.ContainerPath == "/tmp/why" {
			hostPath = m.HostPath
		}
	}
	require.NotEmpty(t, hostPath, "mounts: %v", cfg.Mounts)
	assert.True(t, strings.HasPrefix(hostPath, filepath.Join(h.agent.podDir(pod), "containers", "web")+"/"), hostPath)
	fi, err := os.Stat(hostPath)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o666), fi.Mode().Perm())
	assert.Equal(t, "/tmp/why", cfg.Annotations[podspec.AnnotationTerminationMessagePath])

	// The container writes its message and exits.
	require.NoError(t, os.WriteFile(hostPath, []byte("disk full"), 0o666))
	id := strings.TrimPrefix(p.Status.ContainerStatuses[0].ContainerID, "containerd://")
	require.NoError(t, h.fake.ExitContainer(id, 1))
	assert.Equal(t, "disk full", h.agent.terminationMessage(context.Background(), id, nil, 1))
	resp, err := h.fake.Runtime.ContainerStatus(context.Background(), id, false)
	require.NoError(t, err)
	assert.Equal(t, "disk full", h.agent.terminationMessageFromStatus(resp.GetStatus()))

	// The directories go with the pod directory.
	require.NoError(t, h.agent.cleanupPodDirs(pod))
	_, err = os.Stat(hostPath)
	assert.True(t, os.IsNotExist(err))
}

// recursiveReadOnly on a runtime that can (CRI Status: handler "" with
// recursive_read_only_mounts): the CRI mount is recursively read-only and
// the container's status.volumeMounts say Enabled; on one that cannot,
// Enabled is the container's CreateContainerConfigError, in the kubelet's
// words (e2e_node "Mount recursive read-only" specs).
func TestAgent_RecursiveReadOnlyMounts(t *testing.T) {
	const manifest = `
apiVersion: v1
kind: Pod
metadata: {name: rro}
spec:
  containers:
  - name: app
    image: reg.local/x:1
    volumeMounts:
    - {name: data, mountPath: /rro, readOnly: true, recursiveReadOnly: Enabled}
    - {name: data, mountPath: /rw}
  volumes: [{name: data, emptyDir: {}}]
`
	t.Run("supported", func(t *testing.T) {
		h := newHarness(t)
		h.fake.Runtime.SetRuntimeHandlers(&runtimeapi.RuntimeHandler{Name: "", Features: &runtimeapi.RuntimeHandlerFeatures{RecursiveReadOnlyMounts: true}})
		mr := &mountingRuntime{Runtime: h.fake.Runtime, fake: h.fake, configs: map[string]*runtimeapi.ContainerConfig{}}
		h.agent.runtime = mr
		h.agent.SetPods([]*v1.Pod{testPod(t, manifest)})
		p := h.rec.waitStatus(t, "Running", phaseIs(v1.PodRunning))
		var rro []string
		for _, m := range mr.config("app").GetMounts() {
			if m.RecursiveReadOnly {
				rro = append(rro, m.ContainerPath)
			}
		}
		assert.Equal(t, []string{"/rro"}, rro)
		enabled := v1.RecursiveReadOnlyEnabled
		assert.Equal(t, []v1.VolumeMountStatus{
			{Name: "data", MountPath: "/rro", ReadOnly: true, RecursiveReadOnly: &enabled},
			{Name: "data", MountPath: "/rw"},
		}, p.Status.ContainerStatuses[0].VolumeMounts)
	})
	t.Run("not supported", func(t *testing.T) {
		h := newHarness(t)
		h.agent.SetPods([]*v1.Pod{testPod(t, manifest)})
		p := h.rec.waitStatus(t, "CreateContainerConfigError", func(p *v1.Pod) bool {
			w := p.Status.ContainerStatuses[0].State.Waiting
			return w != nil && w.Reason == "CreateContainerConfigError"
		})
		assert.Contains(t, p.Status.ContainerStatuses[0].State.Waiting.Message,
			`failed to resolve recursive read-only mode: volume "data" requested recursive read-only mode, but it is not supported by the runtime`)
		assert.NotContains(t, strings.Join(h.fake.Calls(), "\n"), "CreateContainer app")
	})
}
