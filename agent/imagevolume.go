package agent

// Image volumes (spec.volumes[*].image, the kubelet's ImageVolume, GA in
// v1.36): an OCI image the runtime mounts read-only into the containers
// that mount the volume. As the kubelet's SyncPod does (getImageVolumes,
// toKubeContainerImageVolumes):
//
//   - before a sync starts any container, every image volume's image is
//     made present with its pullPolicy and the pod's pull secrets, through
//     the container image path (ensurePulled), with the same events, on the
//     pod rather than on a container, and the same pull back-off;
//   - a container that mounts a volume whose image could not be had is not
//     created: it waits with that pull's reason (ErrImagePull,
//     ImagePullBackOff, ErrImageNeverPull) and a Failed event; the others
//     start;
//   - the container's CRI mount names the pulled image (Mount.Image) and
//     the runtime mounts it (agent/podspec Mounts).
//
// containerd implements Mount.Image from 2.1 on; older ones ignore the
// field and would bind an empty host path. The kubelet does not check the
// runtime and its pod fails late with CreateContainerError; minikubelet
// refuses such a pod before anything of it is created, with a reason that
// says what to do (refuseImageVolumes; agent/images decides).

import (
	"context"
	"errors"
	"fmt"
	"sync"

	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/minikubelet/minikubelet/agent/images"
	"github.com/minikubelet/minikubelet/agent/podspec"
)

// reasonImageVolumeNotSupported is the pod's status reason and event
// reason when the runtime cannot mount image volumes.
const reasonImageVolumeNotSupported = "ImageVolumeNotSupported"

// runtimeVersionCache keeps the runtime's name and version from its first
// CRI Version answer: a runtime changes version only when it restarts, and
// the agent's handshake is also made once.
type runtimeVersionCache struct {
	mu            sync.Mutex
	known         bool
	name, version string
}

// runtimeVersion returns the runtime's name and version (CRI Version).
func (a *Agent) runtimeVersion(ctx context.Context) (name, version string, err error) {
	c := &a.runtimeVer
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.known {
		resp, err := a.runtime.Version(ctx, "v1")
		if err != nil {
			return "", "", err
		}
		c.name, c.version, c.known = resp.GetRuntimeName(), resp.GetRuntimeVersion(), true
	}
	return c.name, c.version, nil
}

// refuseImageVolumes fails the pod for good, before anything of it is
// created, when it has image volumes the runtime cannot mount: phase
// Failed, reason ImageVolumeNotSupported, a Warning event. It reports
// whether the pod is failed for that reason. When the runtime does not
// answer, the pod goes on: its observation fails the same way.
func (a *Agent) refuseImageVolumes(ctx context.Context, w *podWorker, pod *v1.Pod) bool {
	paths := images.VolumePaths(pod)
	if len(paths) == 0 {
		return false
	}
	name, version, err := a.runtimeVersion(ctx)
	if err != nil {
		w.logger.Warn("Ask the runtime for its version failed", "err", err)
		return false
	}
	msg := images.VolumeRefusal(paths, name, version)
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

// pullImageVolumes makes the image of each of the pod's image volumes
// present, in order, and returns the outcome by volume name (nil without
// image volumes). An image in pull back-off is not asked for: its result
// is ImagePullBackOff and the sync is requeued when the back-off ends.
func (a *Agent) pullImageVolumes(ctx context.Context, w *podWorker, pod *v1.Pod, sandboxCfg *runtimeapi.PodSandboxConfig, res *syncResult) map[string]pullResult {
	var out map[string]pullResult
	for i := range pod.Spec.Volumes {
		vol := &pod.Spec.Volumes[i]
		if vol.Image == nil {
			continue
		}
		if out == nil {
			out = map[string]pullResult{}
		}
		ref := vol.Image.Reference
		key := imageRefBackoffKey(pod, ref)
		if in, left := a.imageBackoff.inBackoffSinceUpdate(key, a.clock.Now()); in {
			msg := fmt.Sprintf("Back-off pulling image %q", ref)
			w.event(v1.EventTypeNormal, "BackOff", "%s", msg)
			out[vol.Name] = pullResult{err: newReasonError(ErrImagePullBackOff, "%s", msg)}
			res.retryAfter(left)
			continue
		}
		id, img, err := a.ensurePulled(ctx, w, imagePull{image: ref, policy: vol.Image.PullPolicy, event: w.event}, sandboxCfg)
		if err != nil && errors.Is(err, ErrImagePull) {
			a.imageBackoff.next(key, a.clock.Now())
		}
		out[vol.Name] = pullResult{ref: id, image: img, err: err}
	}
	return out
}

// containerImageVolumes returns the CRI images of the image volumes c
// mounts, from this sync's pulls. When one of them could not be had, c is
// not to be created: the error is that pull's (its reason becomes c's
// waiting reason), with a Failed event on c for each such volume, as the
// kubelet's toKubeContainerImageVolumes.
func containerImageVolumes(w *podWorker, pod *v1.Pod, c *v1.Container, pulls map[string]pullResult) (map[string]*runtimeapi.ImageSpec, error) {
	var out map[string]*runtimeapi.ImageSpec
	var lastErr error
	for _, m := range c.VolumeMounts {
		r, ok := pulls[m.Name]
		if !ok {
			continue
		}
		if r.err != nil {
			_, msg := reasonAndMessage(r.err)
			w.containerEvent(c.Name, v1.EventTypeWarning, "Failed", "Error: %s", msg)
			lastErr = r.err
			continue
		}
		if out == nil {
			out = map[string]*runtimeapi.ImageSpec{}
		}
		for i := range pod.Spec.Volumes {
			if v := &pod.Spec.Volumes[i]; v.Name == m.Name && v.Image != nil {
				out[m.Name] = podspec.ImageVolumeSpec(v.Image.Reference, r.ref)
			}
		}
	}
	if lastErr != nil {
		return nil, lastErr
	}
	return out, nil
}
