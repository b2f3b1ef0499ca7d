package volume

// The files of the pod's managed /etc/hosts (issue #30): the node's hosts
// file a host-network pod starts from, and the write of the pod's file
// (<podDir>/etc-hosts), whose content agent/podspec makes. The engine
// picks the paths and mounts the file.

import (
	"bytes"
	"os"
	"path/filepath"
	"syscall"

	"github.com/minikubelet/minikubelet/agent/safepath"
)

// maxNodeHostsBytes bounds the node's hosts file a host-network pod gets:
// far above any real one (blocklists of a few MB included).
const maxNodeHostsBytes = 16 << 20

// ReadNodeHosts reads the node's hosts file: the node's, so a symlink is
// followed (some distributions link /etc/hosts), but a regular file only,
// never blocking, and at most maxNodeHostsBytes.
func ReadNodeHosts(path string) ([]byte, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, safepath.ErrNotRegular
	}
	return safepath.ReadHead(f, maxNodeHostsBytes)
}

// WriteFileIfChanged writes content to path unless the file already holds
// it. Running containers of the pod bind-mount the file, so it is
// rewritten in place (a rename would leave them the old inode); it changes
// only with a new sandbox, whose containers are all new.
//
// The file is the pod's to write: only len(content) bytes of it are read
// (more means it changed), a regular file only, never blocking.
func WriteFileIfChanged(path string, content []byte, perm os.FileMode) error {
	if old, err := safepath.ReadFile(path, int64(len(content))); err == nil && bytes.Equal(old, content) {
		return nil
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o750); err != nil {
		return err
	}
	if err := os.WriteFile(path, content, perm); err != nil {
		return err
	}
	return os.Chmod(path, perm) // WriteFile's perm is masked by the umask
}
