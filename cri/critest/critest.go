// Over 600 lines: one fake runtime whose verbs share its state and call log; a
// split by verb would make each file depend on all the others.

// Package critest is a scriptable in-memory CRI runtime for agent unit tests
// (house style rules 12 and 13). It builds on cri-api's testing fakes and adds
// what those lack:
//
//   - one ordered call log across the runtime and image services, with the
//     key arguments ("RunPodSandbox web attempt=0", "StartContainer web");
//   - error injection per verb, consumed by the next call of that verb;
//   - pod IPs in PodSandboxStatus (configurable, DefaultPodIP) and an empty IP
//     for host-network sandboxes, as containerd reports;
//   - image presence control for pull-policy tests, and per-image pull
//     failures;
//   - codes.NotFound errors for missing sandboxes and containers (cri-api's
//     fakes return plain strings, which cri.IsNotFound rightly ignores);
//   - containerd's cascade: StopPodSandbox stops, and RemovePodSandbox
//     removes, the sandbox's containers;
//   - behaviour driven by container annotations: exit after N ms with a code,
//     or fail to start, evaluated against an injectable clock.
//
// Container lifecycle in the fake:
//
//	CreateContainer ──> CREATED ──StartContainer──> RUNNING ──┬─ exit-after-ms elapsed ──> EXITED(exit-code)
//	                       │                                  ├─ StopContainer / StopPodSandbox ──> EXITED(137)
//	                       └─ start-error annotation ─────────┴──────────────────────────────────> EXITED(128, StartError)
//
// Exits are applied lazily: a container whose deadline has passed on Now()
// turns EXITED when ContainerStatus or ListContainers is next called.
//
// All methods are safe for concurrent use.
package critest

import (
	"context"
	"fmt"
	"maps"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	critesting "k8s.io/cri-api/pkg/apis/testing"

	"github.com/minikubelet/minikubelet/cri"
)

// Annotations on a ContainerConfig that script the fake's behaviour.
const (
	// AnnotationExitAfterMs makes a started container exit this many
	// milliseconds after StartContainer.
	AnnotationExitAfterMs = "critest.minikubelet.io/exit-after-ms"
	// AnnotationExitCode is the exit code used with AnnotationExitAfterMs
	// (default 0).
	AnnotationExitCode = "critest.minikubelet.io/exit-code"
	// AnnotationStartError makes StartContainer fail with this message; the
	// container ends EXITED with code 128 and reason StartError, as in
	// containerd.
	AnnotationStartError = "critest.minikubelet.io/start-error"
)

const (
	// DefaultPodIP is the IP PodSandboxStatus reports for sandboxes that are
	// not on the host network.
	DefaultPodIP = "10.88.0.5"
	// RuntimeName is what Version reports, so agent code builds
	// "containerd://<id>" as it does against the real runtime.
	RuntimeName = "containerd"
	// RuntimeVersion is what Version reports as the runtime's version.
	RuntimeVersion = "v0.0.0-critest"
	// killedExitCode is what a container stopped by the fake exits with
	// (SIGKILL).
	killedExitCode = 137
	// startErrorExitCode is containerd's exit code for a failed start.
	startErrorExitCode = 128
)

// Fake is an in-memory CRI runtime: Runtime and Images share its call log,
// injected errors and clock.
type Fake struct {
	// Runtime serves the runtime service; it satisfies cri.Runtime.
	Runtime *FakeRuntime
	// Images serves the image service; it satisfies cri.Images.
	Images *FakeImages
	// Now is the clock for exit-after deadlines and timestamps. Replace it
	// before the fake is used concurrently; default time.Now.
	Now func() time.Time

	// mu guards the fields below. Lock order: mu before the embedded
	// cri-api fakes' own mutexes.
	mu sync.Mutex
	// calls is the ordered call log across both services.
	calls []string
	// errs holds injected errors per verb, consumed first in first out.
	errs map[string][]error
	// podIP is reported for non-host-network sandboxes.
	podIP string
	// pullErrs makes every PullImage of an image fail until cleared.
	pullErrs map[string]error
	// exits holds scripted exits by container id; an entry is dropped once
	// applied or once the container stops some other way.
	exits map[string]*exitPlan
	// exec answers ExecSync; nil means success with no output.
	exec func(containerID string, cmd []string) (stdout, stderr []byte, err error)
	// stuck holds containers with a task left behind (StickTask): their
	// removal, and their sandbox's, fails until RemoveStuckTask.
	stuck map[string]bool
	// runtimeName and runtimeVersion replace RuntimeName and
	// RuntimeVersion in Version when set (SetVersion).
	runtimeName, runtimeVersion string
	// runtimeHandlers are reported by Status (SetRuntimeHandlers).
	runtimeHandlers []*runtimeapi.RuntimeHandler
	// hooks run first in a call of their verb, with its context (OnCall).
	hooks map[string]func(context.Context)
}

