package agent

import (
	"context"
	"errors"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/minikubelet/minikubelet/agent/podcgroup"
	"github.com/minikubelet/minikubelet/agent/podspec"
	"github.com/minikubelet/minikubelet/cgroups/cgroupstest"
	"github.com/minikubelet/minikubelet/cni"
)

// The CRI calls of one pod start and one teardown, every one of them: what
// the raw floor of the benchmark makes (test/bench/raw.go) plus the
// observations the agent needs. On a small machine each call costs the
// runtime CPU that the start itself needs, so a call added here must be a
// decision, not an accident.
const callsPod = `
apiVersion: v1
kind: Pod
metadata: {name: web, namespace: demo}
spec:
  containers: [{name: app, image: reg.local/app:1}]
`

// startCallsPod starts callsPod with its image present and returns it once
// Running and the sync that published it has finished.
func startCallsPod(t *testing.T, h *harness) *v1.Pod {
	t.Helper()
	h.fake.SetImages("reg.local/app:1")
	pod := testPod(t, callsPod)
	h.agent.SetPods([]*v1.Pod{pod})
	h.rec.waitStatus(t, "Running", phaseIs(v1.PodRunning))
	h.waitCallsSettle(t)
	return pod
}

func TestSyncPod_CallsOfAStart(t *testing.T) {
	h := newHarness(t)
	startCallsPod(t, h)
	calls := h.fake.Calls()
	assert.ElementsMatch(t, []string{
		// The first observation finds nothing; the pod network is asked
		// about meanwhile.
		"ListPodSandbox", "ListContainers", "Status",
		// The raw floor: the image check runs while the sandbox comes up.
		"ImageStatus reg.local/app:1",
		"RunPodSandbox web attempt=0", "PodSandboxStatus web",
		"CreateContainer app attempt=0", "StartContainer app",
		// The closing observation asks only about what the sync changed:
		// the sandbox's status came with its creation.
		"ContainerStatus app",
	}, calls)
	// Nothing is due afterwards: no second sync of the new pod.
	h.clock.Step(time.Second)
	h.waitCallsSettle(t)
	assert.Equal(t, calls, h.fake.Calls(), "calls after the start")
	for _, pair := range [][2]string{
		{"ListContainers", "RunPodSandbox web attempt=0"},
		{"Status", "RunPodSandbox web attempt=0"},
		{"RunPodSandbox web attempt=0", "PodSandboxStatus web"},
		{"PodSandboxStatus web", "CreateContainer app attempt=0"},
		{"ImageStatus reg.local/app:1", "CreateContainer app attempt=0"},
		{"CreateContainer app attempt=0", "StartContainer app"},
		{"StartContainer app", "ContainerStatus app"},
	} {
		assert.Less(t, indexOf(calls, pair[0]), indexOf(calls, pair[1]), "%s before %s: %q", pair[0], pair[1], calls)
	}
}

// listsInOrder returns calls with each pair of an observation's two lists,
// which the agent asks at once (listPod), in one order.
func listsInOrder(calls []string) []string {
	out := slices.Clone(calls)
	for i := 0; i+1 < len(out); i++ {
		if out[i] == "ListContainers" && out[i+1] == "ListPodSandbox" {
			out[i], out[i+1] = out[i+1], out[i]
			i++
		}
	}
	return out
}

// An observation asks for the pod's sandboxes and containers at once: each
// list is held until the other has been asked, which two lists in a row
// never pass.
func TestSyncPod_ObservationListsAtOnce(t *testing.T) {
	h := newHarness(t)
	both := func(mine, other chan struct{}) func(context.Context) {
		var once sync.Once
		return func(ctx context.Context) {
			once.Do(func() { close(mine) })
			select {
			case <-other:
			case <-time.After(5 * time.Second):
			}
		}
	}
	sbAsked, ctrAsked := make(chan struct{}), make(chan struct{})
	h.fake.OnCall("ListPodSandbox", both(sbAsked, ctrAsked))
	h.fake.OnCall("ListContainers", both(ctrAsked, sbAsked))
	t0 := time.Now()
	startCallsPod(t, h)
	assert.Less(t, time.Since(t0), 5*time.Second, "the two lists were asked one after the other: %q", h.fake.Calls())
}

