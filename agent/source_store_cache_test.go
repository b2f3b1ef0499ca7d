package agent

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// List decodes a stored file once: an unchanged file comes back from the
// cache (as a copy the caller may change), a rewritten one is decoded
// again, and a file deleted while listing is simply absent.
func TestPodStore_ListReusesDecodedFiles(t *testing.T) {
	s, dir := newTestStore(t)
	_, err := s.Add(apiPod("default", "web", "A"))
	require.NoError(t, err)

	first, errs := s.List()
	require.Empty(t, errs)
	require.Len(t, first, 1)
	first[0].Labels = map[string]string{"changed": "by the caller"}

	again, errs := s.List()
	require.Empty(t, errs)
	require.Len(t, again, 1)
	assert.NotSame(t, first[0], again[0])
	assert.Empty(t, again[0].Labels["changed"], "the cached pod was shared with a caller")
	assert.Equal(t, first[0].UID, again[0].UID)

	// The file rewritten by hand with other content is decoded anew.
	path := filepath.Join(dir, storeFileName("default", "web"))
	require.NoError(t, os.WriteFile(path, []byte("apiVersion: v1\nkind: Pod\nmetadata: {name: web, namespace: default}\nspec:\n  containers: [{name: c, image: other:2}]\n"), 0o600))
	changed, errs := s.List()
	require.Empty(t, errs)
	require.Len(t, changed, 1)
	assert.Equal(t, "other:2", changed[0].Spec.Containers[0].Image)
	assert.NotEqual(t, first[0].UID, changed[0].UID)

	// The cache holds the newest decoding of the file, and forgets it
	// once the file is gone.
	cached := func() (decodedPod, bool) {
		s.decodedMu.Lock()
		defer s.decodedMu.Unlock()
		c, ok := s.decoded[storeFileName("default", "web")]
		return c, ok
	}
	c, ok := cached()
	require.True(t, ok, "List cached the decoded file")
	assert.Equal(t, changed[0].UID, c.pod.UID)
	require.NoError(t, os.Remove(path))
	gone, errs := s.List()
	require.Empty(t, errs)
	assert.Empty(t, gone)
	_, ok = cached()
	assert.False(t, ok, "a deleted file's decoding is pruned")
}
