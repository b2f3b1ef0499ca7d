package e2e

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// End-to-end tests of the prober (issue #5, kubelet-facts §4): liveness,
// readiness and startup probes with exec, httpGet, tcpSocket and grpc
// handlers against real containers. Every pod has its own name, so the tests
// run in parallel. Probes run every second with small thresholds; timing
// bounds are taken from the runtime's own StartedAt/FinishedAt.
//
// Slack on timing bounds: the suite runs on 2 cores with the other tests in
// parallel, so every upper bound carries a couple of seconds of scheduling
// and relist latency on top of what the probe settings imply (times
// E2E_TIME_SCALE in the emulated cgroup v2 guest, where only the lower
// bounds stay tight).
var probeSlack = scaled(2 * time.Second)

// execProbeSlack is probeSlack plus a second for each exec probe a bound
// counts: ExecSync goes through the runtime, and took 1.0–1.6 s a call on
// containerd 1.6 with both suites running (CI: a container killed 7.03 s
// after its file went, against a bound of 7 s). That the kill came at the
// failureThreshold-th failure, not later, assertKilledAtFailure checks
// without a clock.
func execProbeSlack(execs int) time.Duration {
	return probeSlack + scaled(time.Duration(execs)*time.Second)
}

// assertKilledAtFailure checks that the agent killed the container at its
// probe's threshold-th consecutive failure: its log (run's stderr) has
// exactly that many Unhealthy events of the container before the first
// Killing event for a failed probe.
func assertKilledAtFailure(t *testing.T, p *runProc, container string, threshold int) {
	t.Helper()
	log, _ := p.stderr.snapshot()
	kill := strings.Index(log, `reason=Killing message="Container `+container+` failed`)
	require.GreaterOrEqual(t, kill, 0, "no Killing event for a failed probe of %s in the log", container)
	n := 0
	for _, l := range strings.Split(log[:kill], "\n") {
		if strings.Contains(l, "reason=Unhealthy") && strings.Contains(l, "container="+container) {
			n++
		}
	}
	assert.Equal(t, threshold, n, "Unhealthy events of %s before it was killed", container)
}

// containerRestarts returns the restarts=N of a container in a status
// summary (0 when not shown). Unlike restartsOf it also reads the
// running,unready state.
func containerRestarts(summary, container string) int {
	m := regexp.MustCompile(`(?:^| )` + regexp.QuoteMeta(container) + `:(?:running(?:,unready)?|terminated\([^)]*\)|waiting\((?:[^()]|\([^)]*\))*\))(?:,restarts=(\d+))?`).FindStringSubmatch(summary)
	if m == nil || m[1] == "" {
		return 0
	}
	n, _ := strconv.Atoi(m[1])
	return n
}

// execWatch records containerd's /tasks/exec-added events (ctr events on
// the private containerd) while a test runs. CRI shows no execs, so this is
// how a test sees whether anything was executed inside a container.
type execWatch struct {
	mu    sync.Mutex
	lines []string
	cmd   *exec.Cmd
	done  chan struct{}
}

// watchExecs starts `ctr events` and stops it at cleanup.
func watchExecs(t *testing.T) *execWatch {
	t.Helper()
	w := &execWatch{done: make(chan struct{})}
	w.cmd = exec.Command("ctr", "--address", strings.TrimPrefix(suite.endpoint, "unix://"), "events")
	out, err := w.cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, w.cmd.Start())
	go func() {
		defer close(w.done)
		sc := bufio.NewScanner(out)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			if l := sc.Text(); strings.Contains(l, "/tasks/exec-added") {
				w.mu.Lock()
				w.lines = append(w.lines, l)
				w.mu.Unlock()
			}
		}
	}()
	t.Cleanup(func() {
		_ = w.cmd.Process.Signal(syscall.SIGTERM)
		<-w.done
		_ = w.cmd.Wait()
	})
	return w
}

// execsIn returns the exec-added events seen so far for container id.
func (w *execWatch) execsIn(id string) []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []string
	for _, l := range w.lines {
		if strings.Contains(l, id) {
			out = append(out, l)
		}
	}
	return out
}

// containerIDs lists the IDs of all of a pod's container instances.
func containerIDs(t *testing.T, pod string) []string {
	t.Helper()
	var ids []string
	for _, c := range podContainers(t, pod) {
		ids = append(ids, c.Id)
	}
	return ids
}

