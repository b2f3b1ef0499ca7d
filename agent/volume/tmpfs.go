package volume

import "log/slog"

// VolumeMounter mounts and unmounts the tmpfs of secret volumes and
// memory emptyDirs, and the pinned bind mounts of subPaths (subpath_pin.go).
// The host's is hostMounter; tests pass a fake.
type VolumeMounter interface {
	// MountTmpfs mounts a tmpfs of size bytes (0: the kernel's default)
	// at dir unless one is mounted there already. mounted is false when
	// the agent cannot mount (not root): dir stays a plain directory.
	MountTmpfs(dir string, size int64) (mounted bool, err error)
	// BindMount bind-mounts source (a /proc/self/fd/N path: what a
	// descriptor is open on) onto target, not recursively.
	BindMount(source, target string) error
	// Unmount unmounts dir.
	Unmount(dir string) error
	// IsMountPoint reports whether something is mounted at dir.
	IsMountPoint(dir string) bool
}

// HostMounter mounts on the host (tmpfs_linux.go).
type HostMounter struct {
	// logger receives the notice of the non-root fallback.
	Logger *slog.Logger
}

var _ VolumeMounter = HostMounter{}
