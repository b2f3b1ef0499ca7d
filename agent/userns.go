package agent

// User namespaces (spec.hostUsers: false), as the kubelet v1.37 runs them
// (UserNamespacesSupport, GA): the pod's sandbox and containers share one
// user namespace, mode POD, whose IDs 0-65535 are a range of host IDs of
// the pod's own (agent/userns allocates it and keeps it in the pod's
// directory); the runtime maps the rootfs and the volumes into it with
// idmapped mounts.
//
// The kubelet asks its runtime, when it builds the sandbox config, whether
// the runtime handler supports user namespaces (CRI Status
// runtime_handlers[].features.user_namespaces), and fails the sandbox
// creation, again and again, when it does not. minikubelet asks the same
// question but fails such a pod for good before anything of it is created,
// with a reason that says what to do (refuseUserNamespaces), as it does for
// image volumes: no retry can succeed until the node's runtime changes.
// containerd 1.6 reports no handlers at all (it would ignore the option and
// run the pod with the host's IDs); containerd 2.x reports the feature only
// when its OCI runtime can make idmapped mounts (runc 1.2 or later).

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"

	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/minikubelet/minikubelet/agent/userns"
)

// reasonUserNamespacesNotSupported is the pod's status reason and event
// reason when the runtime cannot run it in a user namespace.
const reasonUserNamespacesNotSupported = "UserNamespacesNotSupported"

// userNSState is the engine's part of user namespaces: the ID range
// allocator, made on first use, and the runtime's answer, asked once.
type userNSState struct {
	mu    sync.Mutex // guards alloc
	alloc *userns.Allocator
	// smu guards known, set once the runtime answered, and supported,
	// its answer.
	smu              sync.Mutex
	known, supported bool
}

// podUserNamespace returns the pod's user namespace for its CRI configs:
// nil for a pod in the node's, else mode POD with the pod's range (the
// kubelet's GetOrCreateUserNamespaceMappings).
func (a *Agent) podUserNamespace(pod *v1.Pod) (*runtimeapi.UserNamespace, error) {
	if !userns.Wanted(pod) {
		return nil, nil
	}
	alloc, err := a.userNSAllocator()
	if err != nil {
		return nil, err
	}
	m, err := alloc.Get(pod.UID)
	if err != nil {
		return nil, fmt.Errorf("user namespace: %w", err)
	}
	return m.CRI(), nil
}

// userNSAllocator returns the allocator of the pods under the root dir,
// made on first use with the node's pod capacity.
func (a *Agent) userNSAllocator() (*userns.Allocator, error) {
	s := &a.userNS
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.alloc == nil {
		cfg := a.cfg.UserNamespaces
		if cfg.MaxPods == 0 && a.cfg.Node.Allocatable != nil {
			cfg.MaxPods = int(a.cfg.Node.Allocatable.Pods().Value())
		}
		alloc, err := userns.New(cfg, filepath.Join(a.cfg.RootDir, "pods"))
		if err != nil {
			return nil, err
		}
		s.alloc = alloc
	}
	return s.alloc, nil
}

// releaseUserNamespace frees the pod's range as its directory is cleaned
// up: at once, even when something left mounted keeps the directory.
func (a *Agent) releaseUserNamespace(pod *v1.Pod) error {
	if !userns.Wanted(pod) {
		return nil
	}
	alloc, err := a.userNSAllocator()
	if err != nil {
		// No range was given with this config; the directory's removal
		// takes a file an earlier one wrote.
		return nil
	}
	return alloc.Release(pod.UID)
}

// runtimeSupportsUserNamespaces asks the runtime (CRI Status) whether its
// default handler, the one minikubelet runs every pod with, supports user
// namespaces; the answer is kept, as a runtime's features change only when
// it restarts.
func (a *Agent) runtimeSupportsUserNamespaces(ctx context.Context) (bool, error) {
	s := &a.userNS
	s.smu.Lock()
	defer s.smu.Unlock()
	if !s.known {
		st, err := a.runtime.Status(ctx, false)
		if err != nil {
			return false, err
		}
		s.supported, s.known = userns.HandlerSupports(st.GetRuntimeHandlers(), ""), true
	}
	return s.supported, nil
}

// refuseUserNamespaces fails the pod for good, before anything of it is
// created, when it asks for a user namespace the runtime cannot give it:
// phase Failed, reason UserNamespacesNotSupported, a Warning event. It
// reports whether the pod is failed for that reason. When the runtime does
// not answer, the pod goes on: its observation fails the same way.
func (a *Agent) refuseUserNamespaces(ctx context.Context, w *podWorker, pod *v1.Pod) bool {
	if !userns.Wanted(pod) {
		return false
	}
	ok, err := a.runtimeSupportsUserNamespaces(ctx)
	if err != nil {
		w.logger.Warn("Ask the runtime for its status failed", "err", err)
		return false
	}
	if ok {
		return false
	}
	name, version, err := a.runtimeVersion(ctx)
	if err != nil {
		name, version = "the runtime", "(version unknown)"
	}
	msg := userns.Refusal(name, version)
	if w.setFailed(reasonUserNamespacesNotSupported, msg) {
		w.event(v1.EventTypeWarning, reasonUserNamespacesNotSupported, "%s", msg)
	}
	return true
}