// A failed sandbox list ends the observation at once: the container list
// asked beside it is cancelled, not waited for.
func TestListPod_AFailedSandboxListCancelsTheOther(t *testing.T) {
	h := newHarness(t)
	cancelled := make(chan bool, 1)
	h.fake.OnCall("ListContainers", func(ctx context.Context) {
		select {
		case <-ctx.Done():
			cancelled <- true
		case <-time.After(5 * time.Second):
			cancelled <- false
		}
	})
	h.fake.InjectError("ListPodSandbox", errors.New("runtime gone"))
	_, err := h.agent.listPod(context.Background(), testPod(t, callsPod))
	require.ErrorContains(t, err, "list sandboxes: runtime gone")
	assert.True(t, <-cancelled, "the container list was not cancelled")
}

func TestSyncPod_CallsOfATeardown(t *testing.T) {
	h := newHarness(t)
	pod := startCallsPod(t, h)
	done := h.agent.PodDone(pod.UID)
	h.fake.Reset()
	h.agent.SetPods(nil)
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("teardown did not finish")
	}
	// The lists tell what runs. One ContainerStatus per container, once
	// stopped: the final state the pod's status publishes before the
	// container goes (publishStopped, the kubelet's SyncTerminatingPod).
	// RemovePodSandbox removes the sandbox's containers (containerd 1.6
	// and 2.x).
	assert.Equal(t, []string{
		"ListPodSandbox", "ListContainers",
		"StopContainer app timeout=30", "StopPodSandbox web", "ContainerStatus app", "RemovePodSandbox web",
	}, listsInOrder(h.fake.Calls()))
	ctrs, err := h.fake.Runtime.ListContainers(context.Background(), nil)
	require.NoError(t, err)
	assert.Empty(t, ctrs, "the sandbox's removal removed its container")
}

// A sandbox the runtime fails to remove has its containers removed one by
// one (a container the runtime refuses to remove is what usually keeps
// it), and the next attempt removes the sandbox.
func TestSyncPod_TeardownRemovesContainersWhenTheSandboxStays(t *testing.T) {
	h := newHarness(t)
	pod := startCallsPod(t, h)
	done := h.agent.PodDone(pod.UID)
	h.fake.Reset()
	h.fake.InjectError("RemovePodSandbox", errors.New("failed to remove container: task still running"))
	h.agent.SetPods(nil)
	require.Eventually(t, func() bool {
		return indexOf(h.fake.Calls(), "RemoveContainer app") >= 0
	}, 10*time.Second, 5*time.Millisecond, "no RemoveContainer after the failed RemovePodSandbox: %q", h.fake.Calls())
	// The retry comes 1 s later by the agent's clock.
	deadline := time.After(10 * time.Second)
	for finished := false; !finished; {
		select {
		case <-done:
			finished = true
		case <-time.After(20 * time.Millisecond):
			h.clock.Step(500 * time.Millisecond)
		case <-deadline:
			t.Fatalf("teardown did not finish: %q", h.fake.Calls())
		}
	}
	calls := listsInOrder(h.fake.Calls())
	assert.Equal(t, []string{
		"ListPodSandbox", "ListContainers",
		"StopContainer app timeout=30", "StopPodSandbox web", "ContainerStatus app", "RemovePodSandbox web",
		"RemoveContainer app",
		// The retry: the sandbox is already stopped.
		"ListPodSandbox", "ListContainers", "RemovePodSandbox web",
	}, calls)
	sbs, err := h.fake.Runtime.ListPodSandbox(context.Background(), nil)
	require.NoError(t, err)
	assert.Empty(t, sbs)
}

// A relist wakes a worker only for runtime changes the worker has not
// observed itself: what its own sync created and started does not make it
// sync again, a container that exits by itself does, and a change seen
// while the worker is busy is looked at again once it is idle.
func TestRelist_WakesOnlyForChangesTheWorkerHasNotSeen(t *testing.T) {
	ctx := context.Background()
	h := newHarness(t)
	pod := startCallsPod(t, h)
	w := h.agent.workers[pod.UID]
	require.NotNil(t, w)
	r := newRelister(h.agent)

	changed, err := r.relist(ctx)
	require.NoError(t, err)
	assert.Empty(t, changed, "the worker's own start is no news to it")

	ctrs, err := h.fake.Runtime.ListContainers(ctx, nil)
	require.NoError(t, err)
	require.Len(t, ctrs, 1)
	w.mu.Lock()
	w.busy = true
	w.mu.Unlock()
	require.NoError(t, h.fake.ExitContainer(ctrs[0].Id, 1))
	changed, err = r.relist(ctx)
	require.NoError(t, err)
	assert.Empty(t, changed, "a busy worker ends its sync with an observation")

	w.setIdle()
	changed, err = r.relist(ctx)
	require.NoError(t, err)
	assert.Equal(t, []types.UID{pod.UID}, changed, "the exit, which the worker has not seen")

	changed, err = r.relist(ctx)
	require.NoError(t, err)
	assert.Empty(t, changed, "reported once")
}

