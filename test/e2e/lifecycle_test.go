package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// End-to-end tests of the pod lifecycle engine (issue #3): restart policies,
// CrashLoopBackOff timing, init containers and native sidecars, admission,
// termination (preStop, sidecars last, termination messages) and recovery
// after an agent or runtime restart. Every pod has its own name, so the
// tests run in parallel, except the containerd restart, which takes the
// runtime away from everybody and therefore runs alone, first.

// containerd stopped for 5 s and started again: the pod keeps running with
// the same sandbox and containers and no restart, and the agent carries on
// (it notices and restarts a container that crashes afterwards, and SIGINT
// still removes everything). Not parallel: the other tests need the runtime.
func TestLifecycle_ContainerdRestartKeepsPods(t *testing.T) {
	const pod = "e2e-ctrd-restart"
	removePodObjects(t, pod)
	p := startRun(t, `
apiVersion: v1
kind: Pod
metadata:
  name: e2e-ctrd-restart
spec:
  terminationGracePeriodSeconds: 2
  volumes:
  - name: w
    emptyDir: {}
  containers:
  - name: web
    image: REGISTRY/minikubelet/testserver:v1
  - name: helper
    image: REGISTRY/minikubelet/busybox:1.36
    command: ["sh", "-c", "until [ -f /w/crash ]; do sleep 0.1; done; rm -f /w/crash; exit 1"]
    volumeMounts: [{name: w, mountPath: /w}]
`)
	p.waitFor(`default/e2e-ctrd-restart\s+status\s+Running ip=\S+ ready=2/2 web:running helper:running\n`, 2*time.Minute)
	before := snapshotPod(t, pod)
	require.Len(t, before.sandboxes, 1, "%v", before)
	require.Len(t, before.containers, 2, "%v", before)

	// Registered after startRun, so it runs before the agent is
	// interrupted: a failed test must not leave the runtime down.
	ensureContainerd(t)
	stopContainerd(t)
	mark := len(p.output())
	// The runtime is away for 5 s (the scenario, not a wait for a
	// condition); the agent must ride it out.
	select {
	case <-p.done:
		t.Fatalf("minikubelet exited (%v) while containerd was down", p.err)
	case <-time.After(5 * time.Second):
	}
	startContainerd(t)

	after := snapshotPod(t, pod)
	assert.Equal(t, before.String(), after.String(), "sandbox and containers after the containerd restart")
	for id, c := range after.containers {
		assert.Equal(t, "CONTAINER_RUNNING", c.state, "%s %s", c.name, shortID(id))
		assert.Equal(t, 0, c.restarts, "%s restart count", c.name)
	}

	// The agent still drives the pod: a crash after the restart is seen
	// and restarted (first restart immediately), web untouched.
	helper := containerID(t, pod, "helper")
	execIn(t, helper, "touch", "/w/crash")
	p.waitFor(`default/e2e-ctrd-restart\s+status\s+Running ip=\S+ ready=2/2 web:running helper:running,restarts=1\n`, time.Minute)
	web := containerID(t, pod, "web")
	_, stillThere := before.containers[web]
	assert.True(t, stillThere, "web container %s was replaced", shortID(web))
	for _, s := range statusLines(p.output()[mark:], pod) {
		assert.Regexp(t, `^Running ip=\S+ ready=\d/2 web:running helper:`, s, "status after the containerd restart")
	}

	p.interrupt()
	assert.Empty(t, podSandboxes(t, pod), "sandboxes left after SIGINT")
	assert.Empty(t, podContainers(t, pod), "containers left after SIGINT")
}