// assertNoExecs fails the test if anything was executed in one of ids.
func assertNoExecs(t *testing.T, w *execWatch, ids []string, what string) {
	t.Helper()
	require.NotEmpty(t, ids, "no container IDs to check")
	for _, id := range ids {
		assert.Empty(t, w.execsIn(id), "%s: something was executed in container %s", what, shortID(id))
	}
}

// waitForAfter waits until the process's stdout after byte offset mark
// matches re.
func waitForAfter(p *runProc, mark int, re string, timeout time.Duration) {
	p.t.Helper()
	rx := regexp.MustCompile(re)
	deadline := time.After(timeout)
	for {
		out, changed := p.stdout.snapshot()
		if rx.MatchString(out[mark:]) {
			return
		}
		select {
		case <-changed:
		case <-p.done:
			if rx.MatchString(p.output()[mark:]) {
				return
			}
			p.t.Fatalf("minikubelet exited (%v) before printing /%s/ after offset %d\nstdout:\n%s", p.err, re, mark, out)
		case <-deadline:
			p.t.Fatalf("timed out after %s waiting for /%s/ after offset %d\nstdout:\n%s", timeout, re, mark, out)
		}
	}
}

// logLineTime returns the CRI log timestamp of the first line of a
// container's log that is exactly line (its runtime's clock, as
// StartedAt and FinishedAt are).
func logLineTime(t *testing.T, id, line string) time.Time {
	t.Helper()
	resp, err := suite.rt.ContainerStatus(ctx(t), id, false)
	require.NoError(t, err)
	path := resp.GetStatus().GetLogPath()
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	for _, l := range strings.Split(string(data), "\n") {
		if parts, ok := criLogLine(l); ok && parts[3] == line {
			at, err := time.Parse(time.RFC3339Nano, parts[0])
			require.NoError(t, err, "log line %q", l)
			return at
		}
	}
	t.Fatalf("container %s's log %s has no line %q:\n%s", shortID(id), path, line, data)
	return time.Time{}
}

// startedAt returns the runtime's StartedAt of a container.
func startedAt(t *testing.T, id string) time.Time {
	t.Helper()
	resp, err := suite.rt.ContainerStatus(ctx(t), id, false)
	require.NoError(t, err)
	require.NotZero(t, resp.GetStatus().GetStartedAt(), "container %s not started", shortID(id))
	return time.Unix(0, resp.GetStatus().GetStartedAt())
}

// firstRestart samples the container's instances until the first restart
// (restart count 1) has started, and returns instance 0 and instance 1.
func firstRestart(t *testing.T, pod, container string, timeout time.Duration) (first, second *instance) {
	t.Helper()
	inst := sampleInstances(t, pod, container, timeout, func(m map[int]*instance) bool {
		return m[0] != nil && m[0].finished != 0 && m[1] != nil && m[1].started != 0
	})
	t.Logf("instances: %v %v", inst[0], inst[1])
	return inst[0], inst[1]
}

// noRestartLines asserts that no status line of the pod shows a restart
// of container.
func noRestartLines(t *testing.T, out, pod, container string) {
	t.Helper()
	for _, l := range statusLines(out, pod) {
		assert.Zero(t, containerRestarts(l, container), "status line shows a restart: %q", l)
	}
}

