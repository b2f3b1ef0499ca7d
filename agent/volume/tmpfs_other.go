//go:build !linux

package volume

import "errors"

// MountTmpfs never mounts off Linux: the directory stays plain.
func (HostMounter) MountTmpfs(string, int64) (bool, error) { return false, nil }

// Unmount has nothing to unmount off Linux.
func (HostMounter) Unmount(string) error { return nil }

// BindMount cannot mount off Linux: a subPath then fails its container.
func (HostMounter) BindMount(string, string) error { return errors.New("bind mounts need Linux") }

// IsMountPoint is false off Linux.
func (HostMounter) IsMountPoint(string) bool { return false }
