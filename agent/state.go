package agent

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/minikubelet/minikubelet/agent/fingerprint"
	"github.com/minikubelet/minikubelet/agent/podspec"
	"github.com/minikubelet/minikubelet/agent/termmsg"
	"github.com/minikubelet/minikubelet/cri"
)

// sandboxInfo is one observed pod sandbox.
type sandboxInfo struct {
	id        string
	attempt   uint32
	ready     bool
	ip        string
	createdAt int64
	// hostNetwork reports the sandbox's network namespace mode.
	hostNetwork bool
	// config is the config the sandbox was (or would have been) created
	// with; regenerated from the pod for observed sandboxes.
	config *runtimeapi.PodSandboxConfig
	// imageVolumes are this sync's pulls of the pod's image volumes, by
	// volume name (imagevolume.go); nil when it has none or starts
	// nothing.
	imageVolumes map[string]pullResult
}

// containerInfo is one observed container instance.
type containerInfo struct {
	id           string
	name         string
	sandboxID    string
	ctype        string
	state        runtimeapi.ContainerState
	hash         string
	restartCount int
	createdAt    int64
	startedAt    int64
	finishedAt   int64
	exitCode     int32
	reason       string
	message      string
	imageRef     string
	// startInterrupted: a start the previous agent process did not finish
	// (Agent.startInterrupted).
	startInterrupted bool
}

// podState is what the runtime holds for one pod: the source of truth for
// what runs (house style rule 5).
type podState struct {
	// sandboxes are sorted newest first.
	sandboxes []*sandboxInfo
	// containers are sorted newest first.
	containers []*containerInfo
}

// latest returns the newest instance of the named container, or nil.
func (s *podState) latest(name string) *containerInfo {
	for _, c := range s.containers {
		if c.name == name {
			return c
		}
	}
	return nil
}

// latestIn returns the newest instance of the named container in the given
// sandbox, or nil.
func (s *podState) latestIn(name, sandboxID string) *containerInfo {
	for _, c := range s.containers {
		if c.name == name && c.sandboxID == sandboxID {
			return c
		}
	}
	return nil
}

// without returns the state without the sandboxes and containers whose IDs
// are listed (removed by the sync).
func (s *podState) without(ids []string) *podState {
	out := &podState{}
	for _, sb := range s.sandboxes {
		if !slices.Contains(ids, sb.id) {
			out.sandboxes = append(out.sandboxes, sb)
		}
	}
	for _, c := range s.containers {
		if !slices.Contains(ids, c.id) {
			out.containers = append(out.containers, c)
		}
	}
	return out
}

// previous returns the second newest instance of the named container.
func (s *podState) previous(name string) *containerInfo {
	seen := false
	for _, c := range s.containers {
		if c.name == name {
			if seen {
				return c
			}
			seen = true
		}
	}
	return nil
}

// observePod lists the pod's sandboxes and containers by its UID label and
// reads their statuses (the kubelet's GetPodStatus).
func (a *Agent) observePod(ctx context.Context, pod *v1.Pod) (*podState, error) {
	st, err := a.listPod(ctx, pod)
	if err != nil {
		return nil, err
	}
	// Only the newest sandbox's network matters (kubelet-facts §6.7).
	if len(st.sandboxes) > 0 && st.sandboxes[0].ready {
		sb := st.sandboxes[0]
		resp, err := a.runtime.PodSandboxStatus(ctx, sb.id, false)
		if err != nil && !cri.IsNotFound(err) {
			return nil, fmt.Errorf("sandbox status %s: %w", sb.id, err)
		}
		if s := resp.GetStatus(); s != nil {
			applySandboxStatus(sb, s)
		}
	}
	ctrs := st.containers
	st.containers = st.containers[:0]
	for _, ci := range ctrs {
		resp, err := a.runtime.ContainerStatus(ctx, ci.id, false)
		switch {
		case cri.IsNotFound(err):
			continue // removed between list and status
		case err != nil:
			return nil, fmt.Errorf("container status %s: %w", ci.id, err)
		}
		if s := resp.GetStatus(); s != nil {
			a.applyContainerStatus(ci, s)
		}
		st.containers = append(st.containers, ci)
	}
	st.sortContainers()
	return st, nil
}

