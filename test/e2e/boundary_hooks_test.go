package e2e

import (
	"context"
	"net"
	"net/url"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/minikubelet/minikubelet/agent/api"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/utils/ptr"
)

// Issue #29, findings 2 to 4, performed on the real runtime: a hook's
// output must not fill the daemon's memory, its log or its events; a
// deletion must not wait for a hung hook; and `serve` must exit on SIGTERM
// while a pod with a long grace period is being stopped.

// hookPod is a busybox pod of the local API with one container.
func hookPod(name string, grace int64, command []string, lc *v1.Lifecycle) *v1.Pod {
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
		Spec: v1.PodSpec{
			TerminationGracePeriodSeconds: &grace,
			Containers: []v1.Container{{Name: "app", Image: suite.registry + "/minikubelet/busybox:1.36",
				Command: command, Lifecycle: lc}},
		},
	}
}

func createPod(t *testing.T, d *daemon, pod *v1.Pod) {
	t.Helper()
	c, cancel := shortCtx()
	defer cancel()
	_, err := d.api().CreatePod(c, pod)
	require.NoError(t, err)
}

// podEvents returns the pod's events ("" reasons when it has none yet).
func podEvents(t *testing.T, d *daemon, name string) []v1.Event {
	t.Helper()
	c, cancel := shortCtx()
	defer cancel()
	l, err := d.api().Events(c, "default", name)
	if err != nil {
		return nil
	}
	return l.Items
}

