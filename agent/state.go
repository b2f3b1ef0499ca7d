package agent

import (
	"context"
	"fmt"
	"sort"
	"strings"

	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

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
	image        string
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
	sel := map[string]string{labelPodUID: string(pod.UID), labelManagedBy: managedByValue}
	sbs, err := a.runtime.ListPodSandbox(ctx, &runtimeapi.PodSandboxFilter{LabelSelector: sel})
	if err != nil {
		return nil, fmt.Errorf("list sandboxes: %w", err)
	}
	st := &podState{}
	for _, sb := range sbs {
		si := &sandboxInfo{
			id:        sb.Id,
			attempt:   sb.GetMetadata().GetAttempt(),
			ready:     sb.State == runtimeapi.PodSandboxState_SANDBOX_READY,
			createdAt: sb.CreatedAt,
		}
		st.sandboxes = append(st.sandboxes, si)
	}
	sort.SliceStable(st.sandboxes, func(i, j int) bool {
		a, b := st.sandboxes[i], st.sandboxes[j]
		if a.createdAt != b.createdAt {
			return a.createdAt > b.createdAt
		}
		return a.attempt > b.attempt
	})
	// Only the newest sandbox's network matters (kubelet-facts §6.7).
	if len(st.sandboxes) > 0 && st.sandboxes[0].ready {
		sb := st.sandboxes[0]
		resp, err := a.runtime.PodSandboxStatus(ctx, sb.id, false)
		if err != nil && !cri.IsNotFound(err) {
			return nil, fmt.Errorf("sandbox status %s: %w", sb.id, err)
		}
		if s := resp.GetStatus(); s != nil {
			sb.ip = s.GetNetwork().GetIp()
			sb.hostNetwork = s.GetLinux().GetNamespaces().GetOptions().GetNetwork() == runtimeapi.NamespaceMode_NODE
			sb.ready = s.State == runtimeapi.PodSandboxState_SANDBOX_READY
		}
	}
	ctrs, err := a.runtime.ListContainers(ctx, &runtimeapi.ContainerFilter{LabelSelector: sel})
	if err != nil {
		return nil, fmt.Errorf("list containers: %w", err)
	}
	for _, c := range ctrs {
		ci := &containerInfo{
			id:           c.Id,
			name:         c.GetMetadata().GetName(),
			sandboxID:    c.PodSandboxId,
			ctype:        c.Annotations[annotationContainerType],
			state:        c.State,
			hash:         c.Annotations[annotationContainerHash],
			restartCount: annotationInt(c.Annotations, annotationRestartCount),
			createdAt:    c.CreatedAt,
			image:        c.GetImage().GetImage(),
			imageRef:     c.ImageRef,
		}
		resp, err := a.runtime.ContainerStatus(ctx, c.Id, false)
		switch {
		case cri.IsNotFound(err):
			continue // removed between list and status
		case err != nil:
			return nil, fmt.Errorf("container status %s: %w", c.Id, err)
		}
		if s := resp.GetStatus(); s != nil {
			ci.state = s.State
			ci.startedAt = s.StartedAt
			ci.finishedAt = s.FinishedAt
			ci.exitCode = s.ExitCode
			ci.reason = s.Reason
			ci.message = s.Message
			if s.State == runtimeapi.ContainerState_CONTAINER_EXITED {
				// The file at terminationMessagePath (or the log tail),
				// read once per exited instance.
				ci.message = joinTerminationMessage(s.Message, a.termMessages.get(c.Id, func() string { return terminationMessageFromStatus(s) }))
			}
			ci.startInterrupted = a.startInterrupted(ci)
			if s.ImageRef != "" {
				ci.imageRef = s.ImageRef
			}
		}
		st.containers = append(st.containers, ci)
	}
	// Newest first; the restart count breaks ties of equal creation times.
	sort.SliceStable(st.containers, func(i, j int) bool {
		a, b := st.containers[i], st.containers[j]
		if a.createdAt != b.createdAt {
			return a.createdAt > b.createdAt
		}
		return a.restartCount > b.restartCount
	})
	return st, nil
}

// startInterrupted reports whether c never ran because an earlier agent
// process died while starting it: created before this process started and
// never started (it died between CreateContainer and StartContainer), or a
// StartError from before this process started whose cause is the caller
// going away (its context cancelled, or the shim's start killed with it).
// Only instances older than this process qualify: a start that fails now
// is a real failure, counted and backed off as the kubelet does.
func (a *Agent) startInterrupted(c *containerInfo) bool {
	if c.startedAt != 0 {
		return false
	}
	started := a.started.UnixNano()
	switch c.state {
	case runtimeapi.ContainerState_CONTAINER_CREATED:
		return c.createdAt < started
	case runtimeapi.ContainerState_CONTAINER_EXITED:
		return c.reason == "StartError" && c.finishedAt != 0 && c.finishedAt < started &&
			(strings.Contains(c.message, "context canceled") || strings.Contains(c.message, "signal: killed"))
	}
	return false
}
