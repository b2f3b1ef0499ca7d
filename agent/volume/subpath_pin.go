package volume

// subPath mounts, the kubelet's way (pkg/volume/util/subpath): the path
// inside the volume is resolved beneath the volume's root and opened
// (agent/safepath), its missing directories created on the way, and what
// was opened — not a path string — is bind-mounted through
// /proc/self/fd/N onto a pinned target the pod cannot reach:
//
//	<podDir>/volume-subpaths/<volume>/<container>/<mount index>
//
// The CRI gets that target. runc mounts it later, at StartContainer, and
// by then a container of the pod may have swapped a component of the
// subPath for a symlink to a host directory: the target still holds the
// directory (or file) the agent opened, inside the volume.
//
// Lifetime: a container's pinned targets are replaced at each start of
// that container (one set per container name, as the kubelet's), removed
// when its creation fails, and unmounted with the pod's directories at
// teardown (UnmountPod), by orphan collection, and for leftovers of an
// earlier agent (cleanupStaleSubPaths).

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/minikubelet/minikubelet/agent/safepath"
)

// SubPathsDirName is the pod directory's home of pinned subPath targets.
const SubPathsDirName = "volume-subpaths"

// subPathTarget is the pinned target of the index-th volumeMount of a
// container.
func (a *Manager) subPathTarget(pod *v1.Pod, volume, container string, index int) string {
	return filepath.Join(a.podDir(pod), SubPathsDirName, volume, container, strconv.Itoa(index))
}

// PinSubPath opens sub beneath the volume's root (creating missing
// directories, never outside the volume), and bind-mounts what it opened
// onto the mount's pinned target, which it returns. A directory is pinned
// on a directory, anything else on an empty file. An earlier pin at the
// target is unmounted first; a target that cannot be emptied is an error,
// never mounted over.
func (a *Manager) PinSubPath(pod *v1.Pod, container, volume, root, sub string, index int) (string, error) {
	if err := CheckSubPath(sub); err != nil {
		return "", err
	}
	// Missing directories get the mode of the volume's root, setgid and
	// sticky bits included and the umask bypassed, as the kubelet's
	// (makeMounts: SafeMakeDir with GetMode(volumePath)): an emptyDir
	// (1777, setgid with fsGroup) gives a subPath every container user can
	// write, in the fsGroup's group.
	rootInfo, err := os.Stat(root)
	if err != nil {
		return "", fmt.Errorf("open subPath %q: volume: %w", sub, err)
	}
	src, err := safepath.MkdirAll(root, sub, rootInfo.Mode())
	if err != nil {
		if errors.Is(err, safepath.ErrEscapes) || errors.Is(err, safepath.ErrSymlink) {
			return "", fmt.Errorf("subPath %q leads outside the volume: %w", sub, err)
		}
		return "", fmt.Errorf("open subPath %q: %w", sub, err)
	}
	defer src.Close()
	fi, err := src.Stat()
	if err != nil {
		return "", fmt.Errorf("open subPath %q: %w", sub, err)
	}
	target := a.subPathTarget(pod, volume, container, index)
	// The target's directories are the agent's: the pod reaches none.
	if err := os.MkdirAll(filepath.Dir(target), 0o750); err != nil {
		return "", fmt.Errorf("create subPath mount point: %w", err)
	}
	m := a.volumeMounterOrHost()
	if err := RemoveSubPathTarget(m, target); err != nil {
		return "", err
	}
	if fi.IsDir() {
		err = os.Mkdir(target, 0o750)
	} else {
		var f *os.File
		f, err = os.OpenFile(target, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o640)
		if err == nil {
			err = f.Close()
		}
	}
	if err != nil {
		return "", fmt.Errorf("create subPath mount point: %w", err)
	}
	if err := m.BindMount(safepath.ProcPath(src), target); err != nil {
		_ = os.Remove(target)
		return "", fmt.Errorf("mount subPath %q: %w", sub, err)
	}
	return target, nil
}

// UnpinSubPaths unmounts and removes the pinned subPath targets of one
// container (every volume); best effort, failures joined.
func (a *Manager) UnpinSubPaths(pod *v1.Pod, container string) error {
	base := filepath.Join(a.podDir(pod), SubPathsDirName)
	vols, err := os.ReadDir(base)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil
		}
		return err
	}
	m := a.volumeMounterOrHost()
	var errs []error
	for _, v := range vols {
		dir := filepath.Join(base, v.Name(), container)
		targets, err := os.ReadDir(dir)
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			errs = append(errs, err)
			continue
		}
		for _, t := range targets {
			if err := RemoveSubPathTarget(m, filepath.Join(dir, t.Name())); err != nil {
				errs = append(errs, err)
			}
		}
		if err := os.Remove(dir); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// subPathVolume returns the volume whose pinned subPath targets hold
// hostPath (a mount's host path), or "".
func (a *Manager) subPathVolume(pod *v1.Pod, hostPath string) string {
	rest, ok := strings.CutPrefix(hostPath, filepath.Join(a.podDir(pod), SubPathsDirName)+"/")
	if !ok {
		return ""
	}
	vol, _, _ := strings.Cut(rest, "/")
	return vol
}

// CleanupStaleSubPaths unmounts and removes the pinned subPath targets of
// every pod directory whose pod is neither desired, nor in the runtime
// (live), nor has a worker (hasWorker, the engine's): what an agent killed
// during a teardown left.
func (a *Manager) CleanupStaleSubPaths(desired, live map[types.UID]bool, hasWorker func(types.UID) bool) error {
	dirs, err := os.ReadDir(a.podsDir())
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil
		}
		return err
	}
	var errs []error
	for _, d := range dirs {
		uid := types.UID(d.Name())
		if !d.IsDir() || desired[uid] || live[uid] || hasWorker(uid) {
			continue
		}
		dir := filepath.Join(a.podsDir(), d.Name(), SubPathsDirName)
		if _, err := os.Lstat(dir); err != nil {
			continue
		}
		a.logger.Info("Removing the subPath mounts of a pod no source wants", "podUID", string(uid))
		if err := UnmountUnder(dir); err != nil {
			errs = append(errs, err)
			continue
		}
		if err := safepath.RemoveAll(dir); err != nil { // never through a pin still mounted
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