// exitPlan is a container's scripted exit from AnnotationExitAfterMs.
type exitPlan struct {
	after time.Duration
	code  int32
	// deadline is set by StartContainer; zero until then.
	deadline time.Time
}

// FakeRuntime is the runtime half of a Fake. The embedded cri-api fake's
// fields (Sandboxes, Containers, ...) may be read under its lock.
type FakeRuntime struct {
	*critesting.FakeRuntimeService
	f *Fake
}

// FakeImages is the image half of a Fake.
type FakeImages struct {
	*critesting.FakeImageService
	f *Fake
}

var (
	_ cri.Runtime     = (*FakeRuntime)(nil)
	_ cri.Images      = (*FakeImages)(nil)
	_ cri.TaskRemover = (*FakeRuntime)(nil)
)

// New returns a Fake whose runtime and network are ready, with no images,
// sandboxes or containers.
func New() *Fake {
	f := &Fake{
		Now:      time.Now,
		errs:     make(map[string][]error),
		podIP:    DefaultPodIP,
		pullErrs: make(map[string]error),
		exits:    make(map[string]*exitPlan),
		stuck:    make(map[string]bool),
		hooks:    make(map[string]func(context.Context)),
	}
	rs := critesting.NewFakeRuntimeService()
	rs.FakeStatus = &runtimeapi.RuntimeStatus{Conditions: []*runtimeapi.RuntimeCondition{
		{Type: runtimeapi.RuntimeReady, Status: true},
		{Type: runtimeapi.NetworkReady, Status: true},
	}}
	f.Runtime = &FakeRuntime{FakeRuntimeService: rs, f: f}
	f.Images = &FakeImages{FakeImageService: critesting.NewFakeImageService(), f: f}
	return f
}

// Calls returns a copy of the call log, oldest first.
func (f *Fake) Calls() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.calls...)
}

// Reset clears the call log. Objects, images and pending injected errors
// stay.
func (f *Fake) Reset() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = nil
}

// InjectError makes the next call of verb (a CRI method name such as
// "StartContainer" or "PullImage") fail with err. Several injections for the
// same verb are consumed in order. The call is still logged.
func (f *Fake) InjectError(verb string, err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.errs[verb] = append(f.errs[verb], err)
}

// SetPodIP sets the IP PodSandboxStatus reports from now on.
func (f *Fake) SetPodIP(ip string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.podIP = ip
}

// SetImages replaces the set of images present in the runtime.
func (f *Fake) SetImages(images ...string) {
	f.Images.SetFakeImages(images)
}

// HasImage reports whether image is present (set, or pulled and not removed).
func (f *Fake) HasImage(image string) bool {
	f.Images.Lock()
	defer f.Images.Unlock()
	_, ok := f.Images.FakeImageService.Images[image]
	return ok
}

// FailPull makes every PullImage of image fail with err; a nil err clears it.
// Use a gRPC status error to mimic containerd, e.g.
// status.Error(codes.NotFound, "...: not found").
func (f *Fake) FailPull(image string, err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err == nil {
		delete(f.pullErrs, image)
		return
	}
	f.pullErrs[image] = err
}

