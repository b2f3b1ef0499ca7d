package images

// The image manager, as the kubelet's pkg/kubelet/images.ImageManager
// (EnsureImageExists): a container's or an image volume's image made
// present according to its pull policy, with the pod's pull secrets, the
// kubelet's events and the pull back-off.

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"google.golang.org/protobuf/proto"
	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/utils/clock"

	"github.com/minikubelet/minikubelet/agent/reason"
	"github.com/minikubelet/minikubelet/cri"
)

// The reasons of a pull that failed, the kubelet's texts: they become the
// container's waiting reason (kubelet-facts §1.3). The engine exports them
// as its own (agent.ErrImagePull, ...).
var (
	ErrImagePull        = errors.New("ErrImagePull")
	ErrImageNeverPull   = errors.New("ErrImageNeverPull")
	ErrImagePullBackOff = errors.New("ImagePullBackOff")
)

// ImageService is what the Manager needs of the runtime's image service
// (cri.Images has it).
type ImageService interface {
	Puller
	ImageStatus(ctx context.Context, image *runtimeapi.ImageSpec, verbose bool) (*runtimeapi.ImageStatusResponse, error)
}

// Manager makes images present for the engine. It keeps no state of its
// own: the pull back-off and the runtime's version are the engine's, which
// builds a Manager per use from what it holds then (its tests swap the
// image service).
type Manager struct {
	// Images is the runtime's image service.
	Images ImageService
	// Clock times the pulls and the back-off.
	Clock clock.PassiveClock
	// Secret finds a Secret a pod's imagePullSecrets name (the engine's
	// config store, in the pod's namespace).
	Secret func(pod *v1.Pod, name string) (*v1.Secret, error)
	// PullSecretFile is the node's docker config file as configured; ""
	// is config.json under RootDir, which may be missing.
	PullSecretFile, RootDir string
	// InBackoff reports whether the pull back-off's key is backing off at
	// now and for how long still; BackoffNext records a failed pull at
	// now; BackoffKey is the key of a pod's pulls of an image (the
	// kubelet's: a container's and an image volume's pulls of the same
	// image share it).
	InBackoff   func(key string, now time.Time) (bool, time.Duration)
	BackoffNext func(key string, now time.Time)
	BackoffKey  func(pod *v1.Pod, image string) string
	// RuntimeVersion answers the runtime's name and version (CRI
	// Version), for the image volume check (RefuseVolumes).
	RuntimeVersion func(ctx context.Context) (name, version string, err error)
}

// Report is where a pod's pulls report to: its worker's events, the steps
// of its start, its logger.
type Report struct {
	// Event records an event of the pull: on the container, or for an
	// image volume on the pod, as the kubelet's image manager does.
	Event func(typ, reason, format string, args ...any)
	// PodEvent records an event on the pod (pull secrets not found).
	PodEvent func(typ, reason, format string, args ...any)
	// Step records the image step of the pod's start and how long it took.
	Step func(d time.Duration, detail string)
	// Logger is the pod's logger.
	Logger *slog.Logger
}

