package node

// The node's description: name, labels, capacity and allocatable, computed
// once at start. Admission (admission.go) checks pods against it; the Node
// object, when there is one, will publish it.

import (
	"bytes"
	"errors"
	"fmt"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/minikubelet/minikubelet/agent/eviction"
	"github.com/minikubelet/minikubelet/agent/manifest"
)

// defaultMaxPods is the kubelet's maxPods default (kubelet-facts §8.4): the
// node's "pods" capacity.
const defaultMaxPods = 110

// Info is what admission (and later the Node object) knows about this node.
type Info struct {
	// Name is the node's name (--node-name); spec.nodeName must be empty or
	// equal to it.
	Name string
	// Labels are kubernetes.io/hostname=<Name>, kubernetes.io/os=linux and
	// kubernetes.io/arch=<GOARCH>, then --node-labels, which win on a clash
	// as they do in the kubelet.
	Labels map[string]string
	// Capacity is what the host has: cpu (CPUs usable by this process, in
	// millicores), memory (MemTotal of /proc/meminfo, in bytes), pods
	// (110, the kubelet's maxPods) and, when Detect was given a
	// Storage, ephemeral-storage (the size of the root dir's
	// filesystem, in bytes, as the kubelet's cadvisor RootFsInfo).
	Capacity v1.ResourceList
	// Allocatable is Capacity minus kube-reserved minus system-reserved, the
	// kubelet's rule; for ephemeral-storage also minus the hard
	// nodefs.available eviction threshold, as the kubelet's
	// hardEvictionReservation. Unlike the kubelet, no hard eviction
	// threshold is subtracted from memory (the kubelet takes
	// memory.available<100Mi off it): what admission and the Node show
	// stays capacity minus reservations, which scripts and tests compare
	// with the host (issue #21 left it).
	Allocatable v1.ResourceList
}

// Storage says where the node's ephemeral storage is and what of it
// the eviction manager keeps free.
type Storage struct {
	// RootDir is the agent's root dir (emptyDirs live under it); the size
	// of its filesystem is the ephemeral-storage capacity. It need not
	// exist yet: its nearest existing parent is on the same filesystem.
	RootDir string
	// Thresholds are the eviction thresholds; the hard nodefs.available
	// one is kept from allocatable ephemeral-storage.
	Thresholds []eviction.Threshold
}

// Host is what Detect reads of the machine: RealHost is this one; tests
// pass fakes, so that a unit test never reads the host.
type Host struct {
	// NumCPU returns the number of CPUs this process may run on.
	NumCPU func() int
	// Meminfo reads /proc/meminfo (MeminfoFile).
	Meminfo func() ([]byte, error)
	// FsSize is the size in bytes of the filesystem holding path.
	FsSize func(path string) (int64, error)
}

// RealHost is the machine the agent runs on. runtime.NumCPU honours the
// process's CPU affinity mask (taskset, cpuset) as of process start.
var RealHost = Host{
	NumCPU:  runtime.NumCPU,
	Meminfo: MeminfoFile(ProcMeminfo),
	FsSize:  fsSize,
}

// fsSize is the size of the filesystem holding path (blocks times block
// size, what cadvisor reports as its capacity), from path's nearest
// existing ancestor: the root dir may not exist before the first start.
func fsSize(path string) (int64, error) {
	p := filepath.Clean(path)
	for {
		var st syscall.Statfs_t
		err := syscall.Statfs(p, &st)
		if err == nil {
			return int64(st.Blocks) * int64(st.Bsize), nil
		}
		parent := filepath.Dir(p)
		if !errors.Is(err, syscall.ENOENT) || parent == p {
			return 0, fmt.Errorf("statfs %s: %w", p, err)
		}
		p = parent
	}
}

// Detect describes this node: name, labels (the well-known ones plus
// extraLabels), capacity from the host, and allocatable = capacity −
// kubeReserved − systemReserved (− the hard nodefs.available eviction
// threshold for ephemeral-storage). Like the kubelet, it refuses
// reservations larger than the capacity, so allocatable is never
// negative. Without storage the node has no ephemeral-storage capacity.
func Detect(name string, extraLabels map[string]string, kubeReserved, systemReserved v1.ResourceList, storage *Storage) (Info, error) {
	return DetectOn(RealHost, name, extraLabels, kubeReserved, systemReserved, storage)
}