// SetNetworkReady sets the NetworkReady condition Status reports; reason is
// used when not ready (containerd says "NetworkPluginNotReady").
func (f *Fake) SetNetworkReady(ready bool, reason string) {
	rs := f.Runtime.FakeRuntimeService
	rs.Lock()
	defer rs.Unlock()
	for _, c := range rs.FakeStatus.Conditions {
		if c.Type == runtimeapi.NetworkReady {
			c.Status = ready
			c.Reason = ""
			if !ready {
				c.Reason = reason
			}
		}
	}
}

// SetExecHandler sets what ExecSync answers. fn may return a *cri.ExitError
// to mimic a command exiting non-zero. nil restores the default (success, no
// output).
func (f *Fake) SetExecHandler(fn func(containerID string, cmd []string) (stdout, stderr []byte, err error)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.exec = fn
}

// ExitContainer makes a running or created container exit now with code,
// as if its process ended on its own.
func (f *Fake) ExitContainer(containerID string, code int32) error {
	f.mu.Lock()
	delete(f.exits, containerID)
	f.mu.Unlock()
	rs := f.Runtime.FakeRuntimeService
	rs.Lock()
	defer rs.Unlock()
	c, ok := rs.Containers[containerID]
	if !ok {
		return fmt.Errorf("container %q not found", containerID)
	}
	setExited(c, code, f.now())
	return nil
}

func (f *Fake) now() time.Time {
	if f.Now == nil {
		return time.Now()
	}
	return f.Now()
}

// record appends entry to the call log and pops the next injected error for
// verb.
func (f *Fake) record(verb, entry string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, entry)
	q := f.errs[verb]
	if len(q) == 0 {
		return nil
	}
	f.errs[verb] = q[1:]
	return q[0]
}

// OnCall makes every later call of verb run fn with the call's context
// before anything else (a nil fn removes it): a test holds a call in
// flight, or looks at its context. Only RunPodSandbox, StopPodSandbox
// and the two lists run hooks so far.
func (f *Fake) OnCall(verb string, fn func(ctx context.Context)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if fn == nil {
		delete(f.hooks, verb)
		return
	}
	f.hooks[verb] = fn
}

// hook runs verb's OnCall hook, if any, outside f.mu.
func (f *Fake) hook(ctx context.Context, verb string) {
	f.mu.Lock()
	fn := f.hooks[verb]
	f.mu.Unlock()
	if fn != nil {
		fn(ctx)
	}
}

// StickTask makes containerID behave as a container whose start containerd
// 2.x cut short, leaving a task the CRI does not know about: RemoveContainer
// and RemovePodSandbox of its sandbox fail with containerd's
// FailedPrecondition "cannot delete running task" until RemoveStuckTask.
func (f *Fake) StickTask(containerID string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.stuck[containerID] = true
}

func (f *Fake) isStuck(containerID string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.stuck[containerID]
}

// stuckTaskError is containerd's answer to removing a container with a task
// left behind.
func stuckTaskError(id string) error {
	return status.Errorf(codes.FailedPrecondition, "failed to delete containerd container %q: cannot delete running task %s: failed precondition", id, id)
}

// RemoveStuckTask implements cri.TaskRemover: it clears StickTask.
func (r *FakeRuntime) RemoveStuckTask(_ context.Context, containerID string) error {
	name, _ := r.containerName(containerID)
	if err := r.f.record("RemoveStuckTask", "RemoveStuckTask "+name); err != nil {
		return err
	}
	r.f.mu.Lock()
	defer r.f.mu.Unlock()
	delete(r.f.stuck, containerID)
	return nil
}

// setExited moves c to EXITED. The caller holds the runtime fake's lock.
func setExited(c *critesting.FakeContainer, code int32, at time.Time) {
	c.State = runtimeapi.ContainerState_CONTAINER_EXITED
	c.ExitCode = code
	c.FinishedAt = at.UnixNano()
	c.Reason = "Completed"
	if code != 0 {
		c.Reason = "Error"
	}
}

