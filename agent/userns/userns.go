// Package userns gives each pod that runs in a user namespace of its own
// (spec.hostUsers: false) a range of host user and group IDs, as the
// kubelet's pkg/kubelet/userns does:
//
//   - the pool is the host IDs from FirstID on, Length of them (by default
//     from 65536 to 2^32, the kubelet's default when no "kubelet" user has
//     subordinate IDs: host IDs 0-65535 are never handed to a pod);
//   - each pod gets IDsPerPod of them (65536 by default, a multiple of
//     65536), mapped to IDs 0..IDsPerPod-1 in the pod, the same range for
//     users and groups;
//   - the choice is written, before it is used, to the file "userns" in
//     the pod's directory (<podsDir>/<uid>/userns, the kubelet's name and
//     JSON form), so a restarted agent gives the pod the same mapping;
//   - a pod's range is free again once its directory is gone.
//
// It also holds the engine's rules of user namespaces (pod.go): which
// pods want one, whether the runtime's handler supports them (CRI Status
// runtime_handlers[].features.user_namespaces, as the kubelet asks) and
// the message refusing a pod when it does not; and the engine's state of
// them (manager.go, Manager): the allocator made on first use and the
// runtime's answer asked once, through the functions the engine passes in
// (Inputs), never a CRI client or the engine's config.
//
// Where it differs from the kubelet, and why:
//
//   - The files on disk are the only record: each allocation reads every
//     pod's file under the lock, where the kubelet keeps a bitmap filled
//     from them at start and freed by its housekeeping. A pod's range is
//     thus free exactly when its directory (removed when the pod is gone)
//     is, with no second record to fall out of step, and an agent sharing
//     the root dir (a foreground run) sees the daemon's ranges.
//   - The lowest free range is taken, where the kubelet's allocator picks
//     a random free one: the same pods get the same ranges on every node,
//     which keeps the mappings predictable and the tests exact.
//   - The pool comes from Config, not from getsubids for a "kubelet" user.
package userns

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"

	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/minikubelet/minikubelet/agent/safepath"
)

const (
	// DefaultIDsPerPod is the kubelet's userNamespaces.idsPerPod default,
	// and the unit every range length is a multiple of.
	DefaultIDsPerPod = 1 << 16
	// MappingsFile is the file in a pod's directory that holds its mapping
	// (the kubelet's name).
	MappingsFile = "userns"
	// maxFileBytes bounds what is read of a mappings file.
	maxFileBytes = 4096
)

// Config is the pool of host IDs and the size of each pod's range.
type Config struct {
	// IDsPerPod is the length of each pod's range: a multiple of 65536.
	// 0: DefaultIDsPerPod.
	IDsPerPod uint32
	// FirstID is the pool's first host ID: a multiple of IDsPerPod, at
	// least IDsPerPod (host IDs below it stay the host's). 0: IDsPerPod.
	FirstID uint32
	// Length is the number of host IDs in the pool, a multiple of
	// IDsPerPod. 0: every ID from FirstID to 2^32.
	Length uint64
	// MaxPods is the number of pods the pool must have a range for (the
	// node's pod capacity); 0 checks nothing.
	MaxPods int
}

// WithDefaults fills the unset fields with the kubelet's defaults.
func (c Config) WithDefaults() Config {
	if c.IDsPerPod == 0 {
		c.IDsPerPod = DefaultIDsPerPod
	}
	if c.FirstID == 0 {
		c.FirstID = c.IDsPerPod
	}
	if c.Length == 0 {
		c.Length = 1<<32 - uint64(c.FirstID)
	}
	return c
}

// Validate applies the kubelet's rules (MakeUserNsManager) to a defaulted
// config.
func (c Config) Validate() error {
	switch {
	case c.IDsPerPod == 0 || c.IDsPerPod%DefaultIDsPerPod != 0:
		return fmt.Errorf("user namespaces: IDs per pod %d is not a multiple of %d", c.IDsPerPod, DefaultIDsPerPod)
	case c.FirstID%c.IDsPerPod != 0:
		return fmt.Errorf("user namespaces: first ID %d is not a multiple of the IDs per pod (%d)", c.FirstID, c.IDsPerPod)
	case c.FirstID < c.IDsPerPod:
		// Mapping host ID 0 into a pod would give it the host's root.
		return fmt.Errorf("user namespaces: first ID %d must be at least the IDs per pod (%d)", c.FirstID, c.IDsPerPod)
	case c.Length%uint64(c.IDsPerPod) != 0:
		return fmt.Errorf("user namespaces: pool length %d is not a multiple of the IDs per pod (%d)", c.Length, c.IDsPerPod)
	case uint64(c.FirstID)+c.Length > 1<<32:
		return fmt.Errorf("user namespaces: pool %d+%d goes past the last ID (2^32-1)", c.FirstID, c.Length)
	case c.MaxPods > 0 && c.Length/uint64(c.IDsPerPod) < uint64(c.MaxPods):
		return fmt.Errorf("user namespaces: a pool of %d IDs has ranges of %d for %d pods, fewer than the node's %d pods", c.Length, c.IDsPerPod, c.Length/uint64(c.IDsPerPod), c.MaxPods)
	}
	return nil
}

