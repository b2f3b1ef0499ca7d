package cgroups

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"

	systemddbus "github.com/coreos/go-systemd/v22/dbus"
	godbus "github.com/godbus/dbus/v5"
)

// usecInfinity is systemd's USEC_INFINITY / CGROUP_LIMIT_MAX: "no limit"
// for CPUQuotaPerSecUSec, MemoryMax and TasksMax.
const usecInfinity = uint64(math.MaxUint64)

// unitJobTimeout bounds the wait for systemd to finish starting or stopping
// a slice (a slow, emulated machine needs seconds; a hung job must not hang
// the pod worker).
const unitJobTimeout = 2 * time.Minute

// unitProperty is one property of a slice unit, as sent over D-Bus.
type unitProperty struct {
	Name  string
	Value any
}

// unitProperties converts r into the slice unit properties the kubelet's
// systemd cgroup manager (runc's libcontainer) sets on cgroup v2:
// CPUWeight, CPUQuotaPerSecUSec with CPUQuotaPeriodUSec, MemoryMax and
// TasksMax. A removed limit is sent as infinity, so that systemd, which
// re-applies unit properties to the cgroup files whenever it realizes the
// slice, keeps it removed. (containerd/cgroups' NewSystemd turns a "max"
// quota into a 1% one: its quota·10⁶ overflows.)
func unitProperties(r Resources, f WeightFormula) []unitProperty {
	var props []unitProperty
	if r.CPUShares != nil {
		props = append(props, unitProperty{"CPUWeight", f.SharesToWeight(*r.CPUShares)})
	}
	if r.CPUQuota != nil {
		period := uint64(DefaultCPUPeriod)
		if r.CPUPeriod != nil && *r.CPUPeriod > 0 {
			period = *r.CPUPeriod
		}
		perSec := usecInfinity
		if q := *r.CPUQuota; q > 0 {
			// systemd keeps the quota as a whole percentage of a CPU:
			// round up to 10 ms per second, as runc does, so the cgroup
			// never gets less than was asked.
			perSec = uint64(q) * 1000000 / period
			if perSec%10000 != 0 {
				perSec = (perSec/10000 + 1) * 10000
			}
		}
		props = append(props, unitProperty{"CPUQuotaPerSecUSec", perSec}, unitProperty{"CPUQuotaPeriodUSec", period})
	}
	limit := func(v *int64) uint64 {
		if *v <= 0 {
			return usecInfinity
		}
		return uint64(*v)
	}
	if r.MemoryLimit != nil {
		props = append(props, unitProperty{"MemoryMax", limit(r.MemoryLimit)})
	}
	if r.PidsLimit != nil {
		props = append(props, unitProperty{"TasksMax", limit(r.PidsLimit)})
	}
	return props
}

// unitManager starts, updates and stops systemd slice units.
type unitManager interface {
	// start creates the slice unit with props; if it is already loaded,
	// it sets props on it instead.
	start(unit string, props []unitProperty) error
	// set changes properties of a loaded unit at runtime.
	set(unit string, props []unitProperty) error
	// stop stops the unit; a unit that is not loaded is not an error.
	stop(unit string) error
}

// dbusUnits talks to systemd over the system bus, one connection per call
// (slices change only when pods come and go).
type dbusUnits struct{}

var _ unitManager = dbusUnits{}

// baseSliceProperties are what every slice starts with, as the kubelet's:
// accounting on, and no default dependencies (a pod slice must not be
// stopped by shutdown ordering before its containers).
var baseSliceProperties = []unitProperty{
	{"DefaultDependencies", false},
	{"CPUAccounting", true},
	{"MemoryAccounting", true},
	{"IOAccounting", true},
	{"TasksAccounting", true},
}

func toDBus(props []unitProperty) []systemddbus.Property {
	out := make([]systemddbus.Property, len(props))
	for i, p := range props {
		out[i] = systemddbus.Property{Name: p.Name, Value: godbus.MakeVariant(p.Value)}
	}
	return out
}

// dbusError reports whether err is the D-Bus error name.
func dbusError(err error, name string) bool {
	var e godbus.Error
	if errors.As(err, &e) {
		return e.Name == name
	}
	var pe *godbus.Error
	return errors.As(err, &pe) && pe.Name == name
}

func withConn(fn func(ctx context.Context, conn *systemddbus.Conn) error) error {
	ctx, cancel := context.WithTimeout(context.Background(), unitJobTimeout)
	defer cancel()
	conn, err := systemddbus.NewSystemConnectionContext(ctx)
	if err != nil {
		return fmt.Errorf("connect to systemd over D-Bus: %w", err)
	}
	defer conn.Close()
	return fn(ctx, conn)
}

// waitJob waits for the result of a queued job.
func waitJob(ctx context.Context, what string, ch <-chan string) error {
	select {
	case res := <-ch:
		if res != "done" {
			return fmt.Errorf("%s: systemd job result %q", what, res)
		}
		return nil
	case <-ctx.Done():
		return fmt.Errorf("%s: systemd did not finish the job within %s", what, unitJobTimeout)
	}
}

func (dbusUnits) start(unit string, props []unitProperty) error {
	return withConn(func(ctx context.Context, conn *systemddbus.Conn) error {
		all := append([]unitProperty{{"Description", "minikubelet " + unit}}, baseSliceProperties...)
		all = append(all, props...)
		ch := make(chan string, 1)
		if _, err := conn.StartTransientUnitContext(ctx, unit, "replace", toDBus(all), ch); err != nil {
			if !dbusError(err, "org.freedesktop.systemd1.UnitExists") {
				return err
			}
			if len(props) == 0 {
				return nil
			}
			return conn.SetUnitPropertiesContext(ctx, unit, true, toDBus(props)...)
		}
		return waitJob(ctx, "start "+unit, ch)
	})
}

func (dbusUnits) set(unit string, props []unitProperty) error {
	return withConn(func(ctx context.Context, conn *systemddbus.Conn) error {
		return conn.SetUnitPropertiesContext(ctx, unit, true, toDBus(props)...)
	})
}

func (dbusUnits) stop(unit string) error {
	return withConn(func(ctx context.Context, conn *systemddbus.Conn) error {
		ch := make(chan string, 1)
		if _, err := conn.StopUnitContext(ctx, unit, "replace", ch); err != nil {
			if dbusError(err, "org.freedesktop.systemd1.NoSuchUnit") {
				return nil
			}
			return err
		}
		return waitJob(ctx, "stop "+unit, ch)
	})
}
