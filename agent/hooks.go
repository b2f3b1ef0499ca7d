package agent

// Lifecycle hooks (postStart, preStop) as the kubelet runs them
// (kubelet-facts §7.2, §7.3): one handler runner for exec, httpGet and sleep
// (what needs no runtime is agent/lifecycle's), the postStart call in
// startContainer and the preStop call in killContainer (container.go).

import (
	"context"
	"errors"
	"fmt"
	"time"

	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/minikubelet/minikubelet/agent/lifecycle"
	"github.com/minikubelet/minikubelet/agent/podspec"
)

// runLifecycleHandler runs one lifecycle handler of container c (running as
// containerID, in a pod whose IP is podIP) and reports whether it failed. On
// failure the returned string is the user-facing message, in the kubelet's
// words, for the FailedPostStartHook / FailedPreStopHook event; the error
// carries the cause. Nothing here bounds the handler in time: exec has no
// timeout, as in the kubelet, so ctx must.
//
//   - exec: ExecSync; an error or a non-zero exit fails, with the output in
//     the message.
//   - httpGet: GET to host (or podIP), the port (a number or the name of one
//     of c's ports) and path; HTTP status codes are ignored, only transport
//     errors fail. An HTTPS request answered in plain HTTP is retried once
//     over HTTP without the Authorization header (Warning
//     LifecycleHTTPFallback).
//   - sleep: waits the seconds on the agent's clock; fails when ctx ends
//     first.
//   - tcpSocket: deprecated for hooks and never run by the kubelet: fails.
func (a *Agent) runLifecycleHandler(ctx context.Context, pw *podWorker, c *v1.Container, containerID, podIP string, h *v1.LifecycleHandler) (string, error) {
	pod := pw.pod()
	podRef := fmt.Sprintf("%s_%s(%s)", pod.Name, pod.Namespace, pod.UID)
	switch {
	case h.Exec != nil:
		// The CRI answers ExecSync with the whole output in one message
		// (containerd caps it at 16 MiB): what is kept of it is cut at
		// once, so the rest is garbage before anything else runs.
		output, err := a.execHook(ctx, containerID, h.Exec.Command)
		if err == nil {
			return "", nil
		}
		return lifecycle.HookMessage("Exec lifecycle hook (%v) for Container %q in Pod %q failed - error: %s, message: %q",
			h.Exec.Command, c.Name, podRef, lifecycle.ExecErrorText(err), output), err
	case h.HTTPGet != nil:
		fallback := func(u string) {
			pw.containerEvent(c.Name, v1.EventTypeWarning, "LifecycleHTTPFallback",
				"Lifecycle hook of container %q: %s got an HTTP response to HTTPS, retrying over HTTP", c.Name, u)
		}
		if err := lifecycle.HTTPGet(ctx, c, podIP, h.HTTPGet, fallback); err != nil {
			return lifecycle.HookMessage("HTTP lifecycle hook (%s) for Container %q in Pod %q failed - error: %v",
				h.HTTPGet.Path, c.Name, podRef, err), err
		}
		return "", nil
	case h.Sleep != nil:
		if err := lifecycle.Sleep(ctx, a.clock, h.Sleep.Seconds); err != nil {
			return fmt.Sprintf("Sleep lifecycle hook (%d) for Container %q in Pod %q failed - error: %v",
				h.Sleep.Seconds, c.Name, podRef, err), err
		}
		return "", nil
	case h.TCPSocket != nil:
		err := errors.New("tcpSocket is not supported for lifecycle hooks")
		return fmt.Sprintf("Cannot run handler: %v", err), err
	}
	err := errors.New("lifecycle handler has no action")
	return fmt.Sprintf("Cannot run handler: %v", err), err
}

// execHook runs an exec hook's command without a timeout (kubelet-facts
// §7.3: ctx bounds it) and returns at most lifecycle.MaxHookOutput bytes
// of its output, cut on a character boundary.
func (a *Agent) execHook(ctx context.Context, containerID string, cmd []string) (string, error) {
	out, size, err := a.execBounded(ctx, containerID, cmd)
	if size > lifecycle.BigExecAnswer {
		lifecycle.ReleaseBigAnswer()
	}
	return out, err
}