// A container that exits 1 every time is restarted at once, then after
// 10 s, then after 20 s (measured from the previous instance's FinishedAt
// to the next one's StartedAt), showing CrashLoopBackOff with the kubelet's
// message and a growing restart count in between.
func TestLifecycle_CrashLoopBackOff(t *testing.T) {
	t.Parallel()
	const pod = "e2e-crashloop"
	p := startRun(t, `
apiVersion: v1
kind: Pod
metadata:
  name: e2e-crashloop
spec:
  terminationGracePeriodSeconds: 2
  containers:
  - name: app
    image: REGISTRY/minikubelet/busybox:1.36
    command: ["sh", "-c", "sleep 1; exit 1"]
`)
	uid := p.podUID(pod)
	// Each instance lives 1 s: the agent prunes an exited instance once a
	// newer one has exited too, so with an instant exit instance 0 (restarted
	// without back-off) was gone ~100 ms after it exited, sometimes before
	// a 100 ms sample saw it exited (CI stop 23 timed out that way on
	// containerd 2.4). The gaps measured are FinishedAt to the next
	// StartedAt, which the sleep does not change.
	// 0 + 10 + 20 s of back-off plus relist latency.
	inst := sampleInstances(t, pod, "app", 90*time.Second, func(m map[int]*instance) bool {
		for rc := 0; rc <= 2; rc++ {
			if m[rc] == nil || m[rc].finished == 0 {
				return false
			}
		}
		return m[3] != nil && m[3].started != 0
	})
	t.Logf("instances: %v %v %v %v", inst[0], inst[1], inst[2], inst[3])
	for rc := 0; rc <= 2; rc++ {
		assert.Equal(t, int32(1), inst[rc].exitCode, "exit code of instance %d", rc)
	}
	gap := func(rc int) time.Duration { return time.Duration(inst[rc].started - inst[rc-1].finished) }
	t.Logf("gaps (previous FinishedAt to next StartedAt): %s, %s, %s", gap(1), gap(2), gap(3))
	// The slack is the scheduling and relist latency of this machine (times
	// E2E_TIME_SCALE in the emulated cgroup v2 guest, where starting a
	// container alone takes seconds); the back-off itself is a lower bound.
	slack := scaled(2500 * time.Millisecond)
	assertFirstRestartImmediate(t, p.output(), pod, "app", gap(1))
	for rc, backoff := range map[int]time.Duration{2: 10 * time.Second, 3: 20 * time.Second} {
		assert.Greater(t, gap(rc), backoff-2500*time.Millisecond, "restart %d before its ~%s back-off: gap %s", rc, backoff, gap(rc))
		assert.Less(t, gap(rc), backoff+slack, "restart %d long after its ~%s back-off: gap %s", rc, backoff, gap(rc))
	}

	// The waiting state in between, with the kubelet's message.
	backoff := func(delay string, restarts int) string {
		return regexp.QuoteMeta(fmt.Sprintf("app:waiting(CrashLoopBackOff: back-off %s restarting failed container=app pod=%s_default(%s)),restarts=%d", delay, pod, uid, restarts))
	}
	p.waitFor(`default/e2e-crashloop\s+status\s+.*`+backoff("40s", 3), 15*time.Second)
	out := p.output()
	lines := statusLines(out, pod)
	joined := strings.Join(lines, "\n")
	if timeScale == 1 {
		// In the emulated cgroup v2 guest one relist can take longer than
		// a back-off window, so a status line may skip a waiting state.
		assert.Regexp(t, backoff("10s", 1), joined)
		assert.Regexp(t, backoff("20s", 2), joined)
	}
	assert.Regexp(t, `warning\s+`+regexp.QuoteMeta(fmt.Sprintf("BackOff: Back-off restarting failed container app in pod %s_default(%s)", pod, uid)), out)
	// restarts=N only grows, through 1, 2 and 3.
	seen := map[int]bool{}
	last := 0
	for _, l := range lines {
		n := restartsOf(l, "app")
		assert.GreaterOrEqual(t, n, last, "restart count went down: %q", l)
		last = max(last, n)
		seen[n] = true
	}
	assert.True(t, seen[1] && seen[2] && seen[3], "status lines show restarts 1, 2 and 3:\n%s", joined)
	p.interrupt()
	assert.Empty(t, podContainers(t, pod))
}

// OnFailure: a container that exits 0 is not restarted and the pod
// Succeeds.
func TestLifecycle_OnFailureSucceeds(t *testing.T) {
	t.Parallel()
	const pod = "e2e-onfailure-ok"
	p := startRun(t, `
apiVersion: v1
kind: Pod
metadata:
  name: e2e-onfailure-ok
spec:
  restartPolicy: OnFailure
  terminationGracePeriodSeconds: 2
  containers:
  - name: app
    image: REGISTRY/minikubelet/busybox:1.36
    command: ["sh", "-c", "exit 0"]
`)
	m := p.waitFor(`default/e2e-onfailure-ok\s+status\s+(Succeeded.*)\n`, 2*time.Minute)
	assert.Regexp(t, `app:terminated\(Completed,exit=0\)$`, m[1], "no restarts shown")
	// Over a few relist periods nothing is started again.
	consistently(t, 2500*time.Millisecond, func() error {
		cs := podContainers(t, pod)
		if len(cs) != 1 {
			return fmt.Errorf("want exactly 1 container instance, have %d", len(cs))
		}
		if n := restartCount(cs[0].Annotations); n != 0 {
			return fmt.Errorf("container restarted: restart count %d", n)
		}
		return nil
	})
	for _, l := range statusLines(p.output(), pod) {
		assert.NotContains(t, l, "restarts=", "status line %q", l)
	}
	p.interrupt()
}

