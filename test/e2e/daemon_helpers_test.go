package e2e

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
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

	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/minikubelet/minikubelet/agent/api"
	"github.com/minikubelet/minikubelet/cri"
)

// Helpers for daemon_test.go: a `minikubelet serve` process with its own
// socket, root dir, pod log dir and manifest dir, the client commands
// pointed at it, and its teardown.
//
// A starting daemon removes every minikubelet pod of the runtime that none
// of its sources wants (orphan collection), so two daemons, or a daemon
// and a foreground run, must never share the runtime: the daemon tests are
// not parallel at the top level. Subtests sharing one daemon are.

// daemon is one `minikubelet serve` across its restarts.
type daemon struct {
	sock      string // API socket (short path under /tmp)
	runDir    string // --run-dir (lock, tmpfs of the API's Secrets)
	root      string // --root-dir (API pods are persisted here)
	logDir    string // --pod-log-dir
	manifests string // --manifest-dir
	extra     []string
	// wrap runs the daemon through a command: wrap[0] with wrap[1:], then
	// minikubelet and its arguments (nil: minikubelet directly).
	wrap []string
	node []string    // node flags; agentArgs() when nil
	rt   *cri.Client // runtime for cleanup checks; suite.rt when nil
	// deleteClusterPod deletes a pod of the cluster source where it lives
	// (the API server) at cleanup; the local API refuses to.
	deleteClusterPod func(ctx context.Context, namespace, name string) error

	out  *syncBuffer // stdout and stderr of every generation
	cmd  *exec.Cmd   // the current generation
	done chan struct{}
	err  error
}

// newDaemon prepares (does not start) a daemon for the test. Cleanup
// deletes every pod through the daemon's API, removes the static manifests,
// waits until the daemon has no pod left and stops it with SIGTERM; last,
// whatever sandbox or container is still labelled with one of pods is
// removed through CRI (and the test fails: something was left behind).
func newDaemon(t *testing.T, pods []string, extra ...string) *daemon {
	t.Helper()
	return newDaemonOn(t, nil, nil, pods, extra...)
}

// newDaemonOn is newDaemon on another runtime: node are the node flags
// (nil: agentArgs(), the suite's runtime) and rt the runtime cleanup
// checks for leftovers (nil: suite.rt).
func newDaemonOn(t *testing.T, node []string, rt *cri.Client, pods []string, extra ...string) *daemon {
	t.Helper()
	if rt == nil {
		rt = suite.rt
	}
	// Registered first so that it runs last, after the daemon's teardown.
	t.Cleanup(func() {
		c, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		var left []string
		for _, pod := range pods {
			left = append(left, removeLeftovers(c, t, rt, pod)...)
		}
		if len(left) > 0 {
			t.Errorf("cleanup: the daemon left runtime objects behind (removed now through CRI): %v", left)
		}
	})
	sockDir, err := os.MkdirTemp("/tmp", "mkd-")
	require.NoError(t, err)
	runDir, err := os.MkdirTemp("/tmp", "mkr-")
	require.NoError(t, err)
	t.Cleanup(func() {
		// serve mounts the tmpfs of the local API's Secrets in its run
		// dir, and leaves it mounted (it survives a daemon restart).
		_ = syscall.Unmount(filepath.Join(runDir, "secrets"), syscall.MNT_DETACH)
		// Versions before the run dir mounted it beside the socket.
		_ = syscall.Unmount(filepath.Join(sockDir, "secrets"), syscall.MNT_DETACH)
		_ = os.RemoveAll(runDir)
		_ = os.RemoveAll(sockDir)
	})
	base := t.TempDir()
	d := &daemon{
		sock:      filepath.Join(sockDir, "api.sock"),
		runDir:    runDir,
		root:      filepath.Join(base, "root"),
		logDir:    filepath.Join(base, "pod-logs"),
		manifests: filepath.Join(base, "manifests"),
		extra:     extra,
		node:      node,
		rt:        rt,
		out:       newSyncBuffer(),
	}
	require.NoError(t, os.MkdirAll(d.manifests, 0o755))
	t.Cleanup(func() {
		if d.running() {
			d.teardown(t)
		}
		if t.Failed() {
			out, _ := d.out.snapshot()
			t.Logf("minikubelet serve output (tail):\n%s", tail(out, 12000))
		}
	})
	return d
}

