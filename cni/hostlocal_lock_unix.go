//go:build unix

package cni

import (
	"fmt"
	"os"
	"path/filepath"
	"syscall"
)

// lockHostLocal takes host-local's store lock: an exclusive flock on
// <dir>/lock, the file host-local's disk backend locks (go-filemutex).
func lockHostLocal(dir string) (unlock func(), err error) {
	f, err := os.OpenFile(filepath.Join(dir, "lock"), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("lock host-local store: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		_ = f.Close()
		return nil, fmt.Errorf("lock host-local store: %w", err)
	}
	return func() {
		_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		_ = f.Close()
	}, nil
}
