package agent

import (
	"testing"

	"github.com/stretchr/testify/assert"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/minikubelet/minikubelet/agent/gc"
	"github.com/minikubelet/minikubelet/agent/podspec"
)

// A pod is gone for container GC only once orphans were collected, and
// only without a worker; a foreground agent (no orphan gate) never
// collects.
func TestPodGoneForGC(t *testing.T) {
	a := testAgent(t, "")
	assert.False(t, a.podGoneForGC("u1"), "no orphan gate: not a daemon")
	open := a.gateOrphans()
	assert.False(t, a.podGoneForGC("u1"), "orphans not collected yet")
	open()
	assert.True(t, a.podGoneForGC("u1"))
	a.mu.Lock()
	a.workers[types.UID("u1")] = newPodWorker(a, &v1.Pod{})
	a.mu.Unlock()
	assert.False(t, a.podGoneForGC("u1"), "a worker runs or tears it down")
}

// The log file container GC keeps for each container is the one
// container.go names (agent/gc.ContainerLogFile with the engine's keys).
func TestContainerLogFile(t *testing.T) {
	c := &runtimeapi.Container{
		Labels:      map[string]string{podspec.LabelContainerName: "web"},
		Annotations: map[string]string{podspec.AnnotationRestartCount: "3"},
	}
	containerLogFile := gc.ContainerLogFile(podspec.LabelContainerName, podspec.AnnotationRestartCount)
	assert.Equal(t, "web/3.log", containerLogFile(c))
	assert.Empty(t, containerLogFile(&runtimeapi.Container{}))
	assert.True(t, a0().relistOwns(map[string]string{podspec.LabelManagedBy: podspec.ManagedByValue}))
	assert.False(t, a0().relistOwns(map[string]string{"other": "x"}))
}

func a0() *Agent { return &Agent{} }
