package cluster

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/minikubelet/minikubelet/agent/manifest"
)

// staticPodOf is a static pod as the daemon hands it over: from the
// manifest directory, defaulted (service account "default" included).
func staticPodOf(t *testing.T, name, image string) *v1.Pod {
	t.Helper()
	p := &v1.Pod{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"app": name}},
		Spec:       v1.PodSpec{Containers: []v1.Container{{Name: "c", Image: image}}},
	}
	manifest.SetPodDefaults(p, "/etc/minikubelet/manifests/"+name+".yaml", "node-a")
	require.Empty(t, manifest.ValidatePod(p))
	p.Annotations = map[string]string{annotationConfigSource: sourceFile, "minikubelet.io/source-file": "/etc/minikubelet/manifests/" + name + ".yaml"}
	return p
}

// mirrorHarness is MirrorPods against a fake clientset that holds the
// Node and gives created objects UIDs, as the API server does; reconcile
// and the status writer are driven step by step.
type mirrorHarness struct {
	client *fake.Clientset
	m      *MirrorPods
	w      *StatusWriter
}

func newMirrorHarness(t *testing.T, objects ...runtime.Object) *mirrorHarness {
	t.Helper()
	node := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-a", UID: "node-uid"}}
	client := fake.NewClientset(append([]runtime.Object{node}, objects...)...)
	var n atomic.Int64
	client.PrependReactor("create", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		p := a.(k8stesting.CreateAction).GetObject().(*v1.Pod)
		p.UID = types.UID(fmt.Sprintf("mirror-uid-%d", n.Add(1)))
		return false, nil, nil
	})
	w := NewStatusWriter(fromClientset(client), nil, clocktesting.NewFakeClock(t0))
	return &mirrorHarness{client: client, w: w, m: NewMirrorPods(fromClientset(client), "node-a", w, nil)}
}

// markDeleted gives the server's pod name a deletion timestamp, as a
// user's graceful delete does, and returns the pod as it was.
func (h *mirrorHarness) markDeleted(t *testing.T, name string) *v1.Pod {
	t.Helper()
	p := h.get(t, name)
	now := metav1.Now()
	p.DeletionTimestamp = &now
	_, err := h.client.CoreV1().Pods("default").Update(context.Background(), p, metav1.UpdateOptions{})
	require.NoError(t, err)
	return p
}

func (h *mirrorHarness) get(t *testing.T, name string) *v1.Pod {
	t.Helper()
	p, err := h.client.CoreV1().Pods("default").Get(context.Background(), name, metav1.GetOptions{})
	require.NoError(t, err)
	return p
}

// serverMirrors is what the pod source would report: the mirrors on the
// fake API server.
func (h *mirrorHarness) serverMirrors(t *testing.T) []*v1.Pod {
	t.Helper()
	l, err := h.client.CoreV1().Pods("").List(context.Background(), metav1.ListOptions{})
	require.NoError(t, err)
	var out []*v1.Pod
	for i := range l.Items {
		if isMirrorPod(&l.Items[i]) {
			out = append(out, &l.Items[i])
		}
	}
	return out
}

func (h *mirrorHarness) verbs() (out []string) {
	for _, a := range h.client.Actions() {
		if a.GetResource().Resource != "pods" {
			continue
		}
		switch a := a.(type) {
		case k8stesting.CreateAction:
			out = append(out, "create "+a.GetObject().(*v1.Pod).Name)
		case k8stesting.DeleteAction:
			out = append(out, "delete "+a.GetName())
		case k8stesting.GetAction:
			out = append(out, "get "+a.GetName())
		case k8stesting.PatchAction:
			out = append(out, "patch "+a.GetName())
		case k8stesting.UpdateAction:
			out = append(out, "update "+a.GetObject().(*v1.Pod).Name)
		}
	}
	return out
}

