package e2e

import (
	"context"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/minikubelet/minikubelet/cri"
)

// Helpers for lifecycle_test.go. They sit beside the shared harness
// (harness_test.go) and reuse its runProc; what they add is running a
// manifest by path (so a second run adopts the first one's pods), killing
// the agent hard, sampling container instances from CRI as they come and go,
// and taking the private containerd away and back.

// restartCountAnnotation is the kubelet's restart count key on containers.
const restartCountAnnotation = "io.kubernetes.container.restartCount"

// startRunPath starts `minikubelet run` on an existing manifest path, with
// extra flags before the path. The pod UID is derived from path, node and
// content, so a second run on the same path adopts the first one's pods.
// Cleanup interrupts the process if the test did not stop it.
func startRunPath(t *testing.T, path string, extra ...string) *runProc {
	t.Helper()
	p := &runProc{t: t, stdout: newSyncBuffer(), stderr: newSyncBuffer(), done: make(chan struct{})}
	args := append(append(append([]string{"run"}, agentArgs()...), extra...), path)
	p.cmd = exec.Command(suite.bin, args...)
	p.cmd.Stdout, p.cmd.Stderr = p.stdout, p.stderr
	require.NoError(t, p.cmd.Start())
	go func() {
		p.err = p.cmd.Wait()
		close(p.done)
	}()
	t.Cleanup(func() {
		select {
		case <-p.done:
		default:
			_ = p.cmd.Process.Signal(syscall.SIGINT)
			select {
			case <-p.done:
			case <-time.After(scaled(90 * time.Second)):
				_ = p.cmd.Process.Kill()
				<-p.done
			}
		}
		if t.Failed() {
			out, _ := p.stdout.snapshot()
			errOut, _ := p.stderr.snapshot()
			t.Logf("minikubelet run (%s) stdout:\n%s\nstderr (tail):\n%s", filepath.Base(path), out, tail(errOut, 4000))
		}
	})
	return p
}

// withOutDir writes a manifest whose OUTDIR placeholder is replaced by a
// fresh host directory (for a hostPath volume the test reads afterwards) and
// returns the manifest path and that directory.
func withOutDir(t *testing.T, manifest string) (path, dir string) {
	t.Helper()
	dir = t.TempDir()
	return writeManifest(t, strings.ReplaceAll(manifest, "OUTDIR", dir)), dir
}

// waitLogLines waits until the file (written by the pod through a hostPath
// volume) holds each of the lines. A container's shell writes such a line
// after setting its SIGTERM trap, so a test that stops the pod afterwards
// knows the trap is in place; "running" in CRI does not say so.
func waitLogLines(t *testing.T, file string, lines ...string) {
	t.Helper()
	eventually(t, 30*time.Second, fmt.Sprintf("lines %q in %s", lines, file), func() bool {
		b, _ := os.ReadFile(file)
		have := strings.Split(string(b), "\n")
		for _, l := range lines {
			if !slices.Contains(have, l) {
				return false
			}
		}
		return true
	})
}

// kill9 kills the run process with SIGKILL (no teardown: its pods stay) and
// waits for it to be gone.
func (p *runProc) kill9() {
	p.t.Helper()
	require.NoError(p.t, p.cmd.Process.Kill())
	select {
	case <-p.done:
	case <-time.After(30 * time.Second):
		p.t.Fatal("minikubelet did not die within 30s of SIGKILL")
	}
}

// output returns stdout so far.
func (p *runProc) output() string {
	out, _ := p.stdout.snapshot()
	return out
}

// waitForOrExit waits until stdout matches re or the process exits, and
// reports whether it matched.
func (p *runProc) waitForOrExit(re string, timeout time.Duration) bool {
	p.t.Helper()
	rx := regexp.MustCompile(re)
	deadline := time.After(timeout)
	for {
		out, changed := p.stdout.snapshot()
		if rx.MatchString(out) {
			return true
		}
		select {
		case <-changed:
		case <-p.done:
			return rx.MatchString(p.output())
		case <-deadline:
			errOut, _ := p.stderr.snapshot()
			p.t.Fatalf("timed out after %s waiting for /%s/ or exit\nstdout:\n%s\nstderr:\n%s", timeout, re, out, tail(errOut, 4000))
		}
	}
}

// waitQuietly waits until stdout matches re, the process exits or the
// timeout passes, without failing: the caller asserts on the output.
func (p *runProc) waitQuietly(re string, timeout time.Duration) {
	rx := regexp.MustCompile(re)
	deadline := time.After(timeout)
	for {
		out, changed := p.stdout.snapshot()
		if rx.MatchString(out) {
			return
		}
		select {
		case <-changed:
		case <-p.done:
			return
		case <-deadline:
			return
		}
	}
}

