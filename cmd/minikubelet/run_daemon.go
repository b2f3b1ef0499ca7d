package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/minikubelet/minikubelet/agent/api"
)

// runFlags are run's flags beside nodeFlags.
type runFlags struct {
	foreground bool
	socket     string
	timeout    time.Duration
	rm         bool
}

// isDaemonUp reports whether something serves the API on the socket (even
// when it is not ready yet).
func isDaemonUp(ctx context.Context, c *api.Client) bool {
	_, err := c.Version(ctx)
	return err == nil
}

// runThroughDaemon submits the pods to the daemon and follows them, with
// the same progress lines as the foreground mode, until every pod is
// Running (or Ready when it has readiness probes): exit 0. A pod reaching a
// failure state (CrashLoopBackOff, ImagePullBackOff, ErrImagePull, Failed,
// rejected) or the timeout ends it non-zero with the reason. The pods stay
// with the daemon unless --rm.
func runThroughDaemon(ctx context.Context, c *api.Client, pods []*v1.Pod, rf runFlags, p *printer, stderr io.Writer) (retErr error) {
	p.line("node", "daemon", 0, "submitting to the minikubelet daemon at "+c.Socket())
	for _, pod := range pods {
		if pod.Namespace == "" {
			pod.Namespace = "default"
		}
		got, err := c.CreatePod(ctx, pod)
		if err != nil {
			if apierrors.IsAlreadyExists(err) {
				return &exitError{code: 1, err: fmt.Errorf("pod %s/%s already exists: delete it first (minikubelet delete pod %s -n %s)", pod.Namespace, pod.Name, pod.Name, pod.Namespace)}
			}
			return &exitError{code: 1, err: fmt.Errorf("submit pod %s/%s: %w", pod.Namespace, pod.Name, err)}
		}
		p.line(podKey(got), "accepted", 0, fmt.Sprintf("uid %s, qos %s", got.UID, got.Status.QOSClass))
	}
	if rf.rm {
		defer func() {
			dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Minute)
			defer cancel()
			for _, pod := range pods {
				if _, err := c.DeletePod(dctx, pod.Namespace, pod.Name, nil); err != nil && !apierrors.IsNotFound(err) {
					retErr = errors.Join(retErr, err)
				} else {
					p.line(podKey(pod), "deleted", 0, "--rm")
				}
			}
		}()
	}

	deadline := time.After(rf.timeout)
	seenSteps := map[string]int{}
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	for {
		done, failed := 0, []string{}
		for _, pod := range pods {
			got, err := c.GetPod(ctx, pod.Namespace, pod.Name)
			if err != nil {
				return &exitError{code: 1, err: fmt.Errorf("follow pod %s/%s: %w", pod.Namespace, pod.Name, err)}
			}
			if det, err := c.Details(ctx, pod.Namespace, pod.Name); err == nil {
				for _, s := range det.Steps[min(seenSteps[podKey(got)], len(det.Steps)):] {
					p.line(podKey(got), s.Name, s.Duration, s.Detail)
				}
				seenSteps[podKey(got)] = len(det.Steps)
			}
			p.PodStatus(got)
			if why := failureOf(got); why != "" {
				failed = append(failed, fmt.Sprintf("%s: %s", podKey(got), why))
			} else if reached(got) {
				done++
			}
		}
		switch {
		case len(failed) > 0:
			return &exitError{code: 1, err: fmt.Errorf("%s (the pod stays with the daemon: minikubelet describe pod, minikubelet logs)", strings.Join(failed, "; "))}
		case done == len(pods):
			return nil
		}
		select {
		case <-ctx.Done():
			return &exitError{code: 130, err: errors.New("interrupted; the pods stay with the daemon")}
		case <-deadline:
			return &exitError{code: 1, err: fmt.Errorf("not Running/Ready after %s (the pods stay with the daemon: minikubelet describe pod)", rf.timeout)}
		case <-tick.C:
		}
	}
}

// reached reports whether the pod is where run stops following it: done,
// or Ready when a container has a readiness probe, or else Running with
// every container up for stableAfter — a container that exits at once is
// seen Running for an instant, until the next relist.
func reached(pod *v1.Pod) bool {
	if pod.Status.Phase == v1.PodSucceeded {
		return true
	}
	if pod.Status.Phase != v1.PodRunning {
		return false
	}
	for _, c := range pod.Spec.Containers {
		if c.ReadinessProbe != nil {
			for _, cond := range pod.Status.Conditions {
				if cond.Type == v1.PodReady {
					return cond.Status == v1.ConditionTrue
				}
			}
			return false
		}
	}
	for _, cs := range pod.Status.ContainerStatuses {
		r := cs.State.Running
		if r == nil || time.Since(r.StartedAt.Time) < stableAfter {
			return false
		}
	}
	return true
}

// stableAfter is how long a container without a readiness probe must run
// before run reports the pod started: longer than a relist and a sync.
const stableAfter = 3 * time.Second

// failureOf names the failure state a pod is in, or "".
func failureOf(pod *v1.Pod) string {
	st := pod.Status
	if st.Phase == v1.PodFailed {
		if st.Reason != "" {
			return fmt.Sprintf("Failed: %s: %s", st.Reason, st.Message)
		}
		return "Failed"
	}
	for _, cs := range append(append([]v1.ContainerStatus{}, st.InitContainerStatuses...), st.ContainerStatuses...) {
		if w := cs.State.Waiting; w != nil {
			switch w.Reason {
			case "CrashLoopBackOff", "ImagePullBackOff", "ErrImagePull", "ErrImageNeverPull", "CreateContainerConfigError", "InvalidImageName":
				msg := fmt.Sprintf("container %s: %s: %s", cs.Name, w.Reason, w.Message)
				if t := cs.LastTerminationState.Terminated; t != nil {
					msg += fmt.Sprintf(" (last exit code %d, %s)", t.ExitCode, t.Reason)
				}
				return msg
			}
		}
	}
	return ""
}
