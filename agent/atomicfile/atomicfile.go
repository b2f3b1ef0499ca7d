// Package atomicfile writes the agent's own files (keys, certificates,
// kubeconfigs, checkpoints) so that a reader or a crash sees the old file
// or the new one, never a part, and never a looser mode than asked for.
// It is for the agent's directories only: a path a pod can write goes
// through agent/safepath.
package atomicfile

import (
	"fmt"
	"os"
	"path/filepath"
)

// Write writes data to path with mode: a temporary file of its own in the
// same directory (created 0600, chmodded before any byte is written),
// synced, renamed over path, then the directory synced. On error path is
// untouched and the temporary file is gone.
func Write(path string, data []byte, mode os.FileMode) (retErr error) {
	dir := filepath.Dir(path)
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	defer func() {
		if retErr != nil {
			_ = f.Close()
			_ = os.Remove(f.Name())
		}
	}()
	if err := f.Chmod(mode); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if _, err := f.Write(data); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := f.Sync(); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := os.Rename(f.Name(), path); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	d, err := os.Open(dir)
	if err != nil {
		return nil // the file is in place; only its durability is unsure
	}
	defer d.Close()
	_ = d.Sync()
	return nil
}