// applyExits turns running containers whose scripted deadline has passed
// into EXITED.
func (f *Fake) applyExits() {
	now := f.now()
	due := make(map[string]*exitPlan)
	f.mu.Lock()
	for id, p := range f.exits {
		if !p.deadline.IsZero() && !now.Before(p.deadline) {
			due[id] = p
			delete(f.exits, id)
		}
	}
	f.mu.Unlock()
	if len(due) == 0 {
		return
	}
	rs := f.Runtime.FakeRuntimeService
	rs.Lock()
	defer rs.Unlock()
	for id, p := range due {
		if c, ok := rs.Containers[id]; ok && c.State == runtimeapi.ContainerState_CONTAINER_RUNNING {
			setExited(c, p.code, p.deadline)
		}
	}
}

// parseExitPlan reads the exit annotations; nil when there are none.
func parseExitPlan(annotations map[string]string) (*exitPlan, error) {
	ms, ok := annotations[AnnotationExitAfterMs]
	if !ok {
		return nil, nil
	}
	n, err := strconv.ParseInt(ms, 10, 64)
	if err != nil || n < 0 {
		return nil, fmt.Errorf("annotation %s=%q: want a non-negative integer", AnnotationExitAfterMs, ms)
	}
	p := &exitPlan{after: time.Duration(n) * time.Millisecond}
	if s, ok := annotations[AnnotationExitCode]; ok {
		code, err := strconv.ParseInt(s, 10, 32)
		if err != nil {
			return nil, fmt.Errorf("annotation %s=%q: want an integer", AnnotationExitCode, s)
		}
		p.code = int32(code)
	}
	return p, nil
}

// sandboxName returns the pod name of sandbox id, or id itself when unknown,
// and whether it exists.
func (r *FakeRuntime) sandboxName(id string) (string, bool) {
	r.Lock()
	defer r.Unlock()
	if s, ok := r.Sandboxes[id]; ok {
		return s.GetMetadata().GetName(), true
	}
	return id, false
}

// containerName returns the container name of id, or id itself when
// unknown, and whether it exists.
func (r *FakeRuntime) containerName(id string) (string, bool) {
	r.Lock()
	defer r.Unlock()
	if c, ok := r.Containers[id]; ok {
		return c.GetMetadata().GetName(), true
	}
	return id, false
}

// notFound mimics containerd's answer for a missing object.
func notFound(kind, id string) error {
	return status.Errorf(codes.NotFound, "an error occurred when try to find %s %q: not found", kind, id)
}

// InjectError routes to Fake.InjectError so injections through either half
// share one queue.
func (r *FakeRuntime) InjectError(verb string, err error) { r.f.InjectError(verb, err) }

// Version implements cri.Runtime, reporting RuntimeName and CRI "v1".
func (r *FakeRuntime) Version(_ context.Context, apiVersion string) (*runtimeapi.VersionResponse, error) {
	if err := r.f.record("Version", "Version"); err != nil {
		return nil, err
	}
	resp := &runtimeapi.VersionResponse{
		Version:           "0.1.0",
		RuntimeName:       RuntimeName,
		RuntimeVersion:    RuntimeVersion,
		RuntimeApiVersion: "v1",
	}
	r.f.mu.Lock()
	if r.f.runtimeName != "" {
		resp.RuntimeName, resp.RuntimeVersion = r.f.runtimeName, r.f.runtimeVersion
	}
	r.f.mu.Unlock()
	return resp, nil
}

// SetVersion makes Version report the given runtime name and version (a
// containerd too old for a feature, say) instead of RuntimeName and
// RuntimeVersion.
func (r *FakeRuntime) SetVersion(name, version string) {
	r.f.mu.Lock()
	defer r.f.mu.Unlock()
	r.f.runtimeName, r.f.runtimeVersion = name, version
}

// SetRuntimeHandlers makes Status report these runtime handlers and their
// features (containerd 2.x reports its handlers, "" the default one;
// containerd 1.6 none).
func (r *FakeRuntime) SetRuntimeHandlers(h ...*runtimeapi.RuntimeHandler) {
	r.f.mu.Lock()
	defer r.f.mu.Unlock()
	r.f.runtimeHandlers = h
}