// podUID returns the UID run printed for the pod on its "validated" line.
func (p *runProc) podUID(pod string) string {
	p.t.Helper()
	return p.waitFor(`default/`+regexp.QuoteMeta(pod)+`\s+validated\s+.*uid ([0-9a-f-]+)`, 30*time.Second)[1]
}

// statusLines returns the summaries of the pod's status lines in out, in
// order.
func statusLines(out, pod string) []string {
	rx := regexp.MustCompile(`(?m)^\[[ 0-9.]+s\] default/` + regexp.QuoteMeta(pod) + `\s+status\s+(.*)$`)
	var lines []string
	for _, m := range rx.FindAllStringSubmatch(out, -1) {
		lines = append(lines, m[1])
	}
	return lines
}

// restartsOf returns the restarts=N of a container in a status summary (0
// when not shown). A waiting message may hold one level of parentheses
// (the pod UID in the CrashLoopBackOff message).
func restartsOf(summary, container string) int {
	state := `(?:running|terminated\([^)]*\)|waiting\((?:[^()]|\([^)]*\))*\))`
	m := regexp.MustCompile(`(?:^| )` + regexp.QuoteMeta(container) + `:` + state + `(?:,restarts=(\d+))?`).FindStringSubmatch(summary)
	if m == nil || m[1] == "" {
		return 0
	}
	n, _ := strconv.Atoi(m[1])
	return n
}

// shortCtx is a context for one CRI call inside a polling loop.
func shortCtx() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), scaled(10*time.Second))
}

// restartCount reads the restart count annotation (-1 when missing).
func restartCount(annotations map[string]string) int {
	n, err := strconv.Atoi(annotations[restartCountAnnotation])
	if err != nil {
		return -1
	}
	return n
}

// instance is one runtime instance of a container, as sampled from CRI.
type instance struct {
	id       string
	restarts int   // restart count annotation
	started  int64 // StartedAt, ns (0 = not seen started)
	finished int64 // FinishedAt, ns (0 = not seen exited)
	exitCode int32
}

func (i *instance) String() string {
	f := func(ns int64) string {
		if ns == 0 {
			return "-"
		}
		return time.Unix(0, ns).Format("15:04:05.000")
	}
	return fmt.Sprintf("{%s restarts=%d started=%s finished=%s exit=%d}", shortID(i.id), i.restarts, f(i.started), f(i.finished), i.exitCode)
}

func shortID(id string) string {
	if len(id) > 13 {
		return id[:13]
	}
	return id
}

