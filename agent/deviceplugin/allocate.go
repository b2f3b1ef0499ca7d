package deviceplugin

import (
	"context"
	"fmt"
	"maps"
	"path/filepath"
	"slices"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	pluginapi "k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"
)

// The kubelet's admission reasons (pkg/kubelet/cm/admission and
// pkg/kubelet/lifecycle/predicate.go).
const (
	reasonUnexpectedAdmission = "UnexpectedAdmissionError"
	reasonOutOfPrefix         = "OutOf"
)

// allocation is one container's devices of one resource.
type allocation struct {
	devices []string
	// response is the plugin's Allocate answer; nil until the container
	// was first created.
	response *pluginapi.ContainerAllocateResponse
}

// Admit reserves the devices pod's containers ask for (their limits of a
// registered resource), as the kubelet's device manager does at admission:
// healthy devices no other pod holds, those of the pod's init containers
// reused by the containers after them. It returns the kubelet's reason
// and message when they are not there. A pod that holds devices already
// (a restart's checkpoint) keeps them. others are the engine's other
// pods: a finished one gives its devices back first.
func (m *Manager) Admit(pod *v1.Pod, others func() []*v1.Pod) (reason, message string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.watchRestoredLocked()
	if len(m.pods) > 0 && others != nil {
		for _, o := range others() {
			if o.Status.Phase == v1.PodSucceeded || o.Status.Phase == v1.PodFailed {
				m.releaseLocked(o.UID)
			}
		}
	}
	if _, ok := m.pods[pod.UID]; ok {
		return "", ""
	}
	got := map[string]map[string]*allocation{}
	// reusable are the devices of the non-restartable init containers:
	// they ended before the next container starts.
	reusable := map[string][]string{}
	all := make([]v1.Container, 0, len(pod.Spec.InitContainers)+len(pod.Spec.Containers))
	all = append(append(all, pod.Spec.InitContainers...), pod.Spec.Containers...)
	for i, c := range all {
		init := i < len(pod.Spec.InitContainers)
		sidecar := init && c.RestartPolicy != nil && *c.RestartPolicy == v1.ContainerRestartPolicyAlways
		for _, name := range slices.Sorted(maps.Keys(requests(&c))) {
			need := requests(&c)[name]
			if m.removed[name] && m.resources[name] == nil {
				// The node reports it at 0: the predicate's answer.
				return reasonOutOfPrefix + name, fmt.Sprintf("Node didn't have enough resource: %s, requested: %d, used: %d, capacity: %d",
					name, need, len(m.inUseLocked(name, got)), 0)
			}
			if m.resources[name] == nil {
				continue // not a device plugin's: a cluster-level extended resource
			}
			ids := take(&reusable, name, need)
			if len(ids) < need {
				free := m.freeLocked(name, got)
				if len(free) < need-len(ids) {
					err := fmt.Errorf("requested number of devices unavailable for %s. Requested: %d, Available: %d", name, need-len(ids), len(free))
					return reasonUnexpectedAdmission, fmt.Sprintf("Allocate failed due to %v, which is unexpected", err)
				}
				ids = append(ids, free[:need-len(ids)]...)
			}
			if got[c.Name] == nil {
				got[c.Name] = map[string]*allocation{}
			}
			got[c.Name][name] = &allocation{devices: ids}
			if init && !sidecar {
				reusable[name] = append(reusable[name], ids...)
			}
		}
	}
	if len(got) == 0 {
		return "", ""
	}
	m.pods[pod.UID] = got
	m.saveLocked()
	m.watchLocked(pod.UID)
	return "", ""
}

// requests are the container's device counts by resource: its limits (an
// extended resource's request equals its limit), else its requests.
func requests(c *v1.Container) map[string]int {
	out := map[string]int{}
	for _, rl := range []v1.ResourceList{c.Resources.Requests, c.Resources.Limits} {
		for name, q := range rl {
			if isExtendedResourceName(string(name)) && q.Value() > 0 {
				out[string(name)] = int(q.Value())
			}
		}
	}
	return out
}

// take removes up to n devices of name from the reusable pool.
func take(pool *map[string][]string, name string, n int) []string {
	ids := (*pool)[name]
	k := min(n, len(ids))
	out := slices.Clone(ids[:k])
	(*pool)[name] = ids[k:]
	return out
}

