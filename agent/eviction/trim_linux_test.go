//go:build linux

package eviction

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// maxTerminationMessageBytes is the engine's bound of a termination
// message (agent's termination.go), what it keeps of each file.
const maxTerminationMessageBytes = 4 * 1024

// fill writes n bytes of real (non-sparse) data to path.
func fill(t *testing.T, path string, n int) {
	t.Helper()
	require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
	require.NoError(t, os.WriteFile(path, make([]byte, n), 0o644))
}

// An evicted pod gives back what it wrote through /dev/termination-log:
// its message files are cut to the part the status reads (the same
// message), so the pressure it caused ends with its eviction and the next
// pod is not evicted for it. Entries that are not regular files are left
// alone, and a FIFO is never opened for good (O_NONBLOCK).
func TestEviction_TerminationFilesTrimmedKeepsMessage(t *testing.T) {
	podDir := t.TempDir()
	dir := filepath.Join(podDir, "containers", "c")
	big := filepath.Join(dir, "0123abcd")
	fill(t, big, 4<<20)
	f, err := os.OpenFile(big, os.O_WRONLY|os.O_APPEND, 0)
	require.NoError(t, err)
	_, err = f.WriteString("the last words")
	require.NoError(t, err)
	require.NoError(t, f.Close())
	small := filepath.Join(dir, "feedbeef")
	require.NoError(t, os.WriteFile(small, []byte("short message"), 0o666))
	require.NoError(t, unix.Mkfifo(filepath.Join(dir, "fifo"), 0o644))
	outside := filepath.Join(t.TempDir(), "host-file")
	fill(t, outside, 1<<20)
	require.NoError(t, os.Symlink(outside, filepath.Join(dir, "link")))
	before, err := readTerminationMessageFile(big)
	require.NoError(t, err)

	require.NoError(t, TrimTerminationMessageFiles(filepath.Join(podDir, "containers"), maxTerminationMessageBytes))

	st, err := os.Stat(big)
	require.NoError(t, err)
	assert.Equal(t, int64(maxTerminationMessageBytes), st.Size())
	after, err := readTerminationMessageFile(big)
	require.NoError(t, err)
	assert.Equal(t, before, after, "the message the status shows is unchanged")
	assert.True(t, strings.HasSuffix(after, "the last words"))
	b, err := os.ReadFile(small)
	require.NoError(t, err)
	assert.Equal(t, "short message", string(b))
	st, err = os.Stat(outside)
	require.NoError(t, err)
	assert.Equal(t, int64(1<<20), st.Size(), "a link's target is never touched")
}

// readTerminationMessageFile is the last maxTerminationMessageBytes of path.
func readTerminationMessageFile(path string) (string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	return string(b[max(0, len(b)-maxTerminationMessageBytes):]), nil
}