// EnsureImage makes an image present according to its pull policy, with
// the pod's pull secrets, and returns the image reference (digest) to
// create the container from, and the image's status when it was already
// present (the image's user comes from it). Events follow the kubelet's
// image manager. A pull cancelled with ctx (the pod is being terminated,
// or the agent stops) is no failure: no event, no ErrImagePull, hence no
// pull back-off.
func (m *Manager) EnsureImage(ctx context.Context, pod *v1.Pod, r Report, image string, policy v1.PullPolicy, sandboxCfg *runtimeapi.PodSandboxConfig) (string, *runtimeapi.Image, error) {
	spec := &runtimeapi.ImageSpec{Image: image, UserSpecifiedImage: image}
	if policy != v1.PullAlways {
		st, err := m.Images.ImageStatus(ctx, spec, false)
		if err != nil {
			return "", nil, reason.New(ErrImagePull, "inspect image %q: %s", image, cri.Message(err))
		}
		if img := st.GetImage(); img != nil {
			r.Event(v1.EventTypeNormal, "Pulled", "Container image %q already present on machine", image)
			r.Step(0, fmt.Sprintf("%s already present", image))
			return img.GetId(), img, nil
		}
		if policy == v1.PullNever {
			msg := fmt.Sprintf("Container image %q is not present with pull policy of Never", image)
			r.Event(v1.EventTypeWarning, "ErrImageNeverPull", "%s", msg)
			return "", nil, reason.New(ErrImageNeverPull, "%s", msg)
		}
	}
	r.Event(v1.EventTypeNormal, "Pulling", "Pulling image %q", image)
	start := m.Clock.Now()
	ref, err := m.pull(ctx, pod, r, spec, sandboxCfg)
	if err != nil && ctx.Err() != nil {
		// Cancelled (the pod is being terminated, or the agent stops):
		// no failure to report, and no pull back-off.
		return "", nil, fmt.Errorf("pull of image %q abandoned: %w", image, context.Cause(ctx))
	}
	if err != nil {
		msg := cri.Message(err)
		r.Event(v1.EventTypeWarning, "Failed", "Failed to pull image %q: %s", image, msg)
		return "", nil, reason.New(ErrImagePull, "%s", msg)
	}
	d := m.Clock.Since(start)
	r.Event(v1.EventTypeNormal, "Pulled", "Successfully pulled image %q in %s", image, d.Round(time.Millisecond))
	r.Step(d, fmt.Sprintf("%s pulled", image))
	return ref, nil, nil
}

// pull pulls the image with each matching credential in turn until one
// works (the kubelet's pullImage); without any, anonymously. Missing pull
// secrets give the kubelet's FailedToRetrieveImagePullSecret warning.
func (m *Manager) pull(ctx context.Context, pod *v1.Pod, r Report, spec *runtimeapi.ImageSpec, sandboxCfg *runtimeapi.PodSandboxConfig) (string, error) {
	k, missing, problems := m.Keyring(pod)
	if len(missing) > 0 {
		r.PodEvent(v1.EventTypeWarning, "FailedToRetrieveImagePullSecret", "Unable to retrieve some image pull secrets (%s); attempting to pull the image may not succeed.", strings.Join(missing, ", "))
	}
	for _, p := range problems {
		r.Logger.Warn("Unusable registry credentials", "err", p)
	}
	return PullWithCredentials(ctx, m.Images, spec, k.Lookup(Repository(spec.Image)), sandboxCfg)
}

// PullAll starts pulling the images of the pod's init and app containers,
// each image once, while the engine creates the pod's sandbox: that takes
// hundreds of milliseconds (CNI ADD), and the kubelet does the two in
// sequence. An image in pull back-off is left out (the engine reports
// ImagePullBackOff when it would start the container); a failed pull
// starts its back-off. The outcomes fill the returned map by image, to be
// read once the WaitGroup is done. The pulls get their own copy of
// sandboxCfg: the caller goes on filling it (cgroup parent) while gRPC
// marshals the pulls' requests.
func (m *Manager) PullAll(ctx context.Context, pod *v1.Pod, report func(container string) Report, sandboxCfg *runtimeapi.PodSandboxConfig) (map[string]PullResult, *sync.WaitGroup) {
	pullCfg := proto.Clone(sandboxCfg).(*runtimeapi.PodSandboxConfig)
	out := map[string]PullResult{}
	var mu sync.Mutex
	var pulls sync.WaitGroup
	seen := map[string]bool{}
	for _, list := range [][]v1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for i := range list {
			c := &list[i]
			if seen[c.Image] {
				continue
			}
			seen[c.Image] = true
			key := m.BackoffKey(pod, c.Image)
			if in, _ := m.InBackoff(key, m.Clock.Now()); in {
				continue
			}
			pulls.Add(1)
			go func() {
				defer pulls.Done()
				ref, img, err := m.EnsureImage(ctx, pod, report(c.Name), c.Image, c.ImagePullPolicy, pullCfg)
				if err != nil && errors.Is(err, ErrImagePull) {
					m.BackoffNext(key, m.Clock.Now())
				}
				mu.Lock()
				out[c.Image] = PullResult{Ref: ref, Image: img, Err: err}
				mu.Unlock()
			}()
		}
	}
	return out, &pulls
}
