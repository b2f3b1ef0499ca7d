package daemon

import (
	"context"
	"github.com/minikubelet/minikubelet/agent"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/minikubelet/minikubelet/agent/manifest/manifesttest"
	"github.com/minikubelet/minikubelet/agent/podevents"
	"github.com/minikubelet/minikubelet/agent/source"
)

// chanSource is a Source that sends what the test gives it.
type chanSource chan source.SourceUpdate

func (c chanSource) Run(ctx context.Context, out chan<- source.SourceUpdate) {
	for {
		select {
		case <-ctx.Done():
			return
		case u := <-c:
			select {
			case out <- u:
			case <-ctx.Done():
				return
			}
		}
	}
}

const sourceTestCluster = "cluster"

// clusterPod is a pod as a cluster source hands it over.
func clusterPod(t *testing.T, name, uid string) *v1.Pod {
	t.Helper()
	p := testPod(t, "apiVersion: v1\nkind: Pod\nmetadata:\n  name: "+name+"\nspec:\n  containers:\n  - name: c\n    image: busybox\n")
	p.UID = types.UID(uid)
	p.Annotations = map[string]string{}
	p.Annotations[source.AnnotationConfigSource] = sourceTestCluster
	return p
}

// A third source's pods run beside the local ones; a clash of names is
// won by the local API's pod; the local API refuses to delete the
// source's pods; a pod the source marks deleted is torn down with the
// source's grace period and not started again.
func TestDaemon_ExtraSource(t *testing.T) {
	h := newHarness(t)
	store, err := source.NewPodStore(t.TempDir(), "node-1")
	require.NoError(t, err)
	d := New(h.agent, store, nil, Config{})
	ctx := context.Background()

	local, err := d.CreatePod(ctx, manifesttest.APIPod("default", "web", "local"))
	require.NoError(t, err)
	remote := clusterPod(t, "db", "uid-db")
	clash := clusterPod(t, "web", "uid-web-cluster")
	d.apply(source.SourceUpdate{Source: sourceTestCluster, Pods: []*v1.Pod{clash, remote}})

	w, _ := h.agent.FindPod("default", "db")
	require.NotNil(t, w, "the source's pod runs")
	w, _ = h.agent.FindPod("default", "web")
	require.NotNil(t, w)
	assert.Equal(t, local.UID, w.Pod().UID, "the local API's pod wins a clash")
	_, ok := h.agent.GetPod(clash.UID)
	assert.False(t, ok, "the clashing pod of the source does not run")

	_, err = d.DeletePod(ctx, "default", "db", nil)
	require.True(t, apierrors.IsForbidden(err), "%v", err)
	assert.Contains(t, err.Error(), "kubectl delete pod -n default db")

	require.Eventually(t, func() bool {
		got, ok := h.agent.GetPod(remote.UID)
		return ok && got.Status.Phase == v1.PodRunning
	}, 10*time.Second, time.Millisecond, "db runs")
	done := h.agent.PodDone(remote.UID)
	require.NotNil(t, done)
	deleting := remote.DeepCopy()
	now := metav1.NewTime(h.clock.Now())
	grace := int64(7)
	deleting.DeletionTimestamp, deleting.DeletionGracePeriodSeconds = &now, &grace
	d.apply(source.SourceUpdate{Source: sourceTestCluster, Pods: []*v1.Pod{clash, deleting}})
	w, _ = h.agent.FindPod("default", "db")
	require.NotNil(t, w, "the worker tears the pod down")
	assert.True(t, w.Terminating())
	require.NotNil(t, w.Pod().DeletionGracePeriodSeconds)
	assert.Equal(t, int64(7), *w.Pod().DeletionGracePeriodSeconds, "the source's grace period is the teardown's")
	require.Eventually(t, func() bool {
		select {
		case <-done:
			return true
		default:
			return false
		}
	}, 10*time.Second, time.Millisecond, "the teardown ends")

	// The same marked pod again (every change resends the whole set): it
	// is not started again.
	d.apply(source.SourceUpdate{Source: sourceTestCluster, Pods: []*v1.Pod{clash, deleting}})
	_, ok = h.agent.GetPod(remote.UID)
	assert.False(t, ok, "a pod marked deleted is never started")
	assert.Nil(t, h.agent.PodDone(remote.UID))
}