// Status implements cri.Runtime, returning a copy of the conditions and
// of the runtime handlers.
func (r *FakeRuntime) Status(_ context.Context, _ bool) (*runtimeapi.StatusResponse, error) {
	if err := r.f.record("Status", "Status"); err != nil {
		return nil, err
	}
	r.f.mu.Lock()
	var handlers []*runtimeapi.RuntimeHandler
	for _, h := range r.f.runtimeHandlers {
		handlers = append(handlers, proto.Clone(h).(*runtimeapi.RuntimeHandler))
	}
	r.f.mu.Unlock()
	r.Lock()
	defer r.Unlock()
	st := &runtimeapi.RuntimeStatus{}
	for _, c := range r.FakeStatus.GetConditions() {
		st.Conditions = append(st.Conditions, &runtimeapi.RuntimeCondition{
			Type: c.Type, Status: c.Status, Reason: c.Reason, Message: c.Message,
		})
	}
	return &runtimeapi.StatusResponse{Status: st, RuntimeHandlers: handlers}, nil
}

// RunPodSandbox implements cri.Runtime. Sandbox ids are deterministic:
// name_namespace_uid_attempt.
func (r *FakeRuntime) RunPodSandbox(ctx context.Context, config *runtimeapi.PodSandboxConfig, runtimeHandler string) (string, error) {
	r.f.hook(ctx, "RunPodSandbox")
	m := config.GetMetadata()
	if err := r.f.record("RunPodSandbox", fmt.Sprintf("RunPodSandbox %s attempt=%d", m.GetName(), m.GetAttempt())); err != nil {
		return "", err
	}
	if m == nil {
		return "", status.Error(codes.InvalidArgument, "sandbox config must include metadata")
	}
	id, err := r.FakeRuntimeService.RunPodSandbox(ctx, config, runtimeHandler)
	if err != nil {
		return "", err
	}
	now := r.f.now()
	r.Lock()
	if s, ok := r.Sandboxes[id]; ok {
		s.CreatedAt = now.UnixNano()
	}
	r.Unlock()
	return id, nil
}

// StopPodSandbox implements cri.Runtime. Like containerd it also stops the
// sandbox's containers (exit code 137).
func (r *FakeRuntime) StopPodSandbox(ctx context.Context, podSandboxID string) error {
	r.f.hook(ctx, "StopPodSandbox")
	name, ok := r.sandboxName(podSandboxID)
	if err := r.f.record("StopPodSandbox", "StopPodSandbox "+name); err != nil {
		return err
	}
	if !ok {
		return notFound("sandbox", podSandboxID)
	}
	r.f.applyExits()
	now := r.f.now()
	var stopped []string
	r.Lock()
	for id, c := range r.Containers {
		if c.SandboxID == podSandboxID && c.State != runtimeapi.ContainerState_CONTAINER_EXITED {
			setExited(c, killedExitCode, now)
			stopped = append(stopped, id)
		}
	}
	r.Unlock()
	r.f.dropExits(stopped...)
	return r.FakeRuntimeService.StopPodSandbox(ctx, podSandboxID)
}

// dropExits forgets scripted exits of containers that stopped otherwise.
func (f *Fake) dropExits(ids ...string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, id := range ids {
		delete(f.exits, id)
	}
}

// RemovePodSandbox implements cri.Runtime. Removing a missing sandbox
// succeeds (CRI removal is idempotent); like containerd it also removes the
// sandbox's containers.
func (r *FakeRuntime) RemovePodSandbox(ctx context.Context, podSandboxID string) error {
	name, _ := r.sandboxName(podSandboxID)
	if err := r.f.record("RemovePodSandbox", "RemovePodSandbox "+name); err != nil {
		return err
	}
	r.f.mu.Lock()
	stuck := maps.Clone(r.f.stuck)
	r.f.mu.Unlock()
	var removed []string
	r.Lock()
	for id, c := range r.Containers {
		if c.SandboxID == podSandboxID && stuck[id] {
			r.Unlock()
			return stuckTaskError(id)
		}
	}
	for id, c := range r.Containers {
		if c.SandboxID == podSandboxID {
			delete(r.Containers, id)
			removed = append(removed, id)
		}
	}
	r.Unlock()
	r.f.dropExits(removed...)
	return r.FakeRuntimeService.RemovePodSandbox(ctx, podSandboxID)
}

