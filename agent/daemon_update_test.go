package agent

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

// TestDaemon_UpdatePodReplaces: the pod as the API read it back (status,
// creation time, UID, source annotation), with a changed image, replaces
// the pod: a new UID, the old worker tears down, the name resolves to the
// new pod, whose first event says why.
func TestDaemon_UpdatePodReplaces(t *testing.T) {
	h := newHarness(t)
	store, err := source.NewPodStore(filepath.Join(t.TempDir(), "api-pods"), "node-1")
	require.NoError(t, err)
	d := NewDaemon(h.agent, store, nil, DaemonConfig{})
	ctx := context.Background()
	_, err = d.CreatePod(ctx, manifesttest.APIPod("", "web", "hi"))
	require.NoError(t, err)
	live, err := d.GetPod("default", "web")
	require.NoError(t, err)
	require.False(t, live.CreationTimestamp.IsZero())

	next := live.DeepCopy()
	next.Spec.Containers[0].Image = "registry.example/app:2.0"
	got, err := d.UpdatePod(ctx, next)
	require.NoError(t, err)
	assert.NotEqual(t, live.UID, got.UID)
	assert.Equal(t, "registry.example/app:2.0", got.Spec.Containers[0].Image)

	w, _ := h.agent.findPod("default", "web")
	require.NotNil(t, w)
	assert.Equal(t, got.UID, w.pod().UID, "the name is the new pod's")
	h.agent.mu.Lock()
	oldW := h.agent.workers[live.UID]
	h.agent.mu.Unlock()
	require.NotNil(t, oldW, "the old pod is still torn down")
	assert.True(t, oldW.isTerminating(), "the old pod tears down")
	assert.NotNil(t, oldW.snapshot().DeletionTimestamp, "and shows as Terminating")
	evs, err := d.Events("default", "web")
	require.NoError(t, err)
	require.NotEmpty(t, evs)
	assert.Equal(t, "Replaced", evs[0].Reason)
	assert.Contains(t, evs[0].Message, "pods on this node are immutable")

	bad := got.DeepCopy()
	bad.Spec.Containers[0].Image = ""
	_, err = d.UpdatePod(ctx, bad)
	require.True(t, apierrors.IsInvalid(err), "%v", err)
	again, err := d.GetPod("default", "web")
	require.NoError(t, err)
	assert.Equal(t, got.UID, again.UID, "a refused change keeps the pod")

	_, err = d.UpdatePod(ctx, manifesttest.APIPod("default", "nope", "x"))
	assert.True(t, apierrors.IsNotFound(err), "%v", err)
}

// TestDaemon_UpdateConfigMapInPlace: a changed ConfigMap reaches the agent
// and keeps its creation time.
func TestDaemon_UpdateConfigMapInPlace(t *testing.T) {
	h := newHarness(t)
	store, err := source.NewPodStore(filepath.Join(t.TempDir(), "api-pods"), "node-1")
	require.NoError(t, err)
	d := NewDaemon(h.agent, store, nil, DaemonConfig{})
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
	seen, err := h.agent.configData().configMap(local, "settings")
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
	d := NewDaemon(h.agent, store, nil, DaemonConfig{})
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
