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