// An exec liveness probe (the kubelet docs' exec-liveness.yaml, faster):
// /tmp/healthy exists for 5 s, then `cat /tmp/healthy` fails; with period 1
// and failureThreshold 2 the container is killed (2 s grace: sh as PID 1
// ignores SIGTERM) and restarted at once. The Unhealthy warning carries
// cat's output, and the probe really ran inside the container (ExecSync).
func TestProbe_ExecLivenessRestarts(t *testing.T) {
	t.Parallel()
	const pod = "e2e-probe-exec-live"
	w := watchExecs(t)
	p := startRun(t, `
apiVersion: v1
kind: Pod
metadata:
  name: e2e-probe-exec-live
spec:
  terminationGracePeriodSeconds: 2
  containers:
  - name: liveness
    image: REGISTRY/minikubelet/busybox:1.36
    args: ["/bin/sh", "-c", "touch /tmp/healthy; sleep 5; rm -f /tmp/healthy; echo removed; sleep 600"]
    livenessProbe:
      exec:
        command: ["cat", "/tmp/healthy"]
      periodSeconds: 1
      failureThreshold: 2
`)
	p.waitRunning(pod)
	first, second := firstRestart(t, pod, "liveness", 90*time.Second)
	// The file disappears just before "removed" reaches the container's
	// log: its CRI timestamp says when, where started + 5 s would count
	// a loaded machine's shell start too.
	gone := logLineTime(t, first.id, "removed")
	finished := time.Unix(0, first.finished)
	// Failures at most one period apart after the file went, the second
	// one within failureThreshold × period (+ timeout) of it, then the
	// 2 s grace period of the kill.
	upper := 2*time.Second + time.Second + 2*time.Second + execProbeSlack(2)
	t.Logf("instance 0 finished %s after the file disappeared (bound %s)", finished.Sub(gone), upper)
	assertKilledAtFailure(t, p, "liveness", 2)
	// Lower bound: the second failure comes at least one period after the
	// file went, and the kill then waits the pod's 2 s grace period.
	assert.Greater(t, finished.Sub(gone), 2500*time.Millisecond, "killed before failureThreshold (2) failures plus the 2 s grace period after the file disappeared")
	assert.Less(t, finished.Sub(gone), upper, "killed too late after the file disappeared")
	assertFirstRestartImmediate(t, p.output(), pod, "liveness", time.Duration(second.started-first.finished))
	assert.Equal(t, 1, second.restarts)

	p.waitFor(`default/e2e-probe-exec-live\s+status\s+Running ip=\S+ ready=\d/1 liveness:running(,unready)?,restarts=1\n`, 30*time.Second)
	// The restarted instance runs in the pod cgroup, like the first one.
	podCg := p.sandboxCgroup(pod)
	procCg := procCgroups(t, containerPid(t, second.id))["memory"]
	assert.True(t, strings.HasPrefix(procCg, podCg+"/"), "restarted instance %s runs in %q, not below the pod cgroup %s", shortID(second.id), procCg, podCg)
	m := p.waitFor(`default/e2e-probe-exec-live\s+warning\s+(Unhealthy: Liveness probe failed: .*)\n`, 10*time.Second)
	assert.Contains(t, m[1], "/tmp/healthy", "the warning carries cat's output")
	// The probe ran in the container through the runtime (sanity check of
	// the exec watcher the other tests rely on).
	assert.NotEmpty(t, w.execsIn(first.id), "no exec seen in the first instance: the exec probe did not go through ExecSync, or ctr events shows nothing")
	p.interrupt()
	assert.Empty(t, podContainers(t, pod))
}

// An HTTP liveness probe on /healthz, which answers 500 three seconds after
// the server started: the container is killed and restarted, and the
// warning says what the kubelet says.
func TestProbe_HTTPLivenessRestarts(t *testing.T) {
	t.Parallel()
	const pod = "e2e-probe-http-live"
	w := watchExecs(t)
	p := startRun(t, `
apiVersion: v1
kind: Pod
metadata:
  name: e2e-probe-http-live
spec:
  terminationGracePeriodSeconds: 2
  containers:
  - name: web
    image: REGISTRY/minikubelet/testserver:v1
    args: ["--fail-after=3s"]
    livenessProbe:
      httpGet:
        path: /healthz
        port: 8080
      periodSeconds: 1
      failureThreshold: 2
`)
	p.waitRunning(pod)
	first, second := firstRestart(t, pod, "web", 90*time.Second)
	ran := time.Duration(first.finished - first.started)
	// 500 from 3 s on; two failures a period apart; the testserver exits
	// on SIGTERM at once.
	upper := 3*time.Second + 2*time.Second + time.Second + probeSlack
	t.Logf("instance 0 ran %s (bound %s)", ran, upper)
	assert.Greater(t, ran, 3*time.Second+500*time.Millisecond, "killed before /healthz failed twice")
	assert.Less(t, ran, upper, "killed too late")
	assert.Equal(t, 1, second.restarts)

	p.waitFor(`default/e2e-probe-http-live\s+status\s+Running ip=\S+ ready=\d/1 web:running(,unready)?,restarts=1\n`, 30*time.Second)
	p.waitFor(`default/e2e-probe-http-live\s+warning\s+Unhealthy: Liveness probe failed: HTTP probe failed with statuscode: 500`, 10*time.Second)
	assertNoExecs(t, w, []string{first.id, second.id}, "httpGet liveness")
	p.interrupt()
	assert.Empty(t, podContainers(t, pod))
}

