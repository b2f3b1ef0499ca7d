package agent

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/minikubelet/minikubelet/agent/images"
	"github.com/minikubelet/minikubelet/agent/lifecycle"
	"github.com/minikubelet/minikubelet/agent/logrotate"
	"github.com/minikubelet/minikubelet/agent/podevents"
	"github.com/minikubelet/minikubelet/agent/podspec"
	"github.com/minikubelet/minikubelet/agent/reason"
	"github.com/minikubelet/minikubelet/agent/volume"
	"github.com/minikubelet/minikubelet/cri"
)

// Container start failure reasons, the kubelet's texts: they become the
// container's waiting reason (kubelet-facts §1.3, §2.3). The pulls' are
// the image manager's (agent/images).
var (
	ErrImagePull               = images.ErrImagePull
	ErrImageNeverPull          = images.ErrImageNeverPull
	ErrCreateContainerConfig   = errors.New("CreateContainerConfigError")
	ErrCreateContainer         = errors.New("CreateContainerError")
	ErrRunContainer            = errors.New("RunContainerError")
	ErrCreatePodSandbox        = errors.New("CreatePodSandboxError")
	ErrKillContainer           = errors.New("KillContainerError")
	ErrPostStartHook           = errors.New("PostStartHookError")
	ErrNetworkNotReadyForPod   = errors.New("NetworkNotReady")
	minimumGracePeriodInSecond = int64(2)
)

// newReasonError is an error with a kubelet reason (one of the sentinels
// above) and the human message that goes with it into the container's
// waiting state (agent/reason). A function, not a variable, so that vet
// checks its format strings.
func newReasonError(r error, format string, args ...any) error {
	return reason.New(r, format, args...)
}

// reasonAndMessage splits an error into the kubelet-style reason and message.
var reasonAndMessage = reason.Split

// imageManager is the image manager (agent/images) over the agent's image
// service, clock, pull back-off, Secrets, docker config file and runtime
// version as they are now (tests swap the image service).
func (a *Agent) imageManager() *images.Manager {
	return &images.Manager{
		Images:         a.images,
		Clock:          a.clock,
		Secret:         func(pod *v1.Pod, name string) (*v1.Secret, error) { return a.configData().Secret(pod, name) },
		PullSecretFile: a.cfg.PullSecretFile,
		RootDir:        a.cfg.RootDir,
		InBackoff:      a.imageBackoff.InBackoffSinceUpdate,
		BackoffNext:    a.imageBackoff.Next,
		BackoffKey:     podspec.ImageBackoffKey,
		RuntimeVersion: a.runtimeVersion,
	}
}

// pullReport is where the image manager reports the worker's pulls for a
// container ("": an image volume, on the pod).
func (w *podWorker) pullReport(container string) images.Report {
	event := func(typ, why, format string, args ...any) { w.containerEvent(container, typ, why, format, args...) }
	step := func(d time.Duration, detail string) { w.step(podevents.StepImage, d, detail) }
	return images.Report{Event: event, PodEvent: w.event, Step: step, Logger: w.logger}
}

