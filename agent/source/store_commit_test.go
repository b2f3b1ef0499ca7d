package source

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"

	"github.com/minikubelet/minikubelet/agent/manifest/manifesttest"
)

// queuedStore is a store whose first group commit waits for release, so
// that the requests made meanwhile queue up for the next group.
type queuedStore struct {
	*PodStore
	entered chan struct{} // closed when the first commit waits
	release chan struct{}
	mu      sync.Mutex
	sizes   []int // the size of every group committed
}

func newQueuedStore(t *testing.T) *queuedStore {
	t.Helper()
	s, _ := newTestStore(t)
	q := &queuedStore{PodStore: s, entered: make(chan struct{}), release: make(chan struct{})}
	s.batchHook = func(n int) {
		q.mu.Lock()
		q.sizes = append(q.sizes, n)
		first := len(q.sizes) == 1
		q.mu.Unlock()
		if first {
			close(q.entered)
			<-q.release
		}
	}
	return q
}

// queued waits until n requests wait for the next group.
func (q *queuedStore) queued(t *testing.T, n int) {
	t.Helper()
	require.Eventually(t, func() bool {
		q.PodStore.mu.Lock()
		defer q.PodStore.mu.Unlock()
		return len(q.PodStore.queue) == n
	}, 10*time.Second, time.Millisecond, "requests queued")
}

func (q *queuedStore) groups() []int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return append([]int(nil), q.sizes...)
}

// Requests made while a group is being committed are committed together,
// with one fsync of the directory, and none returns before its change is
// durable.
func TestPodStore_GroupCommit(t *testing.T) {
	q := newQueuedStore(t)
	first := make(chan error, 1)
	go func() {
		_, err := q.Add(manifesttest.APIPod("default", "first", "x"))
		first <- err
	}()
	<-q.entered

	const n = 20
	var returned atomic.Int32
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, errs[i] = q.Add(manifesttest.APIPod("default", fmt.Sprintf("p%d", i), "x"))
			returned.Add(1)
		}()
	}
	q.queued(t, n)
	assert.Zero(t, returned.Load(), "a request returned before its group was committed")
	assert.Empty(t, q.Snapshot().Pods, "nothing is shown before its group is committed")
	syncsBefore := q.Syncs.Load()

	close(q.release)
	require.NoError(t, <-first)
	wg.Wait()
	require.NoError(t, errors.Join(errs...))
	assert.Equal(t, []int{1, n}, q.groups())
	assert.Equal(t, int64(2), q.Syncs.Load()-syncsBefore, "one directory fsync per group (the files were fsynced before queueing)")
	assert.Len(t, q.Snapshot().Pods, n+1)
}