// waitEvent waits until the pod has an event with the reason and returns it.
func waitEvent(t *testing.T, d *daemon, name, reason string, timeout time.Duration) v1.Event {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		for _, e := range podEvents(t, d, name) {
			if e.Reason == reason {
				return e
			}
		}
		if time.Now().After(deadline) {
			var reasons []string
			for _, e := range podEvents(t, d, name) {
				reasons = append(reasons, e.Reason)
			}
			t.Fatalf("pod %s: no %s event within %s; events: %v", name, reason, timeout, reasons)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

const (
	loudPostStartPod = "e2e-hook-loud-poststart"
	loudPreStopPod   = "e2e-hook-loud-prestop"
)

// loudHook prints 8 MB and fails.
var loudHook = &v1.LifecycleHandler{Exec: &v1.ExecAction{Command: []string{"sh", "-c", "head -c 8000000 /dev/zero | tr '\\0' a; exit 1"}}}

// The attack: a postStart and a preStop exec hook print 8 MB each and exit
// 1 (before the fix: daemon RSS 34 → 261 MB, the log +40 MB, `events`
// 40 MB). Every event message is at most 1024 bytes, the container's
// waiting message at most 12 KiB, the daemon's output grows by less than
// 1 MB and its RSS by less than 30 MB, after three failed postStart hooks.
func TestBoundaryHooks_LoudHookOutputBounded(t *testing.T) {
	d := newDaemon(t, []string{loudPostStartPod, loudPreStopPod})
	d.start(t)
	pid := d.cmd.Process.Pid
	// A first pod, so that the base counts what running any pod costs.
	createPod(t, d, hookPod(loudPreStopPod, 30, []string{"sleep", "3600"}, &v1.Lifecycle{PreStop: loudHook}))
	d.waitPod(t, loudPreStopPod, "running", 2*time.Minute, isRunning)
	time.Sleep(2 * time.Second)
	base := procStatusKB(t, pid, "VmRSS")
	out0, _ := d.out.snapshot()
	mon := watchRSS(t, pid)

	// The hook's message is the container's waiting message only between a
	// failed hook and the next sync, which shows CrashLoopBackOff for the
	// whole back-off (as the kubelet's reason cache does): on containerd
	// 2.x that window is milliseconds, so polling misses it. A watch,
	// opened before the pod exists, sees every status the daemon publishes.
	wctx, wcancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer wcancel()
	w, err := d.api().WatchPods(wctx, "default", api.WatchOptions{Name: loudPostStartPod})
	require.NoError(t, err)
	defer w.Stop()
	hookMsg := make(chan string, 1)
	go func() {
		for ev := range w.ResultChan() {
			p, ok := ev.Object.(*v1.Pod)
			if !ok || len(p.Status.ContainerStatuses) != 1 {
				continue
			}
			if wt := p.Status.ContainerStatuses[0].State.Waiting; wt != nil && strings.Contains(wt.Message, "Exec lifecycle hook") {
				hookMsg <- wt.Message
				return
			}
		}
	}()
	createPod(t, d, hookPod(loudPostStartPod, 1, []string{"sleep", "3600"}, &v1.Lifecycle{PostStart: loudHook}))
	// Three hooks: the first start, then restarts after 10 s and 20 s of
	// back-off.
	deadline := time.Now().Add(2 * time.Minute)
	for {
		var count int32
		for _, e := range podEvents(t, d, loudPostStartPod) {
			if e.Reason == "FailedPostStartHook" {
				count += e.Count
			}
		}
		if count >= 3 {
			break
		}
		require.True(t, time.Now().Before(deadline), "three FailedPostStartHook events within 2m (have %d)", count)
		time.Sleep(500 * time.Millisecond)
	}
	var msg string
	select {
	case msg = <-hookMsg:
	case <-wctx.Done():
		t.Fatalf("no status with the PostStartHookError message on the pod's watch")
	}
	assert.LessOrEqual(t, len(msg), 12*1024, "the container's waiting message")
	assert.Contains(t, msg, `message: "aaaa`, "it quotes the start of the output")

	// The preStop hook: deleted with 10 s of grace (its container ignores
	// SIGTERM), the event is there while it stops.
	c, cancel := shortCtx()
	_, err = d.api().DeletePod(c, "default", loudPreStopPod, ptr.To[int64](10))
	cancel()
	require.NoError(t, err)
	waitEvent(t, d, loudPreStopPod, "FailedPreStopHook", 30*time.Second)

	for _, name := range []string{loudPostStartPod, loudPreStopPod} {
		code, body, err := d.get("/api/v1/namespaces/default/events?fieldSelector=" + url.QueryEscape("involvedObject.name="+name))
		require.NoError(t, err)
		require.Equal(t, 200, code)
		t.Logf("%s: events response %d bytes", name, len(body))
		assert.Less(t, len(body), 64<<10, "%s: the events response", name)
		for _, e := range podEvents(t, d, name) {
			assert.LessOrEqual(t, len(e.Message), 1024, "%s: event %s", name, e.Reason)
		}
	}
	time.Sleep(2 * time.Second) // what a request left is garbage by now
	now := procStatusKB(t, pid, "VmRSS")
	peak := mon.stop()
	out1, _ := d.out.snapshot()
	t.Logf("daemon VmRSS: base %d KiB, after %d KiB (growth %d KiB), peak %d KiB; output grew %d bytes",
		base, now, now-base, peak/1024, len(out1)-len(out0))
	assert.Less(t, now-base, int64(30<<10), "the daemon's RSS growth (KiB)")
	assert.Less(t, len(out1)-len(out0), 1<<20, "the daemon's log growth (bytes)")
}

// deleteAndTime deletes the pod with grace 1 and returns how long it took until
// the API no longer knows it and the runtime has none of its sandboxes.
func deleteAndTime(t *testing.T, d *daemon, name string, limit time.Duration) time.Duration {
	t.Helper()
	start := time.Now()
	c, cancel := shortCtx()
	_, err := d.api().DeletePod(c, "default", name, ptr.To[int64](1))
	cancel()
	require.NoError(t, err)
	d.waitPod(t, name, "gone", limit, func(p *v1.Pod) bool { return p == nil })
	for {
		c, cancel := shortCtx()
		sbs, err := suite.rt.ListPodSandbox(c, &runtimeapi.PodSandboxFilter{LabelSelector: map[string]string{"io.kubernetes.pod.name": name}})
		cancel()
		require.NoError(t, err)
		if len(sbs) == 0 {
			break
		}
		require.Less(t, time.Since(start), limit, "the pod's sandbox is still in the runtime")
		time.Sleep(200 * time.Millisecond)
	}
	took := time.Since(start)
	t.Logf("%s: deleted with grace 1; gone after %s", name, took.Round(time.Millisecond))
	return took
}

const hungExecHookPod = "e2e-hook-hung-exec"

// The attack: a postStart hook `sleep 100000`, then DELETE with grace 1
// (before the fix: Pending with a deletionTimestamp for over 2 minutes).
// The pod is gone within 10 s.
func TestBoundaryHooks_HungPostStartExecDeletion(t *testing.T) {
	d := newDaemon(t, []string{hungExecHookPod})
	d.start(t)
	createPod(t, d, hookPod(hungExecHookPod, 1, []string{"sleep", "3600"},
		&v1.Lifecycle{PostStart: &v1.LifecycleHandler{Exec: &v1.ExecAction{Command: []string{"sleep", "100000"}}}}))
	waitEvent(t, d, hungExecHookPod, "Started", 2*time.Minute)
	time.Sleep(2 * time.Second) // the hook runs
	p := d.waitPod(t, hungExecHookPod, "pending", time.Second, func(p *v1.Pod) bool { return p != nil })
	require.Equal(t, v1.PodPending, p.Status.Phase, "the hook holds the start: %s", podSummary(p))
	took := deleteAndTime(t, d, hungExecHookPod, 10*time.Second)
	assert.Less(t, took, 10*time.Second)
}

const hungHTTPHookPod = "e2e-hook-hung-http"

// The attack: an httpGet postStart hook to a port that accepts the
// connection and never answers, then DELETE with grace 1. The pod is gone
// within 10 s.
func TestBoundaryHooks_HungPostStartHTTPDeletion(t *testing.T) {
	// The silent server: the test's own, on the node (the daemon's
	// network), so that it listens before the hook runs.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { _ = ln.Close() })
	accepted := make(chan struct{}, 16)
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			accepted <- struct{}{}
			t.Cleanup(func() { _ = conn.Close() }) // never answered
		}
	}()
	port := ln.Addr().(*net.TCPAddr).Port

	// The hook's host is the node's loopback (the test's silent server),
	// which the Pod Security Standards' baseline refuses (a hook or probe
	// reaching the node): this pod needs the privileged level.
	d := newDaemon(t, []string{hungHTTPHookPod}, "--pod-security=privileged")
	d.start(t)
	createPod(t, d, hookPod(hungHTTPHookPod, 1, []string{"sleep", "3600"},
		&v1.Lifecycle{PostStart: &v1.LifecycleHandler{HTTPGet: &v1.HTTPGetAction{Host: "127.0.0.1", Port: intstr.FromInt32(int32(port)), Path: "/"}}}))
	select {
	case <-accepted:
	case <-time.After(2 * time.Minute):
		t.Fatal("the hook's request never arrived")
	}
	time.Sleep(2 * time.Second)
	took := deleteAndTime(t, d, hungHTTPHookPod, 10*time.Second)
	assert.Less(t, took, 10*time.Second)
}

