//go:build !linux

package agent

// mountTmpfs never mounts off Linux: the directory stays plain.
func (hostMounter) mountTmpfs(string, int64) (bool, error) { return false, nil }

// unmount has nothing to unmount off Linux.
func (hostMounter) unmount(string) error { return nil }

// isMountPoint is false off Linux.
func (hostMounter) isMountPoint(string) bool { return false }
