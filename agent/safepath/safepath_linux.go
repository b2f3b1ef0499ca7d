//go:build linux

package safepath

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"

	"golang.org/x/sys/unix"
)

// noOpenat2 is set once openat2 answered ENOSYS (kernels before 5.6, or a
// seccomp filter): every walk then takes the per-component fallback. Tests
// set it to exercise the fallback.
var noOpenat2 atomic.Bool

// maxSymlinks bounds the symlinks one fallback walk follows, the kernel's
// MAXSYMLINKS.
const maxSymlinks = 40

// walk says how resolve treats symlinks and missing components.
type walk struct {
	// noSymlinks refuses every symlink in the path (ErrSymlink); else
	// symlinks are followed while they stay beneath the root.
	noSymlinks bool
	// followLast follows a symlink as the last component; else it is
	// refused (ErrSymlink).
	followLast bool
	// create makes missing components directories with mode perm
	// (permission, setuid, setgid and sticky bits, the umask bypassed).
	create bool
	perm   uint32
}

// OpenPath returns an O_PATH descriptor of rel beneath the directory root,
// of any file type. Symlinks in rel are followed only while they stay
// beneath root; ".." may not climb above it. The descriptor pins what was
// found: mount it through /proc/self/fd/N (ProcPath).
func OpenPath(root, rel string) (*os.File, error) {
	return resolveFile(root, rel, walk{followLast: true})
}

// MkdirAll is OpenPath that first creates the missing components of rel
// as directories with mode perm, each made with mkdirat on the descriptor
// of its parent and then opened without following a symlink, so nothing is
// ever created outside root. A directory it made gets exactly perm —
// permission bits and setuid, setgid and sticky — whatever the umask, as
// the kubelet's doSafeMakeDir fchmods what it made; existing components
// keep theirs. An existing last component may be of any type.
func MkdirAll(root, rel string, perm os.FileMode) (*os.File, error) {
	return resolveFile(root, rel, walk{followLast: true, create: true, perm: kernelMode(perm)})
}

// kernelMode is the mode_t of perm's permission and special bits.
func kernelMode(perm os.FileMode) uint32 {
	m := uint32(perm.Perm())
	if perm&os.ModeSetuid != 0 {
		m |= unix.S_ISUID
	}
	if perm&os.ModeSetgid != 0 {
		m |= unix.S_ISGID
	}
	if perm&os.ModeSticky != 0 {
		m |= unix.S_ISVTX
	}
	return m
}

// OpenBeneath opens rel beneath root for reading: no symlink anywhere in
// rel (ErrSymlink), no ".." above root, a regular file only
// (ErrNotRegular), never blocking (a FIFO or device is refused before it
// is opened for reading).
func OpenBeneath(root, rel string) (*os.File, error) {
	p, err := resolveFile(root, rel, walk{noSymlinks: true})
	if err != nil {
		return nil, err
	}
	defer p.Close()
	return reopenRegular(p, filepath.Join(root, rel))
}

// OpenFile opens the regular file at path for reading, refusing a symlink
// as its last component and never blocking (see OpenBeneath).
func OpenFile(path string) (*os.File, error) {
	fd, err := unix.Open(path, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: path, Err: err}
	}
	p := os.NewFile(uintptr(fd), path)
	defer p.Close()
	return reopenRegular(p, path)
}

// ProcPath is the path through which the kernel reaches what f is open on,
// whatever happens to the path it was opened by: the source of a bind
// mount of a descriptor.
func ProcPath(f *os.File) string {
	return "/proc/self/fd/" + strconv.Itoa(int(f.Fd()))
}

// reopenRegular checks that the O_PATH descriptor p is of a regular file
// and opens that very file for reading, O_NONBLOCK.
func reopenRegular(p *os.File, name string) (*os.File, error) {
	var st unix.Stat_t
	if err := unix.Fstat(int(p.Fd()), &st); err != nil {
		return nil, &os.PathError{Op: "fstat", Path: name, Err: err}
	}
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFREG:
	case unix.S_IFLNK:
		return nil, &os.PathError{Op: "open", Path: name, Err: ErrSymlink}
	default:
		return nil, &os.PathError{Op: "open", Path: name, Err: ErrNotRegular}
	}
	fd, err := unix.Open(ProcPath(p), unix.O_RDONLY|unix.O_NONBLOCK|unix.O_NOCTTY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: name, Err: err}
	}
	return os.NewFile(uintptr(fd), name), nil
}

