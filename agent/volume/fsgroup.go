package volume

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"

	v1 "k8s.io/api/core/v1"
)

// fsGroup.

// Permission bits SetVolumeOwnership adds (pkg/volume/volume_linux.go).
const (
	fsGroupRWMask   = fs.FileMode(0o660)
	fsGroupROMask   = fs.FileMode(0o440)
	fsGroupExecMask = fs.FileMode(0o110)
)

// applyFSGroup gives the volume at dir to group gid as the kubelet's
// SetVolumeOwnership does for a writable volume: every file and directory
// gets group gid and g+rw (directories also g+x and setgid, so new files
// inherit the group); symlinks get the group only. With policy
// OnRootMismatch nothing is done when dir already has the group and the
// bits. emptyDir calls it once, when the volume is created; others
// (configMap, secret, downwardAPI, projected) use applyFSGroupReadOnly.
func applyFSGroup(dir string, gid int64, policy *v1.PodFSGroupChangePolicy) error {
	return setVolumeOwnership(dir, gid, policy, false)
}

// applyFSGroupReadOnly is applyFSGroup for the volumes the kubelet treats as
// read-only (configMap, secret, downwardAPI, projected): g+r instead of g+rw.
func applyFSGroupReadOnly(dir string, gid int64, policy *v1.PodFSGroupChangePolicy) error {
	return setVolumeOwnership(dir, gid, policy, true)
}

func setVolumeOwnership(dir string, gid int64, policy *v1.PodFSGroupChangePolicy, readOnly bool) error {
	mask := fsGroupRWMask
	if readOnly {
		mask = fsGroupROMask
	}
	if policy != nil && *policy == v1.FSGroupChangeOnRootMismatch && !ownershipMismatch(dir, gid, mask) {
		return nil
	}
	var errs []error
	walkErr := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if err := os.Lchown(p, -1, int(gid)); err != nil {
			errs = append(errs, err)
		}
		// chmod follows symlinks: leave their targets alone.
		if d.Type()&fs.ModeSymlink != 0 {
			return nil
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		m := mask
		if info.IsDir() {
			m |= os.ModeSetgid | fsGroupExecMask
		}
		if err := os.Chmod(p, info.Mode()|m); err != nil {
			errs = append(errs, err)
		}
		return nil
	})
	if walkErr != nil {
		errs = append(errs, walkErr)
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("set volume ownership of %s to group %d: %w", dir, gid, err)
	}
	return nil
}

// ownershipMismatch reports whether dir lacks group gid, the mask's bits
// (plus g+x) or setgid: OnRootMismatch then changes the whole volume.
func ownershipMismatch(dir string, gid int64, mask fs.FileMode) bool {
	fi, err := os.Stat(dir)
	if err != nil || !fi.IsDir() {
		return true
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok || int64(st.Gid) != gid {
		return true
	}
	want := mask | fsGroupExecMask
	return fi.Mode().Perm()&want != want || fi.Mode()&os.ModeSetgid == 0
}

// podFSGroup is the pod's fsGroup and change policy (nil when unset).
func podFSGroup(pod *v1.Pod) (*int64, *v1.PodFSGroupChangePolicy) {
	if sc := pod.Spec.SecurityContext; sc != nil {
		return sc.FSGroup, sc.FSGroupChangePolicy
	}
	return nil, nil
}
