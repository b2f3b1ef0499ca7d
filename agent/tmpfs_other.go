//go:build !linux

package agent

import "errors"

// mountTmpfs never mounts off Linux: the directory stays plain.
func (hostMounter) mountTmpfs(string, int64) (bool, error) { return false, nil }

// unmount has nothing to unmount off Linux.
func (hostMounter) unmount(string) error { return nil }

// bindMount cannot mount off Linux: a subPath then fails its container.
func (hostMounter) bindMount(string, string) error { return errors.New("bind mounts need Linux") }

// isMountPoint is false off Linux.
func (hostMounter) isMountPoint(string) bool { return false }