// inUseLocked are the devices of name held by any pod, the pod being
// admitted (got) included.
func (m *Manager) inUseLocked(name string, got map[string]map[string]*allocation) map[string]bool {
	used := map[string]bool{}
	add := func(cs map[string]map[string]*allocation) {
		for _, rs := range cs {
			if al := rs[name]; al != nil {
				for _, id := range al.devices {
					used[id] = true
				}
			}
		}
	}
	for _, cs := range m.pods {
		add(cs)
	}
	add(got)
	return used
}

// freeLocked are the healthy devices of name no pod holds, in ID order.
func (m *Manager) freeLocked(name string, got map[string]map[string]*allocation) []string {
	used := m.inUseLocked(name, got)
	var free []string
	for id, healthy := range m.resources[name].devices {
		if healthy && !used[id] {
			free = append(free, id)
		}
	}
	slices.Sort(free)
	return free
}

// releaseLocked gives the pod's devices back.
func (m *Manager) releaseLocked(uid types.UID) {
	if _, ok := m.pods[uid]; !ok {
		return
	}
	delete(m.pods, uid)
	m.logger.Info("Pod's devices released", "podUID", string(uid))
	m.saveLocked()
}

// Release gives the pod's devices back (its teardown ended).
func (m *Manager) Release(uid types.UID) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.releaseLocked(uid)
	delete(m.watching, uid)
}

// watchLocked releases the pod's devices once podDone says its teardown
// ended (or that the pod is unknown: rejected after this admission).
func (m *Manager) watchLocked(uid types.UID) {
	if m.podDone == nil || m.watching[uid] {
		return
	}
	select {
	case <-m.stop:
		return // Stop may be waiting for the watchers already
	default:
	}
	m.watching[uid] = true
	podDone := m.podDone
	m.wg.Add(1)
	go func() {
		defer m.wg.Done()
		// podDone takes the engine's lock, which Admit's caller holds:
		// this goroutine waits for it.
		if ch := podDone(uid); ch != nil {
			select {
			case <-ch:
			case <-m.stop:
				return
			}
		}
		m.Release(uid)
	}()
}

// watchRestoredLocked watches the checkpoint's pods, once: at the first
// admission the engine and its sources are wired, so podDone knows to wait
// for pods a slow source has not handed over yet.
func (m *Manager) watchRestoredLocked() {
	for _, uid := range m.restored {
		if _, ok := m.pods[uid]; ok {
			m.watchLocked(uid)
		}
	}
	m.restored = nil
}

// ApplyContainer adds the container's devices to its CRI config. The first
// time it asks the plugin: GetPreferredAllocation (when the plugin offers
// it) may swap the reserved devices for others it prefers, then Allocate,
// whose answer is kept for the container's restarts; PreStartContainer is
// called before every start when the plugin asks for it. The plugin is
// never called with the manager's lock held.
func (m *Manager) ApplyContainer(ctx context.Context, pod *v1.Pod, container string, cfg *runtimeapi.ContainerConfig) error {
	m.mu.Lock()
	names := slices.Sorted(maps.Keys(m.pods[pod.UID][container]))
	m.mu.Unlock()
	for _, name := range names {
		resp, err := m.containerResponse(ctx, pod.UID, container, name)
		if err != nil {
			return err
		}
		if resp != nil {
			applyResponse(resp, cfg)
		}
	}
	return nil
}