// PodSandboxStatus implements cri.Runtime. The IP is Fake's pod IP, or empty
// for host-network sandboxes.
func (r *FakeRuntime) PodSandboxStatus(ctx context.Context, podSandboxID string, verbose bool) (*runtimeapi.PodSandboxStatusResponse, error) {
	name, ok := r.sandboxName(podSandboxID)
	if err := r.f.record("PodSandboxStatus", "PodSandboxStatus "+name); err != nil {
		return nil, err
	}
	if !ok {
		return nil, notFound("sandbox", podSandboxID)
	}
	resp, err := r.FakeRuntimeService.PodSandboxStatus(ctx, podSandboxID, verbose)
	if err != nil {
		return nil, err
	}
	r.f.mu.Lock()
	ip := r.f.podIP
	r.f.mu.Unlock()
	if resp.Status.GetLinux().GetNamespaces().GetOptions().GetNetwork() == runtimeapi.NamespaceMode_NODE {
		ip = ""
	}
	resp.Status.Network = &runtimeapi.PodSandboxNetworkStatus{Ip: ip}
	return resp, nil
}

// ListPodSandbox implements cri.Runtime; items are sorted by id.
func (r *FakeRuntime) ListPodSandbox(ctx context.Context, filter *runtimeapi.PodSandboxFilter) ([]*runtimeapi.PodSandbox, error) {
	r.f.hook(ctx, "ListPodSandbox")
	if err := r.f.record("ListPodSandbox", "ListPodSandbox"); err != nil {
		return nil, err
	}
	items, err := r.FakeRuntimeService.ListPodSandbox(ctx, filter)
	if err != nil {
		return nil, err
	}
	sort.Slice(items, func(i, j int) bool { return items[i].Id < items[j].Id })
	return items, nil
}

// CreateContainer implements cri.Runtime. Container ids are deterministic:
// sandboxID_name_attempt. Malformed critest annotations fail with
// InvalidArgument.
func (r *FakeRuntime) CreateContainer(ctx context.Context, podSandboxID string, config *runtimeapi.ContainerConfig, sandboxConfig *runtimeapi.PodSandboxConfig) (string, error) {
	m := config.GetMetadata()
	if err := r.f.record("CreateContainer", fmt.Sprintf("CreateContainer %s attempt=%d", m.GetName(), m.GetAttempt())); err != nil {
		return "", err
	}
	if m == nil || config.GetImage() == nil {
		return "", status.Error(codes.InvalidArgument, "container config must include metadata and image")
	}
	if _, ok := r.sandboxName(podSandboxID); !ok {
		return "", notFound("sandbox", podSandboxID)
	}
	plan, err := parseExitPlan(config.GetAnnotations())
	if err != nil {
		return "", status.Error(codes.InvalidArgument, err.Error())
	}
	id, err := r.FakeRuntimeService.CreateContainer(ctx, podSandboxID, config, sandboxConfig)
	if err != nil {
		return "", err
	}
	now := r.f.now()
	r.Lock()
	if c, ok := r.Containers[id]; ok {
		c.CreatedAt = now.UnixNano()
	}
	r.Unlock()
	r.f.mu.Lock()
	if plan != nil {
		r.f.exits[id] = plan
	} else {
		delete(r.f.exits, id)
	}
	r.f.mu.Unlock()
	return id, nil
}

// StartContainer implements cri.Runtime. Only CREATED containers start.
func (r *FakeRuntime) StartContainer(_ context.Context, containerID string) error {
	name, _ := r.containerName(containerID)
	if err := r.f.record("StartContainer", "StartContainer "+name); err != nil {
		return err
	}
	now := r.f.now()
	r.Lock()
	c, ok := r.Containers[containerID]
	if !ok {
		r.Unlock()
		return notFound("container", containerID)
	}
	if c.State != runtimeapi.ContainerState_CONTAINER_CREATED {
		st := c.State
		r.Unlock()
		return status.Errorf(codes.FailedPrecondition, "container %q is in %s state", containerID, st)
	}
	if msg, bad := c.Annotations[AnnotationStartError]; bad {
		c.State = runtimeapi.ContainerState_CONTAINER_EXITED
		c.StartedAt = now.UnixNano()
		c.FinishedAt = now.UnixNano()
		c.ExitCode = startErrorExitCode
		c.Reason = "StartError"
		c.Message = msg
		r.Unlock()
		r.f.dropExits(containerID)
		return status.Errorf(codes.Unknown, "failed to start container %q: %s", containerID, msg)
	}
	c.State = runtimeapi.ContainerState_CONTAINER_RUNNING
	c.StartedAt = now.UnixNano()
	r.Unlock()

	r.f.mu.Lock()
	if p, ok := r.f.exits[containerID]; ok {
		p.deadline = now.Add(p.after)
	}
	r.f.mu.Unlock()
	return nil
}

