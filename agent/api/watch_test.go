package api

import (
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
)

func hubPod(ns, name string, phase v1.PodPhase) *v1.Pod {
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID("uid-" + name), Labels: map[string]string{"app": name}},
		Status:     v1.PodStatus{Phase: phase},
	}
}

// drain returns the events queued on w without waiting.
func drain(w PodWatch) (evs []PodEvent, closed bool) {
	for {
		select {
		case ev, ok := <-w.Events():
			if !ok {
				return evs, true
			}
			evs = append(evs, ev)
		default:
			return evs, false
		}
	}
}

// summary is "TYPE ns/name phase rv" of each event.
func summary(evs []PodEvent) []string {
	var out []string
	for _, ev := range evs {
		if ev.Type == watch.Error {
			out = append(out, "ERROR "+string(ev.Status.Reason))
			continue
		}
		out = append(out, string(ev.Type)+" "+ev.Pod.Namespace+"/"+ev.Pod.Name+" "+string(ev.Pod.Status.Phase))
	}
	return out
}

func TestPodWatchHub_InitialThenChangesInOrder(t *testing.T) {
	h := NewPodWatchHub(0, 0)
	h.Update(hubPod("b", "web", v1.PodRunning))
	h.Update(hubPod("a", "db", v1.PodPending))
	w, err := h.Watch(PodWatchOptions{})
	require.NoError(t, err)
	defer w.Stop()
	db := hubPod("a", "db", v1.PodRunning)
	h.Update(db)
	h.Delete(db)
	h.Delete(hubPod("x", "never-announced", ""))
	evs, closed := drain(w)
	require.False(t, closed)
	assert.Equal(t, []string{
		"ADDED a/db Pending", "ADDED b/web Running", // initial, sorted
		"MODIFIED a/db Running", "DELETED a/db Running",
	}, summary(evs))
	// Versions grow with every change; objects carry type meta.
	last := uint64(0)
	for _, ev := range evs[2:] {
		rv, err := strconv.ParseUint(ev.Pod.ResourceVersion, 10, 64)
		require.NoError(t, err)
		assert.Greater(t, rv, last)
		last = rv
		assert.Equal(t, "Pod", ev.Pod.Kind)
		assert.Equal(t, "v1", ev.Pod.APIVersion)
	}
	assert.Equal(t, strconv.FormatUint(last, 10), h.ResourceVersion())
	assert.Empty(t, db.ResourceVersion, "the caller's pod is not modified")
}

func TestPodWatchHub_Selection(t *testing.T) {
	h := NewPodWatchHub(0, 0)
	sel, err := labels.Parse("app in (web, api)")
	require.NoError(t, err)
	tests := map[string]struct {
		opts PodWatchOptions
		want []string
	}{
		"all":       {PodWatchOptions{}, []string{"ADDED a/web Pending", "ADDED b/web Pending", "ADDED a/db Pending"}},
		"namespace": {PodWatchOptions{Namespace: "a"}, []string{"ADDED a/web Pending", "ADDED a/db Pending"}},
		"name":      {PodWatchOptions{Name: "web"}, []string{"ADDED a/web Pending", "ADDED b/web Pending"}},
		"both":      {PodWatchOptions{Namespace: "b", Name: "web"}, []string{"ADDED b/web Pending"}},
		"labels":    {PodWatchOptions{Labels: sel}, []string{"ADDED a/web Pending", "ADDED b/web Pending"}},
	}
	watches := map[string]PodWatch{}
	for name, tt := range tests {
		w, err := h.Watch(tt.opts)
		require.NoError(t, err)
		watches[name] = w
	}
	h.Update(hubPod("a", "web", v1.PodPending))
	h.Update(hubPod("b", "web", v1.PodPending))
	h.Update(hubPod("a", "db", v1.PodPending))
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			evs, _ := drain(watches[name])
			assert.Equal(t, tt.want, summary(evs))
		})
	}
}

