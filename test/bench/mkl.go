package main

// The minikubelet side: the built binary's `serve` daemon against the
// private containerd, driven through its API the way a user drives it
// (CreatePod, DeletePod) and observed the way a user observes it: through
// the API's pod watch (GET pods?watch=true, as kubectl get -w and
// client-go informers do), or with --observe poll by GetPod and ListPods
// polled at a fine interval.

import (
	"context"
	"fmt"
	"maps"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/minikubelet/minikubelet/agent/api"
)

// daemon is one `minikubelet serve` process.
type daemon struct {
	cmd     *exec.Cmd
	sock    string
	logPath string
	c       *api.Client
	done    chan struct{}
	err     error
}

// startDaemon starts bin with the node flags and its own directories under
// dir, and waits until /healthz answers. With profiling the daemon serves
// its pprof profiles (and samples its heap, which costs memory); without,
// it runs as users run it.
func startDaemon(ctx context.Context, bin, dir string, nodeArgs []string, profiling bool) (*daemon, error) {
	d := &daemon{sock: filepath.Join(dir, "api.sock"), logPath: filepath.Join(dir, "minikubelet.log"), done: make(chan struct{})}
	for _, sub := range []string{"root", "pod-logs", "manifests"} {
		if err := os.MkdirAll(filepath.Join(dir, sub), 0o755); err != nil {
			return nil, err
		}
	}
	logf, err := os.Create(d.logPath)
	if err != nil {
		return nil, err
	}
	args := append([]string{"serve"}, nodeArgs...)
	args = append(args,
		"--socket", d.sock,
		"--root-dir", filepath.Join(dir, "root"),
		"--pod-log-dir", filepath.Join(dir, "pod-logs"),
		"--manifest-dir", filepath.Join(dir, "manifests"),
		// Its lock and Secrets tmpfs under the work dir, not the default
		// /run/minikubelet: the node's own daemon (or another harness's)
		// holds that one's lock.
		"--run-dir", filepath.Join(dir, "run"),
	)
	if profiling {
		args = append(args, "--enable-profiling")
	}
	d.cmd = exec.Command(bin, args...)
	d.cmd.Stdout, d.cmd.Stderr = logf, logf
	if err := d.cmd.Start(); err != nil {
		logf.Close()
		return nil, fmt.Errorf("start %s: %w", bin, err)
	}
	go func() {
		d.err = d.cmd.Wait()
		logf.Close()
		close(d.done)
	}()
	d.c = api.NewClient(d.sock)
	deadline := time.Now().Add(time.Minute)
	for {
		hc, cancel := context.WithTimeout(ctx, 2*time.Second)
		err := d.c.Ready(hc)
		cancel()
		if err == nil {
			return d, nil
		}
		select {
		case <-d.done:
			return nil, fmt.Errorf("minikubelet serve exited (%v) before answering /readyz; log: %s", d.err, d.logPath)
		default:
		}
		if time.Now().After(deadline) {
			d.stop()
			return nil, fmt.Errorf("minikubelet serve did not answer /readyz within 1m (%v); log: %s", err, d.logPath)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// pid is the daemon's process ID.
func (d *daemon) pid() int { return d.cmd.Process.Pid }

// stop sends SIGTERM and waits (SIGKILL after 30 s).
func (d *daemon) stop() {
	_ = d.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-d.done:
	case <-time.After(30 * time.Second):
		_ = d.cmd.Process.Kill()
		<-d.done
	}
}

// getDebug fetches a /debug/pprof path from the daemon into a file.
func (d *daemon) getDebug(ctx context.Context, path, out string) error {
	hc := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var nd net.Dialer
		return nd.DialContext(ctx, "unix", d.sock)
	}}}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://minikubelet"+path, nil)
	if err != nil {
		return err
	}
	resp, err := hc.Do(req)
	if err != nil {
		return fmt.Errorf("GET %s: %w", path, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s (is the daemon built with --enable-profiling?)", path, resp.Status)
	}
	f, err := os.Create(out)
	if err != nil {
		return err
	}
	if _, err := f.ReadFrom(resp.Body); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// podKind is what the benchmark pod does.
type podKind int

const (
	// kindStart: one container, no probe.
	kindStart podKind = iota
	// kindReady: one container with a TCP readiness probe (initial delay 0).
	kindReady
	// kindSteady: HTTP liveness and TCP readiness probes every second.
	kindSteady
)

// Ports of testserver in the benchmark pods.
const (
	httpPort = 8080
	tcpPort  = 8081
)

// testserverArgs are the container's arguments (both sides).
var testserverArgs = []string{"--port", strconv.Itoa(httpPort), "--tcp-port", strconv.Itoa(tcpPort)}

// podSpec is the API pod of a kind; grace is its termination grace period.
func podSpec(name, image string, kind podKind, grace int64) *v1.Pod {
	c := v1.Container{
		Name:            "app",
		Image:           image,
		ImagePullPolicy: v1.PullIfNotPresent,
		Args:            testserverArgs,
	}
	tcp := &v1.Probe{
		ProbeHandler:     v1.ProbeHandler{TCPSocket: &v1.TCPSocketAction{Port: intstr.FromInt32(tcpPort)}},
		PeriodSeconds:    1,
		TimeoutSeconds:   1,
		SuccessThreshold: 1,
		FailureThreshold: 3,
	}
	switch kind {
	case kindReady:
		c.ReadinessProbe = tcp
	case kindSteady:
		c.ReadinessProbe = tcp
		c.LivenessProbe = &v1.Probe{
			ProbeHandler:     v1.ProbeHandler{HTTPGet: &v1.HTTPGetAction{Path: "/healthz", Port: intstr.FromInt32(httpPort)}},
			PeriodSeconds:    1,
			TimeoutSeconds:   1,
			SuccessThreshold: 1,
			FailureThreshold: 3,
		}
	}
	return &v1.Pod{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: benchNS},
		Spec: v1.PodSpec{
			Containers:                    []v1.Container{c},
			TerminationGracePeriodSeconds: &grace,
			RestartPolicy:                 v1.RestartPolicyAlways,
		},
	}
}

