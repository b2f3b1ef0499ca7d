package volume

import (
	"fmt"
	"os"
	"path/filepath"

	v1 "k8s.io/api/core/v1"
)

// podDir is <rootDir>/pods/<uid>, the home of a pod's volumes, as in the
// kubelet's layout.
func (a *Manager) podDir(pod *v1.Pod) string {
	return filepath.Join(a.cfg.RootDir, "pods", string(pod.UID))
}

// podsDir is <rootDir>/pods.
func (a *Manager) podsDir() string { return filepath.Join(a.cfg.RootDir, "pods") }

// volumeHostPath is where a pod volume lives on the host.
func (a *Manager) volumeHostPath(pod *v1.Pod, vol *v1.Volume) string {
	switch {
	case vol.HostPath != nil:
		return vol.HostPath.Path
	case isAPIDataVolume(vol): // configMap, secret, downwardAPI, projected
		return filepath.Join(a.podDir(pod), "volumes", pluginDir(vol), vol.Name)
	default: // emptyDir
		return a.EmptyDirPath(pod, vol.Name)
	}
}

// EmptyDirPath is where the pod's emptyDir volume name lives on the host:
// a directory on the node filesystem, or for medium Memory the tmpfs
// mounted there. Every component is the agent's (the volume name is a
// validated DNS label), none the pod's: the pod sees only what is inside.
func (a *Manager) EmptyDirPath(pod *v1.Pod, name string) string {
	return filepath.Join(a.podDir(pod), "volumes", pluginEmptyDir, name)
}

// SetupVolumes prepares every volume of the pod on the host: emptyDir
// directories (mode 0777 like the kubelet's) and hostPath type checks. It is
// idempotent and returns the host path per volume name (none for an image
// volume, which the runtime mounts).
func (a *Manager) SetupVolumes(pod *v1.Pod) (map[string]string, error) {
	paths := make(map[string]string, len(pod.Spec.Volumes))
	for i := range pod.Spec.Volumes {
		vol := &pod.Spec.Volumes[i]
		p := a.volumeHostPath(pod, vol)
		switch {
		case vol.EmptyDir != nil:
			// Mode and fsGroup only when created, as the kubelet's emptyDir
			// (its ready marker): a later container must not undo setgid.
			_, statErr := os.Stat(p)
			created := os.IsNotExist(statErr)
			if err := os.MkdirAll(p, 0o755); err != nil {
				return nil, fmt.Errorf("create emptyDir volume %q: %w", vol.Name, err)
			}
			// The directory's mode before a tmpfs covers it, as the
			// kubelet's setupDir: the tmpfs root keeps its own 1777
			// (sticky), which the conformance spec of a subPath in an
			// fsGroup memory emptyDir expects (dgtrwxrwxrwx).
			if created {
				if err := os.Chmod(p, 0o777); err != nil {
					return nil, fmt.Errorf("create emptyDir volume %q: %w", vol.Name, err)
				}
			}
			if vol.EmptyDir.Medium == v1.StorageMediumMemory {
				// A tmpfs sized by sizeLimit (projection.go).
				if err := a.setupMemoryEmptyDir(pod, vol, p); err != nil {
					return nil, &MountError{Volume: vol.Name, Err: err}
				}
			}
			if created {
				if gid, policy := podFSGroup(pod); gid != nil {
					if err := applyFSGroup(p, *gid, policy); err != nil { // fsgroup.go
						return nil, fmt.Errorf("create emptyDir volume %q: %w", vol.Name, err)
					}
				}
			}
		case vol.HostPath != nil:
			if err := checkHostPath(vol.HostPath); err != nil {
				return nil, fmt.Errorf("hostPath volume %q: %w", vol.Name, err)
			}
		case isAPIDataVolume(vol):
			// Files written atomically, secrets on a tmpfs (projection.go).
			if err := a.setupDataVolume(pod, vol, p); err != nil {
				return nil, err
			}
		case vol.Image != nil:
			// The runtime mounts the image itself (CRI Mount.Image): it
			// has no host path (agent/podspec Mounts).
			continue
		default:
			// Validation refuses every other source before we get here.
			return nil, fmt.Errorf("volume %q: unsupported source", vol.Name)
		}
		paths[vol.Name] = p
	}
	return paths, nil
}

// checkHostPath applies the hostPath type rules as the kubelet's
// hostPathTypeChecker does: *OrCreate types create what is missing, the
// others require it to exist with that type.
func checkHostPath(hp *v1.HostPathVolumeSource) error {
	t := v1.HostPathUnset
	if hp.Type != nil {
		t = *hp.Type
	}
	fi, err := os.Stat(hp.Path)
	exists := err == nil
	if err != nil && !os.IsNotExist(err) {
		return err
	}
	want := func(ok bool, what string) error {
		if !exists {
			return fmt.Errorf("hostPath type check failed: %s does not exist", hp.Path)
		}
		if !ok {
			return fmt.Errorf("hostPath type check failed: %s is not a %s", hp.Path, what)
		}
		return nil
	}
	switch t {
	case v1.HostPathUnset:
		return nil
	case v1.HostPathDirectoryOrCreate:
		if !exists {
			return os.MkdirAll(hp.Path, 0o755)
		}
		return want(fi.IsDir(), "directory")
	case v1.HostPathFileOrCreate:
		if !exists {
			if err := os.MkdirAll(filepath.Dir(hp.Path), 0o755); err != nil {
				return err
			}
			f, err := os.OpenFile(hp.Path, os.O_CREATE|os.O_WRONLY, 0o644)
			if err != nil {
				return err
			}
			return f.Close()
		}
		return want(fi.Mode().IsRegular(), "file")
	case v1.HostPathDirectory:
		return want(exists && fi.IsDir(), "directory")
	case v1.HostPathFile:
		return want(exists && fi.Mode().IsRegular(), "file")
	case v1.HostPathSocket:
		return want(exists && fi.Mode()&os.ModeSocket != 0, "socket")
	case v1.HostPathCharDev:
		return want(exists && fi.Mode()&os.ModeCharDevice != 0, "character device")
	case v1.HostPathBlockDev:
		return want(exists && fi.Mode()&os.ModeDevice != 0 && fi.Mode()&os.ModeCharDevice == 0, "block device")
	}
	return fmt.Errorf("unknown hostPath type %q", t)
}

// UnmountPod unmounts everything under the pod's directory before the
// engine removes it (agent.cleanupPodDirs): the tmpfs of secret and
// memory volumes first (removing files from a mounted tmpfs would leave
// the mount behind), then the shared bind mounts of volumes with mount
// propagation. hostPath contents are never touched: they live outside
// the pod dir.
func (a *Manager) UnmountPod(pod *v1.Pod) error {
	if err := a.UnmountPodVolumes(pod); err != nil {
		return err
	}
	return UnmountUnder(a.podDir(pod))
}
