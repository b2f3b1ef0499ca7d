package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
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

// daemonObjects is what run submits to the daemon, as written in the file.
type daemonObjects struct {
	pods       []*v1.Pod
	configMaps []*v1.ConfigMap
	secrets    []*v1.Secret
	// preparedCMs and preparedSecrets are configMaps and secrets, in the
	// same order, defaulted as the daemon stores them: one the daemon
	// already holds with the same content counts as submitted.
	preparedCMs     []*v1.ConfigMap
	preparedSecrets []*v1.Secret
}

// configRef names a ConfigMap or Secret run created, for --rm.
type configRef struct{ kind, namespace, name string }

// runThroughDaemon submits the ConfigMaps and Secrets, then the pods, to
// the daemon and follows the pods, with the same progress lines as the
// foreground mode, until every pod is Running (or Ready when it has
// readiness probes): exit 0. A pod reaching a failure state
// (CrashLoopBackOff, ImagePullBackOff, ErrImagePull, Failed, rejected) or
// the timeout ends it non-zero with the reason. Everything stays with the
// daemon unless --rm, which deletes the pods and the ConfigMaps and
// Secrets this run created.
func runThroughDaemon(ctx context.Context, c *api.Client, objs daemonObjects, rf runFlags, p *printer, stderr io.Writer) (retErr error) {
	pods := objs.pods
	p.line("node", "daemon", 0, "submitting to the minikubelet daemon at "+c.Socket())
	// Step: ConfigMaps and Secrets first, so the pods' first start sees them.
	created, err := submitConfigData(ctx, c, objs, p)
	// Their removal is deferred before any return: a failed submission
	// takes back what this run created (rollback), and so does --rm.
	accepted := 0
	defer func() {
		if !rf.rm && (retErr == nil || accepted > 0) {
			return
		}
		dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
		defer cancel()
		for _, r := range created {
			del := c.DeleteConfigMap
			if r.kind == "Secret" {
				del = c.DeleteSecret
			}
			if err := del(dctx, r.namespace, r.name); err != nil && !apierrors.IsNotFound(err) {
				retErr = errors.Join(retErr, fmt.Errorf("delete %s %s/%s: %w", r.kind, r.namespace, r.name, err))
				continue
			}
			why := "--rm"
			if !rf.rm {
				why = "no pod was accepted"
			}
			p.line(r.namespace+"/"+r.name, "deleted", 0, strings.ToLower(r.kind)+", "+why)
		}
	}()
	if err != nil {
		return err
	}

	for _, pod := range pods {
		if pod.Namespace == "" {
			pod.Namespace = "default"
		}
		got, err := c.CreatePod(ctx, pod)
		if err != nil {
			if apierrors.IsAlreadyExists(err) {
				// run creates, as kubectl create and kubectl run do; an
				// update (in place, under the API server's rule) is
				// kubectl apply's or kubectl replace's job.
				return &exitError{code: 1, err: fmt.Errorf("pod %s/%s already exists: delete it first (minikubelet delete pod %s -n %s), "+
					"or change its labels, annotations or images in place with kubectl apply -f FILE (docs/daemon.md, Pod updates)", pod.Namespace, pod.Name, pod.Name, pod.Namespace)}
			}
			return &exitError{code: 1, err: fmt.Errorf("submit pod %s/%s: %w", pod.Namespace, pod.Name, err)}
		}
		accepted++
		p.line(podKey(got), "accepted", 0, fmt.Sprintf("uid %s, qos %s", got.UID, got.Status.QOSClass))
	}
	if rf.rm {
		// Runs before the deferred removal of the ConfigMaps and Secrets.
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
	runningSeen := map[string]time.Time{}
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	interrupted := func() error {
		what := "the pods stay with the daemon (minikubelet delete pod NAME removes one)"
		if rf.rm {
			what = "--rm: deleting the pods"
		}
		p.line("node", "interrupted", 0, what)
		return ctx.Err() // a normal end: exit 130, no message (interruptedExit)
	}
	stableSaid := map[string]bool{}
	for {
		done, failed := 0, []string{}
		for _, pod := range pods {
			got, err := c.GetPod(ctx, pod.Namespace, pod.Name)
			if err != nil {
				if ctx.Err() != nil {
					return interrupted()
				}
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
			} else if reached(got, runningSeen, time.Now()) {
				done++
			} else if left := stableLeft(got, runningSeen, time.Now()); left > 0 && !stableSaid[podKey(got)] {
				// Say why run does not return yet: without a readiness
				// probe, Running is only believed once it lasted.
				stableSaid[podKey(got)] = true
				p.line(podKey(got), "watching", 0, fmt.Sprintf("running; no readiness probe, so run waits %s to see that it stays up (a container that exits at once looks Running until the next relist)", stableAfter))
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
			return interrupted()
		case <-deadline:
			return &exitError{code: 1, err: fmt.Errorf("not Running/Ready after %s (the pods stay with the daemon: minikubelet describe pod)", rf.timeout)}
		case <-tick.C:
		}
	}
}

// reached reports whether the pod is where run stops following it: done,
// or Ready when a container has a readiness probe, or else Running with
// every container up for stableAfter — a container that exits at once is
// seen Running for an instant, until the next relist. The time counts from
// the later of the runtime's StartedAt and when run first saw that
// instance running (recorded in seen, by container ID): on a loaded
// machine StartContainer can return long after StartedAt, and the first
// crash must still have time to show.
func reached(pod *v1.Pod, seen map[string]time.Time, now time.Time) bool {
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
	ok := true
	for _, cs := range pod.Status.ContainerStatuses {
		r := cs.State.Running
		if r == nil {
			ok = false
			continue
		}
		since := r.StartedAt.Time
		first, known := seen[cs.ContainerID]
		if !known {
			first = now
			seen[cs.ContainerID] = now
		}
		if first.After(since) {
			since = first
		}
		if now.Sub(since) < stableAfter {
			ok = false
		}
	}
	return ok
}

// stableLeft is how long a Running pod without a readiness probe still
// has to stay up before reached reports it (0: not waiting for that).
func stableLeft(pod *v1.Pod, seen map[string]time.Time, now time.Time) time.Duration {
	if pod.Status.Phase != v1.PodRunning {
		return 0
	}
	for _, c := range pod.Spec.Containers {
		if c.ReadinessProbe != nil {
			return 0
		}
	}
	var left time.Duration
	for _, cs := range pod.Status.ContainerStatuses {
		r := cs.State.Running
		if r == nil {
			return 0
		}
		since := r.StartedAt.Time
		if first, ok := seen[cs.ContainerID]; ok && first.After(since) {
			since = first
		}
		left = max(left, stableAfter-now.Sub(since))
	}
	return left
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

// submitConfigData creates the file's ConfigMaps and Secrets in the daemon
// and returns those it created. One the daemon already holds with the same
// content is left as it is ("unchanged": a second run of the file after
// `delete pod`); with other content, run stops, as it does for a pod that
// exists.
func submitConfigData(ctx context.Context, c *api.Client, objs daemonObjects, p *printer) ([]configRef, error) {
	var created []configRef
	exists := func(kind, ns, name string) error {
		return &exitError{code: 1, err: fmt.Errorf("%s %s/%s already exists with other content: delete it first (minikubelet delete -f FILE)", kind, ns, name)}
	}
	for i, cm := range objs.configMaps {
		if cm.Namespace == "" {
			cm.Namespace = "default"
		}
		_, err := c.CreateConfigMap(ctx, cm)
		if apierrors.IsAlreadyExists(err) && i < len(objs.preparedCMs) {
			cur, gerr := c.GetConfigMap(ctx, cm.Namespace, cm.Name)
			want := objs.preparedCMs[i]
			if gerr != nil || !apiequality.Semantic.DeepEqual(cur.Data, want.Data) || !apiequality.Semantic.DeepEqual(cur.BinaryData, want.BinaryData) {
				return created, exists("ConfigMap", cm.Namespace, cm.Name)
			}
			p.line(cm.Namespace+"/"+cm.Name, "unchanged", 0, "configmap already held by the daemon")
			continue
		}
		if err != nil {
			return created, &exitError{code: 1, err: fmt.Errorf("submit ConfigMap %s/%s: %w", cm.Namespace, cm.Name, err)}
		}
		created = append(created, configRef{"ConfigMap", cm.Namespace, cm.Name})
		p.line(cm.Namespace+"/"+cm.Name, "accepted", 0, fmt.Sprintf("configmap, %d keys", len(cm.Data)+len(cm.BinaryData)))
	}
	for i, sec := range objs.secrets {
		if sec.Namespace == "" {
			sec.Namespace = "default"
		}
		got, err := c.CreateSecret(ctx, sec)
		if apierrors.IsAlreadyExists(err) && i < len(objs.preparedSecrets) {
			cur, gerr := c.GetSecret(ctx, sec.Namespace, sec.Name)
			want := objs.preparedSecrets[i]
			if gerr != nil || cur.Type != want.Type || !apiequality.Semantic.DeepEqual(cur.Data, want.Data) {
				return created, exists("Secret", sec.Namespace, sec.Name)
			}
			p.line(sec.Namespace+"/"+sec.Name, "unchanged", 0, "secret already held by the daemon")
			continue
		}
		if err != nil {
			return created, &exitError{code: 1, err: fmt.Errorf("submit Secret %s/%s: %w", sec.Namespace, sec.Name, err)}
		}
		created = append(created, configRef{"Secret", sec.Namespace, sec.Name})
		p.line(sec.Namespace+"/"+sec.Name, "accepted", 0, fmt.Sprintf("secret, type %s, %d keys", got.Type, len(got.Data)))
	}
	return created, nil
}