// sampleInstances polls CRI every 100 ms for the instances of one container
// of a pod and records each instance's start and finish the first time it
// is seen started and exited. The agent keeps only the newest exited
// instance, so sampling must keep up as instances come and go. It returns
// the instances by restart count once done reports true. Two instances with
// the same restart count fail the test.
func sampleInstances(t *testing.T, pod, container string, timeout time.Duration, done func(map[int]*instance) bool) map[int]*instance {
	t.Helper()
	byID := map[string]*instance{}
	byCount := map[int]*instance{}
	filter := &runtimeapi.ContainerFilter{LabelSelector: map[string]string{
		"io.kubernetes.pod.name":       pod,
		"io.kubernetes.container.name": container,
	}}
	timeout = scaled(timeout)
	deadline := time.Now().Add(timeout)
	for {
		c, cancel := shortCtx()
		cs, err := suite.rt.ListContainers(c, filter)
		cancel()
		require.NoError(t, err)
		for _, ctr := range cs {
			in := byID[ctr.Id]
			if in != nil && in.finished != 0 {
				continue
			}
			if ctr.State == runtimeapi.ContainerState_CONTAINER_CREATED {
				continue
			}
			c, cancel := shortCtx()
			resp, err := suite.rt.ContainerStatus(c, ctr.Id, false)
			cancel()
			if cri.IsNotFound(err) {
				continue // pruned between list and status
			}
			require.NoError(t, err)
			s := resp.GetStatus()
			if in == nil {
				in = &instance{id: ctr.Id, restarts: restartCount(s.GetAnnotations())}
				if other, dup := byCount[in.restarts]; dup {
					t.Fatalf("two instances of %s/%s with restart count %d: %v and %v", pod, container, in.restarts, other, in)
				}
				byID[ctr.Id] = in
				byCount[in.restarts] = in
			}
			in.started = s.GetStartedAt()
			if s.GetState() == runtimeapi.ContainerState_CONTAINER_EXITED {
				in.finished = s.GetFinishedAt()
				in.exitCode = s.GetExitCode()
			}
		}
		listed := make(map[string]bool, len(cs))
		for _, ctr := range cs {
			listed[ctr.Id] = true
		}
		for id, in := range byID {
			if in.finished == 0 && !listed[id] {
				// Its FinishedAt is lost: say so now rather than time out.
				t.Fatalf("instance %v of %s/%s was removed before a sample saw it exited; instances so far: %v", in, pod, container, byCount)
			}
		}
		if done(byCount) {
			return byCount
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s sampling %s/%s; instances so far: %v", timeout, pod, container, byCount)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// consistently checks fn every 100 ms for d and fails the test the first
// time it returns an error. It is for asserting that something does NOT
// happen (no restart, no new object) over a few relist periods, which no
// condition can be waited on for.
func consistently(t *testing.T, d time.Duration, fn func() error) {
	t.Helper()
	end := time.Now().Add(d)
	for time.Now().Before(end) {
		if err := fn(); err != nil {
			t.Fatal(err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// watchNoObjects polls CRI in the background for any sandbox or container
// labelled with the pod name until the returned stop function is called;
// stop returns what it saw (empty when nothing ever existed).
func watchNoObjects(pod string) (stop func() []string) {
	quit := make(chan struct{})
	result := make(chan []string, 1)
	go func() {
		var seen []string
		known := map[string]bool{}
		for {
			c, cancel := shortCtx()
			sbs, _ := suite.rt.ListPodSandbox(c, &runtimeapi.PodSandboxFilter{LabelSelector: map[string]string{"io.kubernetes.pod.name": pod}})
			cs, _ := suite.rt.ListContainers(c, &runtimeapi.ContainerFilter{LabelSelector: map[string]string{"io.kubernetes.pod.name": pod}})
			cancel()
			for _, sb := range sbs {
				if !known[sb.Id] {
					known[sb.Id] = true
					seen = append(seen, "sandbox "+shortID(sb.Id)+" "+sb.State.String())
				}
			}
			for _, ctr := range cs {
				if !known[ctr.Id] {
					known[ctr.Id] = true
					seen = append(seen, "container "+ctr.GetMetadata().GetName()+" "+shortID(ctr.Id)+" "+ctr.State.String())
				}
			}
			select {
			case <-quit:
				result <- seen
				return
			case <-time.After(100 * time.Millisecond):
			}
		}
	}()
	return func() []string {
		close(quit)
		return <-result
	}
}

// removePodObjects stops and removes every sandbox and container labelled
// with one of the pod names, straight through CRI. Tests that kill the agent
// register it first (so it runs last) to leave nothing behind if they fail
// before a second run tore the pods down.
func removePodObjects(t *testing.T, pods ...string) {
	t.Cleanup(func() {
		c, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		for _, pod := range pods {
			sel := map[string]string{"io.kubernetes.pod.name": pod}
			cs, err := suite.rt.ListContainers(c, &runtimeapi.ContainerFilter{LabelSelector: sel})
			if err != nil {
				t.Logf("cleanup %s: %v", pod, err)
				continue
			}
			for _, ctr := range cs {
				_ = suite.rt.StopContainer(c, ctr.Id, 0)
				_ = suite.rt.RemoveContainer(c, ctr.Id)
			}
			sbs, err := suite.rt.ListPodSandbox(c, &runtimeapi.PodSandboxFilter{LabelSelector: sel})
			if err != nil {
				t.Logf("cleanup %s: %v", pod, err)
				continue
			}
			for _, sb := range sbs {
				_ = suite.rt.StopPodSandbox(c, sb.Id)
				_ = suite.rt.RemovePodSandbox(c, sb.Id)
			}
			if len(cs)+len(sbs) > 0 {
				t.Logf("cleanup %s: removed %d container(s), %d sandbox(es) the test left", pod, len(cs), len(sbs))
			}
		}
	})
}

// podObjects is a pod's sandboxes and containers as CRI reports them, for
// comparing before and after an agent or runtime restart.
type podObjects struct {
	sandboxes  []string          // sandbox IDs
	containers map[string]ctrRec // by container ID
}

// ctrRec is what must not change about a container that was not restarted.
type ctrRec struct {
	name     string
	state    string
	restarts int
	started  int64
}

func (o podObjects) String() string {
	var b strings.Builder
	sbs := slices.Sorted(slices.Values(o.sandboxes))
	fmt.Fprintf(&b, "sandboxes %v containers {", sbs)
	for _, id := range slices.Sorted(maps.Keys(o.containers)) {
		c := o.containers[id]
		fmt.Fprintf(&b, " %s:%s/%s/r%d/%d", shortID(id), c.name, c.state, c.restarts, c.started)
	}
	b.WriteString(" }")
	return b.String()
}

// snapshotPod reads a pod's objects from CRI (with each container's
// StartedAt from ContainerStatus).
func snapshotPod(t *testing.T, pod string) podObjects {
	t.Helper()
	o := podObjects{containers: map[string]ctrRec{}}
	for _, sb := range podSandboxes(t, pod) {
		o.sandboxes = append(o.sandboxes, sb.Id+"/"+sb.State.String())
	}
	for _, ctr := range podContainers(t, pod) {
		resp, err := suite.rt.ContainerStatus(ctx(t), ctr.Id, false)
		require.NoError(t, err)
		o.containers[ctr.Id] = ctrRec{
			name:     ctr.GetMetadata().GetName(),
			state:    ctr.State.String(),
			restarts: restartCount(ctr.Annotations),
			started:  resp.GetStatus().GetStartedAt(),
		}
	}
	return o
}

// containerdDir is the private containerd's directory (TestMain's layout).
func containerdDir() string { return filepath.Join(suite.dir, "containerd") }

// containerdPid reads the private containerd's pid file.
func containerdPid(t *testing.T) int {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(containerdDir(), "containerd.pid"))
	require.NoError(t, err)
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	require.NoError(t, err)
	return pid
}

// procGone reports whether pid has exited (a zombie counts as gone: the
// private containerd is not our child, so we cannot reap it).
func procGone(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return true
	}
	// pid (comm) S ...: the state follows the last ')'.
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i < 0 || i+2 >= len(s) || s[i+2] == 'Z' || s[i+2] == 'X'
}

// stopContainerd sends SIGTERM to the private containerd and waits until it
// has exited. Its shims, and with them the containers, keep running.
func stopContainerd(t *testing.T) {
	t.Helper()
	pid := containerdPid(t)
	require.False(t, procGone(pid), "containerd pid %d is not running", pid)
	require.NoError(t, syscall.Kill(pid, syscall.SIGTERM))
	eventually(t, 30*time.Second, fmt.Sprintf("containerd pid %d to exit", pid), func() bool { return procGone(pid) })
}

// startContainerd starts the private containerd again (the script restarts
// it when the pid file names a dead process) and waits until our CRI client
// answers again.
func startContainerd(t *testing.T) {
	t.Helper()
	cmd := exec.Command(filepath.Join(suite.repo, "hack/start-containerd.sh"), containerdDir())
	cmd.Env = append(os.Environ(), "REGISTRY="+suite.registry)
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "start containerd:\n%s", out)
	waitCRI(t)
}

// ensureContainerd restarts the private containerd if a failed test left it
// stopped, so that the other tests and the suite teardown find it.
func ensureContainerd(t *testing.T) {
	t.Cleanup(func() {
		b, err := os.ReadFile(filepath.Join(containerdDir(), "containerd.pid"))
		if err != nil {
			return
		}
		pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
		if pid > 0 && !procGone(pid) {
			return
		}
		t.Logf("cleanup: private containerd is down; starting it again")
		cmd := exec.Command(filepath.Join(suite.repo, "hack/start-containerd.sh"), containerdDir())
		cmd.Env = append(os.Environ(), "REGISTRY="+suite.registry)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Logf("cleanup: start containerd: %v\n%s", err, out)
		}
	})
}

// waitCRI waits until the suite's CRI client gets answers again (gRPC
// reconnects with its own backoff after the runtime came back).
func waitCRI(t *testing.T) {
	t.Helper()
	eventually(t, time.Minute, "the CRI client to reconnect", func() bool {
		c, cancel := shortCtx()
		defer cancel()
		_, err := suite.rt.ListPodSandbox(c, nil)
		return err == nil
	})
}

// assertFirstRestartImmediate checks that a container's first restart
// (gap: instance 0's FinishedAt to instance 1's StartedAt) came without
// back-off. A back-off would be 10 s at least, and the agent would show
// it: a CrashLoopBackOff waiting state while restarts is still 0. The
// status lines are the proof; the gap need only be under the 10 s, since
// creating and starting a container on the loaded CI machine takes
// seconds (8.5 s on containerd 1.6 once, with both suites running; a
// bound of 5 s failed there).
func assertFirstRestartImmediate(t *testing.T, out, pod, container string, gap time.Duration) {
	t.Helper()
	for _, l := range statusLines(out, pod) {
		if restartsOf(l, container) == 0 {
			assert.NotContains(t, l, container+":waiting(CrashLoopBackOff", "the first restart waited for a back-off: %q", l)
		}
	}
	assert.Less(t, gap, scaled(10*time.Second), "first restart should be immediate (no back-off, which is 10 s at least): gap %s", gap)
}

// criLogLine splits a line of a CRI container log file into its time,
// stream, P|F tag and message.
func criLogLine(l string) (parts []string, ok bool) {
	parts = strings.SplitN(l, " ", 4)
	return parts, len(parts) == 4
}