// OnFailure: a container that fails once and then exits 0 is restarted
// exactly once and the pod Succeeds. The marker file on an emptyDir
// survives the restart.
func TestLifecycle_OnFailureRestartsUntilSuccess(t *testing.T) {
	t.Parallel()
	const pod = "e2e-onfailure-retry"
	p := startRun(t, `
apiVersion: v1
kind: Pod
metadata:
  name: e2e-onfailure-retry
spec:
  restartPolicy: OnFailure
  terminationGracePeriodSeconds: 2
  volumes:
  - name: w
    emptyDir: {}
  containers:
  - name: app
    image: REGISTRY/minikubelet/busybox:1.36
    command: ["sh", "-c", "[ -f /w/x ] && exit 0; touch /w/x; exit 1"]
    volumeMounts: [{name: w, mountPath: /w}]
`)
	m := p.waitFor(`default/e2e-onfailure-retry\s+status\s+(Succeeded.*)\n`, 2*time.Minute)
	assert.Regexp(t, `app:terminated\(Completed,exit=0\),restarts=1$`, m[1])
	consistently(t, 2500*time.Millisecond, func() error {
		for _, c := range podContainers(t, pod) {
			if n := restartCount(c.Annotations); n > 1 {
				return fmt.Errorf("restarted after success: restart count %d", n)
			}
			if c.State == runtimeapi.ContainerState_CONTAINER_RUNNING {
				return fmt.Errorf("a container runs again after success: %s", c.Id)
			}
		}
		return nil
	})
	// The newest instance is the second run, exit 0.
	var newest *runtimeapi.ContainerStatus
	for _, c := range podContainers(t, pod) {
		resp, err := suite.rt.ContainerStatus(ctx(t), c.Id, false)
		require.NoError(t, err)
		if s := resp.GetStatus(); newest == nil || s.CreatedAt > newest.CreatedAt {
			newest = s
		}
	}
	require.NotNil(t, newest)
	assert.Equal(t, 1, restartCount(newest.Annotations))
	assert.Equal(t, int32(0), newest.ExitCode)
	p.interrupt()
}

// Never: a container exiting 3 leaves the pod Failed with that exit code
// and is not restarted.
func TestLifecycle_NeverFails(t *testing.T) {
	t.Parallel()
	const pod = "e2e-never"
	p := startRun(t, `
apiVersion: v1
kind: Pod
metadata:
  name: e2e-never
spec:
  restartPolicy: Never
  terminationGracePeriodSeconds: 2
  containers:
  - name: app
    image: REGISTRY/minikubelet/busybox:1.36
    command: ["sh", "-c", "exit 3"]
`)
	m := p.waitFor(`default/e2e-never\s+status\s+(Failed.*)\n`, 2*time.Minute)
	assert.Regexp(t, `app:terminated\(Error,exit=3\)$`, m[1])
	consistently(t, 2500*time.Millisecond, func() error {
		cs := podContainers(t, pod)
		if len(cs) != 1 {
			return fmt.Errorf("want exactly 1 container instance, have %d", len(cs))
		}
		if n := restartCount(cs[0].Annotations); n != 0 {
			return fmt.Errorf("container restarted: restart count %d", n)
		}
		return nil
	})
	for _, l := range statusLines(p.output(), pod) {
		assert.NotContains(t, l, "restarts=", "status line %q", l)
	}
	p.interrupt()
}

