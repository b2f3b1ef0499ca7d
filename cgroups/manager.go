package cgroups

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path"
	"slices"
	"strings"
	"syscall"
	"time"
)

// DefaultRoot is where the cgroup filesystems are mounted.
const DefaultRoot = "/sys/fs/cgroup"

// defaultSystemdRunDir exists iff systemd is PID 1 (sd_booted(3)).
const defaultSystemdRunDir = "/run/systemd/system"

// killAttempts bounds Destroy's kill loop, as the kubelet's pod cgroup
// Destroy tries five times (kubelet-facts §5.6).
const killAttempts = 5

// ErrBusy is returned by Destroy when processes survive every kill attempt.
var ErrBusy = errors.New("cgroup still has processes")

// Manager creates, updates and removes cgroups of the kubepods hierarchy.
// Names are driver-neutral; each implementation maps them to its paths.
// Methods are safe for concurrent use on different names; the agent calls
// them for one name from one goroutine at a time.
type Manager interface {
	// Ensure creates name (and missing parents) if needed and sets r.
	Ensure(name Name, r Resources) error
	// Update sets r on an existing name; it fails with an error wrapping
	// os.ErrNotExist when name does not exist.
	Update(name Name, r Resources) error
	// Destroy SIGKILLs the processes left in name and its descendants (up
	// to 5 rounds; a deleted pod's processes are normally already stopped by
	// the runtime), then removes the cgroup. A missing cgroup is not an
	// error. It returns an error wrapping ErrBusy when processes survive.
	Destroy(name Name) error
	// Exists reports whether name exists (in every required controller).
	Exists(name Name) bool
	// Pids lists the processes in name and its descendants, sorted; none
	// for a missing cgroup.
	Pids(name Name) ([]int, error)
	// ListPods returns the pod<uid> children of parent (Kubepods,
	// KubepodsBurstable, KubepodsBestEffort), sorted, for orphan cleanup.
	ListPods(parent Name) ([]Name, error)
	// Path is name as the runtime expects it in the sandbox's
	// LinuxPodSandboxConfig.CgroupParent: the cgroupfs path
	// (/kubepods/burstable/pod<uid>) or the expanded systemd slice path
	// (/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod<uid>.slice),
	// which containerd reduces to its last element for runc's systemd
	// "slice:cri-containerd:id" form, as the kubelet sends it.
	Path(name Name) string
	// Driver and Mode describe the implementation, for status output.
	Driver() Driver
	Mode() Mode
}

// Config selects and parameterises a Manager.
type Config struct {
	// Driver is cgroupfs (default) or systemd.
	Driver Driver
	// Root is where the cgroup filesystems are mounted; default DefaultRoot.
	Root string
	// Mode is the cgroup layout under Root. ModeUnknown detects it, which is
	// only possible for DefaultRoot.
	Mode Mode
	// CPUWeight converts shares to cgroup v2 cpu.weight (default linear;
	// see WeightLinear).
	CPUWeight WeightFormula
	// Logger receives debug lines about killed processes; nil discards.
	Logger *slog.Logger

	// Test seams (package-internal).
	systemdRunDir string                 // default defaultSystemdRunDir
	units         unitManager            // default D-Bus
	kill          func(pid int) error    // default SIGKILL
	sleep         func(time.Duration)    // default time.Sleep
	mkdir         func(dir string) error // v2 only; default os.Mkdir
}

