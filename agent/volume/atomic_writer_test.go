package volume_test

import (
	"os"
	"path/filepath"
	"sort"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/minikubelet/minikubelet/agent/volume"
	"github.com/minikubelet/minikubelet/agent/volume/volumetest"
)

func TestAtomicWriter(t *testing.T) {
	dir := t.TempDir()
	w := &volume.AtomicWriter{Dir: dir, Now: func() time.Time { return time.Date(2026, 11, 22, 5, 0, 0, 0, time.UTC) }}

	changed, err := w.Write(map[string]volume.FileProjection{
		"a":        {Data: []byte("1"), Mode: 0o644},
		"sub/b":    {Data: []byte("2"), Mode: 0o400},
		"sub/c/d":  {Data: []byte("3"), Mode: 0o600},
		"dot.file": {Data: []byte("4"), Mode: 0o644},
	})
	require.NoError(t, err)
	assert.True(t, changed)
	assert.Equal(t, map[string]string{"a": "1", "sub/b": "2", "sub/c/d": "3", "dot.file": "4"}, volumetest.ReadVolume(t, dir))
	version, _ := os.Readlink(filepath.Join(dir, volume.DataDirName))
	assert.Regexp(t, `^\.\.2026_11_22_05_00_00\.\d+$`, version)
	fi, err := os.Stat(filepath.Join(dir, "sub", "b"))
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o400), fi.Mode().Perm())

	// The same payload changes nothing, not even the version.
	changed, err = w.Write(map[string]volume.FileProjection{
		"a":        {Data: []byte("1"), Mode: 0o644},
		"sub/b":    {Data: []byte("2"), Mode: 0o400},
		"sub/c/d":  {Data: []byte("3"), Mode: 0o600},
		"dot.file": {Data: []byte("4"), Mode: 0o644},
	})
	require.NoError(t, err)
	assert.False(t, changed)
	again, _ := os.Readlink(filepath.Join(dir, volume.DataDirName))
	assert.Equal(t, version, again)

	// A new payload: the old content stays readable until ..data swaps;
	// then stale names and the old version are gone.
	var during map[string]string
	w.BeforeSwap = func() { during = volumetest.ReadVolume(t, dir) }
	changed, err = w.Write(map[string]volume.FileProjection{"a": {Data: []byte("new"), Mode: 0o644}, "e": {Data: []byte("5"), Mode: 0o644}})
	require.NoError(t, err)
	assert.True(t, changed)
	assert.Equal(t, map[string]string{"a": "1", "sub/b": "2", "sub/c/d": "3", "dot.file": "4"}, during)
	assert.Equal(t, map[string]string{"a": "new", "e": "5"}, volumetest.ReadVolume(t, dir))
	entries, _ := os.ReadDir(dir)
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	sort.Strings(names)
	require.Len(t, names, 4, "%v", names) // version, ..data, a, e
	_, err = os.Stat(filepath.Join(dir, version))
	assert.True(t, os.IsNotExist(err), "old version removed")

	// A mode change alone is a change.
	changed, err = w.Write(map[string]volume.FileProjection{"a": {Data: []byte("new"), Mode: 0o600}, "e": {Data: []byte("5"), Mode: 0o644}})
	require.NoError(t, err)
	assert.True(t, changed)

	// Escaping paths are refused.
	for _, bad := range []string{"../x", "/abs", "..data", "a/../../x"} {
		_, err := w.Write(map[string]volume.FileProjection{bad: {Data: nil, Mode: 0o644}})
		assert.Error(t, err, bad)
	}
}