// Init containers and a native sidecar: init-1 runs to completion, then the
// sidecar starts and keeps running, then the app starts. On SIGINT the app
// stops first and the sidecar only after it. The app takes 1 s to stop, so
// a sidecar stopped at the same time as the app would log first.
func TestLifecycle_SidecarStartsBeforeAndStopsAfterApp(t *testing.T) {
	t.Parallel()
	const pod = "e2e-sidecar"
	path, out := withOutDir(t, `
apiVersion: v1
kind: Pod
metadata:
  name: e2e-sidecar
spec:
  # Room for the app's 1 s stop under load (as e2e-prestop); each container
  # exits on SIGTERM, so the test is no slower for it.
  terminationGracePeriodSeconds: 10
  volumes:
  - name: out
    hostPath: {path: OUTDIR, type: Directory}
  initContainers:
  - name: init-1
    image: REGISTRY/minikubelet/busybox:1.36
    command: ["sh", "-c", "sleep 1; echo init-1 >> /out/log"]
    volumeMounts: [{name: out, mountPath: /out}]
  - name: sidecar
    image: REGISTRY/minikubelet/busybox:1.36
    restartPolicy: Always
    command: ["sh", "-c", "stop() { echo sidecar-stop >> /out/log; exit 0; }; trap stop TERM; echo sidecar-start >> /out/log; while true; do sleep 0.1; done"]
    volumeMounts: [{name: out, mountPath: /out}]
  containers:
  - name: app
    image: REGISTRY/minikubelet/busybox:1.36
    command: ["sh", "-c", "stop() { sleep 1; echo app-stop >> /out/log; exit 0; }; trap stop TERM; echo app-start >> /out/log; while true; do sleep 0.1; done"]
    volumeMounts: [{name: out, mountPath: /out}]
`)
	p := startRunPath(t, path, privilegedLevel) // the hostPath OUTDIR
	p.waitFor(`default/e2e-sidecar\s+status\s+Running ip=\S+ ready=1/1 init-1:terminated\(Completed,exit=0\) sidecar:running app:running\n`, 2*time.Minute)

	// Start order from the runtime's own timestamps.
	st := map[string]*runtimeapi.ContainerStatus{}
	for _, c := range podContainers(t, pod) {
		resp, err := suite.rt.ContainerStatus(ctx(t), c.Id, false)
		require.NoError(t, err)
		name := c.GetMetadata().GetName()
		require.Nil(t, st[name], "two instances of %s", name)
		st[name] = resp.GetStatus()
	}
	require.Len(t, st, 3, "init-1, sidecar and app in CRI")
	assert.Equal(t, runtimeapi.ContainerState_CONTAINER_EXITED, st["init-1"].State)
	assert.Equal(t, int32(0), st["init-1"].ExitCode)
	assert.Equal(t, runtimeapi.ContainerState_CONTAINER_RUNNING, st["sidecar"].State)
	assert.Equal(t, runtimeapi.ContainerState_CONTAINER_RUNNING, st["app"].State)
	ts := func(ns int64) string { return time.Unix(0, ns).Format("15:04:05.000000") }
	assert.LessOrEqual(t, st["init-1"].FinishedAt, st["sidecar"].StartedAt,
		"sidecar started (%s) before init-1 finished (%s)", ts(st["sidecar"].StartedAt), ts(st["init-1"].FinishedAt))
	assert.LessOrEqual(t, st["sidecar"].StartedAt, st["app"].StartedAt,
		"app started (%s) before the sidecar (%s)", ts(st["app"].StartedAt), ts(st["sidecar"].StartedAt))
	for _, l := range statusLines(p.output(), pod) {
		assert.NotContains(t, l, "restarts=", "status line %q", l)
	}

	// A running container's shell may not have set its trap yet (CI saw the
	// SIGINT 6 ms after the app's start): each writes its *-start line after
	// its trap, so wait for both before stopping the pod.
	waitLogLines(t, filepath.Join(out, "log"), "sidecar-start", "app-start")
	p.interrupt()
	b, err := os.ReadFile(filepath.Join(out, "log"))
	require.NoError(t, err)
	assert.Equal(t, "init-1\nsidecar-start\napp-start\napp-stop\nsidecar-stop\n", string(b),
		"order of events; a missing *-stop means the container got no SIGTERM (killed) or its stop came too late")
	assert.Empty(t, podContainers(t, pod))
}

