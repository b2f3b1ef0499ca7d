package images

// Image volumes (spec.volumes[*].image, the kubelet's ImageVolume, GA in
// v1.36): an OCI image the runtime mounts read-only into the containers
// that mount the volume. As the kubelet's SyncPod does (getImageVolumes,
// toKubeContainerImageVolumes):
//
//   - before a sync starts any container, every image volume's image is
//     made present with its pullPolicy and the pod's pull secrets, through
//     the container image path (EnsureImage), with the same events, on the
//     pod rather than on a container, and the same pull back-off
//     (PullVolumes);
//   - a container that mounts a volume whose image could not be had is not
//     created: it waits with that pull's reason (ErrImagePull,
//     ImagePullBackOff, ErrImageNeverPull) and a Failed event; the others
//     start (ContainerVolumes);
//   - the container's CRI mount names the pulled image (Mount.Image) and
//     the runtime mounts it (agent/podspec Mounts).
//
// containerd implements Mount.Image from 2.1 on; older ones ignore the
// field and would bind an empty host path. The kubelet does not check the
// runtime and its pod fails late with CreateContainerError; minikubelet
// refuses such a pod before anything of it is created, with a reason that
// says what to do: RefuseVolumes has VolumeRefusal's message, the engine
// fails the pod (agent/imagevolume.go, refuseImageVolumes).

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/minikubelet/minikubelet/agent/podspec"
	"github.com/minikubelet/minikubelet/agent/reason"
)

// runtimeMountsImages reports whether a runtime of this name and version
// implements CRI Mount.Image: containerd from 2.1 on. Other runtimes (CRI-O
// has it since 1.31) and versions that do not parse are given the benefit
// of the doubt: their own error then says what went wrong.
func runtimeMountsImages(name, version string) bool {
	if name != "containerd" {
		return true
	}
	major, minor, ok := majorMinor(version)
	if !ok {
		return true
	}
	return major > 2 || (major == 2 && minor >= 1)
}

// majorMinor parses the start of "v2.4.2", "1.6.38-rc.1" or "2.1".
func majorMinor(version string) (int, int, bool) {
	parts := strings.SplitN(strings.TrimPrefix(version, "v"), ".", 3)
	if len(parts) < 2 {
		return 0, 0, false
	}
	major, err1 := strconv.Atoi(parts[0])
	minor, err2 := strconv.Atoi(strings.TrimRightFunc(parts[1], func(r rune) bool { return r < '0' || r > '9' }))
	if err1 != nil || err2 != nil {
		return 0, 0, false
	}
	return major, minor, true
}

// VolumePaths are the field paths of the pod's image volumes.
func VolumePaths(pod *v1.Pod) []string {
	var out []string
	for i := range pod.Spec.Volumes {
		if pod.Spec.Volumes[i].Image != nil {
			out = append(out, field.NewPath("spec", "volumes").Index(i).Child("image").String())
		}
	}
	return out
}

// VolumeRefusal is the message refusing a pod whose image volumes
// (paths) a runtime of this name and version cannot mount; "" when it can.
func VolumeRefusal(paths []string, name, version string) string {
	if len(paths) == 0 || runtimeMountsImages(name, version) {
		return ""
	}
	return fmt.Sprintf("%s: this node's runtime, %s %s, cannot mount image volumes (CRI Mount.image needs containerd 2.1 or later): upgrade the node's containerd to 2.1 or later, or run the pod on a node that has it",
		strings.Join(paths, ", "), name, version)
}

// RefuseVolumes is the message refusing the pod (VolumeRefusal) when it
// has image volumes the runtime cannot mount; "" when it has none or the
// runtime can. The runtime is asked only for a pod that has some.
func (m *Manager) RefuseVolumes(ctx context.Context, pod *v1.Pod) (string, error) {
	paths := VolumePaths(pod)
	if len(paths) == 0 {
		return "", nil
	}
	name, version, err := m.RuntimeVersion(ctx)
	if err != nil {
		return "", err
	}
	return VolumeRefusal(paths, name, version), nil
}

