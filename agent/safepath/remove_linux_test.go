//go:build linux

package safepath

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// podTree is a directory a pod wrote: nested directories, files, a FIFO,
// symlinks (absolute, climbing, to a directory and a file) to outside,
// which holds a canary, and a directory with more entries than one read.
func podTree(t *testing.T) (tree, outside string) {
	t.Helper()
	base, outside := t.TempDir(), t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(outside, "canary"), []byte("host"), 0o600))
	tree = filepath.Join(base, "pod")
	require.NoError(t, os.MkdirAll(filepath.Join(tree, "volumes/a/b/c"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(tree, "volumes/a/b/c/f"), []byte("x"), 0o644))
	require.NoError(t, os.Symlink(outside, filepath.Join(tree, "volumes/a/abs")))
	require.NoError(t, os.Symlink("../../../../../../../../../.."+outside, filepath.Join(tree, "volumes/a/b/climb")))
	require.NoError(t, os.Symlink(filepath.Join(outside, "canary"), filepath.Join(tree, "volumes/file-link")))
	require.NoError(t, syscall.Mkfifo(filepath.Join(tree, "volumes/fifo"), 0o600))
	require.NoError(t, os.Mkdir(filepath.Join(tree, "many"), 0o755))
	for i := range removeBatch + 10 {
		require.NoError(t, os.WriteFile(filepath.Join(tree, "many", fmt.Sprint(i)), nil, 0o644))
	}
	// A directory root may not read or enter does not stop root.
	require.NoError(t, os.MkdirAll(filepath.Join(tree, "locked/inner"), 0o755))
	require.NoError(t, os.Chmod(filepath.Join(tree, "locked"), 0))
	return tree, outside
}

func TestRemoveAll(t *testing.T) {
	bothWalks(t, func(t *testing.T) {
		tree, outside := podTree(t)
		if os.Geteuid() != 0 {
			require.NoError(t, os.Chmod(filepath.Join(tree, "locked"), 0o755))
		}
		require.NoError(t, RemoveAll(tree))
		assert.NoDirExists(t, tree)
		assert.DirExists(t, filepath.Dir(tree))
		got, err := os.ReadFile(filepath.Join(outside, "canary"))
		require.NoError(t, err, "a symlink's target went")
		assert.Equal(t, "host", string(got))

		// Gone already, or never there: no error.
		require.NoError(t, RemoveAll(tree))
		require.NoError(t, RemoveAll(filepath.Join(t.TempDir(), "none", "deeper")))
		// A file.
		f := filepath.Join(t.TempDir(), "f")
		require.NoError(t, os.WriteFile(f, nil, 0o644))
		require.NoError(t, RemoveAll(f))
		assert.NoFileExists(t, f)
		// A symlink as the path itself goes, its target stays.
		l := filepath.Join(t.TempDir(), "l")
		require.NoError(t, os.Symlink(outside, l))
		require.NoError(t, RemoveAll(l))
		assert.FileExists(t, filepath.Join(outside, "canary"))
		assert.Error(t, RemoveAll("/"))
	})
}

// requirePrivileged skips unless the test runs as root and is opted in
// with MINIKUBELET_PRIVILEGED=1 (the gate of the other packages'
// privileged tests): it mounts on the host.
func requirePrivileged(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 || os.Getenv("MINIKUBELET_PRIVILEGED") != "1" {
		t.Skip("privileged test: run as root with MINIKUBELET_PRIVILEGED=1")
	}
}

// mount mounts and unmounts at cleanup.
func mount(t *testing.T, source, target, fstype string, flags uintptr) {
	t.Helper()
	require.NoError(t, syscall.Mount(source, target, fstype, flags, ""))
	t.Cleanup(func() { _ = syscall.Unmount(target, syscall.MNT_DETACH) })
}

// The attack RemoveAll exists for: a pod directory still holding the bind
// mount of a host directory (a pinned subPath of a hostPath volume whose
// unmount did not happen) and of a host file, and a tmpfs. Removing the
// pod directory must leave the host's files, and say which mount points
// it left. A bind mount of the same file system (the host directory is
// on the same disk) is found through openat2's RESOLVE_NO_XDEV; the
// fallback walk sees only a change of device (the tmpfs).
func TestRemoveAll_MountPoints_Privileged(t *testing.T) {
	requirePrivileged(t)
	bothWalks(t, func(t *testing.T) {
		tree, outside := podTree(t)
		hostDir := filepath.Join(filepath.Dir(tree), "host-dir")
		require.NoError(t, os.MkdirAll(filepath.Join(hostDir, "data"), 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(hostDir, "data", "keep"), []byte("host data"), 0o644))
		fallback := noOpenat2.Load()

		tmpfs := filepath.Join(tree, "volumes/kubernetes.io~empty-dir/mem")
		require.NoError(t, os.MkdirAll(tmpfs, 0o755))
		mount(t, "tmpfs", tmpfs, "tmpfs", 0)
		require.NoError(t, os.WriteFile(filepath.Join(tmpfs, "in-memory"), nil, 0o644))
		fileTarget := filepath.Join(tree, "volume-subpaths/host/c/1")
		require.NoError(t, os.MkdirAll(filepath.Dir(fileTarget), 0o750))
		require.NoError(t, os.WriteFile(fileTarget, nil, 0o640))
		mount(t, filepath.Join(outside, "canary"), fileTarget, "", syscall.MS_BIND)
		dirTarget := filepath.Join(tree, "volume-subpaths/host/c/0")
		if !fallback {
			require.NoError(t, os.Mkdir(dirTarget, 0o750))
			mount(t, hostDir, dirTarget, "", syscall.MS_BIND)
		}

		err := RemoveAll(tree)
		require.Error(t, err)
		assert.True(t, errors.Is(err, ErrMountPoint), "%v", err)
		assert.Contains(t, err.Error(), tmpfs)
		assert.Contains(t, err.Error(), fileTarget)
		assert.FileExists(t, filepath.Join(tmpfs, "in-memory"), "the tmpfs was entered")
		got, rerr := os.ReadFile(filepath.Join(outside, "canary"))
		require.NoError(t, rerr)
		assert.Equal(t, "host", string(got))
		if !fallback {
			assert.Contains(t, err.Error(), dirTarget)
			assert.FileExists(t, filepath.Join(hostDir, "data", "keep"), "the host directory mounted in the pod dir was emptied")
			assert.FileExists(t, filepath.Join(dirTarget, "data", "keep"))
		}
		// What holds no mount went.
		assert.NoDirExists(t, filepath.Join(tree, "many"))
		assert.NoDirExists(t, filepath.Join(tree, "volumes/a"))

		// Unmounted, the rest goes.
		for _, m := range []string{tmpfs, fileTarget, dirTarget} {
			_ = syscall.Unmount(m, syscall.MNT_DETACH)
		}
		require.NoError(t, RemoveAll(tree))
		assert.NoDirExists(t, tree)
		assert.FileExists(t, filepath.Join(hostDir, "data", "keep"))
	})
}
