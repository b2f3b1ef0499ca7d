package cluster

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/minikubelet/minikubelet/agent/source"
)

// fakeAgent stands in for (*agent.Agent).PodDone: a pod is known while it
// has a channel; asked records which pods were asked about, and whether
// the consumer was receiving by then.
type fakeAgent struct {
	mu    sync.Mutex
	done  map[types.UID]chan struct{}
	asked []types.UID
	// receiving is set by the consumer before it receives a set; a
	// PodDone call without it means the source asked before handing the
	// set over.
	receiving   *atomic.Bool
	earlyAsking bool
}

func (f *fakeAgent) PodDone(uid types.UID) <-chan struct{} {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.asked = append(f.asked, uid)
	if f.receiving != nil && !f.receiving.Load() {
		f.earlyAsking = true
	}
	if ch, ok := f.done[uid]; ok {
		return ch
	}
	return nil
}

func (f *fakeAgent) wasAsked(uid types.UID) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, u := range f.asked {
		if u == uid {
			return true
		}
	}
	return false
}

// markDeleted is p as the API server has it after a graceful delete (a
// new resource version: the fake clientset does not count them).
func markDeleted(p *v1.Pod, grace int64) *v1.Pod {
	now := metav1.NewTime(time.Now().Truncate(time.Second))
	p.DeletionTimestamp, p.DeletionGracePeriodSeconds = &now, &grace
	p.ResourceVersion = "2"
	return p
}

// deletes lists the delete actions on pods.
func deletes(client *fake.Clientset) []k8stesting.DeleteAction {
	var out []k8stesting.DeleteAction
	for _, a := range client.Actions() {
		if d, ok := a.(k8stesting.DeleteAction); ok && a.GetResource().Resource == "pods" {
			out = append(out, d)
		}
	}
	return out
}

// requireKubeletDelete checks that d is the kubelet's final delete of pod
// uid: grace 0, the UID as precondition.
func requireKubeletDelete(t *testing.T, d k8stesting.DeleteAction, name string, uid types.UID) {
	t.Helper()
	require.Equal(t, name, d.GetName())
	opts := d.GetDeleteOptions()
	require.NotNil(t, opts.GracePeriodSeconds)
	require.Equal(t, int64(0), *opts.GracePeriodSeconds)
	require.NotNil(t, opts.Preconditions)
	require.NotNil(t, opts.Preconditions.UID)
	require.Equal(t, uid, *opts.Preconditions.UID)
}

// startSource runs src until the test ends and returns its output.
func startSource(t *testing.T, src *PodSource) <-chan source.SourceUpdate {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	out := make(chan source.SourceUpdate)
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		src.Run(ctx, out)
	}()
	t.Cleanup(func() {
		cancel()
		<-stopped
	})
	return out
}

// applied closes a set's Applied channel, as the daemon does once it
// applied the set.
func applied(u source.SourceUpdate) source.SourceUpdate {
	if u.Applied != nil {
		close(u.Applied)
	}
	return u
}

// runSource runs src until the test ends and returns a receive function,
// which plays the daemon: each set it returns counts as applied.
func runSource(t *testing.T, src *PodSource) func() source.SourceUpdate {
	t.Helper()
	out := startSource(t, src)
	return func() source.SourceUpdate {
		t.Helper()
		select {
		case u := <-out:
			return applied(u)
		case <-time.After(10 * time.Second):
			t.Fatal("no update from the pod source")
			return source.SourceUpdate{}
		}
	}
}

func TestPodSource_DeletesAPodOnceTheAgentFinishedIt(t *testing.T) {
	client := fake.NewClientset(nodePod("web", "node-a"))
	fa := &fakeAgent{done: map[types.UID]chan struct{}{"uid-web": make(chan struct{})}}
	src := NewPodSource(fromClientset(client), "node-a", nil, WithPodDone(fa.PodDone))
	next := runSource(t, src)
	pods, _ := names(next())
	require.Equal(t, []string{"web"}, pods)

	// kubectl delete: the API server marks the pod.
	ctx := context.Background()
	_, err := client.CoreV1().Pods("default").Update(ctx, markDeleted(nodePod("web", "node-a"), 5), metav1.UpdateOptions{})
	require.NoError(t, err)
	u := next()
	require.Len(t, u.Pods, 1, "a pod being deleted stays in the set until the agent is done")
	require.NotNil(t, u.Pods[0].DeletionTimestamp)
	require.Equal(t, int64(5), *u.Pods[0].DeletionGracePeriodSeconds)

	// The source waits on the agent's channel, and deletes nothing before
	// it closes.
	require.Eventually(t, func() bool { return fa.wasAsked("uid-web") }, 10*time.Second, time.Millisecond)
	require.Empty(t, deletes(client), "nothing is deleted while the pod's teardown runs")
	close(fa.done["uid-web"])
	require.Eventually(t, func() bool { return len(deletes(client)) == 1 }, 10*time.Second, time.Millisecond)
	requireKubeletDelete(t, deletes(client)[0], "web", "uid-web")
	_, err = client.CoreV1().Pods("default").Get(ctx, "web", metav1.GetOptions{})
	require.True(t, apierrors.IsNotFound(err), "the object is gone: %v", err)
	pods, _ = names(next())
	require.Empty(t, pods)
}