// Within one group the requests take effect in the order they arrived:
// each sees the ones before it, as if they had been committed one by one.
func TestPodStore_GroupCommitOrder(t *testing.T) {
	withUID := func(name string) *v1.Pod {
		p := manifesttest.APIPod("default", name, "x")
		p.UID = "4a9e6c1e-0000-4000-8000-000000000001"
		return p
	}
	steps := []struct {
		name string
		do   func(s *PodStore) error
		want error
	}{
		{"add x", func(s *PodStore) error { _, err := s.Add(manifesttest.APIPod("default", "x", "1")); return err }, nil},
		{"add x again", func(s *PodStore) error { _, err := s.Add(manifesttest.APIPod("default", "x", "2")); return err }, ErrPodExists},
		{"delete x", func(s *PodStore) error { return s.Delete("default", "x") }, nil},
		{"delete x again", func(s *PodStore) error { return s.Delete("default", "x") }, ErrPodNotFound},
		{"add x after its deletion", func(s *PodStore) error { _, err := s.Add(manifesttest.APIPod("default", "x", "3")); return err }, nil},
		{"add a uid", func(s *PodStore) error { _, err := s.Add(withUID("u1")); return err }, nil},
		{"add the uid under another name", func(s *PodStore) error { _, err := s.Add(withUID("u2")); return err }, ErrPodExists},
		{"delete its holder", func(s *PodStore) error { return s.Delete("default", "u1") }, nil},
		{"add the freed uid", func(s *PodStore) error { _, err := s.Add(withUID("u3")); return err }, nil},
		{"add a config map", func(s *PodStore) error {
			_, err := s.AddConfigMap(&v1.ConfigMap{ObjectMeta: manifesttest.APIPod("default", "cm", "").ObjectMeta})
			return err
		}, nil},
	}
	q := newQueuedStore(t)
	go func() { _, _ = q.Add(manifesttest.APIPod("default", "first", "x")) }()
	<-q.entered
	errs := make([]error, len(steps))
	var wg sync.WaitGroup
	for i, st := range steps {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = st.do(q.PodStore)
		}()
		q.queued(t, i+1) // the next one arrives after this one
	}
	close(q.release)
	wg.Wait()
	for i, st := range steps {
		t.Run(st.name, func(t *testing.T) {
			if st.want == nil {
				assert.NoError(t, errs[i])
			} else {
				assert.ErrorIs(t, errs[i], st.want)
			}
		})
	}
	assert.Equal(t, []int{1, len(steps)}, q.groups())
	assert.ErrorContains(t, errs[6], "uid 4a9e6c1e-0000-4000-8000-000000000001 is already used by pod default/u1")

	u := q.Snapshot()
	assert.Equal(t, []string{"default/first", "default/u3", "default/x"}, podNames(u))
	assert.Equal(t, "3", u.Pods[2].Spec.Containers[0].Env[0].Value, "the last add of x wins")
	require.Len(t, u.ConfigMaps, 1)

	// The directory holds exactly what the store says.
	reopened, err := NewPodStore(q.dir, "node-1")
	require.NoError(t, err)
	again := reopened.Snapshot()
	assert.Equal(t, u.Pods, again.Pods)
	assert.Equal(t, u.ConfigMaps, again.ConfigMaps)
	assert.Empty(t, again.Errors)
}

// A snapshot is read from memory, once per generation, and shares the
// pods that did not change: the agent compares them by pointer.
func TestPodStore_SnapshotGenerations(t *testing.T) {
	s, _ := newTestStore(t)
	_, err := s.Add(manifesttest.APIPod("default", "a", "x"))
	require.NoError(t, err)
	u1, g1 := s.SnapshotGen()
	u2, g2 := s.SnapshotGen()
	assert.Equal(t, g1, g2)
	assert.Same(t, &u1.Pods[0], &u2.Pods[0], "one generation, one snapshot")

	_, err = s.Add(manifesttest.APIPod("default", "b", "x"))
	require.NoError(t, err)
	u3, g3 := s.SnapshotGen()
	assert.Greater(t, g3, g2)
	require.Len(t, u3.Pods, 2)
	assert.Same(t, u1.Pods[0], u3.Pods[0], "an unchanged pod is the same object")

	// Failures change nothing.
	_, err = s.Add(manifesttest.APIPod("default", "b", "x"))
	require.ErrorIs(t, err, ErrPodExists)
	require.ErrorIs(t, s.Delete("default", "zz"), ErrPodNotFound)
	_, g4 := s.SnapshotGen()
	assert.Equal(t, g3, g4)
	select {
	case <-s.Updates():
	default:
		t.Fatal("no signal after the adds")
	}
	select {
	case <-s.Updates():
		t.Fatal("signals are merged, and failures send none")
	default:
	}
}

// Many concurrent requests on few names: every one gets an answer that
// fits some order, and the memory and the directory agree at the end.
func TestPodStore_ConcurrentRequestsAgreeWithDisk(t *testing.T) {
	s, dir := newTestStore(t)
	const workers, names = 16, 4
	var wg sync.WaitGroup
	errs := make(chan error, workers*20)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 20 {
				name := fmt.Sprintf("p%d", (w+i)%names)
				var err error
				if (w+i)%3 == 0 {
					err = s.Delete("default", name)
					if errors.Is(err, ErrPodNotFound) {
						err = nil
					}
				} else if _, err = s.Add(manifesttest.APIPod("default", name, "x")); errors.Is(err, ErrPodExists) {
					err = nil
				}
				if err != nil {
					errs <- err
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	reopened, err := NewPodStore(dir, "node-1")
	require.NoError(t, err)
	assert.Equal(t, podNames(s.Snapshot()), podNames(reopened.Snapshot()))
}