// containerResponse is the plugin's answer for the container's devices of
// name, asked for when there is none yet; nil when the devices were
// released meanwhile.
func (m *Manager) containerResponse(ctx context.Context, uid types.UID, container, name string) (*pluginapi.ContainerAllocateResponse, error) {
	m.mu.Lock()
	al := m.pods[uid][container][name]
	var ep *endpoint
	if rs := m.resources[name]; rs != nil && rs.stoppedAt.IsZero() {
		ep = rs.ep
	}
	if al == nil {
		m.mu.Unlock()
		return nil, nil
	}
	resp, ids := al.response, slices.Clone(al.devices)
	var available []string
	if resp == nil && ep != nil && ep.opts.GetGetPreferredAllocationAvailable() {
		available = append(m.freeLocked(name, nil), ids...)
	}
	m.mu.Unlock()
	if ep == nil && (resp == nil || m.preStartRequired(name)) {
		return nil, fmt.Errorf("the device plugin of %s is not running: register it again (its devices cannot be prepared for the container)", name)
	}
	if resp == nil {
		if len(available) > 0 {
			if pref, err := ep.preferred(ctx, available, len(ids)); err != nil {
				m.logger.Warn("Device plugin's GetPreferredAllocation failed; keeping the devices picked at admission", "resource", name, "err", err)
			} else if ok := m.swap(uid, container, name, al, pref); ok {
				ids = slices.Clone(pref)
			}
		}
		r, err := ep.allocate(ctx, ids)
		if err != nil {
			return nil, fmt.Errorf("allocate %s devices %v: %w", name, ids, err)
		}
		m.mu.Lock()
		if m.pods[uid][container][name] != al {
			m.mu.Unlock()
			return nil, fmt.Errorf("the pod's %s devices were released while the plugin allocated them", name)
		}
		al.response = r
		m.saveLocked()
		m.mu.Unlock()
		resp = r
	}
	if ep != nil && ep.opts.GetPreStartRequired() {
		if err := ep.preStart(ctx, ids); err != nil {
			return nil, fmt.Errorf("PreStartContainer of %s devices %v: %w", name, ids, err)
		}
	}
	return resp, nil
}

// preStartRequired reports whether the resource's last plugin asked for
// PreStartContainer (unknown: false).
func (m *Manager) preStartRequired(name string) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	rs := m.resources[name]
	return rs != nil && rs.ep != nil && rs.ep.opts.GetPreStartRequired()
}

// swap replaces al's devices with the plugin's preference when it
// is the right size and every device is still free or al's own.
func (m *Manager) swap(uid types.UID, container, name string, al *allocation, pref []string) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(pref) != len(al.devices) || m.pods[uid][container][name] != al || al.response != nil || m.resources[name] == nil {
		return false
	}
	ok := map[string]bool{}
	for _, id := range al.devices {
		ok[id] = true
	}
	for _, id := range m.freeLocked(name, nil) {
		ok[id] = true
	}
	seen := map[string]bool{}
	for _, id := range pref {
		if !ok[id] || seen[id] {
			return false
		}
		seen[id] = true
	}
	al.devices = slices.Clone(pref)
	return true
}

// applyResponse adds a plugin's answer to the container's config: the
// environment after the container's own, mounts and device nodes (a
// relative path, or a container path the config has already, is skipped),
// annotations the config does not set, and CDI devices.
func applyResponse(r *pluginapi.ContainerAllocateResponse, cfg *runtimeapi.ContainerConfig) {
	for _, k := range slices.Sorted(maps.Keys(r.GetEnvs())) {
		cfg.Envs = append(cfg.Envs, &runtimeapi.KeyValue{Key: k, Value: []byte(r.GetEnvs()[k])})
	}
	taken := map[string]bool{}
	for _, mt := range cfg.Mounts {
		taken[mt.ContainerPath] = true
	}
	for _, mt := range r.GetMounts() {
		if !filepath.IsAbs(mt.GetContainerPath()) || !filepath.IsAbs(mt.GetHostPath()) || taken[mt.GetContainerPath()] {
			continue
		}
		taken[mt.GetContainerPath()] = true
		cfg.Mounts = append(cfg.Mounts, &runtimeapi.Mount{ContainerPath: mt.GetContainerPath(), HostPath: mt.GetHostPath(), Readonly: mt.GetReadOnly()})
	}
	devs := map[string]bool{}
	for _, d := range cfg.Devices {
		devs[d.ContainerPath] = true
	}
	for _, d := range r.GetDevices() {
		if !filepath.IsAbs(d.GetContainerPath()) || !filepath.IsAbs(d.GetHostPath()) || devs[d.GetContainerPath()] {
			continue
		}
		devs[d.GetContainerPath()] = true
		cfg.Devices = append(cfg.Devices, &runtimeapi.Device{ContainerPath: d.GetContainerPath(), HostPath: d.GetHostPath(), Permissions: d.GetPermissions()})
	}
	for k, v := range r.GetAnnotations() {
		if cfg.Annotations == nil {
			cfg.Annotations = map[string]string{}
		}
		if _, set := cfg.Annotations[k]; !set {
			cfg.Annotations[k] = v
		}
	}
	for _, c := range r.GetCdiDevices() {
		if c.GetName() != "" {
			cfg.CDIDevices = append(cfg.CDIDevices, &runtimeapi.CDIDevice{Name: c.GetName()})
		}
	}
}