// New checks the host (mode, controllers, systemd) and returns the Manager
// for cfg.
func New(cfg Config) (Manager, error) {
	if cfg.Driver == "" {
		cfg.Driver = DriverCgroupfs
	}
	if cfg.Driver != DriverCgroupfs && cfg.Driver != DriverSystemd {
		return nil, fmt.Errorf("unknown cgroup driver %q: want cgroupfs or systemd", cfg.Driver)
	}
	if cfg.Root == "" {
		cfg.Root = DefaultRoot
	}
	if cfg.Mode == ModeUnknown {
		if path.Clean(cfg.Root) != DefaultRoot {
			return nil, fmt.Errorf("cgroup mode must be given for root %s (detection only covers %s)", cfg.Root, DefaultRoot)
		}
		cfg.Mode = DetectMode()
	}
	logger := cfg.Logger
	if logger == nil {
		logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	m := &manager{
		driver: cfg.Driver,
		mode:   cfg.Mode,
		logger: logger.With("component", "cgroups"),
		kill:   cfg.kill,
		sleep:  cfg.sleep,
	}
	if m.kill == nil {
		m.kill = killProcess
	}
	if m.sleep == nil {
		m.sleep = time.Sleep
	}
	var err error
	switch cfg.Mode {
	case ModeV1, ModeHybrid:
		m.fs, err = newV1(cfg.Root, cfg.Mode == ModeHybrid)
	case ModeV2:
		m.fs, err = newV2(cfg.Root, cfg.CPUWeight, cfg.mkdir)
	default:
		return nil, fmt.Errorf("no cgroup filesystem mounted at %s (mode %s)", cfg.Root, cfg.Mode)
	}
	if err != nil {
		return nil, err
	}
	if cfg.Driver == DriverSystemd {
		runDir := cfg.systemdRunDir
		if runDir == "" {
			runDir = defaultSystemdRunDir
		}
		if fi, err := os.Stat(runDir); err != nil || !fi.IsDir() {
			return nil, fmt.Errorf("cgroup driver systemd needs a running systemd (PID 1), but %s does not exist: "+
				"use --cgroup-driver=cgroupfs (and SystemdCgroup = false in containerd's runc options)", runDir)
		}
		m.units = cfg.units
		if m.units == nil {
			m.units = dbusUnits{}
		}
		m.unitRes = func(r Resources) []unitProperty {
			if !cfg.Mode.IsV2() {
				// On v1 systemd would translate v2-style properties with its
				// own formulas (CPUWeight→cpu.shares); start the slice bare
				// and let the cgroupfs writer set the v1 files.
				return nil
			}
			return unitProperties(r, cfg.CPUWeight)
		}
	}
	return m, nil
}

// fsWriter is one cgroup filesystem layout (v1 or v2), addressed by paths
// relative to the root ("/kubepods/pod1" or "/kubepods.slice/…").
type fsWriter interface {
	// create makes p (and missing parents) and sets r.
	create(p string, r Resources) error
	// set writes r to an existing p.
	set(p string, r Resources) error
	// exists reports whether p exists in every required controller.
	exists(p string) bool
	// procs lists the processes in p and below; none if p is missing.
	procs(p string) ([]int, error)
	// children lists the names of p's child cgroups.
	children(p string) ([]string, error)
	// remove deletes p and its (process-free) descendants; a missing p is
	// not an error.
	remove(p string) error
}

// manager implements Manager over one fsWriter, plus systemd units for the
// systemd driver. It holds no per-name state.
type manager struct {
	driver  Driver
	mode    Mode
	logger  *slog.Logger
	fs      fsWriter
	units   unitManager                    // nil for cgroupfs
	unitRes func(Resources) []unitProperty // the unit properties for r
	kill    func(pid int) error
	sleep   func(time.Duration)
}

var _ Manager = (*manager)(nil)

func (m *manager) Driver() Driver { return m.driver }
func (m *manager) Mode() Mode     { return m.mode }

// Path implements Manager.
func (m *manager) Path(name Name) string {
	if m.driver == DriverSystemd {
		return name.ToSystemd()
	}
	return name.ToCgroupfs()
}

// Ensure implements Manager.
func (m *manager) Ensure(name Name, r Resources) error {
	if err := m.check(name); err != nil {
		return err
	}
	if m.units != nil {
		// Parent slices are implied by the unit name; systemd starts them.
		if err := m.units.start(name.SystemdUnit(), m.unitRes(r)); err != nil {
			return fmt.Errorf("start systemd unit %s: %w", name.SystemdUnit(), err)
		}
	}
	if err := m.fs.create(m.Path(name), r); err != nil {
		return fmt.Errorf("create cgroup %s: %w", m.Path(name), err)
	}
	return nil
}

// Update implements Manager.
func (m *manager) Update(name Name, r Resources) error {
	if err := m.check(name); err != nil {
		return err
	}
	p := m.Path(name)
	if !m.fs.exists(p) {
		return fmt.Errorf("update cgroup %s: %w", p, os.ErrNotExist)
	}
	if m.units != nil {
		// systemd rewrites a slice's cgroup files from its unit properties
		// whenever it realizes the slice: change them there first.
		if props := m.unitRes(r); len(props) > 0 {
			if err := m.units.set(name.SystemdUnit(), props); err != nil {
				return fmt.Errorf("update systemd unit %s: %w", name.SystemdUnit(), err)
			}
		}
	}
	if err := m.fs.set(p, r); err != nil {
		return fmt.Errorf("update cgroup %s: %w", p, err)
	}
	return nil
}

// Destroy implements Manager.
func (m *manager) Destroy(name Name) error {
	if err := m.check(name); err != nil {
		return err
	}
	p := m.Path(name)
	if err := m.killAll(p); err != nil {
		return fmt.Errorf("destroy cgroup %s: %w", p, err)
	}
	var errs []error
	if m.units != nil {
		if err := m.units.stop(name.SystemdUnit()); err != nil {
			errs = append(errs, fmt.Errorf("stop systemd unit %s: %w", name.SystemdUnit(), err))
		}
	}
	// systemd removes the directories of a stopped slice itself, but not in
	// controllers it does not manage (cpuset on v1): remove what is left.
	if err := m.fs.remove(p); err != nil {
		errs = append(errs, fmt.Errorf("remove cgroup %s: %w", p, err))
	}
	return errors.Join(errs...)
}

// killAll SIGKILLs every process under p until none is left, for at most
// killAttempts rounds with a growing pause (0.1 s, 0.2 s, …) after each.
func (m *manager) killAll(p string) error {
	for attempt := 1; ; attempt++ {
		pids, err := m.fs.procs(p)
		if err != nil {
			return fmt.Errorf("list processes: %w", err)
		}
		if len(pids) == 0 {
			return nil
		}
		if attempt > killAttempts {
			return fmt.Errorf("%w after %d kill attempts: %v", ErrBusy, killAttempts, pids)
		}
		m.logger.Debug("Killing processes left in cgroup", "cgroup", p, "pids", pids, "attempt", attempt)
		for _, pid := range pids {
			if err := m.kill(pid); err != nil && !errors.Is(err, syscall.ESRCH) {
				m.logger.Debug("Kill failed", "cgroup", p, "pid", pid, "err", err)
			}
		}
		m.sleep(time.Duration(attempt) * 100 * time.Millisecond)
	}
}

// Exists implements Manager.
func (m *manager) Exists(name Name) bool {
	return name.Validate() == nil && m.fs.exists(m.Path(name))
}

// Pids implements Manager.
func (m *manager) Pids(name Name) ([]int, error) {
	if err := m.check(name); err != nil {
		return nil, err
	}
	return m.fs.procs(m.Path(name))
}

// ListPods implements Manager.
func (m *manager) ListPods(parent Name) ([]Name, error) {
	if err := m.check(parent); err != nil {
		return nil, err
	}
	kids, err := m.fs.children(m.Path(parent))
	if err != nil {
		return nil, fmt.Errorf("list cgroup %s: %w", m.Path(parent), err)
	}
	var out []Name
	for _, k := range kids {
		var n Name
		if m.driver == DriverSystemd {
			if n, err = ParseSystemd(k); err != nil || !slices.Equal(n[:len(n)-1], parent) {
				continue
			}
		} else {
			n = parent.Child(k)
		}
		if _, ok := n.PodUID(); ok && n.Validate() == nil {
			out = append(out, n)
		}
	}
	slices.SortFunc(out, func(a, b Name) int { return strings.Compare(a.ToCgroupfs(), b.ToCgroupfs()) })
	return out, nil
}

// check rejects invalid names and the root, which is never ours to change.
func (m *manager) check(name Name) error {
	if len(name) == 0 {
		return fmt.Errorf("%w: the root cgroup is not managed", ErrInvalidName)
	}
	return name.Validate()
}

func killProcess(pid int) error { return syscall.Kill(pid, syscall.SIGKILL) }
