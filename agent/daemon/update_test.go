package daemon

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/minikubelet/minikubelet/agent/manifest/manifesttest"
	"github.com/minikubelet/minikubelet/agent/source"
)

// TestDaemon_UpdatePodInPlace: the pod as the API read it back (status,
// creation time, resource version, source annotation) with a label or an
// image changed is updated in place: same UID, same worker (not torn
// down), the new spec handed to it, a new resource version; a stale
// resource version is a 409; a change the API server forbids (a command)
// is a 422 naming the field, and so is another UID; the pod stays as it
// was.
func TestDaemon_UpdatePodInPlace(t *testing.T) {
	h := newHarness(t)
	storeDir := filepath.Join(t.TempDir(), "api-pods")
	store, err := source.NewPodStore(storeDir, "node-1")
	require.NoError(t, err)
	d := New(h.agent, store, nil, Config{})
	ctx := context.Background()
	_, err = d.CreatePod(ctx, manifesttest.APIPod("", "web", "hi"))
	require.NoError(t, err)
	live, err := d.GetPod("default", "web")
	require.NoError(t, err)
	require.False(t, live.CreationTimestamp.IsZero())
	require.NotEmpty(t, live.ResourceVersion, "GET carries the pod's resource version")
	w0, _ := h.agent.FindPod("default", "web")
	require.NotNil(t, w0)

	// (The worker's status reports move the resource version meanwhile:
	// the updates that are not about it send none.)
	labelled := live.DeepCopy()
	labelled.ResourceVersion = ""
	labelled.Labels = map[string]string{"x": "y"}
	got, err := d.UpdatePod(ctx, labelled)
	require.NoError(t, err)
	assert.Equal(t, live.UID, got.UID, "an update keeps the UID")
	assert.Equal(t, "y", got.Labels["x"])
	assert.Equal(t, int64(1), got.Generation, "a label is no new generation")
	assert.Equal(t, live.CreationTimestamp, got.CreationTimestamp)
	assert.NotEqual(t, live.ResourceVersion, got.ResourceVersion, "a change is a new resource version")
	w1, _ := h.agent.FindPod("default", "web")
	assert.Same(t, w0, w1, "the same worker runs the pod")
	assert.False(t, w1.Terminating())
	assert.Equal(t, "y", w1.Pod().Labels["x"], "the worker has the new pod")
	assert.Equal(t, 1, h.agent.PodTables()["workers"], "no second pod")

	// The first PUT from an old version lost: 409, nothing changed.
	stale := live.DeepCopy()
	stale.Labels = map[string]string{"x": "z"}
	_, err = d.UpdatePod(ctx, stale)
	require.True(t, apierrors.IsConflict(err), "%v", err)
	assert.Contains(t, err.Error(), "the object has been modified")

	image := got.DeepCopy()
	image.ResourceVersion = ""
	image.Spec.Containers[0].Image = "registry.example/app:2.0"
	got, err = d.UpdatePod(ctx, image)
	require.NoError(t, err)
	assert.Equal(t, live.UID, got.UID)
	assert.Equal(t, "registry.example/app:2.0", w0.Pod().Spec.Containers[0].Image, "the worker restarts that container")
	assert.Equal(t, int64(2), got.Generation, "a spec change is a new generation")
	assert.Equal(t, int64(2), w0.Pod().Generation, "the worker syncs that generation")
	assert.Equal(t, "y", got.Labels["x"])

	// Unchanged (an empty resource version: unconditional): nothing is
	// written.
	_, gen := store.SnapshotGen()
	unchanged := &v1.Pod{ObjectMeta: *got.ObjectMeta.DeepCopy(), Spec: *got.Spec.DeepCopy()}
	unchanged.ResourceVersion = ""
	_, err = d.UpdatePod(ctx, unchanged)
	require.NoError(t, err)
	_, gen2 := store.SnapshotGen()
	assert.Equal(t, gen, gen2, "unchanged: not stored again")

	cmd := got.DeepCopy()
	cmd.ResourceVersion = ""
	cmd.Spec.Containers[0].Command = []string{"sleep", "1"}
	_, err = d.UpdatePod(ctx, cmd)
	require.True(t, apierrors.IsInvalid(err), "%v", err)
	assert.Contains(t, err.Error(), `Pod "web" is invalid: spec: Forbidden: pod updates may not change fields other than `+"`spec.containers[*].image`")
	assert.Contains(t, err.Error(), "spec.containers[0].command")
	otherUID := got.DeepCopy()
	otherUID.ResourceVersion = ""
	otherUID.UID = "another"
	_, err = d.UpdatePod(ctx, otherUID)
	require.True(t, apierrors.IsInvalid(err), "%v", err)
	assert.Contains(t, err.Error(), "metadata.uid")
	bad := got.DeepCopy()
	bad.ResourceVersion = ""
	bad.Spec.Containers[0].Image = ""
	_, err = d.UpdatePod(ctx, bad)
	require.True(t, apierrors.IsInvalid(err), "%v", err)
	again, err := d.GetPod("default", "web")
	require.NoError(t, err)
	assert.Equal(t, "registry.example/app:2.0", again.Spec.Containers[0].Image, "a refused change keeps the pod")
	assert.Nil(t, again.Spec.Containers[0].Command)

	_, err = d.UpdatePod(ctx, manifesttest.APIPod("default", "nope", "x"))
	assert.True(t, apierrors.IsNotFound(err), "%v", err)

	// A restarted daemon reads the same pod (UID, labels, image).
	store2, err := source.NewPodStore(storeDir, "node-1")
	require.NoError(t, err)
	pods, errs := store2.List()
	require.Empty(t, errs)
	require.Len(t, pods, 1)
	assert.Equal(t, live.UID, pods[0].UID)
	assert.Equal(t, "y", pods[0].Labels["x"])
	assert.Equal(t, int64(2), pods[0].Generation)
}

