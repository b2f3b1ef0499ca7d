package cri

import (
	"context"
	"errors"
	"google.golang.org/grpc/codes"
	"log/slog"
	"maps"
	"sync"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// OpStats are the accumulated numbers for one CRI verb.
type OpStats struct {
	// Count is the number of calls, failed ones included.
	Count int
	// Errors is the number of calls that returned an error.
	Errors int
	// Total is the summed wall time of all calls.
	Total time.Duration
}

// Instrumented decorates a Runtime and an Images with logging and per-verb
// statistics (house style rule 11), so business code never logs CRI calls
// itself. Every call is logged at Debug with verb, duration, gRPC code and
// the ids involved; failures are logged at Warn, except NotFound, which
// cleanup paths expect and which stays at Debug. It is safe for concurrent
// use.
type Instrumented struct {
	rt     Runtime
	img    Images
	logger *slog.Logger

	// mu guards stats.
	mu sync.Mutex
	// stats is keyed by CRI verb ("RunPodSandbox").
	stats map[string]OpStats
	// onCall, if set, is told about every call (metrics); set once with
	// OnCall before use.
	onCall func(verb string, d time.Duration, err error)
}

// OnCall registers fn to be told about every call: verb, duration and
// error (the daemon's runtime operation metrics). Call it before use.
func (x *Instrumented) OnCall(fn func(verb string, d time.Duration, err error)) { x.onCall = fn }

var (
	_ Runtime = (*Instrumented)(nil)
	_ Images  = (*Instrumented)(nil)
)

// Instrument wraps rt and img. A nil logger discards logs; stats are kept
// either way.
func Instrument(rt Runtime, img Images, logger *slog.Logger) *Instrumented {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	return &Instrumented{
		rt:     rt,
		img:    img,
		logger: logger.With("component", "cri"),
		stats:  make(map[string]OpStats),
	}
}

// Stats returns a copy of the per-verb statistics gathered so far.
func (x *Instrumented) Stats() map[string]OpStats {
	x.mu.Lock()
	defer x.mu.Unlock()
	return maps.Clone(x.stats)
}

// record accounts one finished call and logs it. attrs are slog key/value
// pairs naming the objects involved.
func (x *Instrumented) record(ctx context.Context, verb string, start time.Time, err error, attrs ...any) {
	d := time.Since(start)
	x.mu.Lock()
	s := x.stats[verb]
	s.Count++
	s.Total += d
	if err != nil {
		s.Errors++
	}
	x.stats[verb] = s
	x.mu.Unlock()
	if x.onCall != nil && verb != "GetContainerEvents" {
		x.onCall(verb, d, err)
	}

	attrs = append(attrs, "verb", verb, "duration", d, "code", codeName(err))
	switch {
	case err == nil:
		x.logger.Log(ctx, slog.LevelDebug, "CRI call", attrs...)
	case IsNotFound(err):
		x.logger.Log(ctx, slog.LevelDebug, "CRI call found no object", append(attrs, "err", err)...)
	case codeOf(err) == codes.Canceled || errors.Is(err, context.Canceled) || IsUnimplemented(err):
		// The caller gave up (shutdown), or the runtime lacks an optional
		// API the caller probes for: nothing to warn about.
		x.logger.Log(ctx, slog.LevelDebug, "CRI call ended", append(attrs, "err", err)...)
	default:
		x.logger.Log(ctx, slog.LevelWarn, "CRI call failed", append(attrs, "err", err)...)
	}
}

// podKey renders sandbox metadata as "namespace/name" for logs.
func podKey(m *runtimeapi.PodSandboxMetadata) string {
	return m.GetNamespace() + "/" + m.GetName()
}

// Version implements Runtime.
func (x *Instrumented) Version(ctx context.Context, apiVersion string) (*runtimeapi.VersionResponse, error) {
	start := time.Now()
	resp, err := x.rt.Version(ctx, apiVersion)
	x.record(ctx, "Version", start, err)
	return resp, err
}

// Status implements Runtime.
func (x *Instrumented) Status(ctx context.Context, verbose bool) (*runtimeapi.StatusResponse, error) {
	start := time.Now()
	resp, err := x.rt.Status(ctx, verbose)
	x.record(ctx, "Status", start, err)
	return resp, err
}

// RunPodSandbox implements Runtime.
func (x *Instrumented) RunPodSandbox(ctx context.Context, config *runtimeapi.PodSandboxConfig, runtimeHandler string) (string, error) {
	start := time.Now()
	id, err := x.rt.RunPodSandbox(ctx, config, runtimeHandler)
	x.record(ctx, "RunPodSandbox", start, err,
		"pod", podKey(config.GetMetadata()), "attempt", config.GetMetadata().GetAttempt(), "sandboxID", id)
	return id, err
}

// StopPodSandbox implements Runtime.
func (x *Instrumented) StopPodSandbox(ctx context.Context, podSandboxID string) error {
	start := time.Now()
	err := x.rt.StopPodSandbox(ctx, podSandboxID)
	x.record(ctx, "StopPodSandbox", start, err, "sandboxID", podSandboxID)
	return err
}

// RemovePodSandbox implements Runtime.
func (x *Instrumented) RemovePodSandbox(ctx context.Context, podSandboxID string) error {
	start := time.Now()
	err := x.rt.RemovePodSandbox(ctx, podSandboxID)
	x.record(ctx, "RemovePodSandbox", start, err, "sandboxID", podSandboxID)
	return err
}

// PodSandboxStatus implements Runtime.
func (x *Instrumented) PodSandboxStatus(ctx context.Context, podSandboxID string, verbose bool) (*runtimeapi.PodSandboxStatusResponse, error) {
	start := time.Now()
	resp, err := x.rt.PodSandboxStatus(ctx, podSandboxID, verbose)
	x.record(ctx, "PodSandboxStatus", start, err, "sandboxID", podSandboxID)
	return resp, err
}

// ListPodSandbox implements Runtime.
func (x *Instrumented) ListPodSandbox(ctx context.Context, filter *runtimeapi.PodSandboxFilter) ([]*runtimeapi.PodSandbox, error) {
	start := time.Now()
	items, err := x.rt.ListPodSandbox(ctx, filter)
	x.record(ctx, "ListPodSandbox", start, err, "count", len(items))
	return items, err
}

// CreateContainer implements Runtime.
func (x *Instrumented) CreateContainer(ctx context.Context, podSandboxID string, config *runtimeapi.ContainerConfig, sandboxConfig *runtimeapi.PodSandboxConfig) (string, error) {
	start := time.Now()
	id, err := x.rt.CreateContainer(ctx, podSandboxID, config, sandboxConfig)
	x.record(ctx, "CreateContainer", start, err,
		"pod", podKey(sandboxConfig.GetMetadata()), "sandboxID", podSandboxID,
		"container", config.GetMetadata().GetName(), "attempt", config.GetMetadata().GetAttempt(), "containerID", id)
	return id, err
}

// StartContainer implements Runtime.
func (x *Instrumented) StartContainer(ctx context.Context, containerID string) error {
	start := time.Now()
	err := x.rt.StartContainer(ctx, containerID)
	x.record(ctx, "StartContainer", start, err, "containerID", containerID)
	return err
}

// StopContainer implements Runtime.
func (x *Instrumented) StopContainer(ctx context.Context, containerID string, timeout int64) error {
	start := time.Now()
	err := x.rt.StopContainer(ctx, containerID, timeout)
	x.record(ctx, "StopContainer", start, err, "containerID", containerID, "gracePeriod", timeout)
	return err
}

// RemoveContainer implements Runtime.
func (x *Instrumented) RemoveContainer(ctx context.Context, containerID string) error {
	start := time.Now()
	err := x.rt.RemoveContainer(ctx, containerID)
	x.record(ctx, "RemoveContainer", start, err, "containerID", containerID)
	return err
}

// ListContainers implements Runtime.
func (x *Instrumented) ListContainers(ctx context.Context, filter *runtimeapi.ContainerFilter) ([]*runtimeapi.Container, error) {
	start := time.Now()
	items, err := x.rt.ListContainers(ctx, filter)
	x.record(ctx, "ListContainers", start, err, "count", len(items))
	return items, err
}

// ContainerStatus implements Runtime.
func (x *Instrumented) ContainerStatus(ctx context.Context, containerID string, verbose bool) (*runtimeapi.ContainerStatusResponse, error) {
	start := time.Now()
	resp, err := x.rt.ContainerStatus(ctx, containerID, verbose)
	x.record(ctx, "ContainerStatus", start, err, "containerID", containerID)
	return resp, err
}

// ExecSync implements Runtime. The command line is logged; its output is not.
func (x *Instrumented) ExecSync(ctx context.Context, containerID string, cmd []string, timeout time.Duration) ([]byte, []byte, error) {
	start := time.Now()
	stdout, stderr, err := x.rt.ExecSync(ctx, containerID, cmd, timeout)
	x.record(ctx, "ExecSync", start, err, "containerID", containerID, "cmd", cmd)
	return stdout, stderr, err
}

// PullImage implements Images.
func (x *Instrumented) PullImage(ctx context.Context, image *runtimeapi.ImageSpec, auth *runtimeapi.AuthConfig, podSandboxConfig *runtimeapi.PodSandboxConfig) (string, error) {
	start := time.Now()
	ref, err := x.img.PullImage(ctx, image, auth, podSandboxConfig)
	x.record(ctx, "PullImage", start, err, "image", image.GetImage(), "imageRef", ref)
	return ref, err
}

// ImageStatus implements Images.
func (x *Instrumented) ImageStatus(ctx context.Context, image *runtimeapi.ImageSpec, verbose bool) (*runtimeapi.ImageStatusResponse, error) {
	start := time.Now()
	resp, err := x.img.ImageStatus(ctx, image, verbose)
	x.record(ctx, "ImageStatus", start, err, "image", image.GetImage(), "present", resp.GetImage() != nil)
	return resp, err
}

// ListImages implements Images.
func (x *Instrumented) ListImages(ctx context.Context, filter *runtimeapi.ImageFilter) ([]*runtimeapi.Image, error) {
	start := time.Now()
	items, err := x.img.ListImages(ctx, filter)
	x.record(ctx, "ListImages", start, err, "count", len(items))
	return items, err
}

// RemoveImage implements Images.
func (x *Instrumented) RemoveImage(ctx context.Context, image *runtimeapi.ImageSpec) error {
	start := time.Now()
	err := x.img.RemoveImage(ctx, image)
	x.record(ctx, "RemoveImage", start, err, "image", image.GetImage())
	return err
}

// ImageFsInfo implements Images.
func (x *Instrumented) ImageFsInfo(ctx context.Context) (*runtimeapi.ImageFsInfoResponse, error) {
	start := time.Now()
	resp, err := x.img.ImageFsInfo(ctx)
	x.record(ctx, "ImageFsInfo", start, err, "filesystems", len(resp.GetImageFilesystems()))
	return resp, err
}

// GetContainerEvents implements Runtime. The stream lives as long as the
// agent, so only its end is recorded.
func (x *Instrumented) GetContainerEvents(ctx context.Context, ch chan *runtimeapi.ContainerEventResponse, connected func(runtimeapi.RuntimeService_GetContainerEventsClient)) error {
	start := time.Now()
	err := x.rt.GetContainerEvents(ctx, ch, connected)
	x.record(ctx, "GetContainerEvents", start, err)
	return err
}

// RuntimeConfig implements Runtime.
func (x *Instrumented) RuntimeConfig(ctx context.Context) (*runtimeapi.RuntimeConfigResponse, error) {
	start := time.Now()
	resp, err := x.rt.RuntimeConfig(ctx)
	x.record(ctx, "RuntimeConfig", start, err)
	return resp, err
}

// ReopenContainerLog implements Runtime.
func (x *Instrumented) ReopenContainerLog(ctx context.Context, containerID string) error {
	start := time.Now()
	err := x.rt.ReopenContainerLog(ctx, containerID)
	x.record(ctx, "ReopenContainerLog", start, err, "containerID", containerID)
	return err
}

// UpdateContainerResources implements Runtime.
func (x *Instrumented) UpdateContainerResources(ctx context.Context, containerID string, resources *runtimeapi.ContainerResources) error {
	start := time.Now()
	err := x.rt.UpdateContainerResources(ctx, containerID, resources)
	x.record(ctx, "UpdateContainerResources", start, err, "containerID", containerID)
	return err
}