// A tcpSocket readiness probe against a server that listens only after 4 s:
// the pod runs unready first, becomes Ready once the port listens (about
// 4 s after the container started), and run prints the ready step.
func TestProbe_TCPReadinessWaitsForListen(t *testing.T) {
	t.Parallel()
	const pod = "e2e-probe-tcp-ready"
	w := watchExecs(t)
	p := startRun(t, `
apiVersion: v1
kind: Pod
metadata:
  name: e2e-probe-tcp-ready
spec:
  terminationGracePeriodSeconds: 2
  containers:
  - name: web
    image: REGISTRY/minikubelet/testserver:v1
    args: ["--listen-delay=4s"]
    readinessProbe:
      tcpSocket:
        port: 8080
      periodSeconds: 1
`)
	p.waitFor(`default/e2e-probe-tcp-ready\s+status\s+Running ip=\S+ ready=1/1 web:running\n`, 2*time.Minute)
	readyAt := time.Now()
	id := containerID(t, pod, "web")
	toReady := readyAt.Sub(startedAt(t, id))
	upper := 4*time.Second + 2*time.Second + probeSlack
	t.Logf("container start to Ready: %s (bounds 3.5s .. %s)", toReady, upper)
	assert.GreaterOrEqual(t, toReady, 3500*time.Millisecond, "Ready before the port listens")
	assert.Less(t, toReady, upper, "Ready too late after the port started listening")

	out := p.output()
	lines := statusLines(out, pod)
	unready, ready := -1, -1
	for i, l := range lines {
		if unready < 0 && regexp.MustCompile(`^Running ip=\S+ ready=0/1 web:running,unready$`).MatchString(l) {
			unready = i
		}
		if ready < 0 && strings.Contains(l, "ready=1/1") {
			ready = i
		}
	}
	assert.GreaterOrEqual(t, unready, 0, "no Running ready=0/1 web:running,unready line:\n%s", strings.Join(lines, "\n"))
	assert.Less(t, unready, ready, "unready shown after Ready:\n%s", strings.Join(lines, "\n"))
	assert.Regexp(t, `default/e2e-probe-tcp-ready\s+ready\s+\S+\s+total since accepted`, out, "the ready step")
	noRestartLines(t, out, pod, "web")
	assertNoExecs(t, w, containerIDs(t, pod), "tcpSocket readiness")
	p.interrupt()
	assert.Empty(t, podContainers(t, pod))
}

// A grpc liveness probe: the server's grpc.health.v1 says SERVING, so the
// container keeps running; flipped to NOT_SERVING from the host, it is
// killed within failureThreshold × period (+ timeout) and restarted.
func TestProbe_GRPCLivenessRestarts(t *testing.T) {
	t.Parallel()
	const pod = "e2e-probe-grpc-live"
	w := watchExecs(t)
	p := startRun(t, `
apiVersion: v1
kind: Pod
metadata:
  name: e2e-probe-grpc-live
spec:
  terminationGracePeriodSeconds: 2
  containers:
  - name: web
    image: REGISTRY/minikubelet/testserver:v1
    args: ["--grpc-port=9090"]
    livenessProbe:
      grpc:
        port: 9090
      # The first probe runs at startedAt + initialDelaySeconds; the server
      # listens a few milliseconds after its process starts, and where the
      # runtime streams container events (containerd 2.x) the agent sees
      # the start at once, so without a delay the first probe can find the
      # port still closed.
      initialDelaySeconds: 1
      periodSeconds: 1
      failureThreshold: 2
`)
	ip := p.waitRunning(pod)
	id := containerID(t, pod, "web")
	// SERVING passes: over 3 probe periods (more than failureThreshold)
	// nothing is restarted.
	consistently(t, 3*time.Second, func() error {
		for _, c := range podContainers(t, pod) {
			if c.Id != id || c.State != runtimeapi.ContainerState_CONTAINER_RUNNING {
				return fmt.Errorf("container %s restarted or stopped while SERVING (now %s %s)", shortID(id), shortID(c.Id), c.State)
			}
		}
		return nil
	})
	require.NotRegexp(t, `e2e-probe-grpc-live\s+warning\s+Unhealthy`, p.output(), "a probe failed while SERVING")

	flipped := time.Now()
	httpGet(t, "http://"+ip+":8080/set?grpc=NOT_SERVING")
	first, second := firstRestart(t, pod, "web", 60*time.Second)
	require.Equal(t, id, first.id)
	killed := time.Unix(0, first.finished).Sub(flipped)
	upper := 2*time.Second + time.Second + probeSlack
	t.Logf("instance 0 finished %s after NOT_SERVING (bound %s)", killed, upper)
	assert.Greater(t, killed, time.Duration(0))
	assert.Less(t, killed, upper, "killed too late after NOT_SERVING")
	assert.Equal(t, 1, second.restarts)

	p.waitFor(`default/e2e-probe-grpc-live\s+status\s+Running ip=\S+ ready=\d/1 web:running(,unready)?,restarts=1\n`, 30*time.Second)
	m := p.waitFor(`default/e2e-probe-grpc-live\s+warning\s+(Unhealthy: Liveness probe failed:.*)\n`, 10*time.Second)
	t.Logf("warning: %s", m[1])
	assertNoExecs(t, w, []string{first.id, second.id}, "grpc liveness")
	p.interrupt()
	assert.Empty(t, podContainers(t, pod))
}

