package config

import (
	"context"

	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// Devices is what the engine asks of the device plugins' manager
// (agent/deviceplugin.Manager implements it). It is declared here, beside
// the Config field that holds it, so that the engine needs no import of
// the manager's package.
type Devices interface {
	// Admit reserves the devices the pod's containers ask for, or returns
	// the kubelet's admission reason and message. others lists the other
	// admitted pods with their phase (finished pods give their devices
	// back); Admit is called with the engine's lock held, and so is
	// others.
	Admit(pod *v1.Pod, others func() []*v1.Pod) (reason, message string)
	// ApplyContainer gets the plugins' answer for the container's devices
	// (Allocate once, PreStartContainer when the plugin asks) and adds
	// it to cfg: environment, mounts, device nodes, annotations, CDI
	// devices.
	ApplyContainer(ctx context.Context, pod *v1.Pod, container string, cfg *runtimeapi.ContainerConfig) error
}

// NoDevices is Devices without device plugins: every pod is admitted and
// no container gets a device.
type NoDevices struct{}

// Admit admits every pod.
func (NoDevices) Admit(*v1.Pod, func() []*v1.Pod) (string, string) { return "", "" }

// ApplyContainer adds nothing.
func (NoDevices) ApplyContainer(context.Context, *v1.Pod, string, *runtimeapi.ContainerConfig) error {
	return nil
}