// deletesOf checks that every delete of pod name was the kubelet's
// mirror delete (grace 0, UID precondition) and returns their UIDs.
func deletesOf(t *testing.T, client *fake.Clientset, name string) (uids []types.UID) {
	t.Helper()
	for _, d := range deletes(client) {
		if d.GetName() != name {
			continue
		}
		opts := d.GetDeleteOptions()
		require.NotNil(t, opts.GracePeriodSeconds)
		require.Zero(t, *opts.GracePeriodSeconds)
		require.NotNil(t, opts.Preconditions)
		uids = append(uids, *opts.Preconditions.UID)
	}
	return uids
}

func TestMirrorPod_Mapping(t *testing.T) {
	static := staticPodOf(t, "web", "busybox:1.36")
	require.Equal(t, "default", static.Spec.ServiceAccountName, "the agent's defaults name a service account")
	hash := staticPodHash(static)
	m := mirrorPod(static, hash, "node-a", "node-uid")
	require.Equal(t, "web-node-a", m.Name)
	require.Equal(t, "default", m.Namespace)
	require.Empty(t, m.UID, "the API server gives the mirror its own UID")
	require.Equal(t, map[string]string{"app": "web"}, m.Labels)
	require.Equal(t, hash, m.Annotations[annotationConfigMirror])
	require.Equal(t, "file", m.Annotations[annotationConfigSource])
	require.Equal(t, string(static.UID), m.Annotations[annotationConfigHash])
	require.Equal(t, "/etc/minikubelet/manifests/web.yaml", m.Annotations["minikubelet.io/source-file"])
	require.Equal(t, "node-a", m.Spec.NodeName)
	require.Empty(t, m.Spec.ServiceAccountName, "a node may not create pods that use a service account")
	require.Empty(t, m.Spec.DeprecatedServiceAccount)
	require.Equal(t, static.Spec.Containers, m.Spec.Containers)
	controller := true
	require.Equal(t, []metav1.OwnerReference{{APIVersion: "v1", Kind: "Node", Name: "node-a", UID: "node-uid", Controller: &controller}}, m.OwnerReferences)
	require.NotContains(t, static.Annotations, annotationConfigMirror, "the static pod is not modified")

	require.Equal(t, hash, staticPodHash(staticPodOf(t, "web", "busybox:1.36")), "the same manifest, the same hash")
	require.NotEqual(t, hash, staticPodHash(staticPodOf(t, "web", "busybox:1.37")), "an edit changes it")
	// The kubelet's contract (node e2e validateMirrorPod): config.mirror
	// equals the static pod's config.hash, its UID.
	require.Equal(t, m.Annotations[annotationConfigHash], m.Annotations[annotationConfigMirror])
}

