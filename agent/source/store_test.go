package source

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/minikubelet/minikubelet/agent/manifest"
	"github.com/minikubelet/minikubelet/agent/manifest/manifesttest"
)

func newTestStore(t *testing.T) (*PodStore, string) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "api-pods")
	s, err := NewPodStore(dir, "node-1")
	require.NoError(t, err)
	return s, dir
}

// drain consumes the pending signal and returns the store's set, failing
// when no signal is pending.
func drain(t *testing.T, s *PodStore) SourceUpdate {
	t.Helper()
	select {
	case <-s.Updates():
		return s.Snapshot()
	default:
		t.Fatal("no update pending")
		return SourceUpdate{}
	}
}

func TestPodStore_AddListDelete(t *testing.T) {
	s, dir := newTestStore(t)
	fi, err := os.Stat(dir)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o700), fi.Mode().Perm())

	in := manifesttest.APIPod("", "web", "hello")
	in.Status.Phase = v1.PodRunning // ignored, as the API server does on create
	got, err := s.Add(in)
	require.NoError(t, err)
	assert.Equal(t, "", in.Namespace, "the caller's pod is not modified")
	assert.Equal(t, "default", got.Namespace)
	assert.NotEmpty(t, got.UID)
	assert.Equal(t, SourceAPI, got.Annotations[AnnotationConfigSource])
	assert.Equal(t, "node-1", got.Spec.NodeName)
	assert.Equal(t, v1.RestartPolicyAlways, got.Spec.RestartPolicy, "defaulted")
	assert.Empty(t, got.Status.Phase)

	path := filepath.Join(dir, "default_web.yaml")
	fi, err = os.Stat(path)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), fi.Mode().Perm())
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	// The pod as submitted, readable: no status, no defaults, no null
	// fields; the server's generation 1.
	assert.Equal(t, 1, int(got.Generation))
	assert.Equal(t, `apiVersion: v1
kind: Pod
metadata:
  generation: 1
  name: web
  namespace: default
spec:
  containers:
  - env:
    - name: GREETING
      value: hello
    image: registry.example/app:1.0
    name: app
    resources: {}
`, string(data))

	u := drain(t, s)
	assert.Equal(t, SourceAPI, u.Source)
	require.Len(t, u.Pods, 1)
	assert.Equal(t, got.UID, u.Pods[0].UID)
	assert.Empty(t, u.Errors)

	pods, errs := s.List()
	assert.Empty(t, errs)
	require.Len(t, pods, 1)
	assert.Equal(t, got, pods[0], "read back identical, same UID")

	require.NoError(t, s.Delete("default", "web"))
	assert.NoFileExists(t, path)
	u = drain(t, s)
	assert.Empty(t, u.Pods)
	pods, errs = s.List()
	assert.Empty(t, pods)
	assert.Empty(t, errs)

	err = s.Delete("default", "web")
	assert.ErrorIs(t, err, ErrPodNotFound)
}

func TestPodStore_AddExisting(t *testing.T) {
	s, _ := newTestStore(t)
	_, err := s.Add(manifesttest.APIPod("default", "web", "hello"))
	require.NoError(t, err)
	_, err = s.Add(manifesttest.APIPod("default", "web", "other"))
	assert.ErrorIs(t, err, ErrPodExists)
	_, err = s.Add(manifesttest.APIPod("", "web", "other"))
	assert.ErrorIs(t, err, ErrPodExists, "empty namespace is default")
	_, err = s.Add(manifesttest.APIPod("other", "web", "other"))
	assert.NoError(t, err, "another namespace")

	// An explicit UID is the pod's identity too.
	p := manifesttest.APIPod("default", "web2", "x")
	p.UID = "4a9e6c1e-0000-4000-8000-000000000001"
	_, err = s.Add(p)
	require.NoError(t, err)
	p.Name = "web3"
	_, err = s.Add(p)
	assert.ErrorIs(t, err, ErrPodExists)
	assert.ErrorContains(t, err, "already used by pod default/web2")
}

