package cni

import (
	"fmt"
	"os"
	"syscall"
)

// openNoFollow opens the cache without following a symlink, and without
// blocking on a FIFO.
const openNoFollow = syscall.O_NOFOLLOW | syscall.O_NONBLOCK

// fileStamp identifies the content of a file (a plugin, the node's
// conflist): device, inode, size, modification and change time. A new file
// (a reinstall renames one over the old) has another inode; a write in
// place changes mtime and ctime, and ctime cannot be set back. "" when the
// platform gives none.
func fileStamp(fi os.FileInfo) string {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return ""
	}
	return fmt.Sprintf("%d:%d:%d:%d.%09d:%d.%09d", st.Dev, st.Ino, st.Size, st.Mtim.Sec, st.Mtim.Nsec, st.Ctim.Sec, st.Ctim.Nsec)
}
