package volume

// The pod-independent half of the safe subPath mounts: checking a subPath
// and removing a pinned target. Pinning (subpath_pin.go) opens the path
// beneath the volume with agent/safepath and bind-mounts what it opened.

import (
	"errors"
	"fmt"
	"os"

	"github.com/minikubelet/minikubelet/agent/manifest"
)

// CheckSubPath refuses a subPath that is absolute or climbs with "..":
// validation refuses them too, this is the last line (manifest.CheckSubPath).
func CheckSubPath(sub string) error { return manifest.CheckSubPath(sub) }

// RemoveSubPathTarget unmounts target and removes it. Removal is the proof
// the unmount worked: a directory still mounted is busy, and one holding a
// volume's files is not empty; either is an error, and nothing is deleted
// from what was mounted.
func RemoveSubPathTarget(m VolumeMounter, target string) error {
	if _, err := os.Lstat(target); errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err := m.Unmount(target); err != nil {
		return fmt.Errorf("unmount subPath %s: %w", target, err)
	}
	if err := os.Remove(target); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("remove subPath mount point %s: %w", target, err)
	}
	return nil
}
