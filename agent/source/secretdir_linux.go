package source

import (
	"os"
	"strconv"
	"syscall"

	"github.com/minikubelet/minikubelet/agent/volume"
)

// mountSecretTmpfs mounts a tmpfs of size bytes, mode 0700, at dir unless
// something is mounted there already. Without root nothing is mounted.
func mountSecretTmpfs(dir string, size int64) (bool, error) {
	m := volume.HostMounter{}
	if m.IsMountPoint(dir) {
		return true, nil
	}
	if os.Geteuid() != 0 {
		return false, nil
	}
	opts := "mode=0700,size=" + strconv.FormatInt(size, 10)
	if err := syscall.Mount("tmpfs", dir, "tmpfs", syscall.MS_NOSUID|syscall.MS_NODEV|syscall.MS_NOEXEC, opts); err != nil {
		return false, &os.PathError{Op: "mount tmpfs", Path: dir, Err: err}
	}
	return true, nil
}

// isTmpfsMountPoint reports whether a tmpfs is mounted at dir.
func isTmpfsMountPoint(dir string) bool {
	var st syscall.Statfs_t
	return volume.HostMounter{}.IsMountPoint(dir) && syscall.Statfs(dir, &st) == nil && st.Type == tmpfsMagic
}

// tmpfsMagic is TMPFS_MAGIC (linux/magic.h).
const tmpfsMagic = 0x01021994

// unmountDir unmounts what is mounted at dir, lazily (a process with a
// file open there keeps it until it closes it).
func unmountDir(dir string) error {
	if err := syscall.Unmount(dir, syscall.MNT_DETACH); err != nil {
		return &os.PathError{Op: "unmount", Path: dir, Err: err}
	}
	return nil
}