// RuntimeVersion keeps the runtime's name and version from its first CRI
// Version answer: a runtime changes version only when it restarts, and the
// agent's handshake is also made once. The engine keeps one (image volumes
// and user namespaces ask it).
type RuntimeVersion struct {
	mu            sync.Mutex
	known         bool
	name, version string
}

// Versioner is what RuntimeVersion needs of the runtime (cri.Runtime has
// it).
type Versioner interface {
	Version(ctx context.Context, apiVersion string) (*runtimeapi.VersionResponse, error)
}

// Get returns the runtime's name and version, asking rt the first time.
func (c *RuntimeVersion) Get(ctx context.Context, rt Versioner) (name, version string, err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.known {
		resp, err := rt.Version(ctx, "v1")
		if err != nil {
			return "", "", err
		}
		c.name, c.version, c.known = resp.GetRuntimeName(), resp.GetRuntimeVersion(), true
	}
	return c.name, c.version, nil
}

// PullResult is the outcome of one image pull.
type PullResult struct {
	Ref string
	// Image is the image's status when it was already present (nil
	// after a pull).
	Image *runtimeapi.Image
	Err   error
}

// PullVolumes makes the image of each of the pod's image volumes present,
// in order, and returns the outcome by volume name (nil without image
// volumes); the events are the pod's. An image in pull back-off is not
// asked for: its result is ImagePullBackOff, and retryAfter is told when
// the back-off ends.
func (m *Manager) PullVolumes(ctx context.Context, pod *v1.Pod, r Report, sandboxCfg *runtimeapi.PodSandboxConfig, retryAfter func(time.Duration)) map[string]PullResult {
	var out map[string]PullResult
	for i := range pod.Spec.Volumes {
		vol := &pod.Spec.Volumes[i]
		if vol.Image == nil {
			continue
		}
		if out == nil {
			out = map[string]PullResult{}
		}
		ref := vol.Image.Reference
		key := m.BackoffKey(pod, ref)
		if in, left := m.InBackoff(key, m.Clock.Now()); in {
			msg := fmt.Sprintf("Back-off pulling image %q", ref)
			r.Event(v1.EventTypeNormal, "BackOff", "%s", msg)
			out[vol.Name] = PullResult{Err: reason.New(ErrImagePullBackOff, "%s", msg)}
			retryAfter(left)
			continue
		}
		id, img, err := m.EnsureImage(ctx, pod, r, ref, vol.Image.PullPolicy, sandboxCfg)
		if err != nil && errors.Is(err, ErrImagePull) {
			m.BackoffNext(key, m.Clock.Now())
		}
		out[vol.Name] = PullResult{Ref: id, Image: img, Err: err}
	}
	return out
}

// ContainerVolumes returns the CRI images of the image volumes c mounts,
// from this sync's pulls. When one of them could not be had, c is not to
// be created: the error is that pull's (its reason becomes c's waiting
// reason), with a Failed event (event: on c) for each such volume, as the
// kubelet's toKubeContainerImageVolumes.
func ContainerVolumes(pod *v1.Pod, c *v1.Container, pulls map[string]PullResult, event func(typ, reason, format string, args ...any)) (map[string]*runtimeapi.ImageSpec, error) {
	var out map[string]*runtimeapi.ImageSpec
	var lastErr error
	for _, m := range c.VolumeMounts {
		r, ok := pulls[m.Name]
		if !ok {
			continue
		}
		if r.Err != nil {
			_, msg := reason.Split(r.Err)
			event(v1.EventTypeWarning, "Failed", "Error: %s", msg)
			lastErr = r.Err
			continue
		}
		if out == nil {
			out = map[string]*runtimeapi.ImageSpec{}
		}
		for i := range pod.Spec.Volumes {
			if v := &pod.Spec.Volumes[i]; v.Name == m.Name && v.Image != nil {
				out[m.Name] = podspec.ImageVolumeSpec(v.Image.Reference, r.Ref)
			}
		}
	}
	if lastErr != nil {
		return nil, lastErr
	}
	return out, nil
}
