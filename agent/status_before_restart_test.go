package agent

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// holdingRuntime holds every CreateContainer of a restart (attempt > 0)
// until release is closed: a runtime slow to create, as containerd under
// load.
type holdingRuntime struct {
	scriptedRuntime
	release chan struct{}
}

func (r holdingRuntime) CreateContainer(ctx context.Context, sandboxID string, cfg *runtimeapi.ContainerConfig, sbCfg *runtimeapi.PodSandboxConfig) (string, error) {
	if cfg.GetMetadata().GetAttempt() > 0 {
		select {
		case <-r.release:
		case <-ctx.Done():
			return "", ctx.Err()
		}
	}
	return r.scriptedRuntime.CreateContainer(ctx, sandboxID, cfg, sbCfg)
}

// A container that died is shown terminated before its restart, however
// long the runtime takes to create the next instance, as the kubelet's
// syncPod publishes the status before its runtime's SyncPod. Before, the
// death showed only once the restart was done (TestChaosContainerdKill
// allows 5 s from the runtime's report of the exit).
func TestAgent_DeathShownBeforeTheRestart(t *testing.T) {
	h := newHarness(t)
	release := make(chan struct{})
	t.Cleanup(func() { close(release) }) // before the workers stop (LIFO)
	h.agent.runtime = holdingRuntime{
		scriptedRuntime: scriptedRuntime{FakeRuntime: h.fake.Runtime},
		release:         release,
	}
	pod := testPod(t, `
apiVersion: v1
kind: Pod
metadata: {name: dies}
spec:
  containers:
  - {name: app, image: reg.local/x:1}
`)
	h.agent.SetPods([]*v1.Pod{pod})
	p := h.rec.waitStatus(t, "app running", appStarted)
	require.NoError(t, h.fake.ExitContainer(strings.TrimPrefix(p.Status.ContainerStatuses[0].ContainerID, "containerd://"), 3))
	h.agent.workers[pod.UID].trigger()
	// As the kubelet shows a container between its death and a restart
	// without back-off: terminated, with its exit code.
	diedWithCode3 := func(p *v1.Pod) bool {
		term := p.Status.ContainerStatuses[0].State.Terminated
		return term != nil && term.ExitCode == 3 && term.Reason == "Error"
	}
	h.rec.waitStatus(t, "the death shown while the restart's CreateContainer is held", diedWithCode3)
	require.NotContains(t, h.fake.Calls(), "CreateContainer app attempt=1", "the restart was held")
	close(release)
	release = make(chan struct{}) // the cleanup's close
	p = h.rec.waitStatus(t, "app running again, restarted once", func(p *v1.Pod) bool {
		return appStarted(p) && p.Status.ContainerStatuses[0].RestartCount == 1
	})
	require.Equal(t, int32(3), p.Status.ContainerStatuses[0].LastTerminationState.Terminated.ExitCode)
}
