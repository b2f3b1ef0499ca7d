package agent

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/types"

	"github.com/minikubelet/minikubelet/agent/eviction"
	"github.com/minikubelet/minikubelet/agent/source"
)

// ranAgain returns the calls of a log that start a pod or a container.
// jobPod is the restartPolicy Never pod default/job these tests finish.
func jobPod(t *testing.T) *v1.Pod {
	t.Helper()
	return testPod(t, `
apiVersion: v1
kind: Pod
metadata: {name: job, namespace: default}
spec:
  restartPolicy: Never
  containers: [{name: app, image: reg.local/x:1}]
`)
}

func ranAgain(calls []string) []string {
	var out []string
	for _, c := range calls {
		if strings.HasPrefix(c, "RunPodSandbox") || strings.HasPrefix(c, "CreateContainer") || strings.HasPrefix(c, "StartContainer") {
			out = append(out, c)
		}
	}
	return out
}

// A local-API pod (restartPolicy Never) that completed keeps its final
// status across a daemon restart: the restarted agent, whose runtime no
// longer holds anything of the pod (GC reclaimed it), starts nothing and
// reports Succeeded with the container's exit code; deleting the pod
// removes the stored status.
func TestDaemon_FinishedAPIPodNotRunAfterRestart(t *testing.T) {
	storeDir := t.TempDir()
	h := newHarness(t)
	store, err := source.NewPodStore(storeDir, "node-1")
	require.NoError(t, err)
	d := newAPIStore(h.agent, store)
	created, err := d.CreatePod(context.Background(), jobPod(t))
	require.NoError(t, err)
	p := h.rec.waitStatus(t, "Running", phaseIs(v1.PodRunning))
	require.NoError(t, h.fake.ExitContainer(strings.TrimPrefix(p.Status.ContainerStatuses[0].ContainerID, "containerd://"), 0))
	h.agent.mu.Lock()
	h.agent.workers[created.UID].trigger()
	h.agent.mu.Unlock()
	h.rec.waitStatus(t, "Succeeded", phaseIs(v1.PodSucceeded))
	require.Eventually(t, func() bool {
		_, ok := store.FinalStatus(created.UID)
		return ok
	}, 10*time.Second, 5*time.Millisecond, "the finished pod's status is stored")
	before, ok := h.agent.GetPod(created.UID)
	require.True(t, ok)
	h.agent.stopWorkers()

	// The restart: a new agent on a runtime with nothing of the pod left
	// (a fresh fake: its containers and sandbox were reclaimed), a new
	// store read from the same directory.
	h2 := newHarness(t)
	store2, err := source.NewPodStore(storeDir, "node-1")
	require.NoError(t, err)
	require.Empty(t, store2.Snapshot().Errors)
	d2 := newAPIStore(h2.agent, store2)
	d2.applyStore()
	got, err := d2.GetPod("default", "job")
	require.NoError(t, err)
	assert.Equal(t, v1.PodSucceeded, got.Status.Phase)
	require.Len(t, got.Status.ContainerStatuses, 1)
	term := got.Status.ContainerStatuses[0].State.Terminated
	require.NotNil(t, term, "the container's terminated state: %+v", got.Status.ContainerStatuses[0].State)
	assert.Equal(t, int32(0), term.ExitCode)
	assert.Equal(t, "Completed", term.Reason)
	assert.Equal(t, before.Status.ContainerStatuses[0].State.Terminated.ExitCode, term.ExitCode)
	assert.True(t, equality.Semantic.DeepEqual(before.Status.Conditions, got.Status.Conditions), "conditions: %v, stored %v", got.Status.Conditions, before.Status.Conditions)

	// Nothing starts, now or at the next resyncs.
	h2.waitCallsSettle(t)
	for range 3 {
		h2.clock.Step(time.Minute)
		h2.waitCallsSettle(t)
	}
	assert.Empty(t, ranAgain(h2.fake.Calls()), "the finished pod ran again")
	h2.agent.mu.Lock()
	w := h2.agent.workers[created.UID]
	h2.agent.mu.Unlock()
	require.NotNil(t, w)
	assert.True(t, w.isFinished(), "GC sees it finished")
	assert.False(t, w.evictionCleanedUp(), "not an evicted pod")

	// Deleting it removes its stored status.
	_, err = d2.DeletePod(context.Background(), "default", "job", nil)
	require.NoError(t, err)
	_, ok = store2.FinalStatus(created.UID)
	assert.False(t, ok)
	store3, err := source.NewPodStore(storeDir, "node-1")
	require.NoError(t, err)
	_, ok = store3.FinalStatus(created.UID)
	assert.False(t, ok, "the status file was removed")
}

