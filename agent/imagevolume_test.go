package agent

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/minikubelet/minikubelet/cgroups/cgroupstest"
	"github.com/minikubelet/minikubelet/cri/critest"
)

// configRecorder keeps the config of every container created, by name: the
// fake runtime does not keep mounts.
type configRecorder struct {
	*critest.FakeRuntime
	mu      sync.Mutex
	configs map[string]*runtimeapi.ContainerConfig
}

func (r *configRecorder) CreateContainer(ctx context.Context, sandboxID string, cfg *runtimeapi.ContainerConfig, sbCfg *runtimeapi.PodSandboxConfig) (string, error) {
	id, err := r.FakeRuntime.CreateContainer(ctx, sandboxID, cfg, sbCfg)
	if err == nil {
		r.mu.Lock()
		r.configs[cfg.GetMetadata().GetName()] = cfg
		r.mu.Unlock()
	}
	return id, err
}

func (r *configRecorder) config(name string) *runtimeapi.ContainerConfig {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.configs[name]
}

// newImageVolumeHarness is newHarness with the runtime reporting the given
// containerd version and the created configs recorded.
func newImageVolumeHarness(t *testing.T, version string) (*harness, *configRecorder) {
	t.Helper()
	h := newHarness(t)
	h.fake.Runtime.SetVersion("containerd", version)
	rec := &configRecorder{FakeRuntime: h.fake.Runtime, configs: map[string]*runtimeapi.ContainerConfig{}}
	h.agent.runtime = rec
	return h, rec
}

const imageVolumePod = `
apiVersion: v1
kind: Pod
metadata: {name: iv, namespace: demo}
spec:
  volumes:
  - {name: data, image: {reference: reg.local/data:1}}
  containers:
  - name: reader
    image: reg.local/app:1
    volumeMounts:
    - {name: data, mountPath: /data, readOnly: false}
    - {name: data, mountPath: /etc/app, subPath: etc/app}
  - name: other
    image: reg.local/app:1
`

// A container mounting an image volume is created after the volume's
// image was pulled, with a CRI mount that names the pulled image, is
// read-only although the volumeMount says readOnly: false, and carries the
// subPath for the runtime; the pull's events are the pod's, as the
// kubelet's.
func TestAgent_ImageVolume_MountsPulledImage(t *testing.T) {
	h, rec := newImageVolumeHarness(t, "v2.4.2")
	h.agent.SetPods([]*v1.Pod{testPod(t, imageVolumePod)})
	h.rec.waitStatus(t, "Running", phaseIs(v1.PodRunning))

	calls := without(h.fake.Calls(), observeCalls...)
	require.Contains(t, calls, "PullImage reg.local/data:1")
	assert.Less(t, indexOf(calls, "PullImage reg.local/data:1"), indexOf(calls, "CreateContainer reader attempt=0"))

	cfg := rec.config("reader")
	require.NotNil(t, cfg)
	var imageMounts []*runtimeapi.Mount
	for _, m := range cfg.GetMounts() {
		if m.GetImage() != nil {
			imageMounts = append(imageMounts, m)
		}
	}
	require.Len(t, imageMounts, 2, "%v", cfg.GetMounts())
	for _, m := range imageMounts {
		assert.Equal(t, "reg.local/data:1", m.GetImage().GetImage(), "the ref the pull returned")
		assert.Equal(t, "reg.local/data:1", m.GetImage().GetUserSpecifiedImage())
		assert.True(t, m.GetReadonly(), "an image volume is read-only: %v", m)
		assert.Empty(t, m.GetHostPath(), "the runtime mounts the image")
	}
	assert.Equal(t, "/data", imageMounts[0].GetContainerPath())
	assert.Empty(t, imageMounts[0].GetImageSubPath())
	assert.Equal(t, "/etc/app", imageMounts[1].GetContainerPath())
	assert.Equal(t, "etc/app", imageMounts[1].GetImageSubPath())
	for _, m := range rec.config("other").GetMounts() {
		assert.Nil(t, m.GetImage(), "other does not mount the volume")
	}

	var pulled bool
	h.rec.mu.Lock()
	for _, e := range h.rec.events {
		if strings.Contains(e.Message, `"reg.local/data:1"`) && e.Reason == "Pulled" {
			pulled = true
			assert.Empty(t, e.FieldPath, "an image volume's pull events are the pod's")
		}
	}
	h.rec.mu.Unlock()
	assert.True(t, pulled, "a Pulled event for the volume's image: %v", h.rec.reasons())
}

