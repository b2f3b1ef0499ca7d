//go:build linux

package volume

import (
	"bufio"
	"errors"
	"fmt"
	"io"
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
	shared, ok, err := mountPropagationOf(dir)
	if err != nil {
		return err
	}
	if ok && shared {
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
func mountPropagationOf(dir string) (shared, ok bool, err error) {
	mounts, err := MountInfo()
	if err != nil {
		return false, false, err
	}
	for _, m := range mounts {
		if m.Point == dir {
			shared, ok = strings.Contains(m.optional, "shared:"), true
		}
	}
	return shared, ok, nil
}

// UnmountUnder unmounts every mount at or below dir, deepest first,
// lazily. It fails when the mount table cannot be read: its callers then
// remove dir, which must not happen with a mount left in it.
func UnmountUnder(dir string) error {
	mounts, err := MountInfo()
	if err != nil {
		return fmt.Errorf("unmount under %s: %w", dir, err)
	}
	var points []string
	for _, m := range mounts {
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
// optional fields, where propagation shows). It fails when the table
// cannot be read to its end: a caller that removes what is not mounted
// must not take a partial table for the whole.
func MountInfo() ([]MountEntry, error) {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return nil, fmt.Errorf("read the mount table: %w", err)
	}
	defer f.Close()
	return parseMountInfo(f)
}

// parseMountInfo reads a mountinfo table; lines of any length (a mount
// with many options, an overlay's layers) are read whole.
func parseMountInfo(r io.Reader) ([]MountEntry, error) {
	var out []MountEntry
	br := bufio.NewReader(r)
	for {
		line, err := br.ReadString('\n')
		if fields := strings.Fields(line); len(fields) >= 7 {
			var opt []string
			for _, x := range fields[6:] {
				if x == "-" {
					break
				}
				opt = append(opt, x)
			}
			out = append(out, MountEntry{Point: unescapeMount(fields[4]), optional: strings.Join(opt, " ")})
		}
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, fmt.Errorf("read the mount table: %w", err)
		}
	}
}

// unescapeMount undoes mountinfo's octal escapes (\040 for a space).
func unescapeMount(s string) string {
	return strings.NewReplacer(`\040`, " ", `\011`, "\t", `\012`, "\n", `\134`, `\`).Replace(s)
}