// DetectOn is Detect reading the host through probe.
func DetectOn(probe Host, name string, extraLabels map[string]string, kubeReserved, systemReserved v1.ResourceList, storage *Storage) (Info, error) {
	if msgs := validation.IsDNS1123Subdomain(name); len(msgs) > 0 {
		return Info{}, fmt.Errorf("node name %q: %s", name, strings.Join(msgs, "; "))
	}
	// The name doubles as the hostname label, whose values are shorter.
	if msgs := validation.IsValidLabelValue(name); len(msgs) > 0 {
		return Info{}, fmt.Errorf("node name %q as label %s: %s", name, v1.LabelHostname, strings.Join(msgs, "; "))
	}

	labels := map[string]string{
		v1.LabelHostname:   name,
		v1.LabelOSStable:   runtime.GOOS,
		v1.LabelArchStable: runtime.GOARCH,
	}
	for k, v := range extraLabels {
		labels[k] = v
	}

	cpus := probe.NumCPU()
	if cpus < 1 {
		return Info{}, fmt.Errorf("detect node cpus: got %d", cpus)
	}
	mi, err := probe.Meminfo()
	if err != nil {
		return Info{}, fmt.Errorf("detect node memory: %w", err)
	}
	mem, err := parseMemTotal(bytes.NewReader(mi))
	if err != nil {
		return Info{}, fmt.Errorf("detect node memory: %w", err)
	}

	capacity := v1.ResourceList{
		v1.ResourceCPU:    *resource.NewMilliQuantity(int64(cpus)*1000, resource.DecimalSI),
		v1.ResourceMemory: *resource.NewQuantity(mem, resource.BinarySI),
		v1.ResourcePods:   *resource.NewQuantity(defaultMaxPods, resource.DecimalSI),
	}
	reserved := []v1.ResourceList{kubeReserved, systemReserved}
	if storage != nil {
		size, err := probe.FsSize(storage.RootDir)
		if err != nil {
			return Info{}, fmt.Errorf("detect node ephemeral-storage of root dir %s: %w", storage.RootDir, err)
		}
		capacity[v1.ResourceEphemeralStorage] = *resource.NewQuantity(size, resource.BinarySI)
		// The kubelet's hardEvictionReservation: the hard nodefs.available
		// threshold (a percentage of the capacity, or a quantity) is
		// reserved like kube-reserved.
		for _, t := range storage.Thresholds {
			if t.Signal == eviction.SignalNodeFsAvailable && t.GracePeriod == 0 {
				reserved = append(reserved, v1.ResourceList{v1.ResourceEphemeralStorage: *resource.NewQuantity(t.Level(size), resource.BinarySI)})
			}
		}
	}
	allocatable, err := allocatableFrom(capacity, reserved...)
	if err != nil {
		return Info{}, err
	}
	return Info{Name: name, Labels: labels, Capacity: capacity, Allocatable: allocatable}, nil
}

// allocatableFrom subtracts the reservations from capacity, resource by
// resource. Only cpu, memory and ephemeral-storage may be reserved, and
// only what the node has a capacity of. A reservation above the capacity
// is an error, as in the kubelet's validateNodeAllocatable (which keeps
// the kubelet from starting).
func allocatableFrom(capacity v1.ResourceList, reserved ...v1.ResourceList) (v1.ResourceList, error) {
	total := v1.ResourceList{}
	for _, rl := range reserved {
		for name, q := range rl {
			if !reservable(name) {
				return nil, fmt.Errorf("cannot reserve %q: only cpu, memory and ephemeral-storage can be reserved", name)
			}
			if _, ok := capacity[name]; !ok {
				return nil, fmt.Errorf("cannot reserve %q: the node's capacity of it is unknown", name)
			}
			if q.Sign() < 0 {
				return nil, fmt.Errorf("reservation of %q must not be negative, got %s", name, q.String())
			}
			sum := total[name]
			sum.Add(q)
			total[name] = sum
		}
	}
	out := v1.ResourceList{}
	var errs []string
	for _, name := range manifest.SortedResourceNames(capacity) {
		c := capacity[name]
		v := c.DeepCopy()
		if r, ok := total[name]; ok {
			v.Sub(r)
		}
		if v.Sign() < 0 {
			r := total[name]
			errs = append(errs, fmt.Sprintf("resource %q has a reservation of %s but a capacity of %s", name, r.String(), c.String()))
			v.Set(0)
		}
		out[name] = v
	}
	if len(errs) > 0 {
		return nil, fmt.Errorf("invalid node allocatable configuration: %s; expected capacity >= reservation (kube-reserved + system-reserved, and for ephemeral-storage the hard nodefs.available eviction threshold)", strings.Join(errs, "; "))
	}
	return out, nil
}

// reservable reports whether --kube-reserved/--system-reserved may name r.
// The kubelet also takes pid; minikubelet does not account for it, and
// refuses rather than ignores it.
func reservable(r v1.ResourceName) bool {
	return r == v1.ResourceCPU || r == v1.ResourceMemory || r == v1.ResourceEphemeralStorage
}

