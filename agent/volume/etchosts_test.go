package volume

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The pod's hosts file is writable from its containers: the agent reads
// no more of it than it would write (issue #16, finding 10).
func TestWriteFileIfChanged_Bounded(t *testing.T) {
	path := filepath.Join(t.TempDir(), "etc-hosts")
	require.NoError(t, os.WriteFile(path, []byte(strings.Repeat("x", 8<<20)), 0o644))
	require.NoError(t, WriteFileIfChanged(path, []byte("127.0.0.1\tlocalhost\n"), 0o644))
	got, err := os.ReadFile(path)
	require.NoError(t, err)
	assert.Equal(t, "127.0.0.1\tlocalhost\n", string(got))
	// Same content: left alone.
	require.NoError(t, WriteFileIfChanged(path, []byte("127.0.0.1\tlocalhost\n"), 0o644))
}