const slowStopPod = "e2e-hook-slow-stop"

// The attack: a pod with a 500 s grace period whose preStop hook takes it
// all (`sleep 500`) is being deleted; SIGTERM to serve (before the fix:
// ignored for over 40 s, waiting for the kill). serve exits within 2 s,
// and once started again it adopts the half-terminated pod and completes
// its deletion: the hook runs again (it sleeps only once: a marker file),
// and the container, which exits on SIGTERM, is stopped.
func TestBoundaryHooks_ServeExitsWhilePodTerminates(t *testing.T) {
	d := newDaemon(t, []string{slowStopPod})
	d.start(t)
	createPod(t, d, hookPod(slowStopPod, 500,
		[]string{"sh", "-c", "trap 'exit 0' TERM; while true; do sleep 1; done"},
		&v1.Lifecycle{PreStop: &v1.LifecycleHandler{Exec: &v1.ExecAction{Command: []string{"sh", "-c",
			"if [ -e /tmp/prestop-ran ]; then exit 0; fi; touch /tmp/prestop-ran; sleep 500"}}}}))
	d.waitPod(t, slowStopPod, "running", 2*time.Minute, isRunning)
	c, cancel := shortCtx()
	_, err := d.api().DeletePod(c, "default", slowStopPod, nil)
	cancel()
	require.NoError(t, err)
	// The hook runs: its marker is there.
	require.Eventually(t, func() bool {
		c, cancel := shortCtx()
		defer cancel()
		r, err := d.api().Exec(c, "default", slowStopPod, "app", []string{"test", "-e", "/tmp/prestop-ran"}, 5*time.Second)
		return err == nil && r.ExitCode == 0
	}, 30*time.Second, 300*time.Millisecond, "the preStop hook started")
	time.Sleep(time.Second)

	start := time.Now()
	require.NoError(t, d.cmd.Process.Signal(syscall.SIGTERM))
	select {
	case <-d.done:
	case <-time.After(20 * time.Second):
		_ = d.cmd.Process.Kill()
		<-d.done
		t.Fatalf("serve did not exit within 20s of SIGTERM while a pod with a 500 s grace period was being stopped")
	}
	took := time.Since(start)
	t.Logf("serve exited %s after SIGTERM (%v)", took.Round(time.Millisecond), d.err)
	assert.Less(t, took, 2*time.Second, "serve's exit after SIGTERM")
	require.NoError(t, d.err, "serve's exit status")

	// The container still runs: the runtime was left to it.
	c, cancel = shortCtx()
	ctrs, err := suite.rt.ListContainers(c, &runtimeapi.ContainerFilter{LabelSelector: map[string]string{"io.kubernetes.pod.name": slowStopPod}})
	cancel()
	require.NoError(t, err)
	require.Len(t, ctrs, 1)

	restart := time.Now()
	d.start(t)
	d.waitPod(t, slowStopPod, "gone after the restart", time.Minute, func(p *v1.Pod) bool { return p == nil })
	for {
		c, cancel := shortCtx()
		sbs, err := suite.rt.ListPodSandbox(c, &runtimeapi.PodSandboxFilter{LabelSelector: map[string]string{"io.kubernetes.pod.name": slowStopPod}})
		cancel()
		require.NoError(t, err)
		if len(sbs) == 0 {
			break
		}
		require.Less(t, time.Since(restart), time.Minute, "the pod's sandbox is still in the runtime after the restart")
		time.Sleep(200 * time.Millisecond)
	}
	t.Logf("the restarted daemon completed the deletion in %s", time.Since(restart).Round(time.Millisecond))
	out, _ := d.out.snapshot()
	gen := out[strings.LastIndex(out, "==== "):]
	assert.Contains(t, gen, "Removing a pod no source wants", "the restarted daemon adopted the pod to finish its deletion")
	assert.Contains(t, gen, slowStopPod)
}
