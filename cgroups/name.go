package cgroups

import (
	"errors"
	"fmt"
	"path"
	"strings"
)

// Well-known components of the kubepods hierarchy (kubelet-facts §5.5).
const (
	// KubepodsComponent is the node-allocatable root under which every pod
	// cgroup lives.
	KubepodsComponent = "kubepods"
	// BurstableComponent and BestEffortComponent are the QoS tiers below
	// kubepods; Guaranteed pods sit directly under kubepods.
	BurstableComponent  = "burstable"
	BestEffortComponent = "besteffort"
	// PodPrefix starts the component of a pod cgroup: pod<uid>.
	PodPrefix = "pod"

	systemdSuffix = ".slice"
)

// Well-known names. Treat them as constants: callers must not modify them.
var (
	// Kubepods is the root of all pod cgroups.
	Kubepods = Name{KubepodsComponent}
	// KubepodsBurstable is the Burstable QoS tier.
	KubepodsBurstable = Name{KubepodsComponent, BurstableComponent}
	// KubepodsBestEffort is the BestEffort QoS tier.
	KubepodsBestEffort = Name{KubepodsComponent, BestEffortComponent}
)

// ErrInvalidName is returned for a Name that cannot be expressed in both
// drivers' naming.
var ErrInvalidName = errors.New("invalid cgroup name")

// Name is a driver-neutral cgroup name: the list of components from the
// cgroup root, e.g. {"kubepods", "burstable", "pod<uid>"} (the kubelet's
// CgroupName idea). The empty Name is the root.
type Name []string

// PodName returns the Name of the cgroup of pod uid below parent (Kubepods,
// KubepodsBurstable or KubepodsBestEffort).
func PodName(parent Name, uid string) Name {
	n := make(Name, 0, len(parent)+1)
	n = append(n, parent...)
	return append(n, PodPrefix+uid)
}

// Child returns n with one more component.
func (n Name) Child(component string) Name {
	c := make(Name, 0, len(n)+1)
	c = append(c, n...)
	return append(c, component)
}

// Validate reports whether every component is non-empty and free of '/' and
// '_' (systemd uses '_' for an escaped '-', and '/' would add levels), and
// not "." or "..".
func (n Name) Validate() error {
	for _, c := range n {
		if c == "" || c == "." || c == ".." || strings.ContainsAny(c, "/_") {
			return fmt.Errorf("%w %q: component %q must be non-empty and contain no '/' or '_'", ErrInvalidName, []string(n), c)
		}
	}
	return nil
}

// PodUID returns the uid of a pod cgroup name (last component pod<uid>).
func (n Name) PodUID() (string, bool) {
	if len(n) == 0 {
		return "", false
	}
	last := n[len(n)-1]
	if !strings.HasPrefix(last, PodPrefix) || len(last) == len(PodPrefix) {
		return "", false
	}
	return strings.TrimPrefix(last, PodPrefix), true
}

// Equal reports whether n and o have the same components.
func (n Name) Equal(o Name) bool {
	if len(n) != len(o) {
		return false
	}
	for i := range n {
		if n[i] != o[i] {
			return false
		}
	}
	return true
}

// String is the cgroupfs form, for logs.
func (n Name) String() string { return n.ToCgroupfs() }

// ToCgroupfs returns the cgroupfs path: "/" followed by the components
// joined by "/", e.g. /kubepods/burstable/pod<uid>. The root is "/".
func (n Name) ToCgroupfs() string {
	return "/" + strings.Join(n, "/")
}

// ToSystemd returns the path of the nested systemd slices, e.g.
// /kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod<uid>.slice,
// where each component has its '-' replaced by '_'. The root is "/". The
// result is only meaningful for a Name that passes Validate.
func (n Name) ToSystemd() string {
	if len(n) == 0 {
		return "/"
	}
	var b strings.Builder
	prefix := ""
	for _, c := range n {
		unit := prefix + strings.ReplaceAll(c, "-", "_")
		b.WriteString("/")
		b.WriteString(unit)
		b.WriteString(systemdSuffix)
		prefix = unit + "-"
	}
	return b.String()
}

// SystemdUnit returns the slice unit of n: the last element of ToSystemd,
// e.g. kubepods-burstable-pod<uid>.slice. The root has no unit ("").
func (n Name) SystemdUnit() string {
	if len(n) == 0 {
		return ""
	}
	return path.Base(n.ToSystemd())
}

// ParseCgroupfs is the inverse of ToCgroupfs.
func ParseCgroupfs(p string) (Name, error) {
	p = path.Clean("/" + p)
	if p == "/" {
		return Name{}, nil
	}
	n := Name(strings.Split(strings.TrimPrefix(p, "/"), "/"))
	if err := n.Validate(); err != nil {
		return nil, err
	}
	return n, nil
}

// ParseSystemd is the inverse of ToSystemd. It accepts the full nested path
// or only its last element (the slice unit name), since a unit name alone
// determines its parents: kubepods-burstable-pod<u>.slice is
// {"kubepods", "burstable", "pod<u>"} with '_' turned back into '-'.
func ParseSystemd(p string) (Name, error) {
	p = path.Clean("/" + p)
	if p == "/" {
		return Name{}, nil
	}
	unit := path.Base(p)
	if !strings.HasSuffix(unit, systemdSuffix) {
		return nil, fmt.Errorf("%w: %q is not a slice", ErrInvalidName, p)
	}
	parts := strings.Split(strings.TrimSuffix(unit, systemdSuffix), "-")
	n := make(Name, len(parts))
	for i, part := range parts {
		if part == "" {
			return nil, fmt.Errorf("%w: %q has an empty component", ErrInvalidName, p)
		}
		n[i] = strings.ReplaceAll(part, "_", "-")
	}
	// A full path must be exactly the expansion of its last element.
	if strings.Count(p, "/") > 1 && n.ToSystemd() != p {
		return nil, fmt.Errorf("%w: %q is not the nesting of %q", ErrInvalidName, p, unit)
	}
	return n, nil
}