// StopContainer implements cri.Runtime. A running container exits with code
// 137; stopping an exited container is a no-op, as in containerd.
func (r *FakeRuntime) StopContainer(_ context.Context, containerID string, timeout int64) error {
	name, _ := r.containerName(containerID)
	if err := r.f.record("StopContainer", fmt.Sprintf("StopContainer %s timeout=%d", name, timeout)); err != nil {
		return err
	}
	r.f.applyExits()
	now := r.f.now()
	r.Lock()
	c, ok := r.Containers[containerID]
	if !ok {
		r.Unlock()
		return notFound("container", containerID)
	}
	if c.State != runtimeapi.ContainerState_CONTAINER_EXITED {
		setExited(c, killedExitCode, now)
	}
	r.Unlock()
	r.f.dropExits(containerID)
	return nil
}

// RemoveContainer implements cri.Runtime. Removing a missing container
// succeeds.
func (r *FakeRuntime) RemoveContainer(ctx context.Context, containerID string) error {
	name, _ := r.containerName(containerID)
	if err := r.f.record("RemoveContainer", "RemoveContainer "+name); err != nil {
		return err
	}
	if r.f.isStuck(containerID) {
		return stuckTaskError(containerID)
	}
	r.f.dropExits(containerID)
	return r.FakeRuntimeService.RemoveContainer(ctx, containerID)
}

// ListContainers implements cri.Runtime; scripted exits that are due are
// applied first, and items are sorted by id.
func (r *FakeRuntime) ListContainers(ctx context.Context, filter *runtimeapi.ContainerFilter) ([]*runtimeapi.Container, error) {
	r.f.hook(ctx, "ListContainers")
	if err := r.f.record("ListContainers", "ListContainers"); err != nil {
		return nil, err
	}
	r.f.applyExits()
	items, err := r.FakeRuntimeService.ListContainers(ctx, filter)
	if err != nil {
		return nil, err
	}
	sort.Slice(items, func(i, j int) bool { return items[i].Id < items[j].Id })
	return items, nil
}

// ContainerStatus implements cri.Runtime; a scripted exit that is due is
// applied first.
func (r *FakeRuntime) ContainerStatus(ctx context.Context, containerID string, verbose bool) (*runtimeapi.ContainerStatusResponse, error) {
	name, ok := r.containerName(containerID)
	if err := r.f.record("ContainerStatus", "ContainerStatus "+name); err != nil {
		return nil, err
	}
	if !ok {
		return nil, notFound("container", containerID)
	}
	r.f.applyExits()
	return r.FakeRuntimeService.ContainerStatus(ctx, containerID, verbose)
}

// UpdateContainerResources implements cri.Runtime: the container's
// LinuxResources take the new values (Resources reads them), as a runtime
// writes them to the container's cgroup; a container that is not running
// is refused, as containerd refuses one without a task.
func (r *FakeRuntime) UpdateContainerResources(_ context.Context, containerID string, resources *runtimeapi.ContainerResources) error {
	name, _ := r.containerName(containerID)
	if err := r.f.record("UpdateContainerResources", "UpdateContainerResources "+name); err != nil {
		return err
	}
	r.Lock()
	defer r.Unlock()
	c, ok := r.Containers[containerID]
	if !ok {
		return notFound("container", containerID)
	}
	if c.State != runtimeapi.ContainerState_CONTAINER_RUNNING {
		return status.Errorf(codes.FailedPrecondition, "container %q is in %s state", containerID, c.State)
	}
	c.LinuxResources = resources.GetLinux()
	return nil
}