func TestPodWatchHub_ResourceVersions(t *testing.T) {
	h := NewPodWatchHub(0, 3)
	h.Update(hubPod("a", "p1", v1.PodPending))
	rv1 := h.ResourceVersion()
	h.Update(hubPod("a", "p1", v1.PodRunning))
	h.Update(hubPod("a", "p2", v1.PodPending))
	n1, _ := strconv.ParseUint(rv1, 10, 64)

	t.Run("replays the changes after a version", func(t *testing.T) {
		w, err := h.Watch(PodWatchOptions{ResourceVersion: rv1})
		require.NoError(t, err)
		defer w.Stop()
		evs, _ := drain(w)
		assert.Equal(t, []string{"MODIFIED a/p1 Running", "ADDED a/p2 Pending"}, summary(evs))
	})
	t.Run("the current version replays nothing", func(t *testing.T) {
		w, err := h.Watch(PodWatchOptions{ResourceVersion: h.ResourceVersion()})
		require.NoError(t, err)
		defer w.Stop()
		evs, _ := drain(w)
		assert.Empty(t, evs)
	})
	t.Run("the oldest replayable version", func(t *testing.T) {
		w, err := h.Watch(PodWatchOptions{ResourceVersion: strconv.FormatUint(n1-1, 10)})
		require.NoError(t, err)
		defer w.Stop()
		evs, _ := drain(w)
		assert.Len(t, evs, 3)
	})
	h.Update(hubPod("a", "p3", v1.PodPending)) // the ring holds 3: rv1's event is gone
	for name, tt := range map[string]struct{ rv, want string }{
		"too old":                 {strconv.FormatUint(n1-1, 10), "too old resource version"},
		"from before this daemon": {"12345", "too old resource version"},
		"not issued yet":          {strconv.FormatUint(n1+100, 10), "was not issued by this run of the daemon"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := h.Watch(PodWatchOptions{ResourceVersion: tt.rv})
			require.True(t, apierrors.IsResourceExpired(err), "410 Expired, not %v", err)
			assert.ErrorContains(t, err, tt.want)
			assert.ErrorContains(t, err, "list again")
		})
	}
	t.Run("not a version", func(t *testing.T) {
		_, err := h.Watch(PodWatchOptions{ResourceVersion: "abc"})
		require.ErrorContains(t, err, `resourceVersion "abc" is not a resource version`)
	})
	t.Run("initial events end with a bookmark", func(t *testing.T) {
		w, err := h.Watch(PodWatchOptions{InitialEventsEnd: true, Name: "p2"})
		require.NoError(t, err)
		defer w.Stop()
		evs, _ := drain(w)
		require.Len(t, evs, 2)
		assert.Equal(t, watch.Added, evs[0].Type)
		assert.Equal(t, watch.Bookmark, evs[1].Type)
		assert.Equal(t, "true", evs[1].Pod.Annotations[metav1.InitialEventsAnnotationKey])
		assert.Equal(t, h.ResourceVersion(), evs[1].Pod.ResourceVersion)
	})
}

// A watcher that does not read is closed once its buffer is full, with an
// Expired error after what it was sent; publishing never blocks and the
// other watchers go on.
func TestPodWatchHub_SlowWatcherClosed(t *testing.T) {
	h := NewPodWatchHub(2, 0)
	slow, err := h.Watch(PodWatchOptions{})
	require.NoError(t, err)
	fast, err := h.Watch(PodWatchOptions{})
	require.NoError(t, err)
	var fastSeen []PodEvent
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := range 5 {
			h.Update(hubPod("a", "p"+strconv.Itoa(i), v1.PodPending))
			evs, _ := drain(fast)
			fastSeen = append(fastSeen, evs...)
		}
	}()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("Update blocked on a watcher that does not read")
	}
	evs, closed := drain(slow)
	assert.True(t, closed)
	assert.Equal(t, []string{"ADDED a/p0 Pending", "ADDED a/p1 Pending", "ERROR Expired"}, summary(evs))
	assert.Contains(t, evs[2].Status.Message, "fell 2 events behind")
	assert.Len(t, fastSeen, 5)
	assert.Equal(t, 1, h.Watchers())
	slow.Stop() // after the hub closed it: no panic
	fast.Stop()
	fast.Stop()
	assert.Equal(t, 0, h.Watchers())
}
