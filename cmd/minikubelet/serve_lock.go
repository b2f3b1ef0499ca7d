package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// rootDirLockFile is the lock of one daemon per root dir, under the root
// dir. The kubelet has the same idea behind --exit-on-lock-contention and
// --lock-file (off by default there); here it is always on: two daemons on
// one root dir drive the same pods, and the one exiting first removed the
// other's socket (issue #29 finding 5).
const rootDirLockFile = "minikubelet.lock"

// dirLock is an exclusive flock on a file of a directory, held until the
// process exits (the kernel drops it then, kill -9 included: no stale
// lock to clean up).
type dirLock struct{ f *os.File }

// lockDir takes the exclusive lock of dir (created 0750 if missing) for
// this process and writes its pid into the lock file, without waiting: a
// directory another process holds is an error that names that process's
// pid and what to do. what names dir for the message ("root dir") and
// flagName the flag that chooses it.
//
// The lock file stays after exit: removing it would let a process that
// opened it just before lock an orphaned inode while a third locks a new
// file.
func lockDir(dir, what, flagName string) (*dirLock, error) {
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return nil, fmt.Errorf("create the %s: %w", what, err)
	}
	path := filepath.Join(dir, rootDirLockFile)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, 0o600)
	if err != nil {
		return nil, fmt.Errorf("open the lock of the %s: %w", what, err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		defer f.Close()
		if !errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("lock the %s (%s): %w", what, path, err)
		}
		holder := "a process whose pid is not written yet"
		if b, rerr := os.ReadFile(path); rerr == nil {
			if pid, perr := strconv.Atoi(strings.TrimSpace(string(b))); perr == nil && pid > 0 {
				holder = "pid " + strconv.Itoa(pid)
			}
		}
		return nil, fmt.Errorf("another minikubelet serve (%s) holds the %s %s (lock %s): stop it first (systemctl stop minikubelet, or kill that pid), or give this daemon its own %s",
			holder, what, dir, path, flagName)
	}
	if err := f.Truncate(0); err == nil {
		_, err = f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	}
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("write the lock of the %s (%s): %w", what, path, err)
	}
	return &dirLock{f: f}, nil
}

// Release drops the lock (tests; a daemon holds it until it exits).
func (l *dirLock) Release() error { return l.f.Close() }
