package agent

import (
	"context"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/proto"
	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/minikubelet/minikubelet/agent/eviction"
	"github.com/minikubelet/minikubelet/agent/gc"
	"github.com/minikubelet/minikubelet/agent/podspec"
	"github.com/minikubelet/minikubelet/cri/critest"
)

// Under disk pressure the eviction manager's reclaim removes the dead
// containers and sandboxes of terminated pods, deleted or not, as the
// kubelet's DeleteAllUnusedContainers does, while a live pod keeps what
// the normal policy keeps. These tests drive the real reclaim path: the
// eviction manager over gc.Reclaimer over the agent's container GC, on
// the fake runtime.

// firstRunRuntime scripts only the first instance (attempt 0) of the
// containers it names; later instances run until stopped.
type firstRunRuntime struct {
	*critest.FakeRuntime
	annotate map[string]map[string]string
}

func (r firstRunRuntime) CreateContainer(ctx context.Context, sandboxID string, cfg *runtimeapi.ContainerConfig, sbCfg *runtimeapi.PodSandboxConfig) (string, error) {
	if extra, ok := r.annotate[cfg.GetMetadata().GetName()]; ok && cfg.GetMetadata().GetAttempt() == 0 {
		cfg = proto.Clone(cfg).(*runtimeapi.ContainerConfig)
		maps.Copy(cfg.Annotations, extra)
	}
	return r.FakeRuntime.CreateContainer(ctx, sandboxID, cfg, sbCfg)
}

// freeingReclaimer is gc.Reclaimer whose container collection also frees
// the disk in the fake stats, so that the manager evicts nothing after it
// (a live pod stays to be looked at).
type freeingReclaimer struct {
	gc.Reclaimer
	freed func()
}

func (r freeingReclaimer) DeleteDeadContainers(ctx context.Context) error {
	err := r.Reclaimer.DeleteDeadContainers(ctx)
	r.freed()
	return err
}

// reclaimHarness runs pods on the fake runtime (first instances scripted
// by annotate) under a daemon-like agent (orphans collected) with a
// nodefs.available threshold whose reclaim is the real container GC.
func reclaimHarness(t *testing.T, annotate map[string]map[string]string) (*harness, *fakeEvictionStats, *gc.ContainerGC) {
	t.Helper()
	h := newHarness(t)
	h.agent.runtime = firstRunRuntime{FakeRuntime: h.fake.Runtime, annotate: annotate}
	h.fake.SetImages("reg.local/busybox:1")
	h.agent.gateOrphans()()
	g, err := h.agent.NewContainerGC()
	require.NoError(t, err)
	ths, err := eviction.ParseThresholds("nodefs.available<10%", "", "")
	require.NoError(t, err)
	st := &fakeEvictionStats{pods: map[string]*eviction.PodStats{}}
	rc := freeingReclaimer{Reclaimer: gc.Reclaimer{Containers: g}, freed: func() { st.set(eviction.SignalNodeFsAvailable, 50*mi, 100*mi) }}
	require.NoError(t, h.agent.EnableEviction(eviction.Config{Thresholds: ths, Stats: st, Reclaim: rc, PressureTransitionPeriod: time.Minute}))
	return h, st, g
}

// podObjects lists the runtime's containers (name/attempt/state) and
// sandboxes (attempt/state) of pod uid.
func podObjects(t *testing.T, h *harness, uid string) (ctrs, sbs []string) {
	t.Helper()
	cs, err := h.fake.Runtime.ListContainers(context.Background(), nil)
	require.NoError(t, err)
	for _, c := range cs {
		if c.GetLabels()[podspec.LabelPodUID] == uid {
			ctrs = append(ctrs, c.GetMetadata().GetName()+"/"+strings.TrimPrefix(c.GetState().String(), "CONTAINER_"))
		}
	}
	ss, err := h.fake.Runtime.ListPodSandbox(context.Background(), nil)
	require.NoError(t, err)
	for _, sb := range ss {
		if sb.GetLabels()[podspec.LabelPodUID] == uid {
			sbs = append(sbs, strings.TrimPrefix(sb.GetState().String(), "SANDBOX_"))
		}
	}
	slices.Sort(ctrs)
	return ctrs, sbs
}

// syncAgain wakes the pod's worker, as the relist does for the removal,
// and waits for the sync to finish.
func syncAgain(t *testing.T, h *harness, pod *v1.Pod) {
	t.Helper()
	h.agent.mu.Lock()
	w := h.agent.workers[pod.UID]
	h.agent.mu.Unlock()
	require.NotNil(t, w)
	w.trigger()
	h.waitCallsSettle(t)
}