// generateContainerConfig converts one container into its CRI config
// (podspec.ContainerConfig) from the environment, the volume mounts it
// prepares (volPaths: host paths by volume; images: the pulled images of
// the image volumes it mounts) and the node's facts.
func (a *Agent) generateContainerConfig(pod *v1.Pod, c *v1.Container, ctype string, restartCount int, imageRef, podIP string, volPaths map[string]string, images map[string]*runtimeapi.ImageSpec) (*runtimeapi.ContainerConfig, error) {
	env, envMap, _, err := a.containerEnv(pod, c, podIP) // envvars.go
	if err != nil {
		return nil, newReasonError(ErrCreateContainerConfig, "%v", err)
	}
	// Propagation needs the source on a shared mount: make the pod's own
	// volume directory one (hostPath volumes are the host's business),
	// before subPaths are pinned, so that their bind mounts join its peer
	// group.
	for _, m := range c.VolumeMounts {
		root := volPaths[m.Name]
		if podspec.MountPropagation(m.MountPropagation) != runtimeapi.MountPropagation_PROPAGATION_PRIVATE && strings.HasPrefix(root, a.podDir(pod)+"/") {
			if err := volume.MakeRShared(root); err != nil {
				return nil, newReasonError(ErrCreateContainerConfig, "volumeMount %q: %v", m.Name, err)
			}
		}
	}
	// subPaths are opened beneath their volume and pinned (agent/volume);
	// on any failure the pins made so far go again.
	pin := func(index int, volume, root, sub string) (string, error) {
		return a.volumes().PinSubPath(pod, c.Name, volume, root, sub, index)
	}
	mounts, err := podspec.Mounts(c, volPaths, images, envMap, pin)
	if err == nil {
		err = podspec.SetRecursiveReadOnly(c, mounts, a.supportsRRO)
	}
	if err != nil {
		_ = a.volumes().UnpinSubPaths(pod, c.Name)
		return nil, newReasonError(ErrCreateContainerConfig, "%v", err)
	}
	a.volumes().ReadOnlyDataMounts(pod, mounts) // agent/volume
	// The sandbox's user namespace (userns.go).
	userNS, err := a.userNSManager().PodNamespace(pod)
	if err != nil {
		_ = a.volumes().UnpinSubPaths(pod, c.Name)
		return nil, newReasonError(ErrCreateContainerConfig, "%v", err)
	}
	cfg, err := podspec.ContainerConfig(pod, c, podspec.ContainerInputs{
		Type:           ctype,
		RestartCount:   restartCount,
		ImageRef:       imageRef,
		AgentID:        a.cfg.AgentID,
		Env:            env,
		EnvMap:         envMap,
		Mounts:         mounts,
		SeccompRoot:    podspec.SeccompProfileRoot(a.cfg.SeccompProfileRoot, a.cfg.RootDir),
		MemoryCapacity: a.memoryCapacity(),
		UserNamespace:  userNS,
	})
	if err != nil {
		return nil, newReasonError(ErrCreateContainerConfig, "%v", err)
	}
	return cfg, nil
}