// A startup probe holds a strict liveness probe (failureThreshold 1) off
// while the server takes 5 s to listen: no restart, the pod gets Ready
// once started, and liveness keeps passing afterwards.
func TestProbe_StartupHoldsLivenessOff(t *testing.T) {
	t.Parallel()
	const pod = "e2e-probe-startup-slow"
	p := startRun(t, `
apiVersion: v1
kind: Pod
metadata:
  name: e2e-probe-startup-slow
spec:
  terminationGracePeriodSeconds: 2
  containers:
  - name: web
    image: REGISTRY/minikubelet/testserver:v1
    args: ["--listen-delay=5s"]
    startupProbe:
      tcpSocket:
        port: 8080
      periodSeconds: 1
      failureThreshold: 10
    livenessProbe:
      tcpSocket:
        port: 8080
      periodSeconds: 1
      failureThreshold: 1
`)
	p.waitFor(`default/e2e-probe-startup-slow\s+status\s+Running ip=\S+ ready=1/1 web:running\n`, 2*time.Minute)
	readyAt := time.Now()
	id := containerID(t, pod, "web")
	toReady := readyAt.Sub(startedAt(t, id))
	t.Logf("container start to Ready (started): %s", toReady)
	assert.GreaterOrEqual(t, toReady, 4500*time.Millisecond, "started before the port listens")
	// Liveness now runs and passes: the same instance keeps running.
	consistently(t, 3*time.Second, func() error {
		for _, c := range podContainers(t, pod) {
			if c.Id != id || c.State != runtimeapi.ContainerState_CONTAINER_RUNNING {
				return fmt.Errorf("container %s restarted or stopped (now %s %s)", shortID(id), shortID(c.Id), c.State)
			}
		}
		return nil
	})
	out := p.output()
	assert.NotContains(t, out, "Liveness probe failed", "liveness ran during startup or failed after it")
	assert.Regexp(t, `default/e2e-probe-startup-slow\s+status\s+Running ip=\S+ ready=0/1 web:running,unready\n`, out, "unready while starting")
	noRestartLines(t, out, pod, "web")
	p.interrupt()
	assert.Empty(t, podContainers(t, pod))
}