// A pod whose memory request exceeds the node is rejected at admission with
// the kubelet's OutOfmemory, and nothing reaches the runtime.
func TestLifecycle_AdmissionRejectsOutOfMemory(t *testing.T) {
	t.Parallel()
	const pod = "e2e-toobig"
	stop := watchNoObjects(pod)
	p := startRun(t, `
apiVersion: v1
kind: Pod
metadata:
  name: e2e-toobig
spec:
  terminationGracePeriodSeconds: 2
  containers:
  - name: app
    image: REGISTRY/minikubelet/busybox:1.36
    command: ["sleep", "3600"]
    resources:
      requests:
        memory: 1000Gi
`)
	// run reports the pod Failed with the kubelet's reason and message and,
	// having nothing left to run, exits non-zero.
	p.waitForOrExit(`default/e2e-toobig\s+status\s+(Failed|Running|Succeeded|Pending .*app:running)`, 2*time.Minute)
	select {
	case <-p.done:
	case <-time.After(10 * time.Second):
		t.Fatal("run did not exit after rejecting its only pod")
	}
	out := p.output()
	errOut, _ := p.stderr.snapshot()
	assert.Error(t, p.err, "run exited 0 for a pod that cannot be admitted")
	assert.Regexp(t, `default/e2e-toobig\s+status\s+Failed reason=OutOfmemory`, out, "the pod ends Failed with the kubelet's reason")
	assert.Contains(t, out, "Node didn't have enough resource: memory", "the kubelet's message is shown")
	assert.Contains(t, errOut, "rejected by node admission")
	assert.NotRegexp(t, `default/e2e-toobig\s+status\s+(Running|Succeeded)`, out)
	assert.Empty(t, stop(), "CRI objects created for a pod that does not fit")
}