// Resources returns the Linux resources a container was created or last
// updated with (nil for an unknown container).
func (f *Fake) Resources(containerID string) *runtimeapi.LinuxContainerResources {
	rs := f.Runtime.FakeRuntimeService
	rs.Lock()
	defer rs.Unlock()
	if c, ok := rs.Containers[containerID]; ok {
		return c.LinuxResources
	}
	return nil
}

// ExecSync implements cri.Runtime through the handler set with
// SetExecHandler. Like a gRPC call, it returns ctx's error once ctx ends,
// leaving a handler still running to finish by itself.
func (r *FakeRuntime) ExecSync(ctx context.Context, containerID string, cmd []string, _ time.Duration) ([]byte, []byte, error) {
	name, ok := r.containerName(containerID)
	if err := r.f.record("ExecSync", strings.TrimSpace("ExecSync "+name+" "+strings.Join(cmd, " "))); err != nil {
		return nil, nil, err
	}
	if !ok {
		return nil, nil, notFound("container", containerID)
	}
	r.f.mu.Lock()
	fn := r.f.exec
	r.f.mu.Unlock()
	if fn == nil {
		return nil, nil, nil
	}
	type result struct {
		stdout, stderr []byte
		err            error
	}
	done := make(chan result, 1)
	go func() {
		stdout, stderr, err := fn(containerID, cmd)
		done <- result{stdout, stderr, err}
	}()
	select {
	case r := <-done:
		return r.stdout, r.stderr, r.err
	case <-ctx.Done():
		return nil, nil, status.FromContextError(ctx.Err()).Err()
	}
}

// InjectError routes to Fake.InjectError so injections through either half
// share one queue.
func (i *FakeImages) InjectError(verb string, err error) { i.f.InjectError(verb, err) }

// PullImage implements cri.Images. The returned reference is the image name;
// the image is present afterwards.
func (i *FakeImages) PullImage(ctx context.Context, image *runtimeapi.ImageSpec, auth *runtimeapi.AuthConfig, podSandboxConfig *runtimeapi.PodSandboxConfig) (string, error) {
	if err := i.f.record("PullImage", "PullImage "+image.GetImage()); err != nil {
		return "", err
	}
	i.f.mu.Lock()
	err := i.f.pullErrs[image.GetImage()]
	i.f.mu.Unlock()
	if err != nil {
		return "", err
	}
	return i.FakeImageService.PullImage(ctx, image, auth, podSandboxConfig)
}

// ImageStatus implements cri.Images; Image is nil when the image is absent.
func (i *FakeImages) ImageStatus(ctx context.Context, image *runtimeapi.ImageSpec, verbose bool) (*runtimeapi.ImageStatusResponse, error) {
	if err := i.f.record("ImageStatus", "ImageStatus "+image.GetImage()); err != nil {
		return nil, err
	}
	return i.FakeImageService.ImageStatus(ctx, image, verbose)
}

// ListImages implements cri.Images.
func (i *FakeImages) ListImages(ctx context.Context, filter *runtimeapi.ImageFilter) ([]*runtimeapi.Image, error) {
	if err := i.f.record("ListImages", "ListImages"); err != nil {
		return nil, err
	}
	return i.FakeImageService.ListImages(ctx, filter)
}

// ImageFsInfo implements cri.Images with the usage set by the embedded
// fake's SetFakeFilesystemUsage.
func (i *FakeImages) ImageFsInfo(ctx context.Context) (*runtimeapi.ImageFsInfoResponse, error) {
	if err := i.f.record("ImageFsInfo", "ImageFsInfo"); err != nil {
		return nil, err
	}
	return i.FakeImageService.ImageFsInfo(ctx)
}

// RemoveImage implements cri.Images.
func (i *FakeImages) RemoveImage(ctx context.Context, image *runtimeapi.ImageSpec) error {
	if err := i.f.record("RemoveImage", "RemoveImage "+image.GetImage()); err != nil {
		return err
	}
	return i.FakeImageService.RemoveImage(ctx, image)
}
