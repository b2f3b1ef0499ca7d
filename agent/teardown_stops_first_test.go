package agent

import (
	"context"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// Pods deleted together are all stopped before any is removed (agent/stopgate):
// a teardown whose stop has ended holds its removal while another pod's stop
// is still going on and the stops keep ending.
func TestTeardown_RemovalsWaitForTheOtherPodsStops(t *testing.T) {
	h := newHarness(t)
	pod := func(name string) *v1.Pod {
		return testPod(t, "apiVersion: v1\nkind: Pod\nmetadata: {name: "+name+"}\nspec:\n  containers: [{name: app, image: reg.local/x:1}]\n")
	}
	a, b := pod("a"), pod("b")
	h.agent.SetPods([]*v1.Pod{a, b})
	require.Eventually(t, func() bool {
		cs, err := h.fake.Runtime.ListContainers(context.Background(), &runtimeapi.ContainerFilter{State: &runtimeapi.ContainerStateValue{State: runtimeapi.ContainerState_CONTAINER_RUNNING}})
		return err == nil && len(cs) == 2
	}, 10*time.Second, 5*time.Millisecond, "both pods running")

	// The first pod to stop its sandbox is held there until released.
	release := make(chan struct{})
	var releaseOnce sync.Once
	releaseAll := func() { releaseOnce.Do(func() { close(release) }) }
	t.Cleanup(releaseAll) // a failed assertion must not leave the worker held
	var held atomic.Bool
	h.fake.OnCall("StopPodSandbox", func(ctx context.Context) {
		if held.CompareAndSwap(false, true) {
			select {
			case <-release:
			case <-ctx.Done():
			}
		}
	})
	doneA, doneB := h.agent.PodDone(a.UID), h.agent.PodDone(b.UID)
	h.agent.SetPods(nil)
	count := func(prefix string) int {
		n := 0
		for _, c := range h.fake.Calls() {
			if strings.HasPrefix(c, prefix) {
				n++
			}
		}
		return n
	}
	require.Eventually(t, func() bool { return count("StopPodSandbox ") == 1 }, 10*time.Second, 5*time.Millisecond, "the other pod's stop ends")
	time.Sleep(300 * time.Millisecond) // within the gate's quiet second
	assert.Zero(t, count("RemovePodSandbox "), "no removal while another pod is being stopped: %q", h.fake.Calls())

	releaseAll()
	for _, done := range []<-chan struct{}{doneA, doneB} {
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Fatalf("teardown did not end; calls: %q", h.fake.Calls())
		}
	}
	calls := h.fake.Calls()
	lastStop := -1
	for i, c := range calls {
		if strings.HasPrefix(c, "StopPodSandbox ") {
			lastStop = i
		}
	}
	firstRemove := slices.IndexFunc(calls, func(c string) bool { return strings.HasPrefix(c, "RemovePodSandbox ") })
	require.Equal(t, 2, count("RemovePodSandbox "), "both pods removed: %q", calls)
	assert.Less(t, lastStop, firstRemove, "every stop before the first removal: %q", calls)
}