// containerRunning reports whether the pod's app container runs.
func containerRunning(p *v1.Pod) bool {
	for _, cs := range p.Status.ContainerStatuses {
		if cs.Name == "app" && cs.State.Running != nil {
			return true
		}
	}
	return false
}

// podReady reports the pod's Ready condition.
func podReady(p *v1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == v1.PodReady {
			return c.Status == v1.ConditionTrue
		}
	}
	return false
}

// failedReason names a state that will not become Running by itself.
func failedReason(p *v1.Pod) string {
	if p.Status.Phase == v1.PodFailed {
		return "pod Failed: " + p.Status.Reason + " " + p.Status.Message
	}
	for _, cs := range p.Status.ContainerStatuses {
		if w := cs.State.Waiting; w != nil {
			switch w.Reason {
			case "ErrImagePull", "ImagePullBackOff", "ErrImageNeverPull", "CreateContainerConfigError", "CreateContainerError", "RunContainerError", "CrashLoopBackOff":
				return cs.Name + ": " + w.Reason + ": " + w.Message
			}
		}
	}
	return ""
}

// startTimes is what one API-observed single pod start measured.
type startTimes struct {
	started, ready time.Duration
	// phases is the start's breakdown from the daemon's startup trace
	// (zero when the trace lacks a step).
	phases phases
}

// observe says how the minikubelet side sees pods change.
type observe struct {
	// watch: the API's pod watch; else polling GetPod every poll (single
	// pods) and ListPods every listPoll (many pods).
	watch          bool
	poll, listPoll time.Duration
}

// seen folds the pod states seen so far into t; done once the
// container runs (and, with wantReady, the pod is Ready).
func (t *startTimes) seen(p *v1.Pod, now time.Duration, wantReady bool) (done bool) {
	if t.started == 0 && containerRunning(p) {
		t.started = now
	}
	if wantReady && t.ready == 0 && podReady(p) {
		t.ready = now
		if t.started == 0 {
			t.started = now
		}
	}
	return t.started != 0 && (!wantReady || t.ready != 0)
}

// mklStart submits the pod and follows it until its container runs (and,
// with wantReady, until it is Ready). Times are from just before
// CreatePod; a watch is opened before that.
func mklStart(ctx context.Context, c *api.Client, pod *v1.Pod, wantReady bool, obs observe) (startTimes, error) {
	if !obs.watch {
		return mklStartPoll(ctx, c, pod, wantReady, obs.poll)
	}
	var t startTimes
	w, err := c.WatchPods(ctx, pod.Namespace, api.WatchOptions{Name: pod.Name})
	if err != nil {
		return t, fmt.Errorf("watch pod %s: %w", pod.Name, err)
	}
	defer w.Stop()
	t0 := time.Now()
	if _, err := c.CreatePod(ctx, pod); err != nil {
		return t, fmt.Errorf("create pod %s: %w", pod.Name, err)
	}
	for ev := range w.ResultChan() {
		now := time.Since(t0)
		p, err := podOfEvent(ev)
		if err != nil {
			return t, fmt.Errorf("pod %s: %w", pod.Name, err)
		}
		if ev.Type == watch.Deleted {
			return t, fmt.Errorf("pod %s was deleted before it started", pod.Name)
		}
		if t.seen(p, now, wantReady) {
			t.phases = tracePhases(ctx, c, pod, t0, t.started)
			return t, nil
		}
		if r := failedReason(p); r != "" {
			return t, fmt.Errorf("pod %s: %s", pod.Name, r)
		}
	}
	if ctx.Err() != nil {
		return t, fmt.Errorf("pod %s not started: %w", pod.Name, ctx.Err())
	}
	return t, fmt.Errorf("pod %s: the daemon ended the watch before the pod started", pod.Name)
}

