package source

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/minikubelet/minikubelet/agent/manifest/manifesttest"
)

// metadata.generation is the store's, as the API server's (KEP 5067): 1 on
// create whatever the client sent, +1 on each spec change, unchanged by a
// metadata-only change, kept across a restart; a file written before the
// store kept it reads as 1.
func TestPodStore_Generation(t *testing.T) {
	dir := t.TempDir()
	s, err := NewPodStore(dir, "node-1")
	require.NoError(t, err)
	in := manifesttest.APIPod("default", "web", "registry.example/app:1.0")
	in.Generation = 42
	got, err := s.Add(in)
	require.NoError(t, err)
	assert.Equal(t, int64(1), got.Generation, "the client's generation is ignored")

	next := got.DeepCopy()
	next.Spec.Containers[0].Image = "registry.example/app:2.0"
	next.Generation = 7
	got, changed, err := s.UpdatePod(next, nil)
	require.NoError(t, err)
	require.True(t, changed)
	assert.Equal(t, int64(2), got.Generation, "a spec change")

	next = got.DeepCopy()
	next.Labels = map[string]string{"a": "b"}
	got, changed, err = s.UpdatePod(next, nil)
	require.NoError(t, err)
	require.True(t, changed)
	assert.Equal(t, int64(2), got.Generation, "a metadata change keeps it")

	s2, err := NewPodStore(dir, "node-1")
	require.NoError(t, err)
	p, ok := s2.Get("default", "web")
	require.True(t, ok)
	assert.Equal(t, int64(2), p.Generation, "kept across a restart")

	// A file of an older store, without the field.
	old := []byte("apiVersion: v1\nkind: Pod\nmetadata:\n  name: old\n  namespace: default\nspec:\n  containers:\n  - image: x\n    name: c\n")
	require.NoError(t, os.WriteFile(filepath.Join(dir, "default_old.yaml"), old, 0o600))
	s3, err := NewPodStore(dir, "node-1")
	require.NoError(t, err)
	p, ok = s3.Get("default", "old")
	require.True(t, ok)
	assert.Equal(t, int64(1), p.Generation)
}

func TestSplitGeneration_Refuses(t *testing.T) {
	for _, doc := range []string{
		"metadata:\n  generation: -1\n",
		"metadata:\n  generation: x\n",
		"metadata:\n  generation: 1.5\n",
	} {
		_, _, err := splitGeneration([]byte(doc))
		assert.ErrorContains(t, err, "metadata.generation", doc)
	}
	gen, rest, err := splitGeneration([]byte("metadata:\n  generation: 3\n  name: a\n"))
	require.NoError(t, err)
	assert.Equal(t, int64(3), gen)
	assert.NotContains(t, string(rest), "generation")
}
