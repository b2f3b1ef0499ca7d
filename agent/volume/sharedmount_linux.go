//go:build linux

package volume

import (
	"bufio"
	"os"
	"sort"
	"strings"
	"syscall"
)

// MakeRShared makes dir a mount point of its own with shared propagation
// (bind-mounting it onto itself first), as the kubelet makes its root dir
// rshared: containerd only honours HostToContainer and Bidirectional mount
// propagation for sources on a shared or slave mount, and this machine's /
// may be private.
func MakeRShared(dir string) error {
	if shared, ok := mountPropagationOf(dir); ok && shared {
		return nil
	} else if !ok {
		if err := syscall.Mount(dir, dir, "", syscall.MS_BIND|syscall.MS_REC, ""); err != nil {
			return &os.PathError{Op: "bind mount", Path: dir, Err: err}
		}
	}
	if err := syscall.Mount("", dir, "", syscall.MS_SHARED|syscall.MS_REC, ""); err != nil {
		return &os.PathError{Op: "make rshared", Path: dir, Err: err}
	}
	return nil
}

// mountPropagationOf reports whether dir is a mount point (ok) and whether
// that mount is shared.
func mountPropagationOf(dir string) (shared, ok bool) {
	for _, m := range MountInfo() {
		if m.Point == dir {
			shared, ok = strings.Contains(m.optional, "shared:"), true
		}
	}
	return shared, ok
}

// UnmountUnder unmounts every mount at or below dir, deepest first, lazily.
func UnmountUnder(dir string) error {
	var points []string
	for _, m := range MountInfo() {
		if m.Point == dir || strings.HasPrefix(m.Point, dir+"/") {
			points = append(points, m.Point)
		}
	}
	sort.Slice(points, func(i, j int) bool { return len(points[i]) > len(points[j]) })
	for _, p := range points {
		if err := syscall.Unmount(p, syscall.MNT_DETACH); err != nil && err != syscall.EINVAL && err != syscall.ENOENT {
			return &os.PathError{Op: "unmount", Path: p, Err: err}
		}
	}
	return nil
}

type MountEntry struct {
	Point    string
	optional string
}

// MountInfo reads this process's mount table (mount point and the
// optional fields, where propagation shows).
func MountInfo() []MountEntry {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return nil
	}
	defer f.Close()
	var out []MountEntry
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 7 {
			continue
		}
		var opt []string
		for _, x := range fields[6:] {
			if x == "-" {
				break
			}
			opt = append(opt, x)
		}
		out = append(out, MountEntry{Point: unescapeMount(fields[4]), optional: strings.Join(opt, " ")})
	}
	return out
}

// unescapeMount undoes mountinfo's octal escapes (\040 for a space).
func unescapeMount(s string) string {
	return strings.NewReplacer(`\040`, " ", `\011`, "\t", `\012`, "\n", `\134`, `\`).Replace(s)
}
