package source

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/minikubelet/minikubelet/agent/manifest/manifesttest"
)

// TestPodStore_ReplacePod: a changed pod replaces the stored one under a
// new UID, durably (a reopened store reads the new one); a refused
// replacement keeps the old pod; only a stored pod can be replaced.
func TestPodStore_ReplacePod(t *testing.T) {
	s, dir := newTestStore(t)
	old, err := s.Add(manifesttest.APIPod("default", "web", "hello"))
	require.NoError(t, err)
	drain(t, s)

	changed := manifesttest.APIPod("default", "web", "hello")
	changed.Spec.Containers[0].Image = "registry.example/app:2.0"
	got, err := s.ReplacePod(changed)
	require.NoError(t, err)
	assert.NotEqual(t, old.UID, got.UID, "a changed pod is a new pod")
	assert.Equal(t, SourceAPI, got.Annotations[AnnotationConfigSource])
	u := drain(t, s)
	require.Len(t, u.Pods, 1)
	assert.Equal(t, "registry.example/app:2.0", u.Pods[0].Spec.Containers[0].Image)

	bad := manifesttest.APIPod("default", "web", "hello")
	bad.Spec.Containers[0].Image = ""
	_, err = s.ReplacePod(bad)
	var pie *PodInvalidError
	require.ErrorAs(t, err, &pie)
	assert.Equal(t, "spec.containers[0].image", pie.Errs[0].Field)

	_, err = s.ReplacePod(manifesttest.APIPod("default", "nope", "x"))
	require.ErrorIs(t, err, ErrPodNotFound)
	withUID := manifesttest.APIPod("default", "web", "x")
	withUID.UID = "given"
	_, err = s.ReplacePod(withUID)
	require.Error(t, err)

	s2, err := NewPodStore(dir, "node-1")
	require.NoError(t, err)
	pods, errs := s2.List()
	require.Empty(t, errs)
	require.Len(t, pods, 1)
	assert.Equal(t, got.UID, pods[0].UID, "the replacement is what a restarted daemon reads")
	assert.Equal(t, "registry.example/app:2.0", pods[0].Spec.Containers[0].Image)
}

// TestPodStore_ReplaceConfigData: ConfigMaps and Secrets change in place.
func TestPodStore_ReplaceConfigData(t *testing.T) {
	s, dir := newTestStore(t)
	cm := &v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "settings"}, Data: map[string]string{"a": "1"}}
	_, err := s.AddConfigMap(cm)
	require.NoError(t, err)
	created := s.cms["default_settings.yaml"].CreationTimestamp
	require.False(t, created.IsZero(), "a created ConfigMap has a creation time")
	cm.Data["a"] = "2"
	cm.CreationTimestamp = metav1.Now() // as the API sends it back: the store's own
	got0, err := s.ReplaceConfigMap(cm)
	require.NoError(t, err)
	assert.Equal(t, created, got0.CreationTimestamp, "an update keeps the creation time")
	sec := &v1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "creds"}, StringData: map[string]string{"u": "a"}}
	_, err = s.AddSecret(sec)
	require.NoError(t, err)
	sec.StringData["u"] = "b"
	got, err := s.ReplaceSecret(sec)
	require.NoError(t, err)
	assert.Equal(t, []byte("b"), got.Data["u"])
	_, err = s.ReplaceConfigMap(&v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "nope"}})
	assert.True(t, errors.Is(err, ErrConfigDataNotFound), "%v", err)

	s2, err := NewPodStore(dir, "node-1")
	require.NoError(t, err)
	cms, secrets, errs := s2.ListConfigData()
	require.Empty(t, errs)
	require.Len(t, cms, 1)
	assert.Equal(t, "2", cms[0].Data["a"])
	assert.True(t, created.Equal(&cms[0].CreationTimestamp), "a reopened store reads the creation time: %v, want %v", cms[0].CreationTimestamp, created)
	require.Len(t, secrets, 1)
	assert.Equal(t, []byte("b"), secrets[0].Data["u"])
}

// TestPodStore_Prepare: Prepare defaults and validates as Add without
// storing: the same pod prepares to the stored one (same UID, spec and
// annotations), a changed one to another UID, an invalid one is refused
// naming the field, and nothing is written.
func TestPodStore_Prepare(t *testing.T) {
	s, dir := newTestStore(t)
	stored, err := s.Add(manifesttest.APIPod("default", "web", "hello"))
	require.NoError(t, err)
	drain(t, s)

	same, err := s.Prepare(manifesttest.APIPod("default", "web", "hello"))
	require.NoError(t, err)
	assert.Equal(t, stored.UID, same.UID)
	assert.Equal(t, stored.Spec, same.Spec)
	assert.Equal(t, stored.Annotations, same.Annotations)

	changed := manifesttest.APIPod("default", "web", "hello")
	changed.Spec.Containers[0].Image = "registry.example/app:2.0"
	got, err := s.Prepare(changed)
	require.NoError(t, err)
	assert.NotEqual(t, stored.UID, got.UID)

	bad := manifesttest.APIPod("default", "new", "hello")
	bad.Spec.Containers[0].Image = ""
	_, err = s.Prepare(bad)
	var pie *PodInvalidError
	require.ErrorAs(t, err, &pie)
	assert.Equal(t, "spec.containers[0].image", pie.Errs[0].Field)

	s2, err := NewPodStore(dir, "node-1")
	require.NoError(t, err)
	pods, errs := s2.List()
	require.Empty(t, errs)
	require.Len(t, pods, 1, "Prepare stores nothing")
	assert.Equal(t, stored.UID, pods[0].UID)
}