func TestPodSource_DeletesAPodTheAgentDoesNotHaveOnceTheSetIsApplied(t *testing.T) {
	// Marked before the node ever saw it. "No such pod" may be trusted
	// only once the consumer applied the set with the mark: an unmarked
	// set could be on its way before it is received, and the agent gives
	// a pod first seen marked a worker (which reports its terminal phase)
	// only as it applies the set.
	client := fake.NewClientset(markDeleted(nodePod("web", "node-a"), 30))
	receiving := &atomic.Bool{}
	fa := &fakeAgent{receiving: receiving}
	src := NewPodSource(fromClientset(client), "node-a", nil, WithPodDone(fa.PodDone))
	rebuilt := make(chan struct{}, 10)
	src.rebuilt = func() { rebuilt <- struct{}{} }
	out := startSource(t, src)
	select {
	case <-rebuilt:
	case <-time.After(10 * time.Second):
		t.Fatal("the source built no set")
	}
	require.False(t, fa.wasAsked("uid-web"), "the agent is asked only once the consumer has the set")
	var u source.SourceUpdate
	select {
	case u = <-out:
	case <-time.After(10 * time.Second):
		t.Fatal("no update from the pod source")
	}
	require.Len(t, u.Pods, 1)
	require.NotNil(t, u.Pods[0].DeletionTimestamp)
	require.NotNil(t, u.Applied, "the set asks to be told when it is applied")
	time.Sleep(50 * time.Millisecond) // a deleter that did not wait would ask now
	require.False(t, fa.wasAsked("uid-web"), "the agent is asked only once the consumer applied the set")
	receiving.Store(true)
	applied(u)
	require.Eventually(t, func() bool { return len(deletes(client)) == 1 }, 10*time.Second, time.Millisecond)
	requireKubeletDelete(t, deletes(client)[0], "web", "uid-web")
	fa.mu.Lock()
	require.False(t, fa.earlyAsking)
	fa.mu.Unlock()
	select {
	case u = <-out:
		pods, _ := names(applied(u))
		require.Empty(t, pods)
	case <-time.After(10 * time.Second):
		t.Fatal("no update from the pod source after the delete")
	}
}

func TestPodSource_DeletesATerminalPodBeingDeleted(t *testing.T) {
	done := nodePod("job", "node-a")
	done.Status.Phase = v1.PodSucceeded
	running := nodePod("web", "node-a")
	client := fake.NewClientset(done, running)
	fa := &fakeAgent{done: map[types.UID]chan struct{}{"uid-job": make(chan struct{})}}
	src := NewPodSource(fromClientset(client), "node-a", nil, WithPodDone(fa.PodDone))
	next := runSource(t, src)
	pods, _ := names(next())
	require.Equal(t, []string{"web"}, pods, "a terminal pod is not run")

	ctx := context.Background()
	marked := markDeleted(nodePod("job", "node-a"), 30)
	marked.Status.Phase = v1.PodSucceeded
	_, err := client.CoreV1().Pods("default").Update(ctx, marked, metav1.UpdateOptions{})
	require.NoError(t, err)
	require.Eventually(t, func() bool { return fa.wasAsked("uid-job") }, 10*time.Second, time.Millisecond)
	require.Empty(t, deletes(client))
	close(fa.done["uid-job"])
	require.Eventually(t, func() bool { return len(deletes(client)) == 1 }, 10*time.Second, time.Millisecond)
	requireKubeletDelete(t, deletes(client)[0], "job", "uid-job")
	_, err = client.CoreV1().Pods("default").Get(ctx, "web", metav1.GetOptions{})
	require.NoError(t, err, "pods not being deleted are left alone")
}

