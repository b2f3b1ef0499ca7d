package volume

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
)

func TestApplyFSGroup(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("chown to another group needs root")
	}
	dir := t.TempDir()
	require.NoError(t, os.Chmod(dir, 0o777))
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "sub"), 0o700))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "sub", "f"), []byte("x"), 0o600))
	require.NoError(t, os.Symlink("sub/f", filepath.Join(dir, "link")))

	require.NoError(t, applyFSGroup(dir, 2000, nil))
	check := func(p string, wantMode os.FileMode) {
		t.Helper()
		fi, err := os.Lstat(p)
		require.NoError(t, err)
		assert.Equal(t, uint32(2000), fi.Sys().(*syscall.Stat_t).Gid, p)
		if wantMode != 0 {
			assert.Equal(t, wantMode, fi.Mode()&(os.ModePerm|os.ModeSetgid), p)
		}
	}
	check(dir, 0o777|os.ModeSetgid)
	check(filepath.Join(dir, "sub"), 0o770|os.ModeSetgid)
	check(filepath.Join(dir, "sub", "f"), 0o660)
	check(filepath.Join(dir, "link"), 0)

	// OnRootMismatch: the root already matches, so a new file is left alone.
	require.NoError(t, os.WriteFile(filepath.Join(dir, "new"), []byte("x"), 0o600))
	require.NoError(t, os.Chown(filepath.Join(dir, "new"), -1, 0))
	require.NoError(t, applyFSGroup(dir, 2000, ptr.To(v1.FSGroupChangeOnRootMismatch)))
	fi, err := os.Stat(filepath.Join(dir, "new"))
	require.NoError(t, err)
	assert.Equal(t, uint32(0), fi.Sys().(*syscall.Stat_t).Gid)
	// Always walks again.
	require.NoError(t, applyFSGroup(dir, 2000, ptr.To(v1.FSGroupChangeAlways)))
	check(filepath.Join(dir, "new"), 0o660)

	// Read-only volumes get g+r only.
	ro := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(ro, "key"), []byte("x"), 0o400))
	require.NoError(t, applyFSGroupReadOnly(ro, 3000, nil))
	fi, err = os.Stat(filepath.Join(ro, "key"))
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o440), fi.Mode().Perm())
}