func TestMirrorPods_KeepsTheMirrorsInStep(t *testing.T) {
	h := newMirrorHarness(t)
	ctx := context.Background()
	web := staticPodOf(t, "web", "busybox:1.36")

	// Nothing happens before the mirrors on the server are known.
	h.m.SetStaticPods([]*v1.Pod{web})
	require.NoError(t, h.m.reconcile(ctx))
	require.Empty(t, h.verbs())

	h.m.observeMirrors(nil)
	require.NoError(t, h.m.reconcile(ctx))
	mirror := h.get(t, "web-node-a")
	require.Equal(t, staticPodHash(web), mirror.Annotations[annotationConfigMirror])
	require.Equal(t, types.UID("node-uid"), mirror.OwnerReferences[0].UID)

	// In step: nothing to do, whatever the source reports.
	h.m.observeMirrors(h.serverMirrors(t))
	h.client.ClearActions()
	require.NoError(t, h.m.reconcile(ctx))
	require.Empty(t, h.verbs())

	t.Run("a mirror a user deletes comes back", func(t *testing.T) {
		deleting := h.markDeleted(t, "web-node-a")
		h.m.observeMirrors(h.serverMirrors(t))
		h.client.ClearActions()
		require.NoError(t, h.m.reconcile(ctx))
		require.Equal(t, []string{"delete web-node-a", "create web-node-a"}, h.verbs())
		require.Equal(t, []types.UID{deleting.UID}, deletesOf(t, h.client, "web-node-a"))
		require.NotEqual(t, deleting.UID, h.get(t, "web-node-a").UID)
	})
	t.Run("an edited static pod gets a new mirror", func(t *testing.T) {
		old := h.get(t, "web-node-a")
		edited := staticPodOf(t, "web", "busybox:1.37")
		h.m.SetStaticPods([]*v1.Pod{edited})
		h.m.observeMirrors(h.serverMirrors(t))
		h.client.ClearActions()
		require.NoError(t, h.m.reconcile(ctx))
		require.Equal(t, []string{"delete web-node-a", "create web-node-a"}, h.verbs())
		require.Equal(t, []types.UID{old.UID}, deletesOf(t, h.client, "web-node-a"))
		now := h.get(t, "web-node-a")
		require.Equal(t, staticPodHash(edited), now.Annotations[annotationConfigMirror])
		require.Equal(t, "busybox:1.37", now.Spec.Containers[0].Image)
	})
	t.Run("a static pod removed loses its mirror", func(t *testing.T) {
		last := h.get(t, "web-node-a")
		h.m.SetStaticPods(nil)
		h.m.observeMirrors(h.serverMirrors(t))
		h.client.ClearActions()
		require.NoError(t, h.m.reconcile(ctx))
		require.Equal(t, []types.UID{last.UID}, deletesOf(t, h.client, "web-node-a"))
		_, err := h.client.CoreV1().Pods("default").Get(ctx, "web-node-a", metav1.GetOptions{})
		require.True(t, apierrors.IsNotFound(err))
	})
}

// A mirror deleted while Run's create of it returns: the source's report
// of its absence comes before Run records its own write, which must not
// hide that report (the mirror would stay gone until the next report; with
// the pod source and a fake API server that is never, and CI saw
// TestMirrorPods_WithThePodSource fail so).
func TestMirrorPods_ReportDuringCreateWins(t *testing.T) {
	h := newMirrorHarness(t)
	ctx := context.Background()
	h.m.SetStaticPods([]*v1.Pod{staticPodOf(t, "web", "busybox:1.36")})
	h.m.observeMirrors(nil)
	fired := false
	h.client.PrependReactor("create", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if fired {
			return false, nil, nil
		}
		fired = true
		p := a.(k8stesting.CreateAction).GetObject().(*v1.Pod).DeepCopy()
		p.UID = "deleted-at-once"
		// Before the create returns to Run: the source reports the mirror,
		// then (a user deleted it) no mirror. The server keeps nothing.
		h.m.observeMirrors([]*v1.Pod{p})
		h.m.observeMirrors(nil)
		return true, p, nil
	})
	require.NoError(t, h.m.reconcile(ctx))
	require.True(t, fired)
	require.Empty(t, h.m.serverMirrorsKnown(), "the report after the create stands")
	// The report's wake: the next reconcile creates the mirror again.
	require.NoError(t, h.m.reconcile(ctx))
	mirror := h.get(t, "web-node-a")
	require.NotEqual(t, types.UID("deleted-at-once"), mirror.UID)
	require.Equal(t, []string{"default/web-node-a"}, h.m.serverMirrorsKnown(), "Run's write of the new mirror is recorded")
}

