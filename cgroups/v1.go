package cgroups

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"

	"github.com/containerd/cgroups/v3/cgroup1"
)

// requiredV1 are the controllers without which pod cgroups mean nothing;
// New fails when one is not mounted, and a cgroup exists only when it
// exists in all of them that are mounted (cpuset, pids and cpuacct are
// optional but checked when present).
var requiredV1 = []cgroup1.Name{cgroup1.Cpu, cgroup1.Memory}

// v1fs writes cgroup v1 hierarchies, one directory per controller
// (<root>/cpu/kubepods/…, <root>/memory/kubepods/…), through containerd's
// cgroup1 package with a hierarchy rooted at root.
//
// Every mounted controller gets the directory, as runc and the kubelet do,
// so that container cgroups below it nest in all of them. cgroup1's cpuset
// controller copies cpuset.cpus/mems from the parent into each new level
// (an empty cpuset cannot take tasks).
type v1fs struct {
	root string
	// subsystems are the controllers mounted under root, fixed at New.
	subsystems []cgroup1.Subsystem
	// checked are the controllers exists() looks at.
	checked []string
	// unified is <root>/unified in hybrid mode, else "". runc also places
	// container processes there (creating the pod path on the way), so its
	// processes count and its leftover directories are removed; it carries
	// no controllers and is never written.
	unified string
}

// pather is the part of a cgroup1.Subsystem that maps a cgroup path to its
// directory.
type pather interface {
	Path(p string) string
}

func newV1(root string, hybrid bool) (*v1fs, error) {
	candidates := []cgroup1.Subsystem{
		cgroup1.NewNamed(root, "systemd"),
		cgroup1.NewFreezer(root),
		cgroup1.NewPids(root),
		cgroup1.NewNetCls(root),
		cgroup1.NewNetPrio(root),
		cgroup1.NewPerfEvent(root),
		cgroup1.NewCpuset(root),
		cgroup1.NewCpu(root),
		cgroup1.NewCpuacct(root),
		cgroup1.NewMemory(root),
		cgroup1.NewBlkio(root),
		cgroup1.NewRdma(root),
		cgroup1.NewDevices(root),
	}
	if isDir(filepath.Join(root, string(cgroup1.Hugetlb))) {
		if h, err := cgroup1.NewHugetlb(root); err == nil {
			candidates = append(candidates, h)
		}
	}
	fs := &v1fs{root: root}
	if u := filepath.Join(root, "unified"); hybrid && isDir(u) {
		fs.unified = u
	}
	for _, s := range candidates {
		if isDir(s.(pather).Path("/")) {
			fs.subsystems = append(fs.subsystems, s)
		}
	}
	for _, req := range requiredV1 {
		if !isDir(filepath.Join(root, string(req))) {
			return nil, fmt.Errorf("cgroup v1 controller %q is not mounted at %s", req, filepath.Join(root, string(req)))
		}
	}
	for _, n := range []cgroup1.Name{cgroup1.Cpu, cgroup1.Cpuacct, cgroup1.Cpuset, cgroup1.Memory, cgroup1.Pids} {
		if isDir(filepath.Join(root, string(n))) {
			fs.checked = append(fs.checked, string(n))
		}
	}
	return fs, nil
}

func (fs *v1fs) hierarchy() ([]cgroup1.Subsystem, error) { return fs.subsystems, nil }

func (fs *v1fs) create(p string, r Resources) error {
	if _, err := cgroup1.New(cgroup1.StaticPath(p), r.toSpec(), cgroup1.WithHierarchy(fs.hierarchy)); err != nil {
		return err
	}
	return fs.unlimitedPids(p, r)
}

func (fs *v1fs) set(p string, r Resources) error {
	cg, err := cgroup1.Load(cgroup1.StaticPath(p), cgroup1.WithHierarchy(fs.hierarchy))
	if errors.Is(err, cgroup1.ErrCgroupDeleted) {
		return fmt.Errorf("%w", os.ErrNotExist)
	}
	if err != nil {
		return err
	}
	if err := cg.Update(r.toSpec()); err != nil {
		return err
	}
	return fs.unlimitedPids(p, r)
}

// unlimitedPids writes "max" to pids.max, which cgroup1 never does (it only
// writes positive limits).
func (fs *v1fs) unlimitedPids(p string, r Resources) error {
	if r.PidsLimit == nil || *r.PidsLimit > 0 {
		return nil
	}
	dir := filepath.Join(fs.root, string(cgroup1.Pids), p)
	if !isDir(dir) {
		return nil
	}
	return os.WriteFile(filepath.Join(dir, "pids.max"), []byte("max"), 0o644)
}

func (fs *v1fs) exists(p string) bool {
	for _, c := range fs.checked {
		if !isDir(filepath.Join(fs.root, c, p)) {
			return false
		}
	}
	return true
}

func (fs *v1fs) procs(p string) ([]int, error) {
	var all []int
	for _, s := range fs.subsystems {
		pids, err := readProcsRecursive(s.(pather).Path(p))
		if err != nil {
			return nil, err
		}
		all = append(all, pids...)
	}
	if fs.unified != "" {
		pids, err := readProcsRecursive(filepath.Join(fs.unified, p))
		if err != nil {
			return nil, err
		}
		all = append(all, pids...)
	}
	slices.Sort(all)
	return slices.Compact(all), nil
}

func (fs *v1fs) children(p string) ([]string, error) {
	var all []string
	for _, s := range fs.subsystems {
		kids, err := childDirs(s.(pather).Path(p))
		if err != nil {
			return nil, err
		}
		all = append(all, kids...)
	}
	slices.Sort(all)
	return slices.Compact(all), nil
}

func (fs *v1fs) remove(p string) error {
	if fs.unified != "" {
		// Kernel cgroup directories go with rmdir; RemoveAll removes the
		// (process-free) children first, as cgroup1's Delete does.
		if err := os.RemoveAll(filepath.Join(fs.unified, p)); err != nil {
			return err
		}
	}
	cg, err := cgroup1.Load(cgroup1.StaticPath(p), cgroup1.WithHierarchy(fs.hierarchy))
	if errors.Is(err, cgroup1.ErrCgroupDeleted) {
		return nil
	}
	if err != nil {
		return err
	}
	return cg.Delete()
}
