package cgroups

import (
	"strings"

	"github.com/containerd/cgroups/v3/cgroup2"
)

// unitResources is what a slice unit is started with; containerd's cgroup2
// systemd support turns it into the unit properties CPUWeight,
// CPUQuotaPerSecUSec (+ CPUQuotaPeriodUSec on systemd ≥ 242), MemoryMax and
// TasksMax, next to MemoryAccounting/CPUAccounting/IOAccounting=true and
// DefaultDependencies=false.
type unitResources = cgroup2.Resources

// unitManager starts and stops systemd slice units.
type unitManager interface {
	// start creates the slice unit if it is not loaded yet (an existing
	// unit is left as it is; the cgroupfs writer then sets the values).
	start(unit string, r *unitResources) error
	// stop stops the unit; a unit that is not loaded is not an error.
	stop(unit string) error
}

// dbusUnits talks to systemd over D-Bus through containerd's cgroup2
// package. Its slice argument "/" makes cgroup2 compute the right path for
// a nested kubepods slice (it only uses it for the returned Manager).
type dbusUnits struct{}

var _ unitManager = dbusUnits{}

func (dbusUnits) start(unit string, r *unitResources) error {
	_, err := cgroup2.NewSystemd("/", unit, -1, r)
	return err
}

func (dbusUnits) stop(unit string) error {
	m, err := cgroup2.LoadSystemd("/", unit)
	if err != nil {
		return err
	}
	// TODO(minikubelet): DeleteSystemd waits for the job without a timeout
	// (issue #4).
	if err := m.DeleteSystemd(); err != nil && !strings.Contains(err.Error(), "not loaded") {
		return err
	}
	return nil
}
