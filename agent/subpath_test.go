package agent

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/minikubelet/minikubelet/agent/volume/volumetest"
)

// subPathAgent is an agent with a fake mounter, a pod and its emptyDir,
// and a directory outside the volume holding a canary.
func subPathAgent(t *testing.T) (a *Agent, m *volumetest.FakeMounter, pod *v1.Pod, vol, outside string) {
	t.Helper()
	a, m = projectionAgent(t)
	pod = &v1.Pod{}
	pod.UID = "11111111-2222-3333-4444-555555555555"
	vol = filepath.Join(a.podDir(pod), "volumes", "kubernetes.io~empty-dir", "data")
	require.NoError(t, os.MkdirAll(vol, 0o777))
	outside = t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(outside, "canary"), []byte("host"), 0o600))
	return a, m, pod, vol, outside
}

func TestPinSubPath(t *testing.T) {
	a, m, pod, vol, outside := subPathAgent(t)

	// A missing directory is created inside the volume and pinned.
	target, err := a.volumes().PinSubPath(pod, "app", "data", vol, "web/html", 0)
	require.NoError(t, err)
	assert.Equal(t, filepath.Join(a.podDir(pod), "volume-subpaths", "data", "app", "0"), target)
	want, err := os.Stat(filepath.Join(vol, "web/html"))
	require.NoError(t, err)
	assert.True(t, os.SameFile(want, m.Binds[target]), "the directory opened in the volume is what is mounted")
	assert.DirExists(t, target)

	// A file subPath is pinned on an empty file.
	require.NoError(t, os.WriteFile(filepath.Join(vol, "conf"), []byte("x"), 0o644))
	target, err = a.volumes().PinSubPath(pod, "app", "data", vol, "conf", 1)
	require.NoError(t, err)
	fi, err := os.Lstat(target)
	require.NoError(t, err)
	assert.True(t, fi.Mode().IsRegular())
	want, err = os.Stat(filepath.Join(vol, "conf"))
	require.NoError(t, err)
	assert.True(t, os.SameFile(want, m.Binds[target]))

	// Pinning again (the container restarts) replaces the earlier pin,
	// even when the subPath changed type meanwhile.
	require.NoError(t, os.Remove(filepath.Join(vol, "conf")))
	require.NoError(t, os.Mkdir(filepath.Join(vol, "conf"), 0o755))
	target, err = a.volumes().PinSubPath(pod, "app", "data", vol, "conf", 1)
	require.NoError(t, err)
	assert.DirExists(t, target)

	// Symlinks out of the volume are refused, and nothing is created
	// outside it (issue #16, findings 1 and 4).
	require.NoError(t, os.Symlink(outside, filepath.Join(vol, "s")))
	require.NoError(t, os.Symlink(filepath.Join(outside, "new"), filepath.Join(vol, "m")))
	for _, sub := range []string{"s", "s/x", "m/deeper/still", "m"} {
		_, err := a.volumes().PinSubPath(pod, "app", "data", vol, sub, 2)
		require.ErrorContains(t, err, "leads outside the volume", sub)
	}
	entries, err := os.ReadDir(outside)
	require.NoError(t, err)
	assert.Len(t, entries, 1, "only the canary")
	assert.NotContains(t, m.Binds, filepath.Join(a.podDir(pod), "volume-subpaths", "data", "app", "2"))

	// A symlink inside the volume is followed (configMap keys are links).
	require.NoError(t, os.Symlink("web", filepath.Join(vol, "in")))
	target, err = a.volumes().PinSubPath(pod, "app", "data", vol, "in/html", 3)
	require.NoError(t, err)
	want, err = os.Stat(filepath.Join(vol, "web/html"))
	require.NoError(t, err)
	assert.True(t, os.SameFile(want, m.Binds[target]))

	// The container's pins go together.
	require.NoError(t, a.volumes().UnpinSubPaths(pod, "app"))
	assert.Empty(t, m.Binds)
	assert.NoDirExists(t, filepath.Join(a.podDir(pod), "volume-subpaths", "data", "app"))
}

// TestPinSubPathMode: a missing subPath directory gets the mode of the
// volume's root, umask bypassed, setgid and sticky included, as the
// kubelet's: the conformance spec "EmptyDir volumes when FSGroup is
// specified nonexistent volume subPath should have the correct mode and
// owner using FSGroup" expects dgtrwxrwxrwx.
func TestPinSubPathMode(t *testing.T) {
	old := syscall.Umask(0o022)
	defer syscall.Umask(old)
	a, _, pod, vol, _ := subPathAgent(t)
	require.NoError(t, os.Chmod(vol, os.ModeSetgid|os.ModeSticky|0o777))
	_, err := a.volumes().PinSubPath(pod, "app", "data", vol, "test-sub", 0)
	require.NoError(t, err)
	fi, err := os.Stat(filepath.Join(vol, "test-sub"))
	require.NoError(t, err)
	assert.Equal(t, os.ModeDir|os.ModeSetgid|os.ModeSticky|0o777, fi.Mode())

	// A volume root of 0750 gives 0750 directories.
	require.NoError(t, os.Chmod(vol, 0o750))
	_, err = a.volumes().PinSubPath(pod, "app", "data", vol, "a/b", 1)
	require.NoError(t, err)
	fi, err = os.Stat(filepath.Join(vol, "a/b"))
	require.NoError(t, err)
	assert.Equal(t, os.ModeDir|0o750, fi.Mode())
}

func TestCleanupStaleSubPaths(t *testing.T) {
	a, m, pod, vol, _ := subPathAgent(t)
	_, err := a.volumes().PinSubPath(pod, "app", "data", vol, "x", 0)
	require.NoError(t, err)
	require.Len(t, m.Binds, 1)
	// Desired, or still in the runtime: kept.
	require.NoError(t, a.volumes().CleanupStaleSubPaths(map[types.UID]bool{pod.UID: true}, nil, a.hasWorker))
	require.NoError(t, a.volumes().CleanupStaleSubPaths(nil, map[types.UID]bool{pod.UID: true}, a.hasWorker))
	assert.DirExists(t, filepath.Join(a.podDir(pod), "volume-subpaths"))
	// Neither: unmounted (the host's mount table; nothing is mounted in
	// this test) and removed, the volume's content untouched.
	require.NoError(t, a.volumes().CleanupStaleSubPaths(nil, nil, a.hasWorker))
	assert.NoDirExists(t, filepath.Join(a.podDir(pod), "volume-subpaths"))
	assert.DirExists(t, filepath.Join(vol, "x"))
}