// startContainer runs one container of the pod: image, config, create,
// start, postStart hook (kubelet's startContainer order). The image may
// have been pulled during sandbox creation (PullAll); imageRef is then
// non-empty, and img the image's status if it was present (nil: asked
// again for the image's user). A failed postStart hook kills the container
// and returns ErrPostStartHook; the container then follows its restart
// policy. The container's ID is returned once it was created. images are
// the pulled images of the image volumes c mounts (images.ContainerVolumes).
func (a *Agent) startContainer(ctx context.Context, pw *podWorker, sb *sandboxInfo, c *v1.Container, ctype string, restartCount int, imageRef string, img *runtimeapi.Image, images map[string]*runtimeapi.ImageSpec) (string, error) {
	pod := pw.pod()
	var err error
	if imageRef == "" {
		imageRef, img, err = a.imageManager().EnsureImage(ctx, pod, pw.pullReport(c.Name), c.Image, c.ImagePullPolicy, sb.config)
		if err != nil {
			return "", err
		}
	}
	if err := os.MkdirAll(filepath.Join(sb.config.LogDirectory, c.Name), 0o755); err != nil {
		return "", newReasonError(ErrCreateContainerConfig, "create log directory: %v", err)
	}
	volPaths, err := a.volumes().SetupVolumes(pod)
	if err != nil {
		if me := (*volume.MountError)(nil); errors.As(err, &me) {
			pw.event(v1.EventTypeWarning, "FailedMount", "%s", me.Error())
		}
		return "", newReasonError(ErrCreateContainerConfig, "%v", err)
	}
	// envFrom keys that are not valid names are skipped with an event.
	for _, msg := range a.envWarnings(pod, c) { // envvars.go
		pw.containerEvent(c.Name, v1.EventTypeWarning, "InvalidEnvironmentVariableNames", "%s", msg)
	}
	cfg, err := a.generateContainerConfig(pod, c, ctype, restartCount, imageRef, sb.ip, volPaths, images)
	if err == nil {
		err = a.applyDevices(ctx, pod, c, cfg) // devices.go
	}
	if err != nil {
		return "", err
	}
	if ctype == containerTypeEphemeral {
		// kubectl debug --target: the target's PID namespace (ephemeral.go).
		if err := a.targetPIDNamespace(ctx, pod, c, cfg); err != nil {
			_ = a.volumes().UnpinSubPaths(pod, c.Name)
			return "", err
		}
	}
	// The image's user, and runAsNonRoot against it (security.go).
	if err := a.applyImageUser(ctx, pw, c, cfg, img); err != nil {
		return "", err
	}
	// The pod's managed /etc/hosts (hosts.go).
	if m, err := a.hostsMount(pod, c, sb.ip); err != nil {
		return "", newReasonError(ErrCreateContainerConfig, "%v", err)
	} else if m != nil {
		cfg.Mounts = append(cfg.Mounts, m)
	}
	termPath := ""
	if c.TerminationMessagePath != "" {
		termPath, err = a.createTerminationMessageFile(pod, c.Name)
		if err != nil {
			return "", newReasonError(ErrCreateContainerConfig, "%v", err)
		}
		cfg.Mounts = append(cfg.Mounts, &runtimeapi.Mount{ContainerPath: c.TerminationMessagePath, HostPath: termPath})
	}
	// hostUsers: false: every mount idmapped into the pod's user
	// namespace (userns.go).
	podspec.IDMapMounts(cfg)
	t0 := a.clock.Now()
	id, err := a.runtime.CreateContainer(ctx, sb.id, cfg, sb.config)
	if err != nil {
		if termPath != "" {
			_ = os.Remove(termPath) // no container holds it
		}
		if uerr := a.volumes().UnpinSubPaths(pod, c.Name); uerr != nil { // no container mounts them
			pw.logger.Warn("Unmount subPaths of a container that was not created failed", "container", c.Name, "err", uerr)
		}
		msg := cri.Message(err)
		pw.containerEvent(c.Name, v1.EventTypeWarning, "Failed", "Error: %s", msg)
		return "", newReasonError(ErrCreateContainer, "%s", msg)
	}
	pw.containerEvent(c.Name, v1.EventTypeNormal, "Created", "Created container: %s", c.Name)
	pw.step(podevents.StepCreated, a.clock.Since(t0), c.Name)
	t1 := a.clock.Now()
	if err := a.runtime.StartContainer(ctx, id); err != nil {
		msg := cri.Message(err)
		pw.containerEvent(c.Name, v1.EventTypeWarning, "Failed", "Error: %s", msg)
		return id, newReasonError(ErrRunContainer, "%s", msg)
	}
	pw.containerEvent(c.Name, v1.EventTypeNormal, "Started", "Started container %s", c.Name)
	pw.step(podevents.StepStarted, a.clock.Since(t1), c.Name)
	if err := logrotate.LinkContainerLog(a.cfg.ContainerLogsDir, pod.Name, pod.Namespace, c.Name, id, filepath.Join(sb.config.LogDirectory, cfg.LogPath)); err != nil {
		pw.logger.Warn("Create the container log symlink failed", "container", c.Name, "containerID", id, "err", err)
	}
	if c.Lifecycle != nil && c.Lifecycle.PostStart != nil {
		msg, err := a.runLifecycleHandler(ctx, pw, c, id, sb.ip, c.Lifecycle.PostStart)
		if err != nil && ctx.Err() != nil {
			// The agent is stopping, which leaves pods running, or the
			// pod is being terminated, whose teardown kills the container
			// with the deletion's grace period: the hook was abandoned,
			// not failed (the kubelet's cancelled SyncPod). postStart has
			// no time limit of its own (kubelet-facts §7.3).
			return id, fmt.Errorf("postStart hook of container %q abandoned: %w", c.Name, context.Cause(ctx))
		}
		if err != nil {
			pw.containerEvent(c.Name, v1.EventTypeWarning, "FailedPostStartHook", "%s", msg)
			if kerr := a.killContainer(ctx, pw, id, c.Name, "FailedPostStartHook", podspec.GracePeriod(pod)); kerr != nil {
				pw.logger.Warn("Kill container after failed postStart hook failed", "container", c.Name, "containerID", id, "err", kerr)
			}
			return id, newReasonError(ErrPostStartHook, "%s", msg)
		}
	}
	return id, nil
}

