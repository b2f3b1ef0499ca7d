//go:build linux

package agent

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"

	"github.com/minikubelet/minikubelet/agent/volume"
)

// requiresPrivileged skips unless the test runs as root and is opted in
// with MINIKUBELET_PRIVILEGED=1 (the cni and cgroups packages' gate): it
// bind-mounts on the host.
func requiresPrivileged(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 || os.Getenv("MINIKUBELET_PRIVILEGED") != "1" {
		t.Skip("privileged test: run as root with MINIKUBELET_PRIVILEGED=1")
	}
}

// The real bind mounts of pinSubPath: what is mounted is what was opened,
// whatever the volume's path turns into afterwards; unpinning leaves no
// mount.
func TestPinSubPath_Privileged(t *testing.T) {
	requiresPrivileged(t)
	a := envTestAgent(t) // the host's mounter
	pod, vol, outside := subPathPod(t, a)
	require.NoError(t, os.MkdirAll(filepath.Join(vol, "s"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(vol, "f"), []byte("in the volume"), 0o644))

	dirTarget, err := a.volumes().PinSubPath(pod, "app", "data", vol, "s", 0)
	require.NoError(t, err)
	t.Cleanup(func() { _ = volume.UnmountUnder(filepath.Join(a.podDir(pod), volume.SubPathsDirName)) })
	fileTarget, err := a.volumes().PinSubPath(pod, "app", "data", vol, "f", 1)
	require.NoError(t, err)

	// The pod swaps both for symlinks to the host.
	require.NoError(t, os.Rename(filepath.Join(vol, "s"), filepath.Join(vol, "s.old")))
	require.NoError(t, os.Symlink(outside, filepath.Join(vol, "s")))
	require.NoError(t, os.Remove(filepath.Join(vol, "f")))
	require.NoError(t, os.Symlink(filepath.Join(outside, "canary"), filepath.Join(vol, "f")))

	// The targets still hold the volume's directory and file.
	require.NoError(t, os.WriteFile(filepath.Join(dirTarget, "written"), []byte("x"), 0o644))
	assert.FileExists(t, filepath.Join(vol, "s.old", "written"))
	assert.NoFileExists(t, filepath.Join(outside, "written"))
	got, err := os.ReadFile(fileTarget)
	require.NoError(t, err)
	assert.Equal(t, "in the volume", string(got))
	assert.Contains(t, mountPointsUnder(a.podDir(pod)), dirTarget)

	// Pinning again refuses the symlinks and mounts nothing.
	_, err = a.volumes().PinSubPath(pod, "app", "data", vol, "s", 0)
	require.ErrorContains(t, err, "outside the volume")
	require.NoError(t, a.volumes().UnpinSubPaths(pod, "app"))
	assert.Empty(t, mountPointsUnder(a.podDir(pod)))
	assert.FileExists(t, filepath.Join(vol, "s.old", "written"), "unpinning keeps the volume's content")
}

// subPathPod is a pod of agent a with an emptyDir "data", and a directory
// outside it holding a canary.
func subPathPod(t *testing.T, a *Agent) (pod *v1.Pod, vol, outside string) {
	t.Helper()
	pod = &v1.Pod{}
	pod.UID = "22222222-2222-3333-4444-555555555555"
	vol = filepath.Join(a.podDir(pod), "volumes", "kubernetes.io~empty-dir", "data")
	require.NoError(t, os.MkdirAll(vol, 0o777))
	outside = t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(outside, "canary"), []byte("host"), 0o600))
	return pod, vol, outside
}

// mountPointsUnder lists the mount points at or below dir.
func mountPointsUnder(dir string) []string {
	var out []string
	mounts, err := volume.MountInfo()
	if err != nil {
		panic(err)
	}
	for _, m := range mounts {
		if m.Point == dir || strings.HasPrefix(m.Point, dir+"/") {
			out = append(out, m.Point)
		}
	}
	return out
}

// A memory emptyDir keeps its tmpfs root's 1777 (the directory is chmodded
// before the tmpfs covers it, as the kubelet's setupDir), fsGroup adds
// setgid, and a missing subPath in it gets that whole mode:
// dgtrwxrwxrwx, group fsGroup (the conformance spec "EmptyDir volumes when
// FSGroup is specified nonexistent volume subPath should have the correct
// mode and owner using FSGroup").
func TestMemoryEmptyDirSubPathMode_Privileged(t *testing.T) {
	requiresPrivileged(t)
	a := envTestAgent(t)
	gid := int64(123)
	pod := &v1.Pod{Spec: v1.PodSpec{
		SecurityContext: &v1.PodSecurityContext{FSGroup: &gid},
		Volumes:         []v1.Volume{{Name: "data", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{Medium: v1.StorageMediumMemory}}}},
	}}
	pod.UID = "33333333-2222-3333-4444-555555555555"
	paths, err := a.volumes().SetupVolumes(pod)
	require.NoError(t, err)
	vol := paths["data"]
	t.Cleanup(func() { _ = volume.UnmountUnder(a.podDir(pod)) })
	want := os.ModeDir | os.ModeSetgid | os.ModeSticky | 0o777
	fi, err := os.Stat(vol)
	require.NoError(t, err)
	assert.Equal(t, want, fi.Mode(), "the tmpfs root")
	_, err = a.volumes().PinSubPath(pod, "app", "data", vol, "test-sub", 0)
	require.NoError(t, err)
	fi, err = os.Stat(filepath.Join(vol, "test-sub"))
	require.NoError(t, err)
	assert.Equal(t, want, fi.Mode(), "the subPath directory")
	assert.Equal(t, uint32(gid), fi.Sys().(*syscall.Stat_t).Gid)
}
