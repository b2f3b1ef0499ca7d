package source

// The local API's Secrets live on a tmpfs outside the root dir (the
// daemon's is <socket dir>/secrets, /run/minikubelet/secrets by default):
// they survive a restart of the daemon (the tmpfs stays mounted), not a
// reboot, and never reach a disk. The kubelet keeps Secrets the same way:
// in memory and in tmpfs volumes.

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/minikubelet/minikubelet/agent/volume"
)

// secretDirSize bounds the tmpfs of the local API's Secrets (a Secret
// holds at most 1 MiB).
const secretDirSize = 128 << 20

// PrepareSecretDir creates dir (0700) and mounts a tmpfs there unless one
// is mounted already (a restarted daemon finds its Secrets again). mounted
// is false when the agent cannot mount (not root, not Linux): dir is then
// a plain directory, and the caller should say so.
func PrepareSecretDir(dir string) (mounted bool, err error) {
	// The parent (the socket's directory) as the API creates it; only
	// the secret dir itself is private.
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		return false, fmt.Errorf("create secret dir: %w", err)
	}
	if err := os.Mkdir(dir, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
		return false, fmt.Errorf("create secret dir: %w", err)
	}
	mounted, err = mountSecretTmpfs(dir, secretDirSize)
	if err != nil {
		return false, fmt.Errorf("mount the tmpfs of the secret dir: %w", err)
	}
	return mounted, nil
}

// NewPodStoreWithSecretDir is NewPodStore with the Secrets in secretDir
// (PrepareSecretDir's tmpfs) instead of under dir. Secrets an older version
// stored in <dir>/secrets are moved there first, then removed from dir, so
// nothing a user created is lost and nothing secret stays on the disk.
func NewPodStoreWithSecretDir(dir, secretDir, nodeName string) (*PodStore, error) {
	if err := moveStoredSecrets(filepath.Join(dir, storeSecretDir), secretDir); err != nil {
		return nil, fmt.Errorf("move the stored Secrets to %s: %w", secretDir, err)
	}
	return openPodStore(dir, secretDir, nodeName)
}

// moveStoredSecrets moves the stored Secret files of old into dir (one
// already there, from a move a crash interrupted, is kept) and removes old.
func moveStoredSecrets(old, dir string) error {
	if filepath.Clean(old) == filepath.Clean(dir) {
		return nil
	}
	if err := copyStoredSecrets(old, dir); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		return err
	}
	return os.RemoveAll(old)
}

// copyStoredSecrets copies the stored Secret files of old into dir (one
// already there is kept). Dot files are a crash's temporary files.
func copyStoredSecrets(old, dir string) error {
	entries, err := os.ReadDir(old)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	for _, e := range entries {
		name := e.Name()
		if strings.HasPrefix(name, ".") || !e.Type().IsRegular() {
			continue
		}
		to := filepath.Join(dir, name)
		if _, err := os.Lstat(to); err == nil {
			continue
		}
		data, err := os.ReadFile(filepath.Join(old, name))
		if err != nil {
			return err
		}
		if err := volume.WriteConfigFile(to, data, 0o600); err != nil {
			return err
		}
	}
	return nil
}

// AdoptOldSecretDir takes over the secret dir of an earlier version, which
// mounted its tmpfs beside the API socket (old: dirname(--socket)/secrets)
// and left it mounted there, on a directory the user named for something
// else (issue #29 finding 5). When old is a tmpfs mount point holding only
// what the store writes (<namespace>_<name>.yaml files and dot temporary
// files), its Secrets are copied into dir (those already in dir win), the
// tmpfs is unmounted and old removed: adopted is true. Anything else at
// old (nothing, a plain directory, a tmpfs with other files) is left as it
// is; the error then says why when it looks like ours but is not.
//
// Call it while holding the root dir's lock, with old != dir.
func AdoptOldSecretDir(old, dir string) (adopted bool, err error) {
	if filepath.Clean(old) == filepath.Clean(dir) {
		return false, nil
	}
	if fi, err := os.Lstat(old); err != nil || !fi.IsDir() || !isTmpfsMountPoint(old) {
		return false, nil
	}
	entries, err := os.ReadDir(old)
	if err != nil {
		return false, fmt.Errorf("read the old secret dir %s: %w", old, err)
	}
	for _, e := range entries {
		name := e.Name()
		if !e.Type().IsRegular() || (!strings.HasPrefix(name, ".") && !strings.HasSuffix(name, ".yaml")) {
			return false, fmt.Errorf("a tmpfs at %s holds %s, which minikubelet does not write there: left mounted (unmount it yourself if an earlier minikubelet left it)", old, name)
		}
	}
	if err := copyStoredSecrets(old, dir); err != nil {
		return false, fmt.Errorf("copy the Secrets of the old secret dir %s to %s: %w", old, dir, err)
	}
	if err := unmountDir(old); err != nil {
		return false, fmt.Errorf("unmount the old secret dir %s (its Secrets are copied to %s): %w", old, dir, err)
	}
	if err := os.Remove(old); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return true, fmt.Errorf("remove the old secret dir %s (unmounted): %w", old, err)
	}
	return true, nil
}