// Orphans are collected only once every source sent its first set: pods
// of a source that has not answered yet (an API server down while the
// daemon starts) are left running meanwhile, while the pods known already
// start; once it answers, its pods are adopted and the rest collected.
func TestDaemon_OrphansWaitForEverySource(t *testing.T) {
	h := newHarness(t)
	kept, gone := clusterPod(t, "kept", "uid-kept"), clusterPod(t, "gone", "uid-gone")
	h.agent.SetPods([]*v1.Pod{kept, gone})
	for _, p := range []*v1.Pod{kept, gone} {
		require.Eventually(t, func() bool {
			got, ok := h.agent.GetPod(p.UID)
			return ok && got.Status.Phase == v1.PodRunning
		}, 10*time.Second, time.Millisecond, "%s runs", p.Name)
	}
	h.agent.StopWorkers() // the agent stops; its pods keep running

	// The next start of the agent, on the same runtime and root dir.
	a2 := agent.New(h.cfg, agent.Deps{Runtime: h.fake.Runtime, Images: h.fake.Images, Clock: h.clock})
	t.Cleanup(a2.StopWorkers)
	store, err := source.NewPodStore(t.TempDir(), "node-1")
	require.NoError(t, err)
	_, err = store.Add(manifesttest.APIPod("default", "local", "x"))
	require.NoError(t, err)
	src := make(chanSource)
	d := New(a2, store, nil, Config{Sources: []Source{src}})
	d.firstSetWait = 10 * time.Millisecond
	runDaemon(t, d)

	// The local pod starts although the source has not answered (orphans
	// would have been collected before the agent started).
	require.Eventually(t, func() bool {
		return slices.Contains(h.fake.Calls(), "StartContainer app")
	}, 10*time.Second, time.Millisecond, "the known pods start")
	removed := func(name string) bool {
		return slices.Contains(h.fake.Calls(), "RemovePodSandbox "+name)
	}
	assert.False(t, removed("kept") || removed("gone"), "no pod of the silent source is collected: %v", h.fake.Calls())

	src <- source.SourceUpdate{Source: sourceTestCluster, Pods: []*v1.Pod{kept}}
	require.Eventually(t, func() bool { return removed("gone") }, 10*time.Second, time.Millisecond,
		"the pod the source no longer has is collected once it answered")
	_, adopted := a2.GetPod(kept.UID)
	assert.True(t, adopted, "the pod it still has is adopted")
	assert.False(t, removed("kept"))
}

// The manifest directory's pods reach the StaticPods hook (mirror pods)
// on every change of that source, and only then.
func TestDaemon_StaticPodsHook(t *testing.T) {
	h := newHarness(t)
	var got [][]string
	d := New(h.agent, nil, nil, Config{StaticPods: func(pods []*v1.Pod) {
		var names []string
		for _, p := range pods {
			names = append(names, p.Name)
		}
		got = append(got, names)
	}})
	static := testPod(t, "apiVersion: v1\nkind: Pod\nmetadata:\n  name: static\nspec:\n  containers:\n  - name: c\n    image: busybox\n")
	d.apply(source.SourceUpdate{Source: source.SourceFile, Pods: []*v1.Pod{static}})
	d.apply(source.SourceUpdate{Source: sourceTestCluster, Pods: []*v1.Pod{clusterPod(t, "db", "uid-db")}})
	d.apply(source.SourceUpdate{Source: source.SourceFile})
	assert.Equal(t, [][]string{{"static"}, nil}, got)
}

