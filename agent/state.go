package agent

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

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