func TestPodDeleter_Finish(t *testing.T) {
	serverError := apierrors.NewInternalError(errors.New("etcd is slow"))
	tests := []struct {
		name         string
		replies      []error // what the API server answers to the deletes, in order; then success
		wantAttempts int
		wantGone     bool
	}{
		{name: "deleted at once", wantAttempts: 1, wantGone: true},
		{name: "errors are retried with back-off", replies: []error{serverError, serverError}, wantAttempts: 3, wantGone: true},
		{name: "already gone", replies: []error{apierrors.NewNotFound(schema.GroupResource{Resource: "pods"}, "web")}, wantAttempts: 1},
		{name: "replaced by another pod of that name", replies: []error{apierrors.NewConflict(schema.GroupResource{Resource: "pods"}, "web", errors.New("precondition failed: UID"))}, wantAttempts: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			client := fake.NewClientset(markDeleted(nodePod("web", "node-a"), 30))
			var attempts int
			client.PrependReactor("delete", "pods", func(k8stesting.Action) (bool, runtime.Object, error) {
				attempts++
				if attempts <= len(tt.replies) {
					return true, nil, tt.replies[attempts-1]
				}
				return false, nil, nil
			})
			src := NewPodSource(fromClientset(client), "node-a", nil)
			src.deleteRetryBase, src.deleteRetryMax = time.Millisecond, 2*time.Millisecond
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			d := newPodDeleter(ctx, src)
			d.finish(ctx, deletion{namespace: "default", name: "web", uid: "uid-web"}, nil)
			require.NoError(t, ctx.Err(), "finish returned by itself")
			require.Equal(t, tt.wantAttempts, attempts)
			_, err := client.CoreV1().Pods("default").Get(ctx, "web", metav1.GetOptions{})
			require.Equal(t, tt.wantGone, apierrors.IsNotFound(err), "%v", err)
		})
	}
	t.Run("a pod whose object vanished is not waited for", func(t *testing.T) {
		client := fake.NewClientset()
		never := make(chan struct{})
		src := NewPodSource(fromClientset(client), "node-a", nil, WithPodDone(func(types.UID) <-chan struct{} { return never }))
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		d := newPodDeleter(ctx, src)
		d.observe([]*v1.Pod{markDeleted(nodePod("web", "node-a"), 30)}, 1)
		ready := make(chan struct{})
		close(ready)
		d.start(1, ready)
		d.observe(nil, 2)
		stopped := make(chan struct{})
		go func() {
			d.wg.Wait() // not stop: observe must have ended it
			close(stopped)
		}()
		select {
		case <-stopped:
		case <-time.After(10 * time.Second):
			t.Fatal("the deletion of a vanished pod still waits")
		}
		require.Empty(t, deletes(client))
	})
}

// The node deletes a finished pod's object only after its final status
// reached the API server, as the kubelet's status manager does: a watcher
// sees the terminal phase before the pod goes, even when the status
// writer's once-a-second limit would hold that status back (here its loop
// does not even run).
func TestPodSource_SendsTheFinalStatusBeforeTheDelete(t *testing.T) {
	client := fake.NewClientset(nodePod("web", "node-a"))
	sw := NewStatusWriter(fromClientset(client), nil, nil)
	fa := &fakeAgent{done: map[types.UID]chan struct{}{"uid-web": make(chan struct{})}}
	src := NewPodSource(fromClientset(client), "node-a", nil, WithPodDone(fa.PodDone), WithStatusFlush(sw.Flush))
	next := runSource(t, src)
	next()
	ctx := context.Background()
	_, err := client.CoreV1().Pods("default").Update(ctx, markDeleted(nodePod("web", "node-a"), 5), metav1.UpdateOptions{})
	require.NoError(t, err)
	u := next()
	require.Len(t, u.Pods, 1)
	require.Eventually(t, func() bool { return fa.wasAsked("uid-web") }, 10*time.Second, time.Millisecond)
	// The agent's teardown publishes the final status, then ends.
	final := u.Pods[0].DeepCopy()
	final.Status.Phase = v1.PodFailed
	sw.PodStatus(final)
	close(fa.done["uid-web"])
	require.Eventually(t, func() bool { return len(deletes(client)) == 1 }, 10*time.Second, time.Millisecond)
	patched, deleted := -1, -1
	for i, a := range client.Actions() {
		switch {
		case a.GetVerb() == "patch" && a.GetSubresource() == "status":
			require.Contains(t, string(a.(k8stesting.PatchAction).GetPatch()), `"phase":"Failed"`)
			patched = i
		case a.GetVerb() == "delete" && a.GetResource().Resource == "pods":
			deleted = i
		}
	}
	require.GreaterOrEqual(t, patched, 0, "the final status was never sent")
	require.Less(t, patched, deleted, "the final status goes before the delete")
}