// listPod is the cheap half of observePod: the pod's sandboxes and
// containers as the runtime lists them (IDs, names, states), without
// their statuses: no IP, exit code or start time. Teardown needs no more.
func (a *Agent) listPod(ctx context.Context, pod *v1.Pod) (*podState, error) {
	sel := map[string]string{podspec.LabelPodUID: string(pod.UID), podspec.LabelManagedBy: podspec.ManagedByValue}
	// Both lists at once: an observation waits for one round trip to the
	// runtime, not two (only this pod's worker creates its objects).
	lctx, cancel := context.WithCancel(ctx)
	listed := make(chan struct{})
	defer func() { cancel(); <-listed }() // a failed sandbox list stops the other
	ctrs, cerr := []*runtimeapi.Container(nil), error(nil)
	go func() {
		defer close(listed)
		ctrs, cerr = a.runtime.ListContainers(lctx, &runtimeapi.ContainerFilter{LabelSelector: sel})
	}()
	sbs, err := a.runtime.ListPodSandbox(ctx, &runtimeapi.PodSandboxFilter{LabelSelector: sel})
	if err != nil {
		return nil, fmt.Errorf("list sandboxes: %w", err)
	}
	st := &podState{}
	for _, sb := range sbs {
		st.sandboxes = append(st.sandboxes, &sandboxInfo{
			id:        sb.Id,
			attempt:   sb.GetMetadata().GetAttempt(),
			ready:     sb.State == runtimeapi.PodSandboxState_SANDBOX_READY,
			createdAt: sb.CreatedAt,
		})
	}
	st.sortSandboxes()
	<-listed
	if cerr != nil {
		return nil, fmt.Errorf("list containers: %w", cerr)
	}
	for _, c := range ctrs {
		st.containers = append(st.containers, &containerInfo{
			id:           c.Id,
			name:         c.GetMetadata().GetName(),
			sandboxID:    c.PodSandboxId,
			ctype:        c.Annotations[podspec.AnnotationContainerType],
			state:        c.State,
			hash:         c.Annotations[podspec.AnnotationContainerHash],
			restartCount: podspec.AnnotationInt(c.Annotations, podspec.AnnotationRestartCount),
			createdAt:    c.CreatedAt,
			imageRef:     c.ImageRef,
		})
	}
	st.sortContainers()
	return st, nil
}

// applySandboxStatus completes a listed sandbox with its status.
func applySandboxStatus(sb *sandboxInfo, s *runtimeapi.PodSandboxStatus) {
	sb.ip = s.GetNetwork().GetIp()
	sb.hostNetwork = s.GetLinux().GetNamespaces().GetOptions().GetNetwork() == runtimeapi.NamespaceMode_NODE
	sb.ready = s.State == runtimeapi.PodSandboxState_SANDBOX_READY
}

// sandboxFromStatus is the observed sandbox a PodSandboxStatus describes
// (the sync that created it needs no list to know it).
func sandboxFromStatus(s *runtimeapi.PodSandboxStatus) *sandboxInfo {
	sb := &sandboxInfo{id: s.GetId(), attempt: s.GetMetadata().GetAttempt(), createdAt: s.GetCreatedAt()}
	applySandboxStatus(sb, s)
	return sb
}

// containerFromStatus is the observed container a ContainerStatus
// describes; the status does not name the sandbox, the caller does.
func (a *Agent) containerFromStatus(s *runtimeapi.ContainerStatus, sandboxID string) *containerInfo {
	ann := s.GetAnnotations()
	ci := &containerInfo{
		id:           s.GetId(),
		name:         s.GetMetadata().GetName(),
		sandboxID:    sandboxID,
		ctype:        ann[podspec.AnnotationContainerType],
		hash:         ann[podspec.AnnotationContainerHash],
		restartCount: podspec.AnnotationInt(ann, podspec.AnnotationRestartCount),
		createdAt:    s.GetCreatedAt(),
	}
	a.applyContainerStatus(ci, s)
	return ci
}

