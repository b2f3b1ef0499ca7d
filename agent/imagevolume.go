package agent

// Image volumes (spec.volumes[*].image): agent/images pulls them and says
// which pods the runtime cannot serve; the engine fails such a pod.

import (
	"context"

	v1 "k8s.io/api/core/v1"

	"github.com/minikubelet/minikubelet/agent/images"
)

// reasonImageVolumeNotSupported is the pod's status reason and event
// reason when the runtime cannot mount image volumes.
const reasonImageVolumeNotSupported = "ImageVolumeNotSupported"

// runtimeVersionCache keeps the runtime's name and version from its first
// answer (agent/images).
type runtimeVersionCache = images.RuntimeVersion

// runtimeVersion returns the runtime's name and version (CRI Version),
// asked once.
func (a *Agent) runtimeVersion(ctx context.Context) (name, version string, err error) {
	return a.runtimeVer.Get(ctx, a.runtime)
}

// refuseImageVolumes fails the pod for good, before anything of it is
// created, when it has image volumes the runtime cannot mount: phase
// Failed, reason ImageVolumeNotSupported, a Warning event. It reports
// whether the pod is failed for that reason. When the runtime does not
// answer, the pod goes on: its observation fails the same way.
func (a *Agent) refuseImageVolumes(ctx context.Context, w *podWorker, pod *v1.Pod) bool {
	msg, err := a.imageManager().RefuseVolumes(ctx, pod)
	if err != nil {
		w.logger.Warn("Ask the runtime for its version failed", "err", err)
	}
	if msg == "" {
		return false
	}
	if w.setFailed(reasonImageVolumeNotSupported, msg) {
		w.event(v1.EventTypeWarning, reasonImageVolumeNotSupported, "%s", msg)
	}
	return true
}

// startsContainers reports whether the plan starts any container.
func startsContainers(act podActions) bool {
	return act.NextInitContainer >= 0 || len(act.InitContainersToStart) > 0 ||
		len(act.ContainersToStart) > 0 || len(act.EphemeralContainersToStart) > 0
}