// execBounded runs cmd through ExecSync and returns what is kept of its
// output and the size of the whole: nothing of the answer is referenced
// once it returns.
func (a *Agent) execBounded(ctx context.Context, containerID string, cmd []string) (string, int, error) {
	stdout, stderr, err := a.runtime.ExecSync(ctx, containerID, cmd, 0)
	return lifecycle.BoundedOutput(stdout, stderr, lifecycle.MaxHookOutput), len(stdout) + len(stderr), err
}

// preStopTarget returns the spec to run the named container's preStop hook
// with and the hook itself, or a nil hook when there is none. The newest
// desired spec wins, as in the kubelet; a container the spec no longer
// names is described by its own annotations (one ContainerStatus call).
func (a *Agent) preStopTarget(ctx context.Context, pw *podWorker, id, name string) (*v1.Container, *v1.LifecycleHandler) {
	c := podspec.SpecContainer(pw.pod(), name)
	if c == nil {
		resp, err := a.runtime.ContainerStatus(ctx, id, false)
		if err != nil {
			pw.logger.Warn("Read container annotations for preStop failed", "containerID", id, "err", err)
			return nil, nil
		}
		c = podspec.ContainerFromAnnotations(name, resp.GetStatus().GetAnnotations())
	}
	if c.Lifecycle == nil || c.Lifecycle.PreStop == nil {
		return c, nil
	}
	return c, c.Lifecycle.PreStop
}

// runPreStopHook runs the preStop hook within grace seconds (grace > 0) and
// returns the whole seconds it took, to be subtracted from the grace
// period. A failed hook is reported (Warning FailedPreStopHook) and
// termination goes on. A hook still running when the grace period ends is
// left to die with the container, as by the kubelet (lifecycle.CancelLater).
func (a *Agent) runPreStopHook(ctx context.Context, pw *podWorker, c *v1.Container, id string, h *v1.LifecycleHandler, grace int64) int64 {
	start := a.clock.Now()
	// A kill once begun completes even when a termination request cancels
	// the sync that began it; the agent's stop ends it (killContext).
	hctx, cancel := pw.killContext(ctx)
	podIP := ""
	if h.HTTPGet != nil && h.HTTPGet.Host == "" {
		podIP = a.containerPodIP(hctx, id)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		if msg, err := a.runLifecycleHandler(hctx, pw, c, id, podIP, h); err != nil && !pw.agentStopping() {
			pw.containerEvent(c.Name, v1.EventTypeWarning, "FailedPreStopHook", "%s", msg)
		}
	}()
	// The hook may take the grace period, or less once a later deletion
	// shortens it (killDeadline): then it ends at the new deadline.
	end := start.Add(time.Duration(grace) * time.Second)
	for {
		by, ok, cut := pw.killDeadline()
		if ok && by.Before(end) {
			end = by
		}
		t := a.clock.NewTimer(end.Sub(a.clock.Now()))
		select {
		case <-done:
			t.Stop()
			cancel()
			return int64(a.clock.Since(start) / time.Second)
		case <-t.C():
			pw.logger.Info("PreStop hook not completed in grace period", "container", c.Name, "containerID", id, "gracePeriod", grace)
			lifecycle.CancelLater(a.clock, time.Duration(minimumGracePeriodInSecond)*time.Second+a.cfg.RuntimeTimeout, done, cancel)
			return grace
		case <-cut:
			t.Stop()
		case <-hctx.Done():
			// The agent stops: the kill is abandoned, the next start
			// kills the pod again.
			t.Stop()
			cancel()
			return int64(a.clock.Since(start) / time.Second)
		}
	}
}

// containerPodIP is the IP of the sandbox a container runs in ("" when
// unknown or on the host network). Only httpGet preStop hooks without a
// host need it, so it is looked up then, not on every kill.
func (a *Agent) containerPodIP(ctx context.Context, id string) string {
	ctrs, err := a.runtime.ListContainers(ctx, &runtimeapi.ContainerFilter{Id: id})
	if err != nil || len(ctrs) == 0 {
		return ""
	}
	resp, err := a.runtime.PodSandboxStatus(ctx, ctrs[0].PodSandboxId, false)
	if err != nil {
		return ""
	}
	return resp.GetStatus().GetNetwork().GetIp()
}