// TestDaemon_UpdateConfigMapInPlace: a changed ConfigMap reaches the agent
// and keeps its creation time.
func TestDaemon_UpdateConfigMapInPlace(t *testing.T) {
	h := newHarness(t)
	store, err := source.NewPodStore(filepath.Join(t.TempDir(), "api-pods"), "node-1")
	require.NoError(t, err)
	d := New(h.agent, store, nil, Config{})
	ctx := context.Background()
	created, err := d.CreateConfigMap(ctx, &v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "settings"}, Data: map[string]string{"mode": "fast"}})
	require.NoError(t, err)
	require.False(t, created.CreationTimestamp.IsZero())
	cm := d.ListConfigMaps("default")[0].DeepCopy()
	cm.Data["mode"] = "slow"
	got, err := d.UpdateConfigMap(ctx, cm)
	require.NoError(t, err)
	assert.Equal(t, created.CreationTimestamp, got.CreationTimestamp)
	local := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "x", Annotations: map[string]string{source.AnnotationConfigSource: source.SourceAPI}}}
	seen, err := h.agent.ConfigMapFor(local, "settings")
	require.NoError(t, err)
	assert.Equal(t, "slow", seen.Data["mode"])

	d.apply(source.SourceUpdate{Source: source.SourceFile, ConfigMaps: []*v1.ConfigMap{{ObjectMeta: metav1.ObjectMeta{Name: "static", Namespace: "default"}}}})
	_, err = d.UpdateConfigMap(ctx, &v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "static", Namespace: "default"}})
	assert.True(t, apierrors.IsForbidden(err), "%v", err)
}

// TestDaemon_PreparePod: server-side apply's view of an applied pod: the
// same pod prepares to what GetPod answers (labels, annotations and spec
// equal, so the API answers "unchanged"), nothing is stored, and an
// invalid one is Invalid naming the field.
func TestDaemon_PreparePod(t *testing.T) {
	h := newHarness(t)
	store, err := source.NewPodStore(filepath.Join(t.TempDir(), "api-pods"), "node-1")
	require.NoError(t, err)
	d := New(h.agent, store, nil, Config{})
	_, err = d.CreatePod(context.Background(), manifesttest.APIPod("", "web", "hi"))
	require.NoError(t, err)
	live, err := d.GetPod("default", "web")
	require.NoError(t, err)

	got, err := d.PreparePod(manifesttest.APIPod("", "web", "hi"))
	require.NoError(t, err)
	assert.Equal(t, live.UID, got.UID)
	assert.Equal(t, live.Spec, got.Spec)
	assert.Equal(t, live.Labels, got.Labels)
	assert.Equal(t, live.Annotations, got.Annotations)

	bad := manifesttest.APIPod("", "other", "hi")
	bad.Spec.Containers[0].Image = ""
	_, err = d.PreparePod(bad)
	require.True(t, apierrors.IsInvalid(err), "%v", err)
	assert.Contains(t, err.Error(), "spec.containers[0].image")
	_, err = d.GetPod("default", "other")
	assert.True(t, apierrors.IsNotFound(err), "nothing stored: %v", err)
}

// TestDaemon_UpdateRejectedPod: a pod refused at admission stays refused
// (same UID), and an update of its labels shows on it, its Failed status
// kept.
func TestDaemon_UpdateRejectedPod(t *testing.T) {
	h := newHarness(t)
	store, err := source.NewPodStore(filepath.Join(t.TempDir(), "api-pods"), "node-1")
	require.NoError(t, err)
	d := New(h.agent, store, nil, Config{})
	ctx := context.Background()
	pod := manifesttest.APIPod("", "other-os", "hi")
	pod.Spec.OS = &v1.PodOS{Name: "windows"}
	_, err = d.CreatePod(ctx, pod)
	require.NoError(t, err)
	live, err := d.GetPod("default", "other-os")
	require.NoError(t, err)
	require.Equal(t, v1.PodFailed, live.Status.Phase, "rejected")

	next := live.DeepCopy()
	next.ResourceVersion = ""
	next.Labels = map[string]string{"seen": "yes"}
	got, err := d.UpdatePod(ctx, next)
	require.NoError(t, err)
	assert.Equal(t, live.UID, got.UID)
	assert.Equal(t, "yes", got.Labels["seen"])
	assert.Equal(t, v1.PodFailed, got.Status.Phase, "still rejected")
	assert.Equal(t, live.Status.Reason, got.Status.Reason)
}