func TestMirrorPods_ExistingPodsOfTheMirrorsName(t *testing.T) {
	web := staticPodOf(t, "web", "busybox:1.36")
	ctx := context.Background()
	t.Run("an up-to-date mirror the source has not reported yet is kept", func(t *testing.T) {
		existing := mirrorPod(web, staticPodHash(web), "node-a", "node-uid")
		existing.UID = "earlier"
		h := newMirrorHarness(t, existing)
		h.m.SetStaticPods([]*v1.Pod{web})
		h.m.observeMirrors(nil)
		require.NoError(t, h.m.reconcile(ctx))
		require.Empty(t, deletes(h.client))
		require.Equal(t, types.UID("earlier"), h.get(t, "web-node-a").UID)
	})
	t.Run("a user's pod of that name is left alone, with what to do", func(t *testing.T) {
		users := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web-node-a", Namespace: "default", UID: "users"}, Spec: v1.PodSpec{NodeName: "node-b"}}
		h := newMirrorHarness(t, users)
		h.m.SetStaticPods([]*v1.Pod{web})
		h.m.observeMirrors(nil)
		err := h.m.reconcile(ctx)
		require.ErrorContains(t, err, "a pod of that name exists that is not this node's mirror pod; rename the static pod or delete that pod")
		require.Empty(t, deletes(h.client))
	})
	t.Run("a mirror of no static pod is deleted", func(t *testing.T) {
		orphan := mirrorPod(staticPodOf(t, "gone", "busybox:1.36"), "h", "node-a", "node-uid")
		orphan.UID = "orphan"
		h := newMirrorHarness(t, orphan)
		h.m.SetStaticPods([]*v1.Pod{web})
		h.m.observeMirrors(h.serverMirrors(t))
		require.NoError(t, h.m.reconcile(ctx))
		require.Equal(t, []types.UID{"orphan"}, deletesOf(t, h.client, "gone-node-a"))
	})
}

func TestMirrorPods_SendsTheStaticPodsStatusToItsMirror(t *testing.T) {
	h := newMirrorHarness(t)
	ctx := context.Background()
	web := staticPodOf(t, "web", "busybox:1.36")
	h.m.SetStaticPods([]*v1.Pod{web})

	// A status before there is a mirror waits for it.
	running := web.DeepCopy()
	running.Status = v1.PodStatus{Phase: v1.PodRunning, PodIP: "10.89.0.9"}
	h.m.PodStatus(running)
	require.Zero(t, h.w.sendDue(ctx))
	require.Empty(t, statusPatches(h.client))

	h.m.observeMirrors(nil)
	require.NoError(t, h.m.reconcile(ctx))
	mirror := h.get(t, "web-node-a")
	require.Zero(t, h.w.sendDue(ctx))
	ps := statusPatches(h.client)
	require.Len(t, ps, 1)
	require.Equal(t, "web-node-a", ps[0].name)
	require.Equal(t, map[string]any{"uid": string(mirror.UID)}, ps[0].patch["metadata"], "the mirror's UID as precondition")
	require.Equal(t, v1.PodRunning, h.get(t, "web-node-a").Status.Phase)
	require.Equal(t, "10.89.0.9", h.get(t, "web-node-a").Status.PodIP)

	// A cluster pod's status is the StatusWriter's own business.
	other := nodePod("api-pod", "node-a")
	other.Annotations = map[string]string{annotationConfigSource: SourceCluster}
	h.m.PodStatus(other)

	// The mirror is replaced: the status goes to the new one.
	h.markDeleted(t, "web-node-a")
	h.m.observeMirrors(h.serverMirrors(t))
	require.NoError(t, h.m.reconcile(ctx))
	replaced := h.get(t, "web-node-a")
	require.NotEqual(t, mirror.UID, replaced.UID)
	h.client.ClearActions()
	require.Zero(t, h.w.sendDue(ctx))
	ps = statusPatches(h.client)
	require.Len(t, ps, 1, "one patch, to the new mirror")
	require.Equal(t, map[string]any{"uid": string(replaced.UID)}, ps[0].patch["metadata"])
	require.Equal(t, v1.PodRunning, h.get(t, "web-node-a").Status.Phase)
}

type sentStatusPatch struct {
	name  string
	patch map[string]any
}

func statusPatches(client *fake.Clientset) (out []sentStatusPatch) {
	for _, a := range client.Actions() {
		if pa, ok := a.(k8stesting.PatchAction); ok && a.GetResource().Resource == "pods" && a.GetSubresource() == "status" {
			var m map[string]any
			if json.Unmarshal(pa.GetPatch(), &m) == nil {
				out = append(out, sentStatusPatch{name: pa.GetName(), patch: m})
			}
		}
	}
	return out
}

