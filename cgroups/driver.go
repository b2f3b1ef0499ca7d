package cgroups

import (
	"fmt"
	"strings"

	cgroupsv3 "github.com/containerd/cgroups/v3"
)

// Driver is how cgroups are created: directly in cgroupfs or as systemd
// slice units. It must match the runtime's (containerd SystemdCgroup).
type Driver string

const (
	// DriverCgroupfs writes cgroupfs directly (kubelet's default).
	DriverCgroupfs Driver = "cgroupfs"
	// DriverSystemd asks systemd for slice units over D-Bus.
	DriverSystemd Driver = "systemd"
)

// ParseDriver accepts "cgroupfs" or "systemd" in any case, the way
// --cgroup-driver and CRI RuntimeConfig (CGROUPFS/SYSTEMD) spell them.
func ParseDriver(s string) (Driver, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "cgroupfs":
		return DriverCgroupfs, nil
	case "systemd":
		return DriverSystemd, nil
	}
	return "", fmt.Errorf("unknown cgroup driver %q: want cgroupfs or systemd", s)
}

// Mode is the host's cgroup layout.
type Mode int

const (
	// ModeUnknown means "detect" in Config.
	ModeUnknown Mode = iota
	// ModeUnavailable: nothing mounted at the cgroup root.
	ModeUnavailable
	// ModeV1: only cgroup v1 hierarchies (legacy).
	ModeV1
	// ModeHybrid: v1 hierarchies plus a cgroup2 mount at <root>/unified.
	// Controllers live in v1, so Hybrid is driven as v1 (as runc and the
	// kubelet do); the unified hierarchy is left alone.
	ModeHybrid
	// ModeV2: the unified cgroup2 hierarchy at the root.
	ModeV2
)

// String names the mode.
func (m Mode) String() string {
	switch m {
	case ModeUnavailable:
		return "unavailable"
	case ModeV1:
		return "v1"
	case ModeHybrid:
		return "hybrid"
	case ModeV2:
		return "v2"
	}
	return "unknown"
}

// IsV2 reports whether the controllers live in the unified hierarchy.
func (m Mode) IsV2() bool { return m == ModeV2 }

// DetectMode reports the mode of /sys/fs/cgroup through containerd's
// cgroups.Mode (statfs of /sys/fs/cgroup and /sys/fs/cgroup/unified).
func DetectMode() Mode {
	switch cgroupsv3.Mode() {
	case cgroupsv3.Legacy:
		return ModeV1
	case cgroupsv3.Hybrid:
		return ModeHybrid
	case cgroupsv3.Unified:
		return ModeV2
	}
	return ModeUnavailable
}

// ChooseDriver settles the driver at startup. runtime is what the runtime
// reported through CRI RuntimeConfig ("" when it did not answer, e.g.
// containerd 1.6 which lacks the RPC); flag is --cgroup-driver and flagSet
// whether the user gave it explicitly (otherwise flag is the default).
//
// The runtime wins when it answers; an explicit flag that disagrees with it
// is an error naming both sides, since pod cgroups and container cgroups
// from different drivers break each other.
func ChooseDriver(runtime, flag Driver, flagSet bool) (Driver, error) {
	switch {
	case runtime == "":
		if flag == "" {
			return DriverCgroupfs, nil
		}
		return flag, nil
	case flagSet && flag != runtime:
		return "", fmt.Errorf("cgroup driver mismatch: the container runtime uses %q but --cgroup-driver=%s; "+
			"change --cgroup-driver to %s, or change the runtime (containerd: SystemdCgroup = %t in the runc options)",
			runtime, flag, runtime, flag == DriverSystemd)
	default:
		return runtime, nil
	}
}
