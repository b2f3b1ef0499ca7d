//go:build !linux

package safepath

import (
	"errors"
	"os"
)

// errUnsupported: the walk needs openat2 or O_PATH, Linux only.
var errUnsupported = errors.New("safepath needs Linux")

// OpenPath needs Linux.
func OpenPath(root, rel string) (*os.File, error) { return nil, errUnsupported }

// MkdirAll needs Linux.
func MkdirAll(root, rel string, perm os.FileMode) (*os.File, error) { return nil, errUnsupported }

// OpenBeneath needs Linux.
func OpenBeneath(root, rel string) (*os.File, error) { return nil, errUnsupported }

// OpenFile needs Linux.
func OpenFile(path string) (*os.File, error) { return nil, errUnsupported }

// ProcPath needs Linux.
func ProcPath(f *os.File) string { return "" }

// RemoveAll is os.RemoveAll where mount points cannot be told apart.
func RemoveAll(path string) error { return os.RemoveAll(path) }
