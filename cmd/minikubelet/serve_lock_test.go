package main

import (
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// One daemon per root dir: the second lock attempt fails at once, naming
// the holder's pid, the lock file and what to do; once the holder is gone
// the dir can be locked again (flock locks belong to an open file, so two
// opens in one process contend as two daemons would).
func TestLockDir_SecondDaemonRefused(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "root")
	first, err := lockDir(dir, "root dir", "--root-dir")
	require.NoError(t, err)
	b, err := os.ReadFile(filepath.Join(dir, rootDirLockFile))
	require.NoError(t, err)
	assert.Equal(t, strconv.Itoa(os.Getpid())+"\n", string(b), "the holder's pid is in the lock file")

	_, err = lockDir(dir, "root dir", "--root-dir")
	require.Error(t, err)
	assert.Contains(t, err.Error(), "another minikubelet serve (pid "+strconv.Itoa(os.Getpid())+") holds the root dir "+dir)
	assert.Contains(t, err.Error(), filepath.Join(dir, rootDirLockFile))
	assert.Contains(t, err.Error(), "stop it first")
	assert.Contains(t, err.Error(), "--root-dir")
	b, err = os.ReadFile(filepath.Join(dir, rootDirLockFile))
	require.NoError(t, err)
	assert.Equal(t, strconv.Itoa(os.Getpid())+"\n", string(b), "the refused attempt left the holder's pid")

	require.NoError(t, first.Release())
	again, err := lockDir(dir, "root dir", "--root-dir")
	require.NoError(t, err, "a released lock (a dead daemon's) is taken again")
	require.NoError(t, again.Release())
}

// A holder that has not written its pid yet is named as such, not as a
// pid read from a half-written or foreign file.
func TestLockDir_HolderWithoutPid(t *testing.T) {
	dir := t.TempDir()
	first, err := lockDir(dir, "run dir", "--run-dir")
	require.NoError(t, err)
	defer first.Release()
	require.NoError(t, first.f.Truncate(0))
	_, err = lockDir(dir, "run dir", "--run-dir")
	require.ErrorContains(t, err, "another minikubelet serve (a process whose pid is not written yet) holds the run dir")
}