// A Completed pod (restartPolicy Never, its init and app containers
// exited 0) keeps its dead containers and sandbox through normal GC (it is
// not deleted), but under disk pressure the reclaim removes them all; its
// status stays Succeeded with the containers' terminated states, and it is
// not run again.
func TestEviction_ReclaimRemovesTerminatedPodContainers(t *testing.T) {
	exit0 := map[string]string{critest.AnnotationExitAfterMs: "0"}
	h, st, g := reclaimHarness(t, map[string]map[string]string{"setup": exit0, "job": exit0})
	pod := testPod(t, `
apiVersion: v1
kind: Pod
metadata: {name: done, namespace: default}
spec:
  restartPolicy: Never
  initContainers:
  - {name: setup, image: reg.local/busybox:1}
  containers:
  - {name: job, image: reg.local/busybox:1}
`)
	h.agent.SetPods([]*v1.Pod{pod})
	h.rec.waitStatus(t, "the pod Succeeded", phaseIs(v1.PodSucceeded))
	h.waitCallsSettle(t)
	before, ok := h.agent.GetPod(pod.UID)
	require.True(t, ok)
	ctrs, sbs := podObjects(t, h, string(pod.UID))
	require.Equal(t, []string{"job/EXITED", "setup/EXITED"}, ctrs)
	require.Equal(t, []string{"NOTREADY"}, sbs, "the finished pod's sandbox was stopped")

	// Normal GC keeps a pod that is not deleted.
	res, err := g.Collect(context.Background())
	require.NoError(t, err)
	assert.Empty(t, res.Containers, "periodic GC keeps a terminated pod's containers until it is deleted")

	// Disk pressure: the reclaim removes everything of the terminated pod.
	st.set(eviction.SignalNodeFsAvailable, 5*mi, 100*mi)
	assert.Empty(t, h.agent.eviction.Synchronize(context.Background()), "reclaim was enough: nothing evicted")
	ctrs, sbs = podObjects(t, h, string(pod.UID))
	assert.Empty(t, ctrs, "the terminated pod's dead containers were reclaimed")
	assert.Empty(t, sbs, "and its sandbox")

	// Its status stays what it was, and nothing of it runs again.
	calls := len(h.fake.Calls())
	syncAgain(t, h, pod)
	after, ok := h.agent.GetPod(pod.UID)
	require.True(t, ok)
	assert.Equal(t, v1.PodSucceeded, after.Status.Phase)
	assert.Equal(t, before.Status.ContainerStatuses, after.Status.ContainerStatuses)
	assert.Equal(t, before.Status.InitContainerStatuses, after.Status.InitContainerStatuses)
	require.Len(t, after.Status.ContainerStatuses, 1)
	term := after.Status.ContainerStatuses[0].State.Terminated
	require.NotNil(t, term, "the container's terminated state stays: %+v", after.Status.ContainerStatuses[0].State)
	assert.Equal(t, int32(0), term.ExitCode)
	assert.Equal(t, "Completed", term.Reason)
	for _, c := range h.fake.Calls()[calls:] {
		assert.False(t, strings.HasPrefix(c, "RunPodSandbox") || strings.HasPrefix(c, "CreateContainer"), "the pod ran again: %s", c)
	}
}

// A live pod keeps under disk pressure what the normal policy keeps: the
// last dead instance of a restarted container (its restart count and
// `logs --previous`) and its running sandbox.
func TestEviction_ReclaimKeepsRunningPodsLastDeadInstance(t *testing.T) {
	h, st, _ := reclaimHarness(t, map[string]map[string]string{"app": {critest.AnnotationExitAfterMs: "0", critest.AnnotationExitCode: "1"}})
	pod := testPod(t, `
apiVersion: v1
kind: Pod
metadata: {name: restarted, namespace: default}
spec:
  containers:
  - {name: app, image: reg.local/busybox:1}
`)
	h.agent.SetPods([]*v1.Pod{pod})
	h.rec.waitStatus(t, "the restarted container running", func(p *v1.Pod) bool {
		return len(p.Status.ContainerStatuses) == 1 && p.Status.ContainerStatuses[0].RestartCount == 1 && p.Status.ContainerStatuses[0].State.Running != nil
	})
	h.waitCallsSettle(t)
	ctrs, sbs := podObjects(t, h, string(pod.UID))
	require.Equal(t, []string{"app/EXITED", "app/RUNNING"}, ctrs)
	require.Equal(t, []string{"READY"}, sbs)

	st.set(eviction.SignalNodeFsAvailable, 5*mi, 100*mi)
	assert.Empty(t, h.agent.eviction.Synchronize(context.Background()), "reclaim was enough: nothing evicted")
	ctrs, sbs = podObjects(t, h, string(pod.UID))
	assert.Equal(t, []string{"app/EXITED", "app/RUNNING"}, ctrs, "a live pod's last dead instance stays")
	assert.Equal(t, []string{"READY"}, sbs)
	p, _ := h.agent.GetPod(pod.UID)
	require.NotNil(t, p.Status.ContainerStatuses[0].LastTerminationState.Terminated)
	assert.Equal(t, int32(1), p.Status.ContainerStatuses[0].LastTerminationState.Terminated.ExitCode)
}