// A stored Evicted status restores an evicted pod: finished, never run,
// and cleaned up for GC (its dead containers go at once, as before the
// restart). A manifest-directory pod keeps no final status: it is never
// looked up.
func TestAgent_StoredEvictedStatus(t *testing.T) {
	h := newHarness(t)
	store, err := source.NewPodStore(t.TempDir(), "node-1")
	require.NoError(t, err)
	d := newAPIStore(h.agent, store)
	stored, err := store.Add(testPod(t, `
apiVersion: v1
kind: Pod
metadata: {name: hog, namespace: default}
spec:
  containers: [{name: app, image: reg.local/x:1}]
`))
	require.NoError(t, err)
	evicted := v1.PodStatus{Phase: v1.PodFailed, Reason: eviction.Reason, Message: "The node was low on resource: ephemeral-storage.",
		ContainerStatuses: []v1.ContainerStatus{{Name: "app", State: v1.ContainerState{Terminated: &v1.ContainerStateTerminated{ExitCode: 137, Reason: "Error"}}}}}
	require.NoError(t, store.SaveFinalStatus(stored, evicted))

	d.applyStore()
	got, err := d.GetPod("default", "hog")
	require.NoError(t, err)
	assert.Equal(t, v1.PodFailed, got.Status.Phase)
	assert.Equal(t, eviction.Reason, got.Status.Reason)
	assert.Equal(t, int32(137), got.Status.ContainerStatuses[0].State.Terminated.ExitCode)
	h.waitCallsSettle(t)
	h.clock.Step(time.Minute)
	h.waitCallsSettle(t)
	assert.Empty(t, ranAgain(h.fake.Calls()), "the evicted pod came back")
	h.agent.mu.Lock()
	w := h.agent.workers[stored.UID]
	h.agent.mu.Unlock()
	require.NotNil(t, w)
	assert.True(t, w.evictionCleanedUp())
	assert.False(t, h.agent.evictPod(stored.UID, 0, "again", true), "not evicted twice")

	// The same spec from the manifest directory (another source) is not
	// looked up: keepsFinalStatus answers for API pods only.
	static := stored.DeepCopy()
	static.Annotations[source.AnnotationConfigSource] = source.SourceFile
	_, ok := h.agent.storedFinalStatus(static)
	assert.False(t, ok)
}

// A corrupt stored final status is reported (FinalStatusErrors, which the
// daemon logs) and ignored: the pod runs as it did before statuses were
// stored, and the daemon does not fail.
func TestDaemon_CorruptFinalStatusRunsPod(t *testing.T) {
	dir := t.TempDir()
	store, err := source.NewPodStore(dir, "node-1")
	require.NoError(t, err)
	stored, err := store.Add(jobPod(t))
	require.NoError(t, err)
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "status"), 0o700))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "status", string(stored.UID)+".json"), []byte(`{"uid":`), 0o600))

	h := newHarness(t)
	store, err = source.NewPodStore(dir, "node-1")
	require.NoError(t, err)
	require.Len(t, store.FinalStatusErrors(), 1)
	d := newAPIStore(h.agent, store)
	d.applyStore()
	h.rec.waitStatus(t, "Running", phaseIs(v1.PodRunning))
	assert.NotEmpty(t, ranAgain(h.fake.Calls()))
}