// removeLeftovers stops and removes the sandboxes and containers labelled
// with the pod name and describes what it removed.
func removeLeftovers(c context.Context, t *testing.T, rt *cri.Client, pod string) []string {
	sel := map[string]string{"io.kubernetes.pod.name": pod}
	var left []string
	cs, err := rt.ListContainers(c, &runtimeapi.ContainerFilter{LabelSelector: sel})
	if err != nil {
		t.Logf("cleanup %s: %v", pod, err)
	}
	for _, ctr := range cs {
		left = append(left, fmt.Sprintf("%s container %s %s", pod, shortID(ctr.Id), ctr.State))
		_ = rt.StopContainer(c, ctr.Id, 0)
		_ = rt.RemoveContainer(c, ctr.Id)
	}
	sbs, err := rt.ListPodSandbox(c, &runtimeapi.PodSandboxFilter{LabelSelector: sel})
	if err != nil {
		t.Logf("cleanup %s: %v", pod, err)
	}
	for _, sb := range sbs {
		left = append(left, fmt.Sprintf("%s sandbox %s %s", pod, shortID(sb.Id), sb.State))
		_ = rt.StopPodSandbox(c, sb.Id)
		_ = rt.RemovePodSandbox(c, sb.Id)
	}
	return left
}

// args are serve's flags: the suite's node flags with this daemon's own
// directories and socket (later flags win).
func (d *daemon) args() []string {
	node := d.node
	if node == nil {
		node = agentArgs()
	}
	args := append([]string{"serve"}, node...)
	args = append(args, serveHostFlags()...)
	args = append(args,
		"--socket", d.sock,
		"--run-dir", d.runDir,
		"--root-dir", d.root,
		"--pod-log-dir", d.logDir,
		"--manifest-dir", d.manifests,
	)
	args = append(args, d.extra...)
	// A cluster-mode daemon's kubelet server takes --port 10250 by default,
	// which the tests running in parallel would contend for.
	if slices.Contains(d.extra, "--kubeconfig") && !slices.Contains(d.extra, "--port") {
		args = append(args, "--port", "0")
	}
	// Its healthz endpoint, 127.0.0.1:10248 by default, likewise: off
	// unless the test chooses a port.
	if slices.Contains(d.extra, "--kubeconfig") && !slices.Contains(d.extra, "--healthz-port") {
		args = append(args, "--healthz-port", "0")
	}
	return args
}

