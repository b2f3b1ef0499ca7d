package agent

import "log/slog"

// volumeMounter mounts and unmounts the tmpfs of secret volumes and
// memory emptyDirs. The host's is hostMounter; tests pass a fake.
type volumeMounter interface {
	// mountTmpfs mounts a tmpfs of size bytes (0: the kernel's default)
	// at dir unless one is mounted there already. mounted is false when
	// the agent cannot mount (not root): dir stays a plain directory.
	mountTmpfs(dir string, size int64) (mounted bool, err error)
	// unmount unmounts dir.
	unmount(dir string) error
	// isMountPoint reports whether something is mounted at dir.
	isMountPoint(dir string) bool
}

// hostMounter mounts on the host (tmpfs_linux.go).
type hostMounter struct {
	// logger receives the notice of the non-root fallback.
	logger *slog.Logger
}

var _ volumeMounter = hostMounter{}