// resolveFile opens root and resolves rel beneath it.
func resolveFile(root, rel string, w walk) (*os.File, error) {
	name := filepath.Join(root, rel)
	if filepath.IsAbs(rel) {
		return nil, &os.PathError{Op: "resolve", Path: rel, Err: fmt.Errorf("%w: absolute path", ErrEscapes)}
	}
	rfd, err := unix.Open(root, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: root, Err: err}
	}
	defer unix.Close(rfd)
	fd, err := resolve(rfd, rel, w)
	if err != nil {
		return nil, &os.PathError{Op: "resolve", Path: name, Err: err}
	}
	return os.NewFile(uintptr(fd), name), nil
}

// resolve returns an O_PATH descriptor of rel beneath the directory rfd.
func resolve(rfd int, rel string, w walk) (int, error) {
	rel = filepath.Clean(rel)
	if !noOpenat2.Load() {
		fd, err := resolveOpenat2(rfd, rel, w)
		if !errors.Is(err, unix.ENOSYS) {
			return fd, err
		}
		noOpenat2.Store(true)
	}
	return resolveFallback(rfd, rel, w)
}

// openat2 is unix.Openat2 with O_PATH, retried on EAGAIN and EINTR (the
// kernel answers EAGAIN when a rename raced a ".." lookup).
func openat2(dfd int, path string, w walk, last bool) (int, error) {
	how := unix.OpenHow{
		Flags:   unix.O_PATH | unix.O_CLOEXEC,
		Resolve: unix.RESOLVE_BENEATH | unix.RESOLVE_NO_MAGICLINKS,
	}
	if w.noSymlinks {
		how.Resolve |= unix.RESOLVE_NO_SYMLINKS
	}
	if last && !w.followLast {
		how.Flags |= unix.O_NOFOLLOW
	}
	for range 16 {
		fd, err := unix.Openat2(dfd, path, &how)
		if err == unix.EAGAIN || err == unix.EINTR {
			continue
		}
		return fd, mapErrno(err)
	}
	return -1, unix.EAGAIN
}

// mapErrno adds this package's meaning to the kernel's refusals.
func mapErrno(err error) error {
	switch err {
	case nil:
		return nil
	case unix.EXDEV:
		return fmt.Errorf("%w: %w", ErrEscapes, err)
	case unix.ELOOP:
		return fmt.Errorf("%w: %w", ErrSymlink, err)
	}
	return err
}

// resolveOpenat2 resolves with the kernel's RESOLVE_BENEATH: the whole path
// in one call, and when components are missing (create), each prefix from
// the root in turn, a missing one made by mkdirat on its parent.
func resolveOpenat2(rfd int, rel string, w walk) (int, error) {
	fd, err := openat2(rfd, rel, w, true)
	if err == nil {
		return checkLast(fd, w)
	}
	if !w.create || !errors.Is(err, unix.ENOENT) {
		return -1, err
	}
	comps := strings.Split(rel, "/")
	parent, err := unix.Dup(rfd)
	if err != nil {
		return -1, err
	}
	for i, c := range comps {
		last := i == len(comps)-1
		fd, err := openat2(rfd, strings.Join(comps[:i+1], "/"), w, last)
		if errors.Is(err, unix.ENOENT) && c != ".." {
			fd, err = mkdirOpen(parent, c, w.perm)
		}
		unix.Close(parent)
		if err != nil {
			return -1, err
		}
		parent = fd
	}
	return checkLast(parent, w)
}