// start starts a new generation of the daemon and waits until its socket
// answers /healthz with 200.
func (d *daemon) start(t *testing.T) {
	t.Helper()
	require.False(t, d.running(), "daemon already running")
	fmt.Fprintf(d.out, "==== %s: minikubelet %s\n", time.Now().Format(time.TimeOnly), strings.Join(d.args(), " "))
	name, args := suite.bin, d.args()
	if len(d.wrap) > 0 {
		name, args = d.wrap[0], append(append(slices.Clone(d.wrap[1:]), suite.bin), args...)
	}
	d.cmd = exec.Command(name, args...)
	d.cmd.Stdout, d.cmd.Stderr = d.out, d.out
	require.NoError(t, d.cmd.Start())
	done := make(chan struct{})
	d.done = done
	cmd := d.cmd
	go func() {
		d.err = cmd.Wait()
		close(done)
	}()
	deadline := time.Now().Add(time.Minute)
	for {
		code, _, err := d.get("/healthz")
		if err == nil && code == http.StatusOK {
			return
		}
		select {
		case <-done:
			out, _ := d.out.snapshot()
			t.Fatalf("minikubelet serve exited (%v) before answering /healthz:\n%s", d.err, tail(out, 8000))
		default:
		}
		if time.Now().After(deadline) {
			out, _ := d.out.snapshot()
			t.Fatalf("minikubelet serve did not answer /healthz with 200 within 1m (last: %d %v):\n%s", code, err, tail(out, 8000))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// running reports whether the current generation runs.
func (d *daemon) running() bool {
	if d.cmd == nil {
		return false
	}
	select {
	case <-d.done:
		return false
	default:
		return true
	}
}

// stop sends SIGTERM and requires a clean exit within a minute.
func (d *daemon) stop(t *testing.T) {
	t.Helper()
	require.NoError(t, d.cmd.Process.Signal(syscall.SIGTERM))
	select {
	case <-d.done:
	case <-time.After(time.Minute):
		_ = d.cmd.Process.Kill()
		<-d.done
		t.Fatal("minikubelet serve did not exit within 1m of SIGTERM")
	}
	require.NoError(t, d.err, "serve's exit after SIGTERM")
}

// kill9 kills the daemon with SIGKILL: no teardown of any kind.
func (d *daemon) kill9(t *testing.T) {
	t.Helper()
	require.NoError(t, d.cmd.Process.Kill())
	select {
	case <-d.done:
	case <-time.After(30 * time.Second):
		t.Fatal("minikubelet serve did not die within 30s of SIGKILL")
	}
	fmt.Fprintf(d.out, "==== %s: killed with SIGKILL\n", time.Now().Format(time.TimeOnly))
}

// teardown deletes every pod the daemon has (API pods through the API,
// static pods by removing their files), waits until it lists none and
// stops it.
func (d *daemon) teardown(t *testing.T) {
	entries, _ := os.ReadDir(d.manifests)
	for _, e := range entries {
		_ = os.Remove(filepath.Join(d.manifests, e.Name()))
	}
	c := d.api()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	deleting := map[types.UID]bool{}
	for ctx.Err() == nil {
		l, err := c.ListPods(ctx, "")
		if err != nil {
			t.Logf("cleanup: list pods: %v", err)
			break
		}
		if len(l.Items) == 0 {
			break
		}
		for _, p := range l.Items {
			if p.DeletionTimestamp != nil {
				continue
			}
			var err error
			switch src := p.Annotations["kubernetes.io/config.source"]; {
			case src == "file":
				continue
			case src == "cluster" && d.deleteClusterPod != nil:
				if deleting[p.UID] {
					continue
				}
				deleting[p.UID] = true
				err = d.deleteClusterPod(ctx, p.Namespace, p.Name)
			default:
				_, err = c.DeletePod(ctx, p.Namespace, p.Name, nil)
			}
			if err != nil && !apierrors.IsNotFound(err) {
				t.Logf("cleanup: delete pod %s: %v", p.Name, err)
			}
		}
		time.Sleep(200 * time.Millisecond)
	}
	if ctx.Err() != nil {
		t.Errorf("cleanup: the daemon still has pods after 2m")
	}
	_ = d.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-d.done:
	case <-time.After(time.Minute):
		_ = d.cmd.Process.Kill()
		<-d.done
		t.Errorf("cleanup: minikubelet serve did not exit within 1m of SIGTERM")
	}
}

// api is a Go client of the daemon's API, for waiting on conditions.
func (d *daemon) api() *api.Client { return api.NewClient(d.sock) }

// get does an HTTP GET over the unix socket.
func (d *daemon) get(path string) (int, string, error) {
	hc := &http.Client{
		Timeout: 10 * time.Second,
		Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var dl net.Dialer
			return dl.DialContext(ctx, "unix", d.sock)
		}},
	}
	defer hc.CloseIdleConnections()
	resp, err := hc.Get("http://minikubelet" + path)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), err
}

// cliResult is the outcome of one client command.
type cliResult struct {
	stdout, stderr string
	code           int
}

func (r cliResult) String() string {
	return fmt.Sprintf("exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
}

// cli runs `minikubelet CMD --socket SOCK ARGS...` to completion (2 min at
// most).
func (d *daemon) cli(t *testing.T, cmd string, args ...string) cliResult {
	t.Helper()
	return d.cliIn(t, "", cmd, args...)
}

// cliIn is cli with stdin given.
func (d *daemon) cliIn(t *testing.T, stdin, cmd string, args ...string) cliResult {
	t.Helper()
	c, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	full := append([]string{cmd, "--socket", d.sock}, args...)
	p := exec.CommandContext(c, suite.bin, full...)
	p.Stdin = strings.NewReader(stdin)
	var stdout, stderr strings.Builder
	p.Stdout, p.Stderr = &stdout, &stderr
	err := p.Run()
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		t.Fatalf("minikubelet %s: %v", strings.Join(full, " "), err)
	}
	require.NoError(t, c.Err(), "minikubelet %s did not finish within 2m", strings.Join(full, " "))
	return cliResult{stdout: stdout.String(), stderr: stderr.String(), code: p.ProcessState.ExitCode()}
}