// ParseResourceList parses a --kube-reserved / --system-reserved value in
// the kubelet's flag syntax, "cpu=100m,memory=256Mi". Only cpu, memory and
// ephemeral-storage are accepted; each error names the offending pair.
func ParseResourceList(s string) (v1.ResourceList, error) {
	pairs, err := splitPairs(s)
	if err != nil {
		return nil, err
	}
	rl := v1.ResourceList{}
	for _, p := range pairs {
		name := v1.ResourceName(p.key)
		if !reservable(name) {
			return nil, fmt.Errorf("%q: cannot reserve %q: only cpu, memory and ephemeral-storage can be reserved", p.raw, p.key)
		}
		if _, dup := rl[name]; dup {
			return nil, fmt.Errorf("%q: %s given twice", p.raw, p.key)
		}
		q, err := resource.ParseQuantity(p.value)
		if err != nil {
			return nil, fmt.Errorf("%q: %w", p.raw, err)
		}
		if q.Sign() < 0 {
			return nil, fmt.Errorf("%q: quantity must not be negative", p.raw)
		}
		rl[name] = q
	}
	return rl, nil
}

// ParseLabels parses a --node-labels value, "k=v,k2=v2". Keys and values
// must be valid label keys and values. As in the kubelet, a key in the
// kubernetes.io or k8s.io namespaces is refused unless it is one the kubelet
// may set on its own Node (kubernetes.io/hostname, topology.kubernetes.io/zone,
// the node.kubernetes.io and kubelet.kubernetes.io namespaces, …).
func ParseLabels(s string) (map[string]string, error) {
	pairs, err := splitPairs(s)
	if err != nil {
		return nil, err
	}
	labels := map[string]string{}
	for _, p := range pairs {
		if msgs := validation.IsQualifiedName(p.key); len(msgs) > 0 {
			return nil, fmt.Errorf("%q: invalid label key: %s", p.raw, strings.Join(msgs, "; "))
		}
		if msgs := validation.IsValidLabelValue(p.value); len(msgs) > 0 {
			return nil, fmt.Errorf("%q: invalid label value: %s", p.raw, strings.Join(msgs, "; "))
		}
		if isKubernetesLabel(p.key) && !isKubeletLabel(p.key) {
			return nil, fmt.Errorf("%q: a node label in the kubernetes.io or k8s.io namespaces must be one the kubelet sets (%s) or start with kubelet.kubernetes.io/ or node.kubernetes.io/",
				p.raw, strings.Join(kubeletLabels, ", "))
		}
		if _, dup := labels[p.key]; dup {
			return nil, fmt.Errorf("%q: %s given twice", p.raw, p.key)
		}
		labels[p.key] = p.value
	}
	return labels, nil
}

// kubeletLabels are the kubernetes.io labels a kubelet may set on its Node
// (k8s.io/kubelet/pkg/apis well_known_labels.go).
var kubeletLabels = []string{
	v1.LabelHostname,
	v1.LabelTopologyZone,
	v1.LabelTopologyRegion,
	v1.LabelFailureDomainBetaZone,
	v1.LabelFailureDomainBetaRegion,
	v1.LabelInstanceType,
	v1.LabelInstanceTypeStable,
	v1.LabelOSStable,
	v1.LabelArchStable,
	"beta.kubernetes.io/os",
	"beta.kubernetes.io/arch",
}

// labelNamespace returns the prefix of a label key ("" when it has none).
func labelNamespace(key string) string {
	ns, _, ok := strings.Cut(key, "/")
	if !ok {
		return ""
	}
	return ns
}

// isKubernetesLabel reports whether key is in the kubernetes.io or k8s.io
// namespaces (or a subdomain of them).
func isKubernetesLabel(key string) bool {
	ns := labelNamespace(key)
	for _, d := range []string{"kubernetes.io", "k8s.io"} {
		if ns == d || strings.HasSuffix(ns, "."+d) {
			return true
		}
	}
	return false
}

// isKubeletLabel reports whether a kubelet may set key on its Node.
func isKubeletLabel(key string) bool {
	for _, l := range kubeletLabels {
		if key == l {
			return true
		}
	}
	ns := labelNamespace(key)
	for _, d := range []string{v1.LabelNamespaceSuffixKubelet, v1.LabelNamespaceSuffixNode} {
		if ns == d || strings.HasSuffix(ns, "."+d) {
			return true
		}
	}
	return false
}

// flagPair is one "key=value" item of a map-valued flag.
type flagPair struct {
	// raw is the item as written (trimmed), for error messages.
	raw        string
	key, value string
}

// splitPairs splits "k=v,k2=v2" into pairs, trimming spaces and skipping
// empty items (a trailing comma). An item without "=" or with an empty key
// is an error naming it.
func splitPairs(s string) ([]flagPair, error) {
	var out []flagPair
	for _, item := range strings.Split(s, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			continue
		}
		k, v, ok := strings.Cut(item, "=")
		k, v = strings.TrimSpace(k), strings.TrimSpace(v)
		if !ok || k == "" {
			return nil, fmt.Errorf("%q: want key=value", item)
		}
		out = append(out, flagPair{raw: item, key: k, value: v})
	}
	return out, nil
}
