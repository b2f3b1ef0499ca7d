package volume

// The one atomic writer of a pod's files: configMap, secret, downwardAPI and
// projected volumes (service account tokens included) are written the way
// the kubelet's AtomicWriter does, so a reader in the container never sees
// a mix of old and new content:
//
//	<volume dir>/
//	  ..2026_11_22_05_00_00.123456789/   the payload, one directory per version
//	    key                              (file, mode from items/defaultMode)
//	  ..data -> ..2026_11_22_05_00_00.123456789
//	  key -> ..data/key                  one symlink per top-level path
//
// A new version is a new timestamped directory; the ..data symlink is
// swapped to it with a rename (atomic), then the old directory goes.
// WriteConfigFile is the same promise for one file (a temporary file and
// a rename): the agent's mirror of ConfigMaps under its root dir.

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/minikubelet/minikubelet/agent/manifest"
)

// Names inside a projected volume directory.
const (
	DataDirName    = "..data"
	NewDataDirName = "..data_tmp"
)

// FileProjection is one file of a payload.
type FileProjection struct {
	Data []byte
	Mode os.FileMode
	// uid, when set, owns the file (the kubelet's FsUser: service account
	// tokens of a pod whose containers all run as one user).
	UID *int64
}

// AtomicWriter writes payloads into one volume directory (see the file
// comment for the layout).
type AtomicWriter struct {
	Dir string
	// beforeSwap, when set, runs after the new version is written and
	// before ..data points to it (tests).
	BeforeSwap func()
	// now names the version directory; nil is time.Now.
	Now func() time.Time
}

// Write makes dir hold exactly payload. It reports whether anything
// changed; an unchanged payload touches nothing.
func (w *AtomicWriter) Write(payload map[string]FileProjection) (bool, error) {
	// Step 1: check the paths: relative, clean, without ".." elements or a
	// leading "..", which would escape the directory or clash with ours.
	for p := range payload {
		if err := checkPayloadPath(p); err != nil {
			return false, err
		}
	}

	// Step 2: compare with the current version.
	dataLink := filepath.Join(w.Dir, DataDirName)
	oldVersion, err := os.Readlink(dataLink)
	if err != nil && !os.IsNotExist(err) {
		return false, err
	}
	if oldVersion != "" && sameContent(filepath.Join(w.Dir, oldVersion), payload) {
		// Recreate user-visible links a previous write may have missed.
		return false, w.linkUserPaths(payload)
	}

	// Step 3: write the new version into a fresh timestamped directory.
	now := time.Now
	if w.Now != nil {
		now = w.Now
	}
	version, err := os.MkdirTemp(w.Dir, now().UTC().Format("..2006_01_02_15_04_05."))
	if err != nil {
		return false, err
	}
	if err := os.Chmod(version, 0o755); err != nil {
		_ = os.RemoveAll(version)
		return false, err
	}
	if err := writePayload(version, payload); err != nil {
		_ = os.RemoveAll(version)
		return false, err
	}

	// Step 4: swap ..data to the new version with a rename (atomic).
	if w.BeforeSwap != nil {
		w.BeforeSwap()
	}
	tmpLink := filepath.Join(w.Dir, NewDataDirName)
	_ = os.Remove(tmpLink)
	if err := os.Symlink(filepath.Base(version), tmpLink); err != nil {
		_ = os.RemoveAll(version)
		return false, err
	}
	if err := os.Rename(tmpLink, dataLink); err != nil {
		_ = os.Remove(tmpLink)
		_ = os.RemoveAll(version)
		return false, err
	}

	// Step 5: user-visible links, stale ones removed, old version gone.
	if err := w.linkUserPaths(payload); err != nil {
		return true, err
	}
	if oldVersion != "" && oldVersion != filepath.Base(version) {
		if err := os.RemoveAll(filepath.Join(w.Dir, oldVersion)); err != nil {
			return true, err
		}
	}
	return true, nil
}

// checkPayloadPath refuses a path that could escape the volume or clash
// with the writer's own names.
func checkPayloadPath(p string) error {
	switch {
	case p == "":
		return errors.New("invalid path: must not be empty")
	case filepath.IsAbs(p):
		return fmt.Errorf("invalid path %q: must be relative", p)
	case strings.HasPrefix(p, ".."):
		return fmt.Errorf("invalid path %q: must not start with '..'", p)
	case manifest.HasBacksteps(p):
		return fmt.Errorf("invalid path %q: must not contain '..'", p)
	}
	return nil
}

// writePayload writes every file of payload under dir with its mode.
func writePayload(dir string, payload map[string]FileProjection) error {
	for p, f := range payload {
		full := filepath.Join(dir, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(full, f.Data, f.Mode); err != nil {
			return err
		}
		// WriteFile's mode passes through the umask.
		if err := os.Chmod(full, f.Mode); err != nil {
			return err
		}
		if f.UID != nil {
			if err := os.Lchown(full, int(*f.UID), -1); err != nil {
				return err
			}
		}
	}
	return nil
}

// sameContent reports whether the version directory holds exactly
// payload: the same files with the same bytes and modes.
func sameContent(version string, payload map[string]FileProjection) bool {
	n := 0
	err := filepath.Walk(version, func(p string, fi os.FileInfo, err error) error {
		if err != nil || fi.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(version, p)
		want, ok := payload[rel]
		if !ok || fi.Mode().Perm() != want.Mode.Perm() {
			return errors.New("differs")
		}
		if st, isUnix := fi.Sys().(*syscall.Stat_t); want.UID != nil && isUnix && int64(st.Uid) != *want.UID {
			return errors.New("differs")
		}
		data, err := os.ReadFile(p)
		if err != nil || !bytes.Equal(data, want.Data) {
			return errors.New("differs")
		}
		n++
		return nil
	})
	return err == nil && n == len(payload)
}

// linkUserPaths makes dir/<top> -> ..data/<top> for every top-level name
// of payload and removes the user-visible names no longer in it.
func (w *AtomicWriter) linkUserPaths(payload map[string]FileProjection) error {
	tops := map[string]bool{}
	for p := range payload {
		top, _, _ := strings.Cut(filepath.ToSlash(p), "/")
		tops[top] = true
	}
	names := make([]string, 0, len(tops))
	for t := range tops {
		names = append(names, t)
	}
	sort.Strings(names)
	for _, t := range names {
		link := filepath.Join(w.Dir, t)
		target := filepath.Join(DataDirName, t)
		if cur, err := os.Readlink(link); err == nil && cur == target {
			continue
		}
		_ = os.Remove(link)
		if err := os.Symlink(target, link); err != nil {
			return err
		}
	}
	entries, err := os.ReadDir(w.Dir)
	if err != nil {
		return err
	}
	var errs []error
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), "..") || tops[e.Name()] {
			continue
		}
		errs = append(errs, os.Remove(filepath.Join(w.Dir, e.Name())))
	}
	return errors.Join(errs...)
}

// WriteConfigFile writes a file through a temporary file and a rename, so
// a reader never sees half of it.
func WriteConfigFile(path string, data []byte, mode os.FileMode) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name()) // no-op once renamed
	if err := tmp.Chmod(mode); err != nil {
		_ = tmp.Close()
		return err
	}
	if _, err := tmp.Write(data); err != nil {
		_ = tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}