// A new pod's cgroup is created while the pod is first observed; it exists
// before the sandbox, and a teardown right after the pod's first sync
// removes it for good (the sync waits for its creation).
func TestSyncPod_NewPodCgroupBeforeSandboxAndGoneAfterTeardown(t *testing.T) {
	h := newHarness(t)
	cg := cgroupstest.NewFake()
	h.agent.cgroups = cg
	pod := startCallsPod(t, h)
	name := podcgroup.Name(pod, podspec.QOSClass(pod))
	assert.True(t, cg.Exists(name), "the pod cgroup exists while the pod runs")

	done := h.agent.PodDone(pod.UID)
	h.agent.SetPods(nil)
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("teardown did not finish")
	}
	assert.False(t, cg.Exists(name), "the pod cgroup is gone after the teardown")

	// Added and removed at once: the teardown follows the first sync, and
	// nothing of the prelude outlives it.
	again := testPod(t, strings.Replace(callsPod, "name: web", "name: brief", 1))
	h.agent.SetPods([]*v1.Pod{again})
	done = h.agent.PodDone(again.UID)
	h.agent.SetPods(nil)
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("teardown did not finish")
	}
	assert.False(t, cg.Exists(podcgroup.Name(again, podspec.QOSClass(again))), "no pod cgroup left behind")
}

// serve and run give the agent a NetworkReady cache (cni.ReadyCache): a
// second pod started while the node's conflist stands does not ask the
// runtime's Status again; once the conflist is gone, the next start asks
// and waits for the network, as without the cache.
func TestSyncPod_NetworkReadyStandsWhileTheConflistDoes(t *testing.T) {
	h := newHarness(t)
	h.agent.readyCache = cni.NewReadyCache(h.clock.Now)
	conf := cni.ConfPath(h.agent.cfg.Network)
	require.NoError(t, os.WriteFile(conf, []byte(`{}`), 0o644))
	statusCalls := func() int { return countCall(h.fake.Calls(), "Status") }
	named := func(name string, cond func(*v1.Pod) bool) func(*v1.Pod) bool {
		return func(p *v1.Pod) bool { return p.Name == name && cond(p) }
	}

	first := startCallsPod(t, h)
	require.Equal(t, 1, statusCalls())
	second := testPod(t, strings.Replace(callsPod, "name: web", "name: web2", 1))
	h.agent.SetPods([]*v1.Pod{first, second})
	h.rec.waitStatus(t, "web2 Running", named("web2", phaseIs(v1.PodRunning)))
	h.waitCallsSettle(t)
	assert.Contains(t, h.fake.Calls(), "RunPodSandbox web2 attempt=0")
	assert.Equal(t, 1, statusCalls(), "the second start reused the first one's answer: %q", h.fake.Calls())

	require.NoError(t, os.Remove(conf))
	h.fake.SetNetworkReady(false, "NetworkPluginNotReady")
	third := testPod(t, strings.Replace(callsPod, "name: web", "name: web3", 1))
	h.agent.SetPods([]*v1.Pod{first, second, third})
	p := h.rec.waitStatus(t, "web3 waiting for the network", named("web3", func(p *v1.Pod) bool {
		w := p.Status.ContainerStatuses[0].State.Waiting
		return w != nil && strings.Contains(w.Message, "network is not ready")
	}))
	assert.Contains(t, p.Status.ContainerStatuses[0].State.Waiting.Message, "has no conflist")
	assert.Equal(t, 2, statusCalls(), "a removed conflist is asked about")
	assert.NotContains(t, h.fake.Calls(), "RunPodSandbox web3 attempt=0")
}