// applyContainerStatus completes a container with its status: state,
// times, exit, and the termination message (read once per exited
// instance).
func (a *Agent) applyContainerStatus(ci *containerInfo, s *runtimeapi.ContainerStatus) {
	ci.state = s.State
	ci.startedAt = s.StartedAt
	ci.finishedAt = s.FinishedAt
	ci.exitCode = s.ExitCode
	ci.reason = s.Reason
	ci.message = s.Message
	if s.State == runtimeapi.ContainerState_CONTAINER_EXITED {
		// The file at terminationMessagePath (or the log tail), read
		// once per exited instance.
		ci.message = termmsg.Join(s.Message, a.termMessages.Get(ci.id, func() string { return a.terminationMessageFromStatus(s) }))
	}
	ci.startInterrupted = a.startInterrupted(ci)
	if s.ImageRef != "" {
		ci.imageRef = s.ImageRef
	}
}

// sortSandboxes orders the sandboxes newest first.
func (s *podState) sortSandboxes() {
	sort.SliceStable(s.sandboxes, func(i, j int) bool {
		a, b := s.sandboxes[i], s.sandboxes[j]
		if a.createdAt != b.createdAt {
			return a.createdAt > b.createdAt
		}
		return a.attempt > b.attempt
	})
}

// sortContainers orders the containers newest first; the restart count
// breaks ties of equal creation times.
func (s *podState) sortContainers() {
	sort.SliceStable(s.containers, func(i, j int) bool {
		a, b := s.containers[i], s.containers[j]
		if a.createdAt != b.createdAt {
			return a.createdAt > b.createdAt
		}
		return a.restartCount > b.restartCount
	})
}

// earliestCreated is the creation time (Unix ns) of the pod's oldest
// sandbox or container, 0 when it has none.
func (s *podState) earliestCreated() int64 {
	var t int64
	for _, sb := range s.sandboxes {
		if sb.createdAt > 0 && (t == 0 || sb.createdAt < t) {
			t = sb.createdAt
		}
	}
	for _, c := range s.containers {
		if c.createdAt > 0 && (t == 0 || c.createdAt < t) {
			t = c.createdAt
		}
	}
	return t
}

// fingerprint renders the pod's runtime objects and their states the way
// the relister does for the same pod (relist.go): equal fingerprints mean
// the worker has already seen what a relist sees.
func (s *podState) fingerprint() string {
	parts := make([]string, 0, len(s.sandboxes)+len(s.containers))
	for _, sb := range s.sandboxes {
		state := runtimeapi.PodSandboxState_SANDBOX_NOTREADY
		if sb.ready {
			state = runtimeapi.PodSandboxState_SANDBOX_READY
		}
		parts = append(parts, fingerprint.Sandbox(sb.id, state))
	}
	for _, c := range s.containers {
		parts = append(parts, fingerprint.Container(c.id, c.state))
	}
	return fingerprint.Join(parts)
}

// startInterrupted reports whether c never ran because an agent process
// died (or stopped) while starting it:
//
//   - created but never started: a pod's syncs are serial, so when its
//     worker looks, its own start has ended; a created instance is one a
//     dead process (or a start that never reached the runtime) left, which
//     nobody will start. Its creation may even complete after this process
//     started, when the dead process's CreateContainer was still in flight.
//   - a StartError whose cause is the caller going away: "context canceled"
//     (this process cancels only when it stops), or the shim's start
//     "signal: killed" with it, within interruptedStartSlack of this
//     process's start (later, that text may be a real failure, such as the
//     OOM killer during start, which must be counted and backed off).
func (a *Agent) startInterrupted(c *containerInfo) bool {
	if c.startedAt != 0 {
		return false
	}
	switch c.state {
	case runtimeapi.ContainerState_CONTAINER_CREATED:
		return true
	case runtimeapi.ContainerState_CONTAINER_EXITED:
		if c.reason != "StartError" {
			return false
		}
		if strings.Contains(c.message, "context canceled") {
			return true
		}
		return strings.Contains(c.message, "signal: killed") && c.finishedAt != 0 &&
			c.finishedAt < a.started.Add(interruptedStartSlack).UnixNano()
	}
	return false
}

// interruptedStartSlack is how long after this process's start a StartError
// "signal: killed" is still taken for the dead process's start, killed with
// its context.
const interruptedStartSlack = 5 * time.Second