// slots is the number of ranges in the pool.
func (c Config) slots() uint64 { return c.Length / uint64(c.IDsPerPod) }

// Mapping is a pod's range: IDs 0..Length-1 in the pod are host IDs
// HostID..HostID+Length-1, users and groups alike.
type Mapping struct {
	HostID, Length uint32
}

// CRI is the mapping as the sandbox's and the containers' user namespace
// option (NamespaceOption.UsernsOptions): mode POD, as the kubelet's
// GetOrCreateUserNamespaceMappings returns it.
func (m Mapping) CRI() *runtimeapi.UserNamespace {
	ids := func() []*runtimeapi.IDMapping {
		return []*runtimeapi.IDMapping{{HostId: m.HostID, ContainerId: 0, Length: m.Length}}
	}
	return &runtimeapi.UserNamespace{Mode: runtimeapi.NamespaceMode_POD, Uids: ids(), Gids: ids()}
}

// fileMapping and fileForm are the kubelet's JSON form of the file.
type fileMapping struct {
	HostID      uint32 `json:"hostId"`
	ContainerID uint32 `json:"containerId"`
	Length      uint32 `json:"length"`
}

type fileForm struct {
	UIDMappings []fileMapping `json:"uidMappings"`
	GIDMappings []fileMapping `json:"gidMappings"`
}

// encode is the file's content for m.
func encode(m Mapping) []byte {
	one := []fileMapping{{HostID: m.HostID, ContainerID: 0, Length: m.Length}}
	b, _ := json.Marshal(fileForm{UIDMappings: one, GIDMappings: one}) // plain structs: cannot fail
	return b
}

// parse reads a mappings file, with the kubelet's checks
// (parseUserNsFileAndRecord): one mapping, the same for users and groups,
// from ID 0 in the pod.
func parse(b []byte) (Mapping, error) {
	var f fileForm
	if err := json.Unmarshal(b, &f); err != nil {
		return Mapping{}, fmt.Errorf("invalid user namespace mappings file: %w", err)
	}
	switch {
	case len(f.UIDMappings) != 1:
		return Mapping{}, errors.New("invalid user namespace mappings file: exactly one uid mapping is allowed")
	case len(f.GIDMappings) != 1 || f.GIDMappings[0] != f.UIDMappings[0]:
		return Mapping{}, errors.New("invalid user namespace mappings file: the gid mapping must be the uid mapping")
	case f.UIDMappings[0].ContainerID != 0:
		return Mapping{}, errors.New("invalid user namespace mappings file: ID 0 must be mapped")
	case f.UIDMappings[0].Length == 0:
		return Mapping{}, errors.New("invalid user namespace mappings file: empty mapping")
	}
	return Mapping{HostID: f.UIDMappings[0].HostID, Length: f.UIDMappings[0].Length}, nil
}

// fits reports whether m is one of the pool's ranges.
func (c Config) fits(m Mapping) bool {
	if m.Length != c.IDsPerPod || m.HostID < c.FirstID || m.HostID%c.IDsPerPod != 0 {
		return false
	}
	return uint64(m.HostID-c.FirstID)/uint64(c.IDsPerPod) < c.slots()
}

// pick returns the lowest range of the pool that overlaps none of used
// (the ranges other pods hold, whatever their size); ok is false when the
// pool is full.
func pick(c Config, used []Mapping) (m Mapping, ok bool) {
	taken := map[uint64]bool{}
	for _, u := range used {
		lo, hi := uint64(u.HostID), uint64(u.HostID)+uint64(u.Length) // [lo, hi)
		if hi <= uint64(c.FirstID) || lo >= uint64(c.FirstID)+c.Length {
			continue
		}
		first := (max(lo, uint64(c.FirstID)) - uint64(c.FirstID)) / uint64(c.IDsPerPod)
		last := (min(hi, uint64(c.FirstID)+c.Length) - 1 - uint64(c.FirstID)) / uint64(c.IDsPerPod)
		for s := first; s <= last; s++ {
			taken[s] = true
		}
	}
	for s := uint64(0); s < c.slots(); s++ {
		if !taken[s] {
			return Mapping{HostID: uint32(uint64(c.FirstID) + s*uint64(c.IDsPerPod)), Length: c.IDsPerPod}, true
		}
	}
	return Mapping{}, false
}