// Until the daemon collected orphans, PodDone of a pod the agent does not
// know waits: the pod may be a previous run's, still in the runtime (a
// cluster pod deleted while the daemon was down must not have its object
// deleted before its containers are gone).
func TestDaemon_PodDoneWaitsForOrphanCollection(t *testing.T) {
	h := newHarness(t)
	gone := clusterPod(t, "gone", "uid-gone")
	h.agent.SetPods([]*v1.Pod{gone})
	require.Eventually(t, func() bool {
		got, ok := h.agent.GetPod(gone.UID)
		return ok && got.Status.Phase == v1.PodRunning
	}, 10*time.Second, time.Millisecond)
	h.agent.StopWorkers()

	a2 := agent.New(h.cfg, agent.Deps{Runtime: h.fake.Runtime, Images: h.fake.Images, Clock: h.clock})
	t.Cleanup(a2.StopWorkers)
	src := make(chanSource)
	d := New(a2, nil, nil, Config{Sources: []Source{src}})
	d.store = mustStore(t)
	d.firstSetWait = time.Hour
	runDaemon(t, d)
	var done <-chan struct{}
	require.Eventually(t, func() bool {
		done = a2.PodDone(gone.UID)
		return done != nil
	}, 10*time.Second, time.Millisecond, "before collection, an unknown pod is not done")

	// The source marks it deleted: it is collected, torn down, then done.
	deleting := gone.DeepCopy()
	now := metav1.NewTime(h.clock.Now())
	deleting.DeletionTimestamp = &now
	src <- source.SourceUpdate{Source: sourceTestCluster, Pods: []*v1.Pod{deleting}}
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("PodDone never closed")
	}
	assert.Contains(t, h.fake.Calls(), "RemovePodSandbox gone", "done only after the runtime's objects are gone")
	assert.Nil(t, a2.PodDone(types.UID("never-seen")), "after collection, an unknown pod is done")
}

func mustStore(t *testing.T) *source.PodStore {
	t.Helper()
	s, err := source.NewPodStore(t.TempDir(), "node-1")
	require.NoError(t, err)
	return s
}

// A deletion mark only ever shortens the grace period, and keeps its first
// timestamp (the kubelet's rule for a second, shorter delete).
func TestAgent_MarkDeletedOnlyShortensGrace(t *testing.T) {
	h := newHarness(t)
	p := clusterPod(t, "db", "uid-db")
	h.agent.SetPods([]*v1.Pod{p})
	w, _ := h.agent.FindPod("default", "db")
	require.NotNil(t, w)
	mark := func(grace int64) {
		m := p.DeepCopy()
		now := metav1.NewTime(h.clock.Now())
		m.DeletionTimestamp, m.DeletionGracePeriodSeconds = &now, &grace
		h.agent.MarkDeleted([]*v1.Pod{m})
	}
	mark(30)
	first := *w.Pod().DeletionTimestamp
	h.clock.Step(5 * time.Second)
	mark(5)
	assert.Equal(t, int64(5), *w.Pod().DeletionGracePeriodSeconds, "a shorter grace period wins")
	assert.Equal(t, first, *w.Pod().DeletionTimestamp, "the first deletion's time stays")
	mark(9)
	assert.Equal(t, int64(5), *w.Pod().DeletionGracePeriodSeconds, "a longer one does not")
}

// runDaemon runs d until the test ends.
func runDaemon(t *testing.T, d *Daemon) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	runDone := make(chan error, 1)
	go func() { runDone <- d.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		<-runDone
	})
}

