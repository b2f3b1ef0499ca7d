package agent

// The device plugins' devices (agent/deviceplugin, Config.Devices).

import (
	"context"

	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// admitLate is the eviction manager's admission, then the devices' (the
// kubelet's order: eviction, then its resource allocation handler).
func (a *Agent) admitLate(p *v1.Pod) (reason, message string) {
	if reason, message = a.eviction.Admit(p); reason != "" {
		return reason, message
	}
	return a.cfg.Devices.Admit(p, a.othersLocked(p.UID))
}

// applyDevices adds c's devices to its CRI config.
func (a *Agent) applyDevices(ctx context.Context, pod *v1.Pod, c *v1.Container, cfg *runtimeapi.ContainerConfig) error {
	if err := a.cfg.Devices.ApplyContainer(ctx, pod, c.Name, cfg); err != nil {
		return newReasonError(ErrCreateContainerConfig, "%v", err)
	}
	return nil
}