// TestMirrorPods_WithThePodSource runs MirrorPods and the pod source
// together, as the daemon does: the source never runs a mirror pod, and
// tells MirrorPods of the mirrors, which recreates one a user deleted.
func TestMirrorPods_WithThePodSource(t *testing.T) {
	h := newMirrorHarness(t, nodePod("api-pod", "node-a"))
	h.m.retryBase, h.m.retryMax = time.Millisecond, 10*time.Millisecond
	src := NewPodSource(fromClientset(h.client), "node-a", nil, WithMirrorPods(h.m))
	ctx, cancel := context.WithCancel(context.Background())
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		h.m.Run(ctx)
	}()
	defer func() {
		cancel()
		<-stopped
	}()
	out := startSource(t, src)
	// Every set the source sends runs the API pod only, never the mirror.
	// The sets are drained beside the checks: whether the mirror's ADDED
	// event comes with a set of its own (the set does not change) depends
	// on timing, so the test waits on MirrorPods, not on a next set.
	var wrong atomic.Value
	drained := make(chan struct{})
	go func() {
		defer close(drained)
		for {
			select {
			case u := <-out:
				if pods, _ := names(u); len(pods) != 1 || pods[0] != "api-pod" {
					wrong.Store(fmt.Sprint(pods))
				}
			case <-ctx.Done():
				return
			}
		}
	}()
	defer func() {
		cancel()
		<-drained
	}()
	h.m.SetStaticPods([]*v1.Pod{staticPodOf(t, "web", "busybox:1.36")})

	var first *v1.Pod
	require.Eventually(t, func() bool {
		p, err := h.client.CoreV1().Pods("default").Get(ctx, "web-node-a", metav1.GetOptions{})
		first = p
		return err == nil
	}, 10*time.Second, time.Millisecond)
	require.Eventually(t, func() bool { return len(h.m.serverMirrorsKnown()) == 1 }, 10*time.Second, time.Millisecond,
		"the pod source tells MirrorPods of the mirror")
	require.Nil(t, wrong.Load(), "the mirror pod is never run")

	// kubectl delete: the API server would mark it; here it is gone at once.
	require.NoError(t, h.client.CoreV1().Pods("default").Delete(ctx, "web-node-a", metav1.DeleteOptions{}))
	// This failed once in CI when the deletion's report came while Run was
	// still returning from the create: Run's write hid it for good
	// (TestMirrorPods_ReportDuringCreateWins); the actions say what
	// happened.
	if !assert.Eventually(t, func() bool {
		p, err := h.client.CoreV1().Pods("default").Get(ctx, "web-node-a", metav1.GetOptions{})
		return err == nil && p.UID != first.UID
	}, 10*time.Second, time.Millisecond, "the mirror comes back") {
		for _, a := range h.client.Actions() {
			t.Logf("action: %s %s/%s %s", a.GetVerb(), a.GetResource().Resource, a.GetSubresource(), a.GetNamespace())
		}
		t.Logf("mirrors known: %d", len(h.m.serverMirrorsKnown()))
		t.FailNow()
	}
	require.Nil(t, wrong.Load(), "the mirror pod is never run")
}

// serverMirrorsKnown lists the mirrors MirrorPods knows of (tests).
func (m *MirrorPods) serverMirrorsKnown() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []string
	for k := range m.mirrors {
		out = append(out, k)
	}
	return out
}

// teardowns is the agent's PodDone as MirrorPods sees it: a channel per
// pod UID, closed by the test when that pod's teardown "finished"; nil for
// pods the agent does not have.
type teardowns struct {
	mu   sync.Mutex
	done map[types.UID]chan struct{}
}

func (td *teardowns) podDone(uid types.UID) <-chan struct{} {
	td.mu.Lock()
	defer td.mu.Unlock()
	if ch, ok := td.done[uid]; ok {
		return ch
	}
	return nil
}

func (td *teardowns) running(uid types.UID) {
	td.mu.Lock()
	defer td.mu.Unlock()
	td.done[uid] = make(chan struct{})
}