// stopContainer stops one running container with the given grace period:
// killContainer with the default Killing message.
func (a *Agent) stopContainer(ctx context.Context, pw *podWorker, id, name string, grace int64) error {
	return a.killContainer(ctx, pw, id, name, "", grace)
}

// killContainer stops one running container as the kubelet's killContainer
// does (kubelet-facts §7.2):
//
//  1. Normal event Killing with message ("" = "Stopping container <name>").
//  2. When grace > 0 and the container has a preStop hook (from the pod's
//     newest spec, or the container's annotation when the spec no longer
//     names it), run it for at most grace seconds and subtract the whole
//     seconds it took.
//  3. StopContainer with what is left, raised to the kubelet's 2 s minimum.
//
// NotFound is success. Callers pass running containers only: the hook needs
// a live process.
func (a *Agent) killContainer(ctx context.Context, pw *podWorker, id, name, message string, grace int64) error {
	return a.killContainerAfter(ctx, pw, id, name, message, grace, nil)
}

// killContainerAfter is killContainer in a whole pod's kill: after the
// preStop hook, the container waits for its turn in order (when set).
func (a *Agent) killContainerAfter(ctx context.Context, pw *podWorker, id, name, message string, grace int64, order *lifecycle.TerminationOrder) error {
	// A kill once begun completes even when a termination request
	// cancels the sync that began it (the teardown's kill follows it);
	// the agent's stop ends it (killContext).
	ctx, kcancel := pw.killContext(ctx)
	defer kcancel()
	if message == "" {
		message = fmt.Sprintf("Stopping container %s", name)
	}
	pw.containerEvent(name, v1.EventTypeNormal, "Killing", "%s", message)
	if grace > 0 {
		if c, h := a.preStopTarget(ctx, pw, id, name); h != nil {
			grace -= a.runPreStopHook(ctx, pw, c, id, h, grace)
		}
	}
	if order != nil {
		grace -= order.WaitForTurn(ctx, a.clock, name, grace)
	}
	// A later deletion with a shorter grace period bounds what is left.
	if by, ok, _ := pw.killDeadline(); ok {
		grace = min(grace, int64((by.Sub(a.clock.Now())+time.Second-1)/time.Second))
	}
	grace = max(grace, minimumGracePeriodInSecond)
	stopped := context.Cause(ctx)
	if pw.agentStopping() {
		stopped = context.Cause(pw.ctx)
	}
	if stopped != nil {
		// The agent stopped during the preStop hook: nothing more is
		// asked of the runtime; the next start kills the container. The
		// worker's own context is asked first: ctx (a killContext) is
		// cancelled by an AfterFunc of its own, which may run after the
		// hook's has already ended the hook.
		return fmt.Errorf("stop container %q abandoned: %w", name, stopped)
	}
	// The CRI call itself must outlive the grace period.
	ctx, cancel := context.WithTimeout(ctx, time.Duration(grace)*time.Second+a.cfg.RuntimeTimeout)
	defer cancel()
	if err := a.runtime.StopContainer(ctx, id, grace); err != nil && !cri.IsNotFound(err) {
		return newReasonError(ErrKillContainer, "stop container %q: %s", name, cri.Message(err))
	}
	return nil
}

// memoryCapacity is the node's memory capacity in bytes (0: unknown), for
// the containers' oom_score_adj.
func (a *Agent) memoryCapacity() int64 {
	if m, ok := a.cfg.Node.Capacity[v1.ResourceMemory]; ok {
		return m.Value()
	}
	return 0
}
