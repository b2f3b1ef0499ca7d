package safepath

import (
	"errors"
	"fmt"
	"io"
	"os"
)

// Errors of this package; callers test them with errors.Is.
var (
	// ErrNotRegular is returned by the readers for anything but a regular
	// file (a directory, FIFO, socket or device).
	ErrNotRegular = errors.New("not a regular file")
	// ErrTooLarge is returned by ReadHead when the file holds more than
	// the limit; the first bytes up to the limit come with it.
	ErrTooLarge = errors.New("file too large")
	// ErrEscapes is returned when a path (through "..", an absolute
	// symlink or a symlink climbing out) would leave the root.
	ErrEscapes = errors.New("path leaves its root")
	// ErrSymlink is returned when a symlink is met where none may be.
	ErrSymlink = errors.New("path has a symlink")
	// ErrMountPoint is returned by RemoveAll for what it left because
	// something is mounted there.
	ErrMountPoint = errors.New("a mount point: not removed")
)

// ReadHead reads at most max bytes from the start of f. When f holds
// more, it returns those max bytes and ErrTooLarge.
func ReadHead(f *os.File, max int64) ([]byte, error) {
	data, err := io.ReadAll(io.LimitReader(f, max+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > max {
		return data[:max], fmt.Errorf("%s: %w (more than %d bytes)", f.Name(), ErrTooLarge, max)
	}
	return data, nil
}

// ReadTail reads at most max bytes from the end of f: the whole file when
// it is smaller. A file that grows meanwhile still yields max bytes at most.
func ReadTail(f *os.File, max int64) ([]byte, error) {
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if fi.Size() > max {
		if _, err := f.Seek(-max, io.SeekEnd); err != nil {
			return nil, err
		}
	}
	return io.ReadAll(io.LimitReader(f, max))
}

// ReadFile reads the regular file at path, refusing a symlink as its last
// component and never blocking on a FIFO; at most max bytes, ErrTooLarge
// when there are more (see ReadHead). The directories of path are trusted:
// use ReadFileBeneath when someone else controls them.
func ReadFile(path string, max int64) ([]byte, error) {
	f, err := OpenFile(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return ReadHead(f, max)
}

// ReadFileBeneath is ReadFile for rel beneath root, no symlink anywhere in
// rel (OpenBeneath).
func ReadFileBeneath(root, rel string, max int64) ([]byte, error) {
	f, err := OpenBeneath(root, rel)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return ReadHead(f, max)
}
