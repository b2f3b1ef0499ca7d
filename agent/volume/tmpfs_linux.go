package volume

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
)

// MountTmpfs mounts a tmpfs at dir, as the kubelet's memory emptyDir does
// (no flags, "size=N" when a size is known). Without root nothing is
// mounted and the caller falls back to a plain directory: this only
// happens in unit tests, the agent itself runs as root.
func (m HostMounter) MountTmpfs(dir string, size int64) (bool, error) {
	if m.IsMountPoint(dir) {
		return true, nil
	}
	if os.Geteuid() != 0 {
		if m.Logger != nil {
			m.Logger.Debug("Not root: memory-backed volume is a plain directory", "dir", dir)
		}
		return false, nil
	}
	opts := ""
	if size > 0 {
		opts = "size=" + strconv.FormatInt(size, 10)
	}
	if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, opts); err != nil {
		return false, &os.PathError{Op: "mount tmpfs", Path: dir, Err: err}
	}
	return true, nil
}

// BindMount bind-mounts source onto target. The agent runs as root; a
// unit test that is not gets the kernel's EPERM.
func (HostMounter) BindMount(source, target string) error {
	if err := syscall.Mount(source, target, "", syscall.MS_BIND, ""); err != nil {
		return &os.PathError{Op: "bind mount", Path: target, Err: err}
	}
	return nil
}

// Unmount unmounts dir, lazily when it is busy.
func (HostMounter) Unmount(dir string) error {
	err := syscall.Unmount(dir, 0)
	if errors.Is(err, syscall.EBUSY) {
		err = syscall.Unmount(dir, syscall.MNT_DETACH)
	}
	if err != nil && !errors.Is(err, syscall.EINVAL) && !errors.Is(err, syscall.ENOENT) {
		return &os.PathError{Op: "unmount", Path: dir, Err: err}
	}
	return nil
}

// IsMountPoint compares the device of dir with its parent's: a tmpfs has
// a device of its own.
func (HostMounter) IsMountPoint(dir string) bool {
	var st, parent syscall.Stat_t
	if syscall.Lstat(dir, &st) != nil || syscall.Lstat(filepath.Dir(dir), &parent) != nil {
		return false
	}
	return st.Dev != parent.Dev
}
