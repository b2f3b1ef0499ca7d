package hoststats

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// A file unlinked but held open counts with its allocated blocks, once
// however many descriptors hold it; a linked file, a file on a memory
// filesystem (memfd) and a sparse file's holes do not; the descriptor
// bound cuts the count. The processes are this test's own (its
// /proc/self is its own state, not the host's).
func TestHeldDeletedBytes(t *testing.T) {
	pid := []int{os.Getpid()}
	mine := func(int) bool { return true }
	base := heldDeletedBytes("/proc", pid, maxHeldFds, mine)
	dir := t.TempDir()

	// 1 MiB written, then unlinked, held by two descriptors.
	path := filepath.Join(dir, "hidden")
	f, err := os.Create(path)
	require.NoError(t, err)
	defer f.Close()
	_, err = f.Write(make([]byte, 1<<20))
	require.NoError(t, err)
	require.NoError(t, f.Sync())
	dup, err := os.Open(path)
	require.NoError(t, err)
	defer dup.Close()
	linked, err := os.Create(filepath.Join(dir, "linked"))
	require.NoError(t, err)
	defer linked.Close()
	_, err = linked.Write(make([]byte, 1<<20))
	require.NoError(t, err)
	assert.Equal(t, base, heldDeletedBytes("/proc", pid, maxHeldFds, mine), "nothing unlinked yet")

	require.NoError(t, os.Remove(path))
	got := heldDeletedBytes("/proc", pid, maxHeldFds, mine) - base
	var sfs syscall.Statfs_t
	require.NoError(t, syscall.Statfs(dir, &sfs))
	if memoryFsTypes[int64(sfs.Type)] {
		// TMPDIR on tmpfs: memory, which the memory cgroup counts.
		assert.Equal(t, int64(0), got, "a file on a memory filesystem is not disk")
		t.Skip("TMPDIR is a memory filesystem: the disk cases need a disk")
	}
	assert.GreaterOrEqual(t, got, int64(1<<20), "the unlinked file's blocks")
	assert.Less(t, got, int64(2<<20), "counted once, though two descriptors hold it")

	// memfd_create: a deleted file of shmem, memory not disk.
	mfd, err := unix.MemfdCreate("held", 0)
	require.NoError(t, err)
	mf := os.NewFile(uintptr(mfd), "memfd")
	defer mf.Close()
	_, err = mf.Write(make([]byte, 4<<20))
	require.NoError(t, err)
	assert.Less(t, heldDeletedBytes("/proc", pid, maxHeldFds, mine)-base, int64(2<<20), "a memfd is memory, not disk")

	// A sparse file: 1 GiB apparent, one block written.
	sparse, err := os.Create(filepath.Join(dir, "sparse"))
	require.NoError(t, err)
	defer sparse.Close()
	_, err = sparse.WriteAt([]byte{1}, 1<<30)
	require.NoError(t, err)
	require.NoError(t, os.Remove(sparse.Name()))
	assert.Less(t, heldDeletedBytes("/proc", pid, maxHeldFds, mine)-base, int64(2<<20), "a sparse file counts its blocks, not its size")

	assert.Equal(t, int64(0), heldDeletedBytes("/proc", pid, 0, mine), "no descriptor looked at")
	assert.Equal(t, int64(0), heldDeletedBytes("/proc", pid, maxHeldFds, func(int) bool { return false }),
		"a PID no longer the pod's (reused meanwhile) counts nothing")
	assert.Equal(t, int64(0), heldDeletedBytes(dir, pid, maxHeldFds, mine), "no such process")
}