// TestPodStore_Invalid checks that validation errors come back as field
// errors for a 422, also readable as a ManifestError, and nothing is stored.
func TestPodStore_Invalid(t *testing.T) {
	s, dir := newTestStore(t)
	p := manifesttest.APIPod("default", "web", "x")
	p.Spec.Containers[0].Image = ""
	p.Spec.Containers[0].Env[0].Name = ""
	p.Spec.NodeName = "another-node"

	_, err := s.Add(p)
	var pie *PodInvalidError
	require.ErrorAs(t, err, &pie)
	assert.Equal(t, "default", pie.Namespace)
	assert.Equal(t, "web", pie.Name)
	var fields []string
	for _, e := range pie.Errs {
		fields = append(fields, e.Field+" "+string(e.Type))
	}
	assert.ElementsMatch(t, []string{
		"spec.containers[0].image " + string(field.ErrorTypeRequired),
		"spec.containers[0].env[0].name " + string(field.ErrorTypeRequired),
		"spec.nodeName " + string(field.ErrorTypeInvalid),
	}, fields)

	assert.ErrorIs(t, err, manifest.ErrInvalidManifest)
	var me *manifest.ManifestError
	require.ErrorAs(t, err, &me)
	assert.Equal(t, "api:default/web", me.Source)
	assert.Len(t, me.Problems, 3)
	assert.Contains(t, err.Error(), "api:default/web: spec.containers[0].image: Required value")

	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	assert.Empty(t, entries, "nothing written")
	select {
	case <-s.Updates():
		t.Fatal("update after a refused pod")
	default:
	}

	// A name that could be a path never reaches the file system.
	_, err = s.Add(manifesttest.APIPod("default", "../../etc/passwd", "x"))
	require.ErrorAs(t, err, &pie)
	assert.Equal(t, "metadata.name", pie.Errs[0].Field)
	assert.ErrorIs(t, s.Delete("default", "../../etc/passwd"), ErrPodNotFound)
	assert.ErrorIs(t, s.Delete("..", "x"), ErrPodNotFound)
}

// TestPodStore_SurvivesRestart checks that a new store over the same
// directory (a restarted daemon) lists the same pods with the same UIDs, and
// cleans up a write a crash interrupted.
func TestPodStore_SurvivesRestart(t *testing.T) {
	s, dir := newTestStore(t)
	a, err := s.Add(manifesttest.APIPod("default", "a", "x"))
	require.NoError(t, err)
	b, err := s.Add(manifesttest.APIPod("team", "b", "y"))
	require.NoError(t, err)
	stale := filepath.Join(dir, storeTempPrefix+"default_c.yaml-123")
	require.NoError(t, os.WriteFile(stale, []byte("half a pod"), 0o600))

	s2, err := NewPodStore(dir, "node-1")
	require.NoError(t, err)
	assert.NoFileExists(t, stale)
	pods, errs := s2.List()
	assert.Empty(t, errs)
	require.Len(t, pods, 2)
	assert.Equal(t, a.UID, pods[0].UID)
	assert.Equal(t, b.UID, pods[1].UID)
	// The creation time too (the pod's AGE after a daemon restart).
	require.False(t, a.CreationTimestamp.IsZero())
	assert.WithinDuration(t, time.Now(), a.CreationTimestamp.Time, time.Minute)
	assert.True(t, a.CreationTimestamp.Equal(&pods[0].CreationTimestamp), "created %s, read back %s", a.CreationTimestamp, pods[0].CreationTimestamp)
	assert.True(t, b.CreationTimestamp.Equal(&pods[1].CreationTimestamp))

	// An update in place (a label) keeps it, across a restart too.
	old := metav1.NewTime(time.Now().Add(-time.Hour).Truncate(time.Second))
	require.NoError(t, os.Chtimes(filepath.Join(dir, storeFileName("default", "a")), old.Time, old.Time))
	s3, err := NewPodStore(dir, "node-1")
	require.NoError(t, err)
	next := manifesttest.APIPod("default", "a", "x")
	next.UID = a.UID
	next.Labels = map[string]string{"tier": "web"}
	same, changed, err := s3.UpdatePod(next, nil)
	require.NoError(t, err)
	require.True(t, changed)
	assert.Equal(t, a.UID, same.UID)
	assert.True(t, old.Equal(&same.CreationTimestamp), "kept %s, got %s", old, same.CreationTimestamp)
	s4, err := NewPodStore(dir, "node-1")
	require.NoError(t, err)
	back, ok := s4.Get("default", "a")
	require.True(t, ok)
	assert.True(t, old.Equal(&back.CreationTimestamp), "after a restart: kept %s, got %s", old, back.CreationTimestamp)
}

