package cgroups

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/containerd/cgroups/v3/cgroup2"
)

// requiredV2 must be available at the root and are enabled down the tree.
var requiredV2 = []string{"cpu", "memory"}

// v2fs writes the unified hierarchy. It creates each level itself so that
// every ancestor delegates its available controllers to the next
// (cgroup.subtree_control, as runc does), then writes values through
// containerd's cgroup2.Manager.
type v2fs struct {
	root    string
	formula WeightFormula
	// mkdir creates one cgroup directory; tests replace it with a fake
	// kernel that also creates the interface files.
	mkdir func(dir string) error
}

func newV2(root string, formula WeightFormula, mkdir func(string) error) (*v2fs, error) {
	avail, err := controllers(root)
	if err != nil {
		return nil, fmt.Errorf("cgroup v2 at %s: %w", root, err)
	}
	for _, c := range requiredV2 {
		if !slices.Contains(avail, c) {
			return nil, fmt.Errorf("cgroup v2 controller %q is not available at %s (cgroup.controllers: %q)", c, root, strings.Join(avail, " "))
		}
	}
	if mkdir == nil {
		mkdir = func(dir string) error { return os.Mkdir(dir, 0o755) }
	}
	return &v2fs{root: root, formula: formula, mkdir: mkdir}, nil
}

// controllers reads dir's cgroup.controllers.
func controllers(dir string) ([]string, error) {
	b, err := os.ReadFile(filepath.Join(dir, "cgroup.controllers"))
	if err != nil {
		return nil, err
	}
	return strings.Fields(string(b)), nil
}

func (fs *v2fs) create(p string, r Resources) error {
	dir := fs.root
	for _, comp := range strings.Split(strings.Trim(filepath.Clean(p), "/"), "/") {
		if err := fs.delegate(dir); err != nil {
			return err
		}
		dir = filepath.Join(dir, comp)
		if isDir(dir) {
			continue
		}
		if err := fs.mkdir(dir); err != nil && !os.IsExist(err) {
			return err
		}
	}
	return fs.set(p, r)
}

// delegate enables in dir's cgroup.subtree_control every controller dir has,
// so its children can use them. It writes them all at once and falls back
// to one at a time, failing only for the required ones (an unrelated
// controller such as a busy "cpu" in the root with realtime tasks must not
// stop pods).
func (fs *v2fs) delegate(dir string) error {
	avail, err := controllers(dir)
	if err != nil {
		return err
	}
	if len(avail) == 0 {
		return fmt.Errorf("no controllers available in %s", dir)
	}
	file := filepath.Join(dir, "cgroup.subtree_control")
	write := func(ctrls []string) error {
		return writeExisting(file, "+"+strings.Join(ctrls, " +"))
	}
	if write(avail) == nil {
		return nil
	}
	for _, c := range avail {
		if err := write([]string{c}); err != nil && slices.Contains(requiredV2, c) {
			return fmt.Errorf("enable controller %s in %s: %w", c, file, err)
		}
	}
	return nil
}

func (fs *v2fs) set(p string, r Resources) error {
	m, err := cgroup2.Load(p, cgroup2.WithMountpoint(fs.root))
	if err != nil {
		return err
	}
	if err := m.Update(r.toCgroup2(fs.formula)); err != nil {
		return err
	}
	// cgroup2.Memory.Max cannot say "max".
	if r.MemoryLimit != nil && *r.MemoryLimit <= 0 {
		return writeExisting(filepath.Join(fs.root, p, "memory.max"), "max")
	}
	return nil
}

func (fs *v2fs) exists(p string) bool { return isDir(filepath.Join(fs.root, p)) }

func (fs *v2fs) procs(p string) ([]int, error) {
	return readProcsRecursive(filepath.Join(fs.root, p))
}

func (fs *v2fs) children(p string) ([]string, error) {
	return childDirs(filepath.Join(fs.root, p))
}

func (fs *v2fs) remove(p string) error {
	if !fs.exists(p) {
		return nil
	}
	m, err := cgroup2.Load(p, cgroup2.WithMountpoint(fs.root))
	if err != nil {
		return err
	}
	return m.Delete()
}

// writeExisting writes an interface file that must already exist (cgroup
// files are created by the kernel, never by us).
func writeExisting(file, value string) error {
	f, err := os.OpenFile(file, os.O_WRONLY|os.O_TRUNC, 0)
	if err != nil {
		return err
	}
	_, err = f.WriteString(value)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}
