//go:build linux

package volume

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"

	"golang.org/x/sys/unix"
)

// usageBufSize is the getdents buffer of each directory level: a
// directory of millions of entries never sits in memory whole, and a walk
// 256 levels deep holds 2 MiB of them at most.
const usageBufSize = 8 << 10

// statxMask is what each entry's statx asks for.
const statxMask = unix.STATX_TYPE | unix.STATX_MODE | unix.STATX_NLINK | unix.STATX_INO | unix.STATX_BLOCKS | unix.STATX_MNT_ID

// usageWalk is one DiskUsage walk.
type usageWalk struct {
	ctx context.Context
	lim UsageLimits
	// devMajor, devMinor and mnt identify the root's filesystem and
	// mount (mnt only when haveMnt: statx's mount ID needs Linux 5.8).
	devMajor, devMinor uint32
	mnt                uint64
	haveMnt            bool
	// entries counts the entries measured so far.
	entries int64
	// linked are the inodes with more than one link already counted.
	linked map[uint64]struct{}
	u      Usage
}

func diskUsage(ctx context.Context, dir string, lim UsageLimits) (Usage, error) {
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if errors.Is(err, unix.ENOENT) {
		return Usage{}, nil
	}
	if err != nil {
		return Usage{}, &os.PathError{Op: "open", Path: dir, Err: err}
	}
	var st unix.Statx_t
	if err := statxFd(fd, &st); err != nil {
		_ = unix.Close(fd)
		return Usage{}, &os.PathError{Op: "statx", Path: dir, Err: err}
	}
	w := &usageWalk{ctx: ctx, lim: lim, devMajor: st.Dev_major, devMinor: st.Dev_minor,
		mnt: st.Mnt_id, haveMnt: st.Mask&unix.STATX_MNT_ID != 0, linked: map[uint64]struct{}{}}
	w.count(&st)
	w.dir(fd, 0)
	return w.u, nil
}

// statxFd reads what fd is open on.
func statxFd(fd int, st *unix.Statx_t) error {
	return unix.Statx(fd, "", unix.AT_EMPTY_PATH|unix.AT_STATX_DONT_SYNC, statxMask, st)
}

// incomplete records the first reason the walk stopped short.
func (w *usageWalk) incomplete(why string) {
	if w.u.Incomplete == "" {
		w.u.Incomplete = why
	}
}

// sameMount reports whether st is on the root's mount: anything else is
// a mount point under the tree (another filesystem, or a bind mount).
func (w *usageWalk) sameMount(st *unix.Statx_t) bool {
	if st.Dev_major != w.devMajor || st.Dev_minor != w.devMinor {
		return false
	}
	return !w.haveMnt || st.Mask&unix.STATX_MNT_ID == 0 || st.Mnt_id == w.mnt
}

// count adds one inode; a hard-linked one only the first time.
func (w *usageWalk) count(st *unix.Statx_t) {
	if st.Mode&unix.S_IFMT != unix.S_IFDIR && st.Nlink > 1 {
		if _, ok := w.linked[st.Ino]; ok {
			return
		}
		w.linked[st.Ino] = struct{}{}
	}
	w.u.Bytes += int64(st.Blocks) * 512
	w.u.Inodes++
}

// dir measures the entries of the directory open on fd, depth levels
// below the root, then enters its subdirectories; it closes fd. The
// entries are read with getdents into a fixed buffer (a few hundred at a
// time) and their names only are used: os.File.ReadDir would lstat
// "<its name>/<entry>" by path where the filesystem does not report entry
// types, and skip what that path does not find.
func (w *usageWalk) dir(fd, depth int) {
	defer unix.Close(fd)
	buf := make([]byte, usageBufSize)
	var names []string
	for w.u.Incomplete == "" {
		if err := w.ctx.Err(); err != nil {
			w.incomplete(fmt.Sprintf("the walk was cut short: %v", err))
			return
		}
		n, err := unix.ReadDirent(fd, buf)
		if err != nil {
			w.incomplete(fmt.Sprintf("read a directory: %v", err))
			return
		}
		if n <= 0 {
			return
		}
		_, _, names = unix.ParseDirent(buf[:n], -1, names[:0])
		var subdirs []string
		for _, name := range names {
			if depth == 0 && slices.Contains(w.lim.SkipTop, name) {
				continue
			}
			w.entries++
			if w.lim.MaxEntries > 0 && w.entries > w.lim.MaxEntries {
				w.incomplete(fmt.Sprintf("more than %d entries", w.lim.MaxEntries))
				return
			}
			var st unix.Statx_t
			// Never follows the entry; a FIFO or device is not opened.
			if unix.Statx(fd, name, unix.AT_SYMLINK_NOFOLLOW|unix.AT_NO_AUTOMOUNT|unix.AT_STATX_DONT_SYNC, statxMask, &st) != nil {
				continue // gone meanwhile
			}
			if !w.sameMount(&st) {
				continue
			}
			w.count(&st)
			if st.Mode&unix.S_IFMT == unix.S_IFDIR {
				subdirs = append(subdirs, name)
			}
		}
		for _, name := range subdirs {
			w.enter(fd, name, depth+1)
		}
	}
}

// enter walks the subdirectory name of the directory open on parent: opened
// from that descriptor without following a link (a directory swapped for
// a symlink since it was listed fails here), and only if still on the
// root's mount.
func (w *usageWalk) enter(parent int, name string, depth int) {
	if w.u.Incomplete != "" {
		return
	}
	if w.lim.MaxDepth > 0 && depth > w.lim.MaxDepth {
		w.incomplete(fmt.Sprintf("deeper than %d directories", w.lim.MaxDepth))
		return
	}
	fd, err := unix.Openat(parent, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return // swapped for a link or a file, or gone
	}
	var st unix.Statx_t
	if err := statxFd(fd, &st); err != nil || !w.sameMount(&st) {
		_ = unix.Close(fd)
		return
	}
	w.dir(fd, depth)
}