// mkdirOpen makes the directory name in dfd (one that exists already is
// fine) and opens it without following a symlink: if the name was swapped
// for one meanwhile, the open fails. A directory it made is then chmodded
// to perm (mkdirat's mode is cut by the umask) through the descriptor it
// opened, never by name.
func mkdirOpen(dfd int, name string, perm uint32) (int, error) {
	made := true
	if err := unix.Mkdirat(dfd, name, perm); err == unix.EEXIST {
		made = false
	} else if err != nil {
		return -1, err
	}
	fd, err := unix.Openat(dfd, name, unix.O_PATH|unix.O_NOFOLLOW|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err == unix.ELOOP {
		return -1, fmt.Errorf("%w: %s was replaced by one", ErrSymlink, name)
	}
	if err != nil || !made {
		return fd, err
	}
	// fchmod refuses an O_PATH descriptor; its /proc/self/fd magic link
	// reaches the very directory opened above.
	if err := unix.Fchmodat(unix.AT_FDCWD, "/proc/self/fd/"+strconv.Itoa(fd), perm, 0); err != nil {
		unix.Close(fd)
		return -1, fmt.Errorf("chmod %s: %w", name, err)
	}
	return fd, nil
}

// checkLast refuses a descriptor of a symlink where the walk does not
// follow one (O_PATH|O_NOFOLLOW opens the link itself).
func checkLast(fd int, w walk) (int, error) {
	if w.followLast {
		return fd, nil
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		unix.Close(fd)
		return -1, err
	}
	if st.Mode&unix.S_IFMT == unix.S_IFLNK {
		unix.Close(fd)
		return -1, ErrSymlink
	}
	return fd, nil
}

// resolveFallback walks one component at a time, each opened O_NOFOLLOW
// from its parent's descriptor. A symlink is never followed by the kernel:
// its target is read from the link's own descriptor and walked here, from
// the directory holding the link (relative targets) — an absolute target
// or a ".." above the root is ErrEscapes. stack holds the descriptors from
// the root down to the current directory.
func resolveFallback(rfd int, rel string, w walk) (int, error) {
	root, err := unix.Dup(rfd)
	if err != nil {
		return -1, err
	}
	stack := []int{root}
	defer func() {
		for _, fd := range stack {
			unix.Close(fd)
		}
	}()
	todo := strings.Split(rel, "/")
	links := 0
	for len(todo) > 0 {
		c := todo[0]
		todo = todo[1:]
		switch c {
		case "", ".":
			continue
		case "..":
			if len(stack) == 1 {
				return -1, fmt.Errorf("%w: \"..\" above the root", ErrEscapes)
			}
			unix.Close(stack[len(stack)-1])
			stack = stack[:len(stack)-1]
			continue
		}
		parent := stack[len(stack)-1]
		fd, err := unix.Openat(parent, c, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err == unix.ENOENT && w.create {
			fd, err = mkdirOpen(parent, c, w.perm)
		}
		if err != nil {
			return -1, err
		}
		var st unix.Stat_t
		if err := unix.Fstat(fd, &st); err != nil {
			unix.Close(fd)
			return -1, err
		}
		last := len(todo) == 0
		if st.Mode&unix.S_IFMT == unix.S_IFLNK {
			target, err := readlinkFd(fd)
			unix.Close(fd)
			links++
			switch {
			case err != nil:
				return -1, err
			case w.noSymlinks || (last && !w.followLast):
				return -1, ErrSymlink
			case links > maxSymlinks:
				return -1, mapErrno(unix.ELOOP)
			case filepath.IsAbs(target):
				return -1, fmt.Errorf("%w: symlink %s to an absolute path", ErrEscapes, c)
			}
			todo = append(strings.Split(target, "/"), todo...)
			continue
		}
		if !last && st.Mode&unix.S_IFMT != unix.S_IFDIR {
			unix.Close(fd)
			return -1, unix.ENOTDIR
		}
		stack = append(stack, fd)
	}
	// The result leaves the stack; the deferred close takes the rest.
	top := stack[len(stack)-1]
	if len(stack) == 1 {
		return unix.Dup(top)
	}
	stack = stack[:len(stack)-1]
	return top, nil
}

// readlinkFd reads the target of the symlink that the O_PATH descriptor fd
// is open on (readlinkat with an empty path).
func readlinkFd(fd int) (string, error) {
	buf := make([]byte, unix.PathMax)
	n, err := unix.Readlinkat(fd, "", buf)
	if err != nil {
		return "", err
	}
	if n >= len(buf) {
		return "", unix.ENAMETOOLONG
	}
	return string(buf[:n]), nil
}