// kill -9 of the agent while 5 pods run, then a new agent on the same
// manifest: it adopts the same sandboxes and containers, creates nothing,
// restarts nothing, and SIGINT then removes everything. The fifth pod has a
// container that crashed once before the kill: its restart count is kept,
// and it continues (1 → 2) when the container crashes again under the new
// agent.
func TestLifecycle_AgentRestartAdoptsPods(t *testing.T) {
	t.Parallel()
	var pods []string
	var docs []string
	for i := 1; i <= 5; i++ {
		name := fmt.Sprintf("e2e-adopt-%d", i)
		pods = append(pods, name)
		doc := fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata:
  name: %s
spec:
  terminationGracePeriodSeconds: 2
  volumes:
  - name: w
    emptyDir: {}
  containers:
  - name: web
    image: REGISTRY/minikubelet/testserver:v1
`, name)
		if i == 5 {
			// Exits 1 on its first run, then waits for /w/crash to exit 1
			// again.
			doc += `  - name: flaky
    image: REGISTRY/minikubelet/busybox:1.36
    command: ["sh", "-c", "[ -f /w/once ] || { touch /w/once; exit 1; }; until [ -f /w/crash ]; do sleep 0.1; done; rm -f /w/crash; exit 1"]
    volumeMounts: [{name: w, mountPath: /w}]
`
		}
		docs = append(docs, doc)
	}
	removePodObjects(t, pods...)
	path := writeManifest(t, strings.Join(docs, "---\n"))

	first := startRunPath(t, path)
	for _, pod := range pods[:4] {
		first.waitRunning(pod)
	}
	first.waitFor(`default/e2e-adopt-5\s+status\s+Running ip=\S+ ready=2/2 web:running flaky:running,restarts=1\n`, 2*time.Minute)
	before := map[string]podObjects{}
	for _, pod := range pods {
		o := snapshotPod(t, pod)
		require.Len(t, o.sandboxes, 1, "%s: %v", pod, o)
		if pod == "e2e-adopt-5" {
			require.Len(t, o.containers, 3, "%s: web, flaky and flaky's exited first run: %v", pod, o)
		} else {
			require.Len(t, o.containers, 1, "%s: %v", pod, o)
		}
		before[pod] = o
	}
	first.kill9()

	second := startRunPath(t, path)
	for _, pod := range pods {
		second.waitRunning(pod)
	}
	check := func() error {
		for _, pod := range pods {
			if now := snapshotPod(t, pod); now.String() != before[pod].String() {
				return fmt.Errorf("%s changed after the agent restart:\nbefore %v\nnow    %v", pod, before[pod], now)
			}
		}
		return nil
	}
	require.NoError(t, check())
	// And it stays so over a few relists and syncs.
	consistently(t, 2500*time.Millisecond, check)
	assert.NotRegexp(t, `default/e2e-adopt-\d\s+(sandbox|image|created|started)\s`, second.output(),
		"the second agent created something")
	for _, pod := range pods[:4] {
		for _, l := range statusLines(second.output(), pod) {
			assert.NotContains(t, l, "restarts=", "%s status line %q", pod, l)
		}
	}
	for _, l := range statusLines(second.output(), "e2e-adopt-5") {
		assert.Contains(t, l, "flaky:running,restarts=1", "e2e-adopt-5 status line %q", l)
	}

	// The restart count continues under the new agent.
	execIn(t, containerID(t, "e2e-adopt-5", "flaky"), "touch", "/w/crash")
	// Well within the agent's periodic resync (a minute): the relist sees
	// the adopted container exit (on containerd 1.6, which streams no
	// events, a relist that took only the objects with the new agent's
	// label left the crash to that resync, 57 s here).
	second.waitFor(`default/e2e-adopt-5\s+status\s+Running ip=\S+ ready=2/2 web:running flaky:running,restarts=2\n`, 30*time.Second)
	flaky := containerID(t, "e2e-adopt-5", "flaky")
	for _, c := range podContainers(t, "e2e-adopt-5") {
		if c.Id == flaky {
			assert.Equal(t, 2, restartCount(c.Annotations), "restart count annotation of the new flaky instance")
		}
	}

	second.interrupt()
	for _, pod := range pods {
		assert.Empty(t, podSandboxes(t, pod), "%s: sandboxes left after SIGINT", pod)
		assert.Empty(t, podContainers(t, pod), "%s: containers left after SIGINT", pod)
	}
}

// A preStop exec hook runs to completion before the container gets
// SIGTERM. The hook takes 1 s, so a SIGTERM sent without waiting for it
// would be logged between its two lines.
func TestLifecycle_PreStopRunsBeforeSIGTERM(t *testing.T) {
	t.Parallel()
	const pod = "e2e-prestop"
	path, out := withOutDir(t, `
apiVersion: v1
kind: Pod
metadata:
  name: e2e-prestop
spec:
  # Long enough for the hook's exec to start and its 1 s sleep to end under
  # a loaded CI run (it took over 2 s once); the container exits on SIGTERM,
  # so the test is no slower for it.
  terminationGracePeriodSeconds: 10
  volumes:
  - name: w
    hostPath: {path: OUTDIR, type: Directory}
  containers:
  - name: app
    image: REGISTRY/minikubelet/busybox:1.36
    command: ["sh", "-c", "trap 'echo term >> /w/log; exit 0' TERM; echo started >> /w/log; while true; do sleep 0.1; done"]
    lifecycle:
      preStop:
        exec:
          command: ["sh", "-c", "echo prestop >> /w/log; sleep 1; echo prestop-done >> /w/log"]
    volumeMounts: [{name: w, mountPath: /w}]
`)
	p := startRunPath(t, path, privilegedLevel) // the hostPath OUTDIR
	p.waitRunning(pod)
	waitLogLines(t, filepath.Join(out, "log"), "started") // its trap is set
	p.interrupt()
	b, err := os.ReadFile(filepath.Join(out, "log"))
	require.NoError(t, err)
	assert.Equal(t, "started\nprestop\nprestop-done\nterm\n", string(b), "hook output, then SIGTERM")
	assert.Empty(t, podContainers(t, pod))
}

// terminationMessagePath: what the container wrote to /dev/termination-log
// is the terminated state's message; with FallbackToLogsOnError a failed
// container that wrote no message gets the tail of its log. run prints the
// message after the exit code: terminated(Error,exit=1: bye now).
func TestLifecycle_TerminationMessage(t *testing.T) {
	t.Parallel()
	const pod = "e2e-termmsg"
	p := startRun(t, `
apiVersion: v1
kind: Pod
metadata:
  name: e2e-termmsg
spec:
  restartPolicy: Never
  terminationGracePeriodSeconds: 2
  containers:
  - name: app
    image: REGISTRY/minikubelet/busybox:1.36
    command: ["sh", "-c", "printf 'bye now' > /dev/termination-log; exit 1"]
  - name: logs
    image: REGISTRY/minikubelet/busybox:1.36
    terminationMessagePolicy: FallbackToLogsOnError
    command: ["sh", "-c", "echo from logs; exit 2"]
`)
	p.waitFor(`default/e2e-termmsg\s+status\s+Failed`, 2*time.Minute)
	// The messages may follow the phase by a sync; give them a moment.
	withMsg := `default/e2e-termmsg\s+status\s+Failed.* app:terminated\(Error,exit=1: bye now\)`
	withLog := `default/e2e-termmsg\s+status\s+Failed.* logs:terminated\(Error,exit=2: from logs(\\n|\n)?\)`
	p.waitQuietly(withMsg, 5*time.Second)
	p.waitQuietly(withLog, 5*time.Second)
	out := p.output()
	assert.Regexp(t, withMsg, out, "message from terminationMessagePath")
	assert.Regexp(t, withLog, out, "message from the log tail (FallbackToLogsOnError)")
	p.interrupt()
}