// TestPodStore_DeterministicUID checks that the UID depends on node,
// namespace/name and content, not on the store's directory.
func TestPodStore_DeterministicUID(t *testing.T) {
	add := func(node string, p *v1.Pod) string {
		t.Helper()
		s, err := NewPodStore(t.TempDir(), node)
		require.NoError(t, err)
		got, err := s.Add(p)
		require.NoError(t, err)
		return string(got.UID)
	}
	base := add("node-1", manifesttest.APIPod("default", "web", "hello"))
	assert.Equal(t, base, add("node-1", manifesttest.APIPod("default", "web", "hello")), "same pod, other directory")
	assert.Equal(t, base, add("node-1", manifesttest.APIPod("", "web", "hello")), "default namespace spelled out or not")
	assert.NotEqual(t, base, add("node-1", manifesttest.APIPod("default", "web", "bonjour")), "env edited")
	assert.NotEqual(t, base, add("node-1", manifesttest.APIPod("other", "web", "hello")), "namespace")
	assert.NotEqual(t, base, add("node-2", manifesttest.APIPod("default", "web", "hello")), "node")
}

// TestPodStore_UpdatesNewestWins checks that unread updates are replaced,
// not queued: Add never blocks, the reader sees the latest complete set.
func TestPodStore_UpdatesNewestWins(t *testing.T) {
	s, _ := newTestStore(t)
	for _, name := range []string{"a", "b", "c"} {
		_, err := s.Add(manifesttest.APIPod("default", name, "x"))
		require.NoError(t, err)
	}
	require.NoError(t, s.Delete("default", "b"))
	u := drain(t, s)
	assert.Equal(t, []string{"default/a", "default/c"}, podNames(u))
	select {
	case <-s.Updates():
		t.Fatal("stale update queued")
	default:
	}
}

// TestPodStore_BadFiles checks that a stored file that can no longer be used
// (edited by hand, read when the store opens) is reported and does not
// hide the others; that its name counts as taken; and that deleting it
// drops the report.
func TestPodStore_BadFiles(t *testing.T) {
	s, dir := newTestStore(t)
	_, err := s.Add(manifesttest.APIPod("default", "good", "x"))
	require.NoError(t, err)
	write := func(name, content string) {
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(content), 0o600))
	}
	write("default_broken.yaml", "apiVersion: v1\nkind: Pod\nmetadata:\n  name: broken\nspec:\n  containerz: []\n")
	write("default_misnamed.yaml", strings.ReplaceAll(manifestYAML("other", "x"), "name: other", "name: other\n  namespace: default"))
	write("notes.txt", "ignored")
	write(".hidden.yaml", "ignored")
	pods, errs := s.List()
	assert.Len(t, pods, 1)
	assert.Empty(t, errs, "the store reads its directory when it opens, not after")

	s, err = NewPodStore(dir, "node-1")
	require.NoError(t, err)
	pods, errs = s.List()
	assert.Equal(t, []string{"default/good"}, podNames(SourceUpdate{Pods: pods}))
	require.Len(t, errs, 2)
	assert.Equal(t, "default_broken.yaml", filepath.Base(errs[0].Path))
	assert.ErrorIs(t, errs[0].Err, manifest.ErrInvalidManifest)
	assert.Equal(t, "default_misnamed.yaml", filepath.Base(errs[1].Path))
	assert.ErrorContains(t, errs[1].Err, "belongs in default_other.yaml")
	assert.True(t, errors.Is(errs[1].Err, manifest.ErrInvalidManifest))
	assert.Len(t, s.Snapshot().Errors, 2, "a snapshot reports them too")

	_, err = s.Add(manifesttest.APIPod("default", "broken", "x"))
	assert.ErrorIs(t, err, ErrPodExists, "the file of a bad pod is not overwritten")
	require.NoError(t, s.Delete("default", "broken"))
	_, errs = s.List()
	require.Len(t, errs, 1, "the deleted file is no longer reported")
	assert.Equal(t, "default_misnamed.yaml", filepath.Base(errs[0].Path))
}