func (td *teardowns) finish(uid types.UID) {
	td.mu.Lock()
	defer td.mu.Unlock()
	close(td.done[uid])
}

// leavingKeys lists the mirror keys MirrorPods keeps for a teardown.
func (m *MirrorPods) leavingKeys() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []string
	for k := range m.leaving {
		out = append(out, k)
	}
	return out
}

// A static pod that leaves keeps its mirror, running and with its UID,
// until the agent finished tearing it down: an edited static pod's new
// mirror replaces the old one only then, and a removed static pod's mirror
// is deleted only then (the node e2e's MirrorPodWithGracePeriod specs: the
// mirror stays for the pod's 20 s grace period; before, it went at once).
func TestMirrorPods_KeepTheMirrorOfAStaticPodBeingTornDown(t *testing.T) {
	h := newMirrorHarness(t)
	td := &teardowns{done: map[types.UID]chan struct{}{}}
	h.m = NewMirrorPods(fromClientset(h.client), "node-a", h.w, nil, WithStaticPodDone(td.podDone))
	ctx := context.Background()
	web := staticPodOf(t, "web", "busybox:1.36")
	td.running(web.UID)
	h.m.SetStaticPods([]*v1.Pod{web})
	h.m.observeMirrors(nil)
	require.NoError(t, h.m.reconcile(ctx))
	first := h.get(t, "web-node-a")
	h.m.observeMirrors(h.serverMirrors(t))

	// Edited: a new pod of the same name, the old one terminating.
	edited := staticPodOf(t, "web", "busybox:1.37")
	td.running(edited.UID)
	h.m.SetStaticPods([]*v1.Pod{edited})
	h.client.ClearActions()
	require.NoError(t, h.m.reconcile(ctx))
	require.Empty(t, h.verbs(), "the old pod's mirror stays while it terminates")
	require.Equal(t, first.UID, h.get(t, "web-node-a").UID)
	require.Equal(t, []string{"default/web-node-a"}, h.m.leavingKeys())

	td.finish(web.UID)
	require.Eventually(t, func() bool { return len(h.m.leavingKeys()) == 0 }, 10*time.Second, time.Millisecond)
	h.client.ClearActions()
	require.NoError(t, h.m.reconcile(ctx))
	require.Equal(t, []string{"delete web-node-a", "create web-node-a"}, h.verbs(), "replaced once the old pod is gone")
	now := h.get(t, "web-node-a")
	require.Equal(t, staticPodHash(edited), now.Annotations[annotationConfigMirror])
	h.m.observeMirrors(h.serverMirrors(t))

	// Removed: the mirror stays until the teardown finished, then goes.
	h.m.SetStaticPods(nil)
	h.client.ClearActions()
	require.NoError(t, h.m.reconcile(ctx))
	require.Empty(t, h.verbs(), "the removed pod's mirror stays while it terminates")
	require.Equal(t, now.UID, h.get(t, "web-node-a").UID)
	td.finish(edited.UID)
	require.Eventually(t, func() bool { return len(h.m.leavingKeys()) == 0 }, 10*time.Second, time.Millisecond)
	require.NoError(t, h.m.reconcile(ctx))
	require.Equal(t, []types.UID{now.UID}, deletesOf(t, h.client, "web-node-a"))

	// A pod the agent never had (nil) or has finished with: no wait.
	other := staticPodOf(t, "other", "busybox:1.36")
	h.m.SetStaticPods([]*v1.Pod{other})
	h.m.observeMirrors(h.serverMirrors(t))
	require.NoError(t, h.m.reconcile(ctx))
	h.m.observeMirrors(h.serverMirrors(t))
	h.m.SetStaticPods(nil)
	require.Empty(t, h.m.leavingKeys())
	h.client.ClearActions()
	require.NoError(t, h.m.reconcile(ctx))
	require.Equal(t, []string{"delete other-node-a"}, h.verbs())
}
