package gc

import "syscall"

// Statfs sizes the filesystem holding path with statfs(2): its blocks, and
// those available to unprivileged writers (df's Size and Avail).
func Statfs(path string) (FsStats, error) {
	var st syscall.Statfs_t
	if err := syscall.Statfs(path, &st); err != nil {
		return FsStats{}, err
	}
	bs := uint64(st.Bsize) //nolint:gosec // block sizes are positive
	return FsStats{Capacity: st.Blocks * bs, Available: st.Bavail * bs}, nil
}