// A container whose startup probe never succeeds (exec false, period 1,
// failureThreshold 3) is killed and restarted, with a Startup probe failed
// warning; it never becomes Ready.
func TestProbe_StartupKillsContainerThatNeverStarts(t *testing.T) {
	t.Parallel()
	const pod = "e2e-probe-startup-never"
	p := startRun(t, `
apiVersion: v1
kind: Pod
metadata:
  name: e2e-probe-startup-never
spec:
  terminationGracePeriodSeconds: 2
  containers:
  - name: app
    image: REGISTRY/minikubelet/busybox:1.36
    command: ["sleep", "600"]
    startupProbe:
      exec:
        command: ["false"]
      periodSeconds: 1
      failureThreshold: 3
`)
	p.waitRunning(pod)
	first, second := firstRestart(t, pod, "app", 90*time.Second)
	ran := time.Duration(first.finished - first.started)
	// Three failures a period apart (the first within one period plus
	// jitter), then 2 s grace (sleep as PID 1 ignores SIGTERM).
	upper := 3*time.Second + time.Second + 2*time.Second + execProbeSlack(3)
	t.Logf("instance 0 ran %s (bound %s)", ran, upper)
	assertKilledAtFailure(t, p, "app", 3)
	// At least two periods between the first and third failure, then
	// the pod's 2 s grace period before the SIGKILL.
	assert.Greater(t, ran, 3500*time.Millisecond, "killed before failureThreshold (3) failures plus the 2 s grace period")
	assert.Equal(t, int32(137), first.exitCode, "sleep ignores SIGTERM as PID 1: SIGKILL after the grace period")
	assert.Less(t, ran, upper, "killed too late")
	assert.Equal(t, 1, second.restarts)

	p.waitFor(`default/e2e-probe-startup-never\s+status\s+Running ip=\S+ ready=0/1 app:running,unready,restarts=1\n`, 30*time.Second)
	p.waitFor(`default/e2e-probe-startup-never\s+warning\s+Unhealthy: Startup probe failed`, 10*time.Second)
	out := p.output()
	assert.NotRegexp(t, `default/e2e-probe-startup-never\s+status\s+.*ready=1/1`, out, "Ready without a successful startup probe")
	assert.NotRegexp(t, `default/e2e-probe-startup-never\s+ready\s`, out, "ready step without a successful startup probe")
	p.interrupt()
	assert.Empty(t, podContainers(t, pod))
}

// A failing httpGet readiness probe (/healthz switched to 500 from the
// host) makes the container unready but leaves it running: no restart, the
// same container ID. Switched back, it is Ready again.
func TestProbe_ReadinessFailureKeepsContainer(t *testing.T) {
	t.Parallel()
	const pod = "e2e-probe-http-ready"
	w := watchExecs(t)
	p := startRun(t, `
apiVersion: v1
kind: Pod
metadata:
  name: e2e-probe-http-ready
spec:
  terminationGracePeriodSeconds: 2
  containers:
  - name: web
    image: REGISTRY/minikubelet/testserver:v1
    readinessProbe:
      httpGet:
        path: /healthz
        port: 8080
      periodSeconds: 1
      failureThreshold: 2
`)
	m := p.waitFor(`default/e2e-probe-http-ready\s+status\s+Running ip=(\S+) ready=1/1 web:running\n`, 2*time.Minute)
	ip := m[1]
	id := containerID(t, pod, "web")
	mark := len(p.output())

	httpGet(t, "http://"+ip+":8080/set?healthz=500")
	waitForAfter(p, mark, `default/e2e-probe-http-ready\s+status\s+Running ip=\S+ ready=0/1 web:running,unready\n`, 30*time.Second)
	p.waitFor(`default/e2e-probe-http-ready\s+warning\s+Unhealthy: Readiness probe failed: HTTP probe failed with statuscode: 500`, 10*time.Second)
	check := func() error {
		cs := podContainers(t, pod)
		if len(cs) != 1 || cs[0].Id != id || cs[0].State != runtimeapi.ContainerState_CONTAINER_RUNNING {
			var got []string
			for _, c := range cs {
				got = append(got, shortID(c.Id)+" "+c.State.String())
			}
			return fmt.Errorf("want only %s running, have %v", shortID(id), got)
		}
		if n := restartCount(cs[0].Annotations); n != 0 {
			return fmt.Errorf("restart count %d", n)
		}
		return nil
	}
	// Unready over several probe periods, never restarted.
	consistently(t, 3*time.Second, check)
	after := statusLines(p.output()[mark:], pod)
	assert.NotEmpty(t, after)
	for _, l := range after {
		assert.NotContains(t, l, "ready=1/1", "Ready while /healthz answers 500: %q", l)
	}

	mark = len(p.output())
	httpGet(t, "http://"+ip+":8080/set?healthz=0")
	waitForAfter(p, mark, `default/e2e-probe-http-ready\s+status\s+Running ip=\S+ ready=1/1 web:running\n`, 30*time.Second)
	require.NoError(t, check())
	out := p.output()
	noRestartLines(t, out, pod, "web")
	assert.NotContains(t, out, "Liveness probe failed")
	assertNoExecs(t, w, []string{id}, "httpGet readiness")
	p.interrupt()
	assert.Empty(t, podContainers(t, pod))
}