// Allocator hands out the ranges of pods whose directories are
// <podsDir>/<uid>.
type Allocator struct {
	cfg     Config
	podsDir string
	// mu makes reading every file and writing a new one one step.
	mu sync.Mutex
}

// New returns the allocator of the pods under podsDir, from a config
// Validate accepts once defaulted.
func New(cfg Config, podsDir string) (*Allocator, error) {
	cfg = cfg.WithDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return &Allocator{cfg: cfg, podsDir: podsDir}, nil
}

// path is the pod's mappings file.
func (a *Allocator) path(uid types.UID) string {
	return filepath.Join(a.podsDir, string(uid), MappingsFile)
}

// read returns the pod's recorded mapping (ok false: none). The pod's
// directory and the file are the agent's own, but neither is followed
// through a symlink (safepath.ReadFile).
func (a *Allocator) read(uid types.UID) (Mapping, bool, error) {
	b, err := safepath.ReadFile(a.path(uid), maxFileBytes)
	if errors.Is(err, fs.ErrNotExist) {
		return Mapping{}, false, nil
	}
	if err != nil {
		return Mapping{}, false, fmt.Errorf("read %s: %w", a.path(uid), err)
	}
	m, err := parse(b)
	if err != nil {
		return Mapping{}, false, fmt.Errorf("%s: %w", a.path(uid), err)
	}
	return m, true, nil
}

// Get returns the pod's mapping: the one recorded in its directory, else
// the lowest free range, recorded there (the directory is created) before
// it is returned. A recorded mapping that is not a range of the pool (the
// pool was changed since) is an error: the pod keeps its IDs or nothing,
// as with the kubelet.
func (a *Allocator) Get(uid types.UID) (Mapping, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	m, ok, err := a.read(uid)
	if err != nil {
		return Mapping{}, err
	}
	if ok {
		if !a.cfg.fits(m) {
			return Mapping{}, fmt.Errorf("%s: host IDs %d+%d are not a range of this node's pool (%d ranges of %d from %d): delete the pod and create it again", a.path(uid), m.HostID, m.Length, a.cfg.slots(), a.cfg.IDsPerPod, a.cfg.FirstID)
		}
		return m, nil
	}
	used, err := a.used(uid)
	if err != nil {
		return Mapping{}, err
	}
	m, ok = pick(a.cfg, used)
	if !ok {
		return Mapping{}, fmt.Errorf("no free user namespace range: all %d ranges of %d IDs from %d are held by pods", a.cfg.slots(), a.cfg.IDsPerPod, a.cfg.FirstID)
	}
	if err := a.write(uid, m); err != nil {
		return Mapping{}, err
	}
	return m, nil
}

// used returns the mappings recorded by every pod but self. A file that
// cannot be read or parsed names no range: it cannot be told which, and
// one broken file must not stop every other pod (its own pod fails on it).
func (a *Allocator) used(self types.UID) ([]Mapping, error) {
	entries, err := os.ReadDir(a.podsDir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("list pod directories: %w", err)
	}
	var out []Mapping
	for _, e := range entries {
		if !e.IsDir() || types.UID(e.Name()) == self {
			continue
		}
		if m, ok, err := a.read(types.UID(e.Name())); err == nil && ok {
			out = append(out, m)
		}
	}
	return out, nil
}

// write records m as the pod's, atomically and durably (a temporary file
// of its own renamed into place, then the directory synced, as the
// kubelet's writeMappingsToFile): the range is in use from this moment.
func (a *Allocator) write(uid types.UID, m Mapping) (retErr error) {
	dir := filepath.Dir(a.path(uid))
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return fmt.Errorf("record user namespace mapping: %w", err)
	}
	f, err := os.CreateTemp(dir, MappingsFile+".*.tmp")
	if err != nil {
		return fmt.Errorf("record user namespace mapping: %w", err)
	}
	defer func() {
		if retErr != nil {
			_ = os.Remove(f.Name())
		}
	}()
	_, err = f.Write(encode(m))
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(f.Name(), a.path(uid))
	}
	if err == nil {
		err = syncDir(dir)
	}
	if err != nil {
		return fmt.Errorf("record user namespace mapping: %w", err)
	}
	return nil
}

// syncDir makes a rename in dir durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	return err
}

// Release frees the pod's range now, before its directory goes (the
// kubelet's Release). Removing the directory frees it too.
func (a *Allocator) Release(uid types.UID) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if err := os.Remove(a.path(uid)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("release user namespace mapping: %w", err)
	}
	return nil
}