// A volume whose image cannot be pulled keeps the containers that mount it
// waiting with ErrImagePull, then ImagePullBackOff without pulling again
// within the back-off; a container that does not mount it starts.
func TestAgent_ImageVolume_PullFailure(t *testing.T) {
	h, _ := newImageVolumeHarness(t, "v2.4.2")
	h.fake.FailPull("reg.local/data:1", assert.AnError)
	pod := testPod(t, imageVolumePod)
	h.agent.SetPods([]*v1.Pod{pod})
	waiting := func(reason string) func(*v1.Pod) bool {
		return func(p *v1.Pod) bool {
			var reader, other v1.ContainerStatus
			for _, cs := range p.Status.ContainerStatuses {
				if cs.Name == "reader" {
					reader = cs
				} else {
					other = cs
				}
			}
			return reader.State.Waiting != nil && reader.State.Waiting.Reason == reason && other.State.Running != nil
		}
	}
	p := h.rec.waitStatus(t, "reader ErrImagePull, other running", waiting("ErrImagePull"))
	assert.Contains(t, p.Status.ContainerStatuses[0].State.Waiting.Message, assert.AnError.Error())
	assert.NotContains(t, h.fake.Calls(), "CreateContainer reader attempt=0")
	var failed bool
	h.rec.mu.Lock()
	for _, e := range h.rec.events {
		if e.Reason == "Failed" && e.FieldPath == "spec.containers{reader}" && strings.HasPrefix(e.Message, "Error: ") {
			failed = true
		}
	}
	h.rec.mu.Unlock()
	assert.True(t, failed, "a Failed event on the container that mounts the volume")

	h.fake.Reset()
	h.agent.workers[pod.UID].trigger()
	p = h.rec.waitStatus(t, "reader ImagePullBackOff", waiting("ImagePullBackOff"))
	assert.Equal(t, `Back-off pulling image "reg.local/data:1"`, p.Status.ContainerStatuses[0].State.Waiting.Message)
	assert.NotContains(t, h.fake.Calls(), "PullImage reg.local/data:1")
}

// pullPolicy Never with the image absent: ErrImageNeverPull, no pull.
func TestAgent_ImageVolume_NeverPull(t *testing.T) {
	h, _ := newImageVolumeHarness(t, "v2.1.0")
	pod := testPod(t, strings.Replace(imageVolumePod, "{reference: reg.local/data:1}", "{reference: reg.local/data:1, pullPolicy: Never}", 1))
	h.agent.SetPods([]*v1.Pod{pod})
	p := h.rec.waitStatus(t, "ErrImageNeverPull", func(p *v1.Pod) bool {
		w := p.Status.ContainerStatuses[0].State.Waiting
		return w != nil && w.Reason == "ErrImageNeverPull"
	})
	assert.Equal(t, `Container image "reg.local/data:1" is not present with pull policy of Never`, p.Status.ContainerStatuses[0].State.Waiting.Message)
	assert.NotContains(t, h.fake.Calls(), "PullImage reg.local/data:1")
}

// On containerd 1.6, which ignores CRI Mount.image, a pod with an image
// volume fails before anything of it is created, with a reason naming the
// field and what to do; a pod without one runs.
func TestAgent_ImageVolume_RefusedOnOldContainerd(t *testing.T) {
	h, _ := newImageVolumeHarness(t, "v1.6.38")
	cg := cgroupstest.NewFake()
	h.agent.cgroups = cg
	pod := testPod(t, imageVolumePod)
	h.agent.SetPods([]*v1.Pod{pod})
	p := h.rec.waitStatus(t, "Failed", phaseIs(v1.PodFailed))
	assert.Equal(t, "ImageVolumeNotSupported", p.Status.Reason)
	assert.Equal(t, "spec.volumes[0].image: this node's runtime, containerd v1.6.38, cannot mount image volumes (CRI Mount.image needs containerd 2.1 or later): upgrade the node's containerd to 2.1 or later, or run the pod on a node that has it", p.Status.Message)
	assert.Contains(t, h.rec.reasons(), "ImageVolumeNotSupported")
	h.waitCallsSettle(t)
	for _, c := range h.fake.Calls() {
		for _, verb := range []string{"RunPodSandbox", "PullImage", "CreateContainer"} {
			assert.False(t, strings.HasPrefix(c, verb), "nothing is created: %s", c)
		}
	}
	for _, c := range cg.Calls() {
		assert.NotContains(t, strings.ReplaceAll(fmt.Sprint(c.Name), "_", "-"), string(pod.UID), "no pod cgroup either: %+v", c)
	}

	plain := testPod(t, `
apiVersion: v1
kind: Pod
metadata: {name: plain, namespace: demo}
spec:
  containers: [{name: app, image: reg.local/app:1}]
`)
	h.agent.SetPods([]*v1.Pod{pod, plain})
	h.rec.waitStatus(t, "plain Running", func(p *v1.Pod) bool { return p.Name == "plain" && p.Status.Phase == v1.PodRunning })
}