// startCLI starts a long-running client command (run, logs -f) whose
// output the test follows. Cleanup interrupts it if still running.
func (d *daemon) startCLI(t *testing.T, cmd string, args ...string) *runProc {
	t.Helper()
	full := append([]string{cmd, "--socket", d.sock}, args...)
	p := &runProc{t: t, stdout: newSyncBuffer(), stderr: newSyncBuffer(), done: make(chan struct{})}
	p.cmd = exec.Command(suite.bin, full...)
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
			case <-time.After(30 * time.Second):
				_ = p.cmd.Process.Kill()
				<-p.done
			}
		}
		if t.Failed() {
			out, _ := p.stdout.snapshot()
			errOut, _ := p.stderr.snapshot()
			t.Logf("minikubelet %s stdout (tail):\n%s\nstderr (tail):\n%s", strings.Join(full, " "), tail(out, 6000), tail(errOut, 4000))
		}
	})
	return p
}

// run starts `minikubelet run --socket SOCK FILE` on the manifest: without
// node flags, so that it submits to the daemon.
func (d *daemon) run(t *testing.T, manifest string, extra ...string) *runProc {
	t.Helper()
	path := writeManifest(t, manifest)
	return d.startCLI(t, "run", append(extra, path)...)
}

// waitExit waits for the process to exit and returns its exit code.
func waitExit(t *testing.T, p *runProc, timeout time.Duration) int {
	t.Helper()
	select {
	case <-p.done:
	case <-time.After(timeout):
		out, _ := p.stdout.snapshot()
		errOut, _ := p.stderr.snapshot()
		t.Fatalf("%s did not exit within %s\nstdout:\n%s\nstderr:\n%s", strings.Join(p.cmd.Args, " "), timeout, out, tail(errOut, 4000))
	}
	return p.cmd.ProcessState.ExitCode()
}

// waitPod polls the API until cond holds for the pod (nil when the pod does
// not exist) and returns the last pod seen.
func (d *daemon) waitPod(t *testing.T, name, what string, timeout time.Duration, cond func(*v1.Pod) bool) *v1.Pod {
	t.Helper()
	c := d.api()
	deadline := time.Now().Add(timeout)
	var last *v1.Pod
	var lastErr error
	for {
		ctx, cancel := shortCtx()
		p, err := c.GetPod(ctx, "default", name)
		cancel()
		switch {
		case apierrors.IsNotFound(err):
			p, lastErr = nil, nil
		case err != nil:
			lastErr = err
		}
		if err == nil || apierrors.IsNotFound(err) {
			last = p
			if cond(p) {
				return p
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for pod %s: %s; last error %v; last seen:\n%s", timeout, name, what, lastErr, podSummary(last))
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// podSummary is a short description of a pod for failure messages.
func podSummary(p *v1.Pod) string {
	if p == nil {
		return "<not found>"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "phase=%s ip=%s reason=%q message=%q deleting=%v", p.Status.Phase, p.Status.PodIP, p.Status.Reason, p.Status.Message, p.DeletionTimestamp != nil)
	for _, c := range p.Status.Conditions {
		fmt.Fprintf(&b, " %s=%s", c.Type, c.Status)
	}
	for _, cs := range p.Status.ContainerStatuses {
		fmt.Fprintf(&b, "\n  %s ready=%v restarts=%d id=%s state=%+v last=%+v", cs.Name, cs.Ready, cs.RestartCount, shortID(strings.TrimPrefix(cs.ContainerID, "containerd://")), cs.State, cs.LastTerminationState)
	}
	return b.String()
}

// isRunning: phase Running with an IP.
func isRunning(p *v1.Pod) bool {
	return p != nil && p.Status.Phase == v1.PodRunning && p.Status.PodIP != ""
}

// isReady: the Ready condition is True.
func isReady(p *v1.Pod) bool {
	if p == nil {
		return false
	}
	for _, c := range p.Status.Conditions {
		if c.Type == v1.PodReady {
			return c.Status == v1.ConditionTrue
		}
	}
	return false
}

// metricValue returns the sum of the samples of a metric whose labels
// contain every one of labels (each `k="v"`), and whether any matched.
func metricValue(text, name string, labels ...string) (float64, bool) {
	rx := regexp.MustCompile(`^` + regexp.QuoteMeta(name) + `(\{[^}]*\})?\s+(\S+)`)
	sum, found := 0.0, false
	sc := bufio.NewScanner(strings.NewReader(text))
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		m := rx.FindStringSubmatch(sc.Text())
		if m == nil {
			continue
		}
		ok := true
		for _, l := range labels {
			ok = ok && strings.Contains(m[1], l)
		}
		if !ok {
			continue
		}
		v, err := strconv.ParseFloat(m[2], 64)
		if err != nil {
			continue
		}
		sum += v
		found = true
	}
	return sum, found
}
