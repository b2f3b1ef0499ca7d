//go:build linux

package volume

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path"
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
	// subs are the subtrees measured on their own as well, by path
	// relative to the root; active those the walk is inside.
	subs   map[string]*subtreeUsage
	active []*subtreeUsage
	// ways holds the subtrees and every directory leading to one, so
	// that an entry is looked up once, not compared with each subtree:
	// the subtrees are a pod's emptyDirs, as many as its manifest lists,
	// and comparing each entry with each made the walk of N of them N².
	ways map[string]bool
}

// subtreeUsage is one subtree's figure within a walk.
type subtreeUsage struct {
	u      Usage
	linked map[uint64]struct{}
	// seen: the walk reached its root; done: it finished inside it.
	seen, done bool
}

func diskUsage(ctx context.Context, dir string, lim UsageLimits, subtrees []string) (Usage, map[string]Usage, error) {
	var subs map[string]Usage
	if len(subtrees) > 0 {
		subs = make(map[string]Usage, len(subtrees))
		for _, s := range subtrees {
			subs[s] = Usage{}
		}
	}
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if errors.Is(err, unix.ENOENT) {
		return Usage{}, subs, nil
	}
	if err != nil {
		return Usage{}, nil, &os.PathError{Op: "open", Path: dir, Err: err}
	}
	var st unix.Statx_t
	if err := statxFd(fd, &st); err != nil {
		_ = unix.Close(fd)
		return Usage{}, nil, &os.PathError{Op: "statx", Path: dir, Err: err}
	}
	w := &usageWalk{ctx: ctx, lim: lim, devMajor: st.Dev_major, devMinor: st.Dev_minor,
		mnt: st.Mnt_id, haveMnt: st.Mask&unix.STATX_MNT_ID != 0, linked: map[uint64]struct{}{}}
	if len(subtrees) > 0 {
		w.subs = make(map[string]*subtreeUsage, len(subtrees))
		for _, s := range subtrees {
			w.subs[path.Clean(s)] = &subtreeUsage{linked: map[uint64]struct{}{}}
		}
		w.ways = make(map[string]bool, len(w.subs))
		for s := range w.subs {
			for ; s != "." && s != "/" && s != "" && !w.ways[s]; s = path.Dir(s) {
				w.ways[s] = true
			}
		}
	}
	w.count(&st, nil)
	w.dir(fd, 0, "", len(w.subs) > 0)
	for _, s := range subtrees {
		sub := w.subs[path.Clean(s)]
		switch {
		case sub.seen && !sub.done && sub.u.Incomplete == "":
			sub.u.Incomplete = w.u.Incomplete
		case !sub.seen && w.u.Incomplete != "":
			// Not reached: it may exist beyond where the walk stopped.
			sub.u.Incomplete = w.u.Incomplete
		}
		subs[s] = sub.u
	}
	return w.u, subs, nil
}

// subtreeOf is the path of entry name of the directory at rel (relative
// to the root), and whether it is a subtree or leads to one; only then is
// the path worth building.
func (w *usageWalk) subtreeOf(rel, name string) (string, bool) {
	child := name
	if rel != "" {
		child = rel + "/" + name
	}
	if w.ways[child] {
		return child, true
	}
	return "", false
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

// count adds one inode to the total, to the subtrees the walk is in and
// to root (the subtree whose root st is, if any); a hard-linked one only
// the first time each of them sees it.
func (w *usageWalk) count(st *unix.Statx_t, root *subtreeUsage) {
	add := func(u *Usage, linked map[uint64]struct{}) {
		if st.Mode&unix.S_IFMT != unix.S_IFDIR && st.Nlink > 1 {
			if _, ok := linked[st.Ino]; ok {
				return
			}
			linked[st.Ino] = struct{}{}
		}
		u.Bytes += int64(st.Blocks) * 512
		u.Inodes++
	}
	add(&w.u, w.linked)
	for _, s := range w.active {
		add(&s.u, s.linked)
	}
	if root != nil {
		add(&root.u, root.linked)
	}
}

// dir measures the entries of the directory open on fd, depth levels
// below the root, then enters its subdirectories; it closes fd. The
// entries are read with getdents into a fixed buffer (a few hundred at a
// time) and their names only are used: os.File.ReadDir would lstat
// "<its name>/<entry>" by path where the filesystem does not report entry
// types, and skip what that path does not find.
//
// rel is the directory's path relative to the root, when track says it
// is a subtree or leads to one.
func (w *usageWalk) dir(fd, depth int, rel string, track bool) {
	defer unix.Close(fd)
	buf := make([]byte, usageBufSize)
	var names []string
	for w.u.Incomplete == "" {
		if err := w.ctx.Err(); err != nil {
			w.incomplete(fmt.Sprintf("the walk was cut short: %v", err))
			return
		}
		if w.lim.Pace != nil {
			if err := w.lim.Pace(w.ctx, Usage{Bytes: w.u.Bytes, Inodes: w.u.Inodes}); err != nil {
				w.incomplete(fmt.Sprintf("the walk was cut short: %v", err))
				return
			}
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
		type subdir struct {
			name, rel string
			track     bool
		}
		var subdirs []subdir
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
			var childRel string
			var childTrack bool
			if track {
				childRel, childTrack = w.subtreeOf(rel, name)
			}
			root := w.subs[childRel] // nil unless childTrack
			if !childTrack {
				root = nil
			}
			if !w.sameMount(&st) {
				if root != nil {
					root.seen = true
					root.u.Incomplete = "a mount point: not entered"
				}
				continue
			}
			w.count(&st, root)
			if st.Mode&unix.S_IFMT == unix.S_IFDIR {
				subdirs = append(subdirs, subdir{name, childRel, childTrack})
			} else if root != nil {
				root.seen, root.done = true, true // a file: counted whole
			}
		}
		for _, d := range subdirs {
			w.enter(fd, d.name, depth+1, d.rel, d.track)
		}
	}
}

// enter walks the subdirectory name of the directory open on parent: opened
// from that descriptor without following a link (a directory swapped for
// a symlink since it was listed fails here), and only if still on the
// root's mount.
func (w *usageWalk) enter(parent int, name string, depth int, rel string, track bool) {
	if w.u.Incomplete != "" {
		return
	}
	if sub := w.subs[rel]; track && sub != nil {
		sub.seen = true
		w.active = append(w.active, sub)
		defer func() {
			w.active = w.active[:len(w.active)-1]
			sub.done = w.u.Incomplete == ""
		}()
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
	w.dir(fd, depth, rel, track)
}