// failingFinalStore is a finalStatusStore whose first fail writes fail.
type failingFinalStore struct {
	mu    sync.Mutex
	fail  int
	tries int
	saved map[types.UID]v1.PodStatus
}

var _ finalStatusStore = (*failingFinalStore)(nil)

func (f *failingFinalStore) FinalStatus(uid types.UID) (v1.PodStatus, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	st, ok := f.saved[uid]
	return st, ok
}

func (f *failingFinalStore) SaveFinalStatus(pod *v1.Pod, st v1.PodStatus) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.tries++
	if f.fail > 0 {
		f.fail--
		return errors.New("no space left on device")
	}
	f.saved[pod.UID] = st
	return nil
}

func (f *failingFinalStore) state() (tries int, saved bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.tries, len(f.saved) > 0
}

// A final status whose write failed (a full disk) is written at a later
// sync of the finished pod.
func TestAgent_FinalStatusWriteRetried(t *testing.T) {
	h := newHarness(t)
	store := &failingFinalStore{fail: 1, saved: map[types.UID]v1.PodStatus{}}
	h.agent.finalStatus = store
	pod := jobPod(t)
	pod.Annotations = map[string]string{source.AnnotationConfigSource: source.SourceAPI}
	h.agent.SetPods([]*v1.Pod{pod})
	p := h.rec.waitStatus(t, "Running", phaseIs(v1.PodRunning))
	require.NoError(t, h.fake.ExitContainer(strings.TrimPrefix(p.Status.ContainerStatuses[0].ContainerID, "containerd://"), 0))
	h.agent.mu.Lock()
	w := h.agent.workers[pod.UID]
	h.agent.mu.Unlock()
	w.trigger()
	h.rec.waitStatus(t, "Succeeded", phaseIs(v1.PodSucceeded))
	require.Eventually(t, func() bool { tries, _ := store.state(); return tries == 1 }, 10*time.Second, 5*time.Millisecond)
	_, saved := store.state()
	require.False(t, saved)

	w.trigger() // the next sync of the finished pod
	require.Eventually(t, func() bool { _, saved := store.state(); return saved }, 10*time.Second, 5*time.Millisecond, "the write is tried again")
	st, _ := store.FinalStatus(pod.UID)
	assert.Equal(t, v1.PodSucceeded, st.Phase)
	w.trigger()
	h.waitCallsSettle(t)
	tries, _ := store.state()
	assert.Equal(t, 2, tries, "written once it succeeded, not at every sync")
}

// apiStore plays the daemon's part in these tests (agent/daemon sits above
// this package, so its tests cannot import it): the local API's store
// keeps the final status (daemon.New), the agent gets the store's set
// (Daemon.applyStore), and pods are created, read and deleted by name as
// the local API does.
type apiStore struct {
	a *Agent
	s *source.PodStore
}

func newAPIStore(a *Agent, s *source.PodStore) *apiStore {
	a.finalStatus = s
	return &apiStore{a: a, s: s}
}

func (d *apiStore) applyStore() { d.a.SetPods(d.s.Snapshot().Pods) }

func (d *apiStore) CreatePod(_ context.Context, pod *v1.Pod) (*v1.Pod, error) {
	stored, err := d.s.Add(pod)
	if err != nil {
		return nil, err
	}
	d.applyStore()
	return d.GetPod(stored.Namespace, stored.Name)
}

func (d *apiStore) GetPod(namespace, name string) (*v1.Pod, error) {
	w, rejected := d.a.findPod(namespace, name)
	switch {
	case w != nil:
		return w.snapshot(), nil
	case rejected != nil:
		return rejected.DeepCopy(), nil
	}
	return nil, fmt.Errorf("pod %s/%s not found", namespace, name)
}

func (d *apiStore) DeletePod(_ context.Context, namespace, name string, grace *int64) (*v1.Pod, error) {
	w, _ := d.a.findPod(namespace, name)
	if w != nil {
		w.setDeletion(grace, d.a.clock.Now(), true)
	}
	if err := d.s.Delete(namespace, name); err != nil {
		return nil, err
	}
	d.applyStore()
	return nil, nil
}
