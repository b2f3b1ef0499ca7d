package userns

// User namespaces (spec.hostUsers: false), as the kubelet v1.37 runs them
// (UserNamespacesSupport, GA): the pod's sandbox and containers share one
// user namespace, mode POD, whose IDs 0-65535 are a range of host IDs of
// the pod's own (the Allocator gives it and keeps it in the pod's
// directory); the runtime maps the rootfs and the volumes into it with
// idmapped mounts.
//
// The kubelet asks its runtime, when it builds the sandbox config, whether
// the runtime handler supports user namespaces (CRI Status
// runtime_handlers[].features.user_namespaces), and fails the sandbox
// creation, again and again, when it does not. minikubelet asks the same
// question but fails such a pod for good before anything of it is created,
// with a reason that says what to do (Manager.Refusal), as it does for
// image volumes: no retry can succeed until the node's runtime changes.
// containerd 1.6 reports no handlers at all (it would ignore the option and
// run the pod with the host's IDs); containerd 2.x reports the feature only
// when its OCI runtime can make idmapped mounts (runc 1.2 or later).

import (
	"context"
	"fmt"
	"sync"

	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// Inputs are what a Manager asks of the engine, each when it first needs
// it: the engine's config and runtime, passed as values and functions so
// that this package needs neither.
type Inputs struct {
	// PodsDir holds the pods' directories, <podsDir>/<uid>.
	PodsDir string
	// Config returns the pool and the node's allocatable resources (nil
	// when unknown); it is asked when the first pod wants a range. A pool
	// without MaxPods must have a range for each pod the node may run.
	Config func() (Config, v1.ResourceList)
	// Handlers asks the runtime for its handlers and their features (CRI
	// Status runtime_handlers).
	Handlers func(ctx context.Context) ([]*runtimeapi.RuntimeHandler, error)
	// Version asks the runtime's name and version (CRI Version), which the
	// refusal's message names.
	Version func(ctx context.Context) (name, version string, err error)
}

// Manager is the engine's part of user namespaces: the Allocator of the
// pods' ranges, made on first use, and the runtime's answer whether it
// supports them, asked once. Its methods do nothing for a pod in the
// node's user namespace, even on a nil Manager.
type Manager struct {
	in    Inputs
	mu    sync.Mutex // guards alloc
	alloc *Allocator
	// smu guards known, set once the runtime answered, and supported,
	// its answer.
	smu              sync.Mutex
	known, supported bool
}

// NewManager returns the Manager asking in.
func NewManager(in Inputs) *Manager { return &Manager{in: in} }

// PodNamespace returns the pod's user namespace for its CRI configs: nil
// for a pod in the node's, else mode POD with the pod's range (the
// kubelet's GetOrCreateUserNamespaceMappings).
func (m *Manager) PodNamespace(pod *v1.Pod) (*runtimeapi.UserNamespace, error) {
	if !Wanted(pod) {
		return nil, nil
	}
	alloc, err := m.allocator()
	if err != nil {
		return nil, err
	}
	mp, err := alloc.Get(pod.UID)
	if err != nil {
		return nil, fmt.Errorf("user namespace: %w", err)
	}
	return mp.CRI(), nil
}

// allocator returns the allocator of the pods under the pods dir, made on
// first use with the node's pod capacity.
func (m *Manager) allocator() (*Allocator, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.alloc == nil {
		cfg, allocatable := m.in.Config()
		if cfg.MaxPods == 0 && allocatable != nil {
			cfg.MaxPods = int(allocatable.Pods().Value())
		}
		alloc, err := New(cfg, m.in.PodsDir)
		if err != nil {
			return nil, err
		}
		m.alloc = alloc
	}
	return m.alloc, nil
}

// Release frees the pod's range as its directory is cleaned up: at once,
// even when something left mounted keeps the directory.
func (m *Manager) Release(pod *v1.Pod) error {
	if !Wanted(pod) {
		return nil
	}
	alloc, err := m.allocator()
	if err != nil {
		// No range was given with this config; the directory's removal
		// takes a file an earlier one wrote.
		return nil
	}
	return alloc.Release(pod.UID)
}

// runtimeSupports asks the runtime whether its default handler, the one
// minikubelet runs every pod with, supports user namespaces; the answer is
// kept, as a runtime's features change only when it restarts.
func (m *Manager) runtimeSupports(ctx context.Context) (bool, error) {
	m.smu.Lock()
	defer m.smu.Unlock()
	if !m.known {
		handlers, err := m.in.Handlers(ctx)
		if err != nil {
			return false, err
		}
		m.supported, m.known = HandlerSupports(handlers, ""), true
	}
	return m.supported, nil
}

// Refusal returns the message failing the pod for good, before anything
// of it is created, when it asks for a user namespace the runtime cannot
// give it (Refusal of the runtime's name and version); "" when the pod
// goes on. err is the runtime's Status failure: the pod goes on then (its
// observation fails the same way), and the caller logs it.
func (m *Manager) Refusal(ctx context.Context, pod *v1.Pod) (string, error) {
	if !Wanted(pod) {
		return "", nil
	}
	ok, err := m.runtimeSupports(ctx)
	if err != nil || ok {
		return "", err
	}
	name, version, err := m.in.Version(ctx)
	if err != nil {
		name, version = "the runtime", "(version unknown)"
	}
	return Refusal(name, version), nil
}
