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

// TestPodStore_UpdatePod: a changed pod is stored in place under its UID,
// durably (a reopened store reads the same UID); check sees the prepared
// and the stored pod and may refuse; a refused or invalid change keeps the
// old pod; an unchanged pod is not written; a pod deleted and created
// again meanwhile (another UID) is not overwritten.
func TestPodStore_UpdatePod(t *testing.T) {
	s, dir := newTestStore(t)
	old, err := s.Add(manifesttest.APIPod("default", "web", "hello"))
	require.NoError(t, err)
	drain(t, s)

	next := manifesttest.APIPod("default", "web", "hello")
	next.UID = old.UID
	next.Labels = map[string]string{"tier": "web"}
	next.Spec.Containers[0].Image = "registry.example/app:2.0"
	var seenNext, seenStored *v1.Pod
	got, changed, err := s.UpdatePod(next, func(n, st *v1.Pod) error { seenNext, seenStored = n, st; return nil })
	require.NoError(t, err)
	assert.True(t, changed)
	assert.Equal(t, old.UID, got.UID, "an update keeps the UID")
	assert.Equal(t, "registry.example/app:2.0", seenNext.Spec.Containers[0].Image)
	assert.Equal(t, old.Spec.Containers[0].Image, seenStored.Spec.Containers[0].Image)
	assert.Equal(t, old.Spec.Containers[0].TerminationMessagePath, seenNext.Spec.Containers[0].TerminationMessagePath, "check sees the defaulted pod")
	assert.NotEmpty(t, seenNext.Spec.Containers[0].TerminationMessagePath)
	u := drain(t, s)
	require.Len(t, u.Pods, 1)
	assert.Equal(t, old.UID, u.Pods[0].UID)
	assert.Equal(t, "web", u.Pods[0].Labels["tier"])

	// Unchanged: not written (no new generation).
	_, gen := s.SnapshotGen()
	_, changed, err = s.UpdatePod(next, nil)
	require.NoError(t, err)
	assert.False(t, changed)
	_, gen2 := s.SnapshotGen()
	assert.Equal(t, gen, gen2)

	// Refused by check, and invalid: the stored pod stays.
	refused := next.DeepCopy()
	refused.Labels["tier"] = "db"
	_, _, err = s.UpdatePod(refused, func(_, _ *v1.Pod) error { return errors.New("no") })
	require.EqualError(t, err, "no")
	bad := next.DeepCopy()
	bad.Spec.Containers[0].Image = ""
	_, _, err = s.UpdatePod(bad, nil)
	var pie *PodInvalidError
	require.ErrorAs(t, err, &pie)
	assert.Equal(t, "spec.containers[0].image", pie.Errs[0].Field)
	p, ok := s.Get("default", "web")
	require.True(t, ok)
	assert.Equal(t, "web", p.Labels["tier"])

	_, _, err = s.UpdatePod(manifesttest.APIPod("default", "nope", "x"), nil)
	require.Error(t, err, "a UID is required")
	nope := manifesttest.APIPod("default", "nope", "x")
	nope.UID = "some"
	_, _, err = s.UpdatePod(nope, nil)
	require.ErrorIs(t, err, ErrPodNotFound)
	otherUID := next.DeepCopy()
	otherUID.UID = "another"
	_, _, err = s.UpdatePod(otherUID, nil)
	require.ErrorIs(t, err, ErrPodReplaced)

	s2, err := NewPodStore(dir, "node-1")
	require.NoError(t, err)
	pods, errs := s2.List()
	require.Empty(t, errs)
	require.Len(t, pods, 1)
	assert.Equal(t, old.UID, pods[0].UID, "a restarted daemon reads the same UID")
	assert.Equal(t, "registry.example/app:2.0", pods[0].Spec.Containers[0].Image)
	assert.Equal(t, "web", pods[0].Labels["tier"])
}

// TestPodStore_UpdatePodRacesDelete: an update whose pod is deleted and
// created again (another UID) after its checks, before its commit, fails
// with ErrPodReplaced and leaves the new pod alone.
func TestPodStore_UpdatePodRacesDelete(t *testing.T) {
	s, _ := newTestStore(t)
	old, err := s.Add(manifesttest.APIPod("default", "web", "hello"))
	require.NoError(t, err)
	next := manifesttest.APIPod("default", "web", "hello")
	next.UID = old.UID
	next.Labels = map[string]string{"tier": "web"}
	_, _, err = s.UpdatePod(next, func(_, _ *v1.Pod) error {
		// Meanwhile: kubectl replace --force (a delete, then a create).
		require.NoError(t, s.Delete("default", "web"))
		_, err := s.Add(manifesttest.APIPod("default", "web", "again"))
		require.NoError(t, err)
		return nil
	})
	require.ErrorIs(t, err, ErrPodReplaced)
	p, ok := s.Get("default", "web")
	require.True(t, ok)
	assert.NotEqual(t, old.UID, p.UID)
	assert.Empty(t, p.Labels, "the update did not overwrite the new pod")
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
