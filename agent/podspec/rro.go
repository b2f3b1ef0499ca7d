package podspec

import (
	"context"
	"fmt"
	"sync"

	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// Recursive read-only mounts (volumeMounts[*].recursiveReadOnly), as the
// kubelet resolves them: Disabled (or unset) is a plain read-only mount;
// IfPossible is recursive when the runtime can; Enabled is recursive or
// the container is not created (CreateContainerConfigError). The runtime
// says what it can in its CRI Status (runtime handler "" features).

// ResolveRecursiveReadOnly is the kubelet's resolveRecursiveReadOnly:
// whether the mount is recursively read-only, given whether the runtime
// supports it.
func ResolveRecursiveReadOnly(m v1.VolumeMount, supported bool) (bool, error) {
	if m.RecursiveReadOnly == nil || *m.RecursiveReadOnly == v1.RecursiveReadOnlyDisabled {
		return false, nil
	}
	if !m.ReadOnly {
		return false, fmt.Errorf("volume %q requested recursive read-only mode, but it is not read-only", m.Name)
	}
	if m.MountPropagation != nil && *m.MountPropagation != v1.MountPropagationNone {
		return false, fmt.Errorf("volume %q requested recursive read-only mode, but it is not compatible with propagation %q", m.Name, *m.MountPropagation)
	}
	switch rro := *m.RecursiveReadOnly; rro {
	case v1.RecursiveReadOnlyIfPossible:
		return supported, nil
	case v1.RecursiveReadOnlyEnabled:
		if !supported {
			return false, fmt.Errorf("volume %q requested recursive read-only mode, but it is not supported by the runtime", m.Name)
		}
		return true, nil
	default:
		return false, fmt.Errorf("unknown recursive read-only mode %q", rro)
	}
}

// wantsRecursiveReadOnly reports whether m asks for more than a plain
// read-only mount.
func wantsRecursiveReadOnly(m v1.VolumeMount) bool {
	return m.RecursiveReadOnly != nil && *m.RecursiveReadOnly != v1.RecursiveReadOnlyDisabled
}

// SetRecursiveReadOnly marks the CRI mounts of c's volumeMounts (mounts[i]
// is c.VolumeMounts[i], as Mounts makes them) recursively read-only where
// they resolve to it; supported is asked only when a mount wants it. The
// error is the kubelet's makeMounts error, the container's
// CreateContainerConfigError message.
func SetRecursiveReadOnly(c *v1.Container, mounts []*runtimeapi.Mount, supported func() bool) error {
	for i, m := range c.VolumeMounts {
		if !wantsRecursiveReadOnly(m) {
			continue
		}
		rro, err := ResolveRecursiveReadOnly(m, supported())
		if err != nil {
			return fmt.Errorf("failed to resolve recursive read-only mode: %w", err)
		}
		if rro && i < len(mounts) {
			mounts[i].RecursiveReadOnly = true
		}
	}
	return nil
}

// VolumeMountStatuses is a created container's status.volumeMounts, as the
// kubelet reports them: each volumeMount's name, path and readOnly, and for
// a read-only one the recursive read-only mode in effect (Enabled or
// Disabled). supported is asked only when a mount wants more than a plain
// read-only mount.
func VolumeMountStatuses(c *v1.Container, supported func() bool) []v1.VolumeMountStatus {
	var out []v1.VolumeMountStatus
	for _, m := range c.VolumeMounts {
		s := v1.VolumeMountStatus{Name: m.Name, MountPath: m.MountPath, ReadOnly: m.ReadOnly}
		if m.ReadOnly {
			mode := v1.RecursiveReadOnlyDisabled
			if wantsRecursiveReadOnly(m) {
				if rro, err := ResolveRecursiveReadOnly(m, supported()); err == nil && rro {
					mode = v1.RecursiveReadOnlyEnabled
				}
			}
			s.RecursiveReadOnly = &mode
		}
		out = append(out, s)
	}
	return out
}

// RecursiveReadOnlySupport is whether the runtime's default handler mounts
// recursively read-only, from its CRI Status, asked once it is needed and
// kept once it answered.
type RecursiveReadOnlySupport struct {
	mu               sync.Mutex
	known, supported bool
}

// Get returns the runtime's answer, asking status the first time (and
// again after a failed call, which counts as not supported).
func (r *RecursiveReadOnlySupport) Get(ctx context.Context, status func(context.Context) (*runtimeapi.StatusResponse, error)) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.known {
		resp, err := status(ctx)
		if err != nil {
			return false
		}
		r.known = true
		for _, h := range resp.GetRuntimeHandlers() {
			if h.GetName() == "" {
				r.supported = h.GetFeatures().GetRecursiveReadOnlyMounts()
			}
		}
	}
	return r.supported
}
