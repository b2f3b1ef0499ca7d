package eviction

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
)

// TrimTerminationMessageFiles cuts each termination-message file of an
// evicted pod, once its containers are dead, to the part its status reads
// (the last keep bytes; root is the pod's containers directory, one
// directory per container holding its files): the message stays what it
// was, and a pod that filled the node filesystem through /dev/termination-log
// (a writable bind mount of a file under its pod directory, counted as its
// usage: agent/eviction/hoststats) gives the space back with its eviction
// instead of keeping the node under pressure until the next pod is
// evicted. The kubelet keeps these files until the pod is deleted (and
// does not count them). The directories are the agent's; the files'
// contents are the pod's, and only their contents: each is opened
// O_NOFOLLOW|O_NONBLOCK and must be a regular file.
func TrimTerminationMessageFiles(root string, keep int64) error {
	ctrs, err := os.ReadDir(root)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	var errs []error
	for _, c := range ctrs {
		if !c.IsDir() {
			continue
		}
		dir := filepath.Join(root, c.Name())
		files, err := os.ReadDir(dir)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		for _, f := range files {
			if f.Type().IsRegular() {
				errs = append(errs, trimToTail(filepath.Join(dir, f.Name()), keep))
			}
		}
	}
	return errors.Join(errs...)
}

// trimToTail keeps the last keep bytes of the regular file at path.
func trimToTail(path string, keep int64) error {
	f, err := os.OpenFile(path, os.O_RDWR|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if err != nil {
		return err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return err
	}
	if !st.Mode().IsRegular() || st.Size() <= keep {
		return nil
	}
	tail := make([]byte, keep)
	if _, err := f.ReadAt(tail, st.Size()-keep); err != nil {
		return fmt.Errorf("trim %s: %w", path, err)
	}
	if _, err := f.WriteAt(tail, 0); err != nil {
		return fmt.Errorf("trim %s: %w", path, err)
	}
	if err := f.Truncate(keep); err != nil {
		return fmt.Errorf("trim %s: %w", path, err)
	}
	return nil
}
