//go:build !linux

package source

// mountSecretTmpfs never mounts off Linux: the directory stays plain.
func mountSecretTmpfs(string, int64) (bool, error) { return false, nil }

// isTmpfsMountPoint is false off Linux: nothing was mounted.
func isTmpfsMountPoint(string) bool { return false }

// unmountDir is never called off Linux (isTmpfsMountPoint is false).
func unmountDir(string) error { return nil }