// A static pod whose file was removed and created again (Recreated) is
// torn down and started again, its container counting on from the first
// run, as the kubelet does with its file source's removal and addition.
func TestDaemon_RecreatedStaticPodRunsAgain(t *testing.T) {
	h := newHarness(t)
	d := New(h.agent, nil, nil, Config{})
	static := testPod(t, "apiVersion: v1\nkind: Pod\nmetadata:\n  name: static\nspec:\n  containers:\n  - name: c\n    image: busybox\n")
	d.apply(source.SourceUpdate{Source: source.SourceFile, Pods: []*v1.Pod{static}})
	require.Eventually(t, func() bool {
		got, ok := h.agent.GetPod(static.UID)
		return ok && got.Status.Phase == v1.PodRunning
	}, 10*time.Second, time.Millisecond)
	first := h.agent.PodDone(static.UID)

	d.apply(source.SourceUpdate{Source: source.SourceFile, Pods: []*v1.Pod{static}, Recreated: []types.UID{static.UID}})
	select {
	case <-first:
	case <-time.After(10 * time.Second):
		t.Fatal("the first run was not torn down")
	}
	require.Eventually(t, func() bool {
		got, ok := h.agent.GetPod(static.UID)
		return ok && got.Status.Phase == v1.PodRunning && len(got.Status.ContainerStatuses) == 1 &&
			got.Status.ContainerStatuses[0].RestartCount == 1 && h.agent.PodDone(static.UID) != first
	}, 10*time.Second, time.Millisecond, "runs again, restart count 1")
	assert.Contains(t, h.fake.Calls(), "RemovePodSandbox static", "torn down in between")

	// The same set without news: nothing more.
	again := h.agent.PodDone(static.UID)
	d.apply(source.SourceUpdate{Source: source.SourceFile, Pods: []*v1.Pod{static}})
	w, _ := h.agent.FindPod("default", "static")
	require.NotNil(t, w)
	assert.False(t, w.Terminating())
	assert.Equal(t, again, h.agent.PodDone(static.UID))
}

// statuses records the statuses the agent publishes, by pod UID.
type statuses struct {
	mu   sync.Mutex
	byID map[types.UID][]v1.PodPhase
}

func (s *statuses) PodEvent(*v1.Pod, podevents.Event) {}
func (s *statuses) PodStep(*v1.Pod, podevents.Step)   {}
func (s *statuses) PodStatus(p *v1.Pod) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.byID[p.UID] = append(s.byID[p.UID], p.Status.Phase)
}

func (s *statuses) of(uid types.UID) []v1.PodPhase {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.byID[uid])
}

// A cluster pod whose first set already marks it deleted (created and
// deleted before the source could hand it over): applying that set, which
// closes its Applied channel for the cluster source's deleter, gives the
// agent a worker that only tears down. Nothing is created, and the pod's
// terminal phase is published, which the node's final delete of the
// object then follows. The same set again starts nothing more.
func TestDaemon_PodFirstSeenMarkedDeletedGetsItsTerminalPhase(t *testing.T) {
	h := newHarness(t)
	rec := &statuses{byID: map[types.UID][]v1.PodPhase{}}
	h.agent.AddObserver(rec)
	d := New(h.agent, nil, nil, Config{})
	p := clusterPod(t, "pending", "uid-pending")
	now := metav1.NewTime(h.clock.Now())
	grace := int64(30)
	p.DeletionTimestamp, p.DeletionGracePeriodSeconds = &now, &grace
	applied := make(chan struct{})
	d.apply(source.SourceUpdate{Source: sourceTestCluster, Pods: []*v1.Pod{p}, Applied: applied})
	select {
	case <-applied:
	default:
		t.Fatal("apply returned without closing the set's Applied channel")
	}
	if done := h.agent.PodDone(p.UID); done != nil {
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Fatal("the teardown did not finish")
		}
	}
	assert.Equal(t, []v1.PodPhase{v1.PodFailed}, rec.of(p.UID), "the statuses published")
	for _, c := range h.fake.Calls() {
		assert.False(t, strings.HasPrefix(c, "RunPodSandbox") || strings.HasPrefix(c, "PullImage"), "created for a deleted pod: %s", c)
	}
	d.apply(source.SourceUpdate{Source: sourceTestCluster, Pods: []*v1.Pod{p}, Applied: make(chan struct{})})
	assert.False(t, h.agent.Holds(p.UID), "a second teardown started")
	assert.Len(t, rec.of(p.UID), 1)
}
