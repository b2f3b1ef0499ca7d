package agent

import "log/slog"

// volumeMounter mounts and unmounts the tmpfs of secret volumes and
// memory emptyDirs, and the pinned bind mounts of subPaths (subpath.go).
// The host's is hostMounter; tests pass a fake.
type volumeMounter interface {
	// mountTmpfs mounts a tmpfs of size bytes (0: the kernel's default)
	// at dir unless one is mounted there already. mounted is false when
	// the agent cannot mount (not root): dir stays a plain directory.
	mountTmpfs(dir string, size int64) (mounted bool, err error)
	// bindMount bind-mounts source (a /proc/self/fd/N path: what a
	// descriptor is open on) onto target, not recursively.
	bindMount(source, target string) error
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