// podOfEvent returns the pod of a watch event, or the error an ERROR event
// carries.
func podOfEvent(ev watch.Event) (*v1.Pod, error) {
	if ev.Type == watch.Error {
		if st, ok := ev.Object.(*metav1.Status); ok {
			return nil, fmt.Errorf("watch: %s", st.Message)
		}
		return nil, fmt.Errorf("watch error %v", ev.Object)
	}
	p, ok := ev.Object.(*v1.Pod)
	if !ok {
		return nil, fmt.Errorf("watch event %s carries a %T", ev.Type, ev.Object)
	}
	return p, nil
}

// mklStartPoll is mklStart polling GetPod every poll.
func mklStartPoll(ctx context.Context, c *api.Client, pod *v1.Pod, wantReady bool, poll time.Duration) (startTimes, error) {
	var t startTimes
	t0 := time.Now()
	if _, err := c.CreatePod(ctx, pod); err != nil {
		return t, fmt.Errorf("create pod %s: %w", pod.Name, err)
	}
	for {
		p, err := c.GetPod(ctx, pod.Namespace, pod.Name)
		now := time.Since(t0)
		if err != nil {
			return t, fmt.Errorf("get pod %s: %w", pod.Name, err)
		}
		if t.seen(p, now, wantReady) {
			t.phases = tracePhases(ctx, c, pod, t0, t.started)
			return t, nil
		}
		if r := failedReason(p); r != "" {
			return t, fmt.Errorf("pod %s: %s", pod.Name, r)
		}
		select {
		case <-ctx.Done():
			return t, fmt.Errorf("pod %s not started: %w", pod.Name, ctx.Err())
		case <-time.After(poll):
		}
	}
}

// mklDelete deletes the pods with the grace period and waits until the API
// no longer knows any pod of the bench namespace (with the watch: a list,
// then its DELETED events; else ListPods every 20 ms).
func mklDelete(ctx context.Context, c *api.Client, names []string, grace int64, obs observe) error {
	for _, n := range names {
		if _, err := c.DeletePod(ctx, benchNS, n, &grace); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("delete pod %s: %w", n, err)
		}
	}
	for {
		l, err := c.ListPods(ctx, benchNS)
		if err != nil {
			return fmt.Errorf("list pods: %w", err)
		}
		if len(l.Items) == 0 {
			return nil
		}
		left := map[string]bool{}
		for _, p := range l.Items {
			left[p.Name] = true
		}
		if obs.watch {
			if done, err := waitDeleted(ctx, c, l.ResourceVersion, left); done || err != nil {
				return err
			}
			continue // the watch expired: list again
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("pods still listed after deletion: %s: %w", strings.Join(slices.Sorted(maps.Keys(left)), " "), ctx.Err())
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// waitDeleted watches the bench namespace from rv until every pod of left
// is DELETED (done); false without error when the watch expired or ended.
func waitDeleted(ctx context.Context, c *api.Client, rv string, left map[string]bool) (bool, error) {
	w, err := c.WatchPods(ctx, benchNS, api.WatchOptions{ResourceVersion: rv})
	if apierrors.IsResourceExpired(err) || apierrors.IsGone(err) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("watch pods: %w", err)
	}
	defer w.Stop()
	for ev := range w.ResultChan() {
		switch ev.Type {
		case watch.Error:
			return false, nil
		case watch.Deleted:
			if p, ok := ev.Object.(*v1.Pod); ok {
				delete(left, p.Name)
			}
		case watch.Added:
			if p, ok := ev.Object.(*v1.Pod); ok {
				left[p.Name] = true
			}
		}
		if len(left) == 0 {
			return true, nil
		}
	}
	if ctx.Err() != nil {
		return false, fmt.Errorf("pods still listed after deletion: %s: %w", strings.Join(slices.Sorted(maps.Keys(left)), " "), ctx.Err())
	}
	return false, nil
}

// tracePhases reads the pod's startup trace (each step's end and duration,
// by the daemon's clock, which is this machine's) into phases.
func tracePhases(ctx context.Context, c *api.Client, pod *v1.Pod, t0 time.Time, observed time.Duration) phases {
	d, err := c.Details(ctx, pod.Namespace, pod.Name)
	if err != nil {
		return phases{}
	}
	steps := map[string]api.Step{}
	for _, s := range d.Steps {
		if _, seen := steps[s.Name]; !seen {
			steps[s.Name] = s
		}
	}
	sb, ok1 := steps["sandbox"]
	cr, ok2 := steps["created"]
	st, ok3 := steps["started"]
	if !ok1 || !ok2 || !ok3 {
		return phases{}
	}
	sbStart := sb.At.Add(-sb.Duration)
	crStart := cr.At.Add(-cr.Duration)
	return phases{
		Pre:     sbStart.Sub(t0),
		Sandbox: sb.Duration,
		Prep:    crStart.Sub(sb.At),
		Create:  cr.Duration,
		Start:   st.Duration,
		Observe: observed - st.At.Sub(t0),
	}
}
