package agent

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// fakeDevices is config.Devices with one device of example.com/dev.
type fakeDevices struct {
	mu      sync.Mutex
	holder  types.UID
	applied []string
	failFor string
}

func (f *fakeDevices) Admit(pod *v1.Pod, others func() []*v1.Pod) (string, string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, o := range others() {
		if o.UID == f.holder && (o.Status.Phase == v1.PodSucceeded || o.Status.Phase == v1.PodFailed) {
			f.holder = ""
		}
	}
	if _, ok := pod.Spec.Containers[0].Resources.Limits["example.com/dev"]; !ok {
		return "", ""
	}
	if f.holder != "" {
		return "UnexpectedAdmissionError", "Allocate failed due to requested number of devices unavailable for example.com/dev. Requested: 1, Available: 0, which is unexpected"
	}
	f.holder = pod.UID
	return "", ""
}

func (f *fakeDevices) ApplyContainer(_ context.Context, pod *v1.Pod, container string, cfg *runtimeapi.ContainerConfig) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if pod.Name == f.failFor {
		return errors.New("allocate example.com/dev devices [d0]: plugin gone")
	}
	f.applied = append(f.applied, pod.Name+"/"+container)
	cfg.Envs = append(cfg.Envs, &runtimeapi.KeyValue{Key: "DEV", Value: []byte("d0")})
	return nil
}

const devicePodYAML = `
apiVersion: v1
kind: Pod
metadata: {name: NAME, namespace: demo}
spec:
  containers:
  - name: c
    image: reg.local/web:1
    resources:
      limits: {example.com/dev: "1"}
`

func TestAgent_DevicesAdmittedAndApplied(t *testing.T) {
	h := newHarness(t)
	devs := &fakeDevices{}
	h.agent.cfg.Devices = devs
	first := testPod(t, strings.ReplaceAll(devicePodYAML, "NAME", "first"))
	h.agent.SetPods([]*v1.Pod{first})
	h.rec.waitStatus(t, "first Running", func(p *v1.Pod) bool { return p.Name == "first" && p.Status.Phase == v1.PodRunning })
	devs.mu.Lock()
	assert.Equal(t, []string{"first/c"}, devs.applied, "the plugin's answer is applied to the container's config")
	devs.mu.Unlock()

	// The one device is taken: the second pod is rejected with the
	// kubelet's reason and message, and nothing of it reaches the runtime.
	second := testPod(t, strings.ReplaceAll(devicePodYAML, "NAME", "second"))
	h.agent.SetPods([]*v1.Pod{first, second})
	got := h.rec.waitStatus(t, "second rejected", func(p *v1.Pod) bool { return p.Name == "second" && p.Status.Phase == v1.PodFailed })
	assert.Equal(t, "UnexpectedAdmissionError", got.Status.Reason)
	assert.Contains(t, got.Status.Message, "requested number of devices unavailable for example.com/dev")
	for _, c := range h.fake.Calls() {
		assert.NotContains(t, c, "second", "a rejected pod reached the runtime")
	}
}

func TestAgent_DeviceAllocationFailureIsACreateContainerConfigError(t *testing.T) {
	h := newHarness(t)
	h.agent.cfg.Devices = &fakeDevices{failFor: "broken"}
	h.agent.SetPods([]*v1.Pod{testPod(t, strings.ReplaceAll(devicePodYAML, "NAME", "broken"))})
	got := h.rec.waitStatus(t, "CreateContainerConfigError", func(p *v1.Pod) bool {
		cs := p.Status.ContainerStatuses
		return len(cs) == 1 && cs[0].State.Waiting != nil && cs[0].State.Waiting.Reason == "CreateContainerConfigError"
	})
	require.Contains(t, got.Status.ContainerStatuses[0].State.Waiting.Message, "plugin gone")
}
