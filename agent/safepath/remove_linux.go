//go:build linux

package safepath

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// removeBatch is how many names RemoveAll reads from a directory at a
// time: a pod can make millions of files in a volume, and the agent holds
// at most this many names per directory level.
const removeBatch = 1024

// removePasses bounds how often RemoveAll empties one directory that
// refills meanwhile (entries a directory read can miss while others go,
// or a writer still at work) before it gives up.
const removePasses = 4

// RemoveAll removes path and everything beneath it, as os.RemoveAll does
// (symlinks are removed, never followed; a missing path is no error), but
// never crosses a mount point: a directory or file that something is
// mounted on, at any depth, is left with its content and reported
// (ErrMountPoint), and so are the directories holding it. The kubelet's
// pod directory cleanup refuses to leave its file system the same way
// (removeall.RemoveAllOneFilesystem).
//
// A pod directory can hold the bind mounts of a pod's volumes (pinned
// subPaths, which may be of a hostPath volume, and tmpfs volumes). They
// are unmounted before the directory is removed; when an unmount did not
// happen (a mount table that could not be read, a mount that came back),
// os.RemoveAll would delete the mounted host directory's files, as root.
//
// Every directory is entered through openat2(RESOLVE_NO_XDEV) on the
// descriptor of its parent, so a bind mount of the same file system is
// found too; where the kernel lacks openat2 a change of device is what
// marks a mount point (a same-file-system bind mount then goes unseen, as
// with the kubelet's check). Only the directory holding path is trusted.
func RemoveAll(path string) error {
	path = filepath.Clean(path)
	if path == "/" {
		return &os.PathError{Op: "remove", Path: path, Err: errors.New("refusing to remove /")}
	}
	dir, name := filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	dfd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if errors.Is(err, unix.ENOENT) {
		return nil
	}
	if err != nil {
		return &os.PathError{Op: "open", Path: dir, Err: err}
	}
	defer unix.Close(dfd)
	return removeAt(dfd, name, path)
}

// removeAt removes name in the directory dfd (full is its path, for
// errors) and, when it is a directory, what it holds.
func removeAt(dfd int, name, full string) error {
	err := ignoringEINTR(func() error { return unix.Unlinkat(dfd, name, 0) })
	switch err {
	case nil, unix.ENOENT:
		return nil
	case unix.EISDIR, unix.EPERM:
		// A directory (EPERM is what unlink says on Linux for one).
	case unix.EBUSY:
		return mountPointError(full, err)
	default:
		return &os.PathError{Op: "remove", Path: full, Err: err}
	}
	for pass := 0; ; pass++ {
		err = ignoringEINTR(func() error { return unix.Unlinkat(dfd, name, unix.AT_REMOVEDIR) })
		switch err {
		case nil, unix.ENOENT:
			return nil
		case unix.ENOTEMPTY, unix.EEXIST:
		case unix.EBUSY:
			return mountPointError(full, err)
		default:
			return &os.PathError{Op: "remove", Path: full, Err: err}
		}
		if pass == removePasses {
			// Something keeps writing there.
			return &os.PathError{Op: "remove", Path: full, Err: err}
		}
		if errs := removeChildren(dfd, name, full); len(errs) > 0 {
			// What is left is what could not be removed.
			return errors.Join(errs...)
		}
	}
}

// removeChildren enters the directory name in dfd without crossing a
// mount point and removes what it holds; it returns the failures.
func removeChildren(dfd int, name, full string) []error {
	fd, err := openDirNoXdev(dfd, name)
	if err != nil {
		if errors.Is(err, ErrMountPoint) {
			return []error{mountPointError(full, err)}
		}
		return []error{&os.PathError{Op: "open", Path: full, Err: err}}
	}
	d := os.NewFile(uintptr(fd), full)
	defer d.Close()
	var errs []error
	for {
		names, err := d.Readdirnames(removeBatch)
		for _, n := range names {
			if e := removeAt(fd, n, filepath.Join(full, n)); e != nil {
				errs = append(errs, e)
			}
		}
		if errors.Is(err, io.EOF) || (err == nil && len(names) == 0) {
			return errs
		}
		if err != nil {
			return append(errs, &os.PathError{Op: "readdir", Path: full, Err: err})
		}
	}
}

// openDirNoXdev opens the directory name in dfd for reading, never
// following a symlink and never onto another mount (ErrMountPoint).
func openDirNoXdev(dfd int, name string) (int, error) {
	flags := uint64(unix.O_RDONLY | unix.O_DIRECTORY | unix.O_NOFOLLOW | unix.O_CLOEXEC)
	if !noOpenat2.Load() {
		how := unix.OpenHow{Flags: flags, Resolve: unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_XDEV | unix.RESOLVE_NO_MAGICLINKS}
		for range 16 {
			fd, err := unix.Openat2(dfd, name, &how)
			switch err {
			case unix.EAGAIN, unix.EINTR:
				continue
			case unix.EXDEV:
				return -1, fmt.Errorf("%w: %w", ErrMountPoint, err)
			case unix.ENOSYS:
				noOpenat2.Store(true)
			default:
				return fd, err
			}
			break
		}
		if !noOpenat2.Load() {
			return -1, unix.EAGAIN
		}
	}
	fd, err := unix.Openat(dfd, name, int(flags), 0)
	if err != nil {
		return -1, err
	}
	var parent, st unix.Stat_t
	if err := unix.Fstat(dfd, &parent); err != nil {
		unix.Close(fd)
		return -1, err
	}
	if err := unix.Fstat(fd, &st); err != nil {
		unix.Close(fd)
		return -1, err
	}
	if st.Dev != parent.Dev {
		unix.Close(fd)
		return -1, fmt.Errorf("%w: another device", ErrMountPoint)
	}
	return fd, nil
}

// mountPointError says that full was left because something is mounted
// on it.
func mountPointError(full string, err error) error {
	if errors.Is(err, ErrMountPoint) {
		return &os.PathError{Op: "remove", Path: full, Err: err}
	}
	return &os.PathError{Op: "remove", Path: full, Err: fmt.Errorf("%w: %w", ErrMountPoint, err)}
}

// ignoringEINTR retries f while it fails with EINTR.
func ignoringEINTR(f func() error) error {
	for {
		if err := f(); err != unix.EINTR {
			return err
		}
	}
}
