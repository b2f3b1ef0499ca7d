package daemon

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/minikubelet/minikubelet/agent/api"
	"github.com/minikubelet/minikubelet/agent/manifest/manifesttest"
	"github.com/minikubelet/minikubelet/agent/source"
)

// nextEvent waits for a watch event (5 s at most).
func nextEvent(t *testing.T, w api.PodWatch) api.PodEvent {
	t.Helper()
	select {
	case ev, ok := <-w.Events():
		require.True(t, ok, "the watch ended")
		return ev
	case <-time.After(5 * time.Second):
		t.Fatal("no watch event within 5 s")
	}
	return api.PodEvent{}
}

// A pod submitted through the daemon, started by the agent (CRI fake) and
// deleted: its watch sees ADDED at once, MODIFIED for each status the
// agent reports up to Running, MODIFIED for the deletion mark, and
// DELETED once the teardown finished, with growing resource versions;
// nothing is polled.
func TestDaemon_WatchFollowsPodLifecycle(t *testing.T) {
	h := newHarness(t)
	store, err := source.NewPodStore(t.TempDir(), "node-1")
	require.NoError(t, err)
	d := New(h.agent, store, nil, Config{})
	w, err := d.WatchPods(api.PodWatchOptions{Namespace: "default", Name: "web"})
	require.NoError(t, err)
	defer w.Stop()
	other, err := d.WatchPods(api.PodWatchOptions{Name: "someone-else"})
	require.NoError(t, err)
	defer other.Stop()

	_, err = d.CreatePod(context.Background(), manifesttest.APIPod("default", "web", "x"))
	require.NoError(t, err)
	var evs []api.PodEvent
	ev := nextEvent(t, w)
	require.Equal(t, watch.Added, ev.Type)
	assert.Equal(t, v1.PodPending, ev.Pod.Status.Phase)
	evs = append(evs, ev)
	for ev.Pod.Status.Phase != v1.PodRunning {
		ev = nextEvent(t, w)
		require.Equal(t, watch.Modified, ev.Type)
		evs = append(evs, ev)
	}
	assert.Equal(t, ev.Pod.Status, mustGet(t, d, "web").Status, "the watch's last status is GET's")

	grace := int64(0)
	_, err = d.DeletePod(context.Background(), "default", "web", &grace)
	require.NoError(t, err)
	for ev.Type != watch.Deleted {
		ev = nextEvent(t, w)
		evs = append(evs, ev)
		if ev.Type != watch.Deleted {
			require.Equal(t, watch.Modified, ev.Type)
			assert.NotNil(t, ev.Pod.DeletionTimestamp, "every report after the deletion carries its mark")
		}
	}
	assert.Equal(t, "web", ev.Pod.Name)
	_, err = d.GetPod("default", "web")
	assert.Error(t, err, "DELETED is sent once the pod is gone")

	var last uint64
	for _, ev := range evs {
		rv, err := strconv.ParseUint(ev.Pod.ResourceVersion, 10, 64)
		require.NoError(t, err)
		assert.Greater(t, rv, last)
		last = rv
	}
	select {
	case ev := <-other.Events():
		t.Fatalf("a watch of another name got %s %s", ev.Type, ev.Pod.Name)
	default:
	}

	// A new watch starts from the present: nothing is left.
	w2, err := d.WatchPods(api.PodWatchOptions{})
	require.NoError(t, err)
	defer w2.Stop()
	select {
	case ev := <-w2.Events():
		t.Fatalf("initial event for a deleted pod: %s %s", ev.Type, ev.Pod.Name)
	default:
	}
}

// A rejected pod is ADDED (Failed, with the reason) and DELETED when no
// source wants it any more.
func TestDaemon_WatchRejectedPod(t *testing.T) {
	h := newHarness(t)
	d := New(h.agent, nil, nil, Config{})
	w, err := d.WatchPods(api.PodWatchOptions{})
	require.NoError(t, err)
	defer w.Stop()
	pod := testPod(t, `
apiVersion: v1
kind: Pod
metadata: {name: sneaky}
spec:
  containers: [{name: app, image: reg.local/x:1}]
  volumes: [{name: state, hostPath: {path: `+h.cfg.RootDir+`}}]
`)
	h.agent.SetPods([]*v1.Pod{pod})
	ev := nextEvent(t, w)
	assert.Equal(t, watch.Added, ev.Type)
	assert.Equal(t, v1.PodFailed, ev.Pod.Status.Phase)
	assert.Equal(t, "HostPathForbidden", ev.Pod.Status.Reason)
	h.agent.SetPods(nil)
	ev = nextEvent(t, w)
	assert.Equal(t, watch.Deleted, ev.Type)
	assert.Equal(t, "sneaky", ev.Pod.Name)
}

func mustGet(t *testing.T, d *Daemon, name string) *v1.Pod {
	t.Helper()
	p, err := d.GetPod("default", name)
	require.NoError(t, err)
	return p
}
