// Package cgroupstest provides a fake cgroups.Manager for agent tests.
package cgroupstest

import (
	"os"
	"slices"
	"strings"
	"sync"

	"github.com/minikubelet/minikubelet/cgroups"
)

// Call is one recorded Manager call.
type Call struct {
	// Method is "Ensure", "Update" or "Destroy".
	Method string
	// Name is the cgroup's cgroupfs form, e.g. /kubepods/burstable/pod1.
	Name string
	// Resources is what Ensure/Update were given.
	Resources cgroups.Resources
}

// Fake is an in-memory Manager: a set of existing names with their last
// resources, a call log and injectable errors.
type Fake struct {
	// DriverName is what Driver and Path use (default cgroupfs).
	DriverName cgroups.Driver

	mu sync.Mutex // guards the fields below
	// cgroups holds the existing names (cgroupfs form) and their resources.
	cgroups map[string]cgroups.Resources
	// pids are the processes reported per name by Pids.
	pids map[string][]int
	// calls is the log of mutating calls, in order.
	calls []Call
	// errs are consumed by the next call of that method.
	errs map[string]error
}

var _ cgroups.Manager = (*Fake)(nil)

// NewFake returns an empty Fake with the cgroupfs driver.
func NewFake() *Fake {
	return &Fake{DriverName: cgroups.DriverCgroupfs, cgroups: map[string]cgroups.Resources{},
		pids: map[string][]int{}, errs: map[string]error{}}
}

// InjectError makes the next call of method fail with err.
func (f *Fake) InjectError(method string, err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.errs[method] = err
}

// SetPids sets the processes Pids reports for name.
func (f *Fake) SetPids(name cgroups.Name, pids ...int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.pids[name.ToCgroupfs()] = pids
}

// Calls returns a copy of the call log.
func (f *Fake) Calls() []Call {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.calls)
}

// Resources returns the last resources set on name and whether it exists.
func (f *Fake) Resources(name cgroups.Name) (cgroups.Resources, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	r, ok := f.cgroups[name.ToCgroupfs()]
	return r, ok
}

func (f *Fake) record(method string, name cgroups.Name, r cgroups.Resources) error {
	f.calls = append(f.calls, Call{Method: method, Name: name.ToCgroupfs(), Resources: r})
	if err := f.errs[method]; err != nil {
		delete(f.errs, method)
		return err
	}
	return name.Validate()
}

// Ensure implements cgroups.Manager.
func (f *Fake) Ensure(name cgroups.Name, r cgroups.Resources) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.record("Ensure", name, r); err != nil {
		return err
	}
	for i := 1; i < len(name); i++ {
		if _, ok := f.cgroups[name[:i].ToCgroupfs()]; !ok {
			f.cgroups[name[:i].ToCgroupfs()] = cgroups.Resources{}
		}
	}
	f.cgroups[name.ToCgroupfs()] = merge(f.cgroups[name.ToCgroupfs()], r)
	return nil
}

// Update implements cgroups.Manager.
func (f *Fake) Update(name cgroups.Name, r cgroups.Resources) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.record("Update", name, r); err != nil {
		return err
	}
	old, ok := f.cgroups[name.ToCgroupfs()]
	if !ok {
		return os.ErrNotExist
	}
	f.cgroups[name.ToCgroupfs()] = merge(old, r)
	return nil
}

// Destroy implements cgroups.Manager: it removes name and its descendants.
func (f *Fake) Destroy(name cgroups.Name) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.record("Destroy", name, cgroups.Resources{}); err != nil {
		return err
	}
	p := name.ToCgroupfs()
	for k := range f.cgroups {
		if k == p || strings.HasPrefix(k, p+"/") {
			delete(f.cgroups, k)
			delete(f.pids, k)
		}
	}
	return nil
}

// Exists implements cgroups.Manager.
func (f *Fake) Exists(name cgroups.Name) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	_, ok := f.cgroups[name.ToCgroupfs()]
	return ok
}

// Pids implements cgroups.Manager.
func (f *Fake) Pids(name cgroups.Name) ([]int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.pids[name.ToCgroupfs()]), nil
}

// ListPods implements cgroups.Manager.
func (f *Fake) ListPods(parent cgroups.Name) ([]cgroups.Name, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []cgroups.Name
	for k := range f.cgroups {
		n, err := cgroups.ParseCgroupfs(k)
		if err != nil || len(n) != len(parent)+1 || !n[:len(parent)].Equal(parent) {
			continue
		}
		if _, ok := n.PodUID(); ok {
			out = append(out, n)
		}
	}
	slices.SortFunc(out, func(a, b cgroups.Name) int { return strings.Compare(a.ToCgroupfs(), b.ToCgroupfs()) })
	return out, nil
}

// Path implements cgroups.Manager.
func (f *Fake) Path(name cgroups.Name) string {
	if f.DriverName == cgroups.DriverSystemd {
		return name.ToSystemd()
	}
	return name.ToCgroupfs()
}

// Driver implements cgroups.Manager.
func (f *Fake) Driver() cgroups.Driver { return f.DriverName }

// Mode implements cgroups.Manager.
func (f *Fake) Mode() cgroups.Mode { return cgroups.ModeV1 }

// merge overlays the set fields of r on old, as a real cgroup keeps values
// that are not written.
func merge(old, r cgroups.Resources) cgroups.Resources {
	if r.CPUShares != nil {
		old.CPUShares = r.CPUShares
	}
	if r.CPUQuota != nil {
		old.CPUQuota = r.CPUQuota
	}
	if r.CPUPeriod != nil {
		old.CPUPeriod = r.CPUPeriod
	}
	if r.MemoryLimit != nil {
		old.MemoryLimit = r.MemoryLimit
	}
	if r.PidsLimit != nil {
		old.PidsLimit = r.PidsLimit
	}
	return old
}
