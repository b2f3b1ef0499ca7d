package e2e

// Over 600 lines: the daemon's end-to-end cases share one harness setup and
// its helpers; the larger areas (exec, logs, kills) have files of their own.

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net"
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
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/watch"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/minikubelet/minikubelet/agent/api"
)

// End-to-end tests of the daemon (issue #6): `minikubelet serve` in the
// background against the private containerd, driven through its CLI (run,
// get, describe, logs, exec, delete) and its socket (/healthz, /metrics).
//
// The top-level tests are not parallel: a starting daemon collects every
// minikubelet pod no source of its own wants, so daemons must not overlap.
// TestDaemon_Client's subtests share one daemon and run in parallel, each
// with its own pod names.

const readyPodManifest = `
apiVersion: v1
kind: Pod
metadata:
  name: e2e-d-ready
spec:
  terminationGracePeriodSeconds: 2
  containers:
  - name: web
    image: REGISTRY/minikubelet/testserver:v1
    args: ["--listen-delay=2s"]
    readinessProbe:
      tcpSocket:
        port: 8080
      periodSeconds: 1
`

// crashPodManifest crash-loops at once. Its startup probe never passes,
// so the container is never Started, hence never Ready: without it, a
// status computed in the instant between StartContainer and the exit shows
// the pod Running and Ready (no readiness probe), as the kubelet's would,
// and run rightly returns 0 then (seen once under load).
const crashPodManifest = `
apiVersion: v1
kind: Pod
metadata:
  name: e2e-d-crash
spec:
  terminationGracePeriodSeconds: 2
  restartPolicy: Always
  containers:
  - name: app
    image: REGISTRY/minikubelet/busybox:1.36
    command: ["sh", "-c", "exit 1"]
    startupProbe:
      exec:
        command: ["false"]
      periodSeconds: 10
      failureThreshold: 100
`

// crashUnreadyPodManifest crash-loops too, but is never Ready (its
// readiness probe always fails), so run cannot stop at Ready before the
// crash loop shows.
const crashUnreadyPodManifest = `
apiVersion: v1
kind: Pod
metadata:
  name: e2e-d-crash-unready
spec:
  terminationGracePeriodSeconds: 2
  restartPolicy: Always
  containers:
  - name: app
    image: REGISTRY/minikubelet/busybox:1.36
    command: ["sh", "-c", "sleep 1; exit 3"]
    readinessProbe:
      exec:
        command: ["false"]
      periodSeconds: 1
`

const logsPodManifest = `
apiVersion: v1
kind: Pod
metadata:
  name: e2e-d-logs
spec:
  terminationGracePeriodSeconds: 2
  containers:
  - name: app
    image: REGISTRY/minikubelet/busybox:1.36
    command: ["sh", "-c", "i=0; while true; do echo line $i; i=$((i+1)); sleep 0.01; done"]
`

const staticPodManifest = `
apiVersion: v1
kind: Pod
metadata:
  name: e2e-d-static
spec:
  terminationGracePeriodSeconds: 2
  containers:
  - name: app
    image: REGISTRY/minikubelet/busybox:1.36
    command: ["sleep", "3600"]
`

const noImagePodManifest = `
apiVersion: v1
kind: Pod
metadata:
  name: e2e-d-noimage
spec:
  terminationGracePeriodSeconds: 2
  containers:
  - name: app
    image: REGISTRY/minikubelet/does-not-exist:v1
`

// TestDaemon_Client runs one daemon and checks run, get, exec, logs -f,
// describe, the manifest directory, the socket's mode and /metrics against
// it.
func TestDaemon_Client(t *testing.T) {
	d := newDaemon(t, []string{"e2e-d-ready", "e2e-d-crash", "e2e-d-crash-unready", "e2e-d-logs", "e2e-d-static", "e2e-d-noimage", "e2e-d-config", "e2e-d-watch"},
		"--container-log-max-size", "32Ki")
	d.start(t)

	t.Run("SocketIs0600", func(t *testing.T) {
		fi, err := os.Stat(d.sock)
		require.NoError(t, err)
		assert.NotZero(t, fi.Mode()&os.ModeSocket, "%s is not a socket: %s", d.sock, fi.Mode())
		assert.Equal(t, os.FileMode(0o600), fi.Mode().Perm(), "socket mode %s", fi.Mode())
		st := fi.Sys().(*syscall.Stat_t)
		assert.Equal(t, uint32(0), st.Uid, "socket owner")
	})

	t.Run("WatchFollowsAPod", func(t *testing.T) {
		t.Parallel()
		testWatchFollowsAPod(t, d)
	})
	t.Run("RunReturnsWhenReady", func(t *testing.T) {
		t.Parallel()
		testRunReady(t, d)
	})
	t.Run("RunFailsOnCrashLoop", func(t *testing.T) {
		t.Parallel()
		testRunCrashLoop(t, d, "e2e-d-crash", crashPodManifest, 1)
	})
	t.Run("RunFailsOnCrashLoopNeverReady", func(t *testing.T) {
		t.Parallel()
		testRunCrashLoop(t, d, "e2e-d-crash-unready", crashUnreadyPodManifest, 3)
	})
	t.Run("LogsFollowAcrossRotation", func(t *testing.T) {
		t.Parallel()
		testLogsFollowRotation(t, d)
	})
	t.Run("ManifestDirAddRemove", func(t *testing.T) {
		t.Parallel()
		testManifestDir(t, d)
	})
	t.Run("DescribeUnknownImage", func(t *testing.T) {
		t.Parallel()
		testDescribeUnknownImage(t, d)
	})
	t.Run("RunConfigData", func(t *testing.T) {
		t.Parallel()
		const pod = "e2e-d-config"
		path := runConfigData(t, d, pod)
		deleteConfigData(t, d, pod, path)
	})
}

// testRunReady: `run` through the daemon prints the startup steps and
// returns 0 once the pod is Ready (not merely Running: the readiness probe
// only passes 2 s after start). Then get, exec and /metrics on that pod,
// and delete --wait leaves nothing in the runtime.
func testRunReady(t *testing.T, d *daemon) {
	const pod = "e2e-d-ready"
	p := d.run(t, readyPodManifest)
	code := waitExit(t, p, 3*time.Minute)
	out := p.output()
	errOut, _ := p.stderr.snapshot()
	require.Equal(t, 0, code, "run's exit code\nstdout:\n%s\nstderr:\n%s", out, tail(errOut, 4000))
	t.Logf("run output:\n%s", out)

	assert.Regexp(t, `node\s+daemon\s+submitting to the minikubelet daemon at `+regexp.QuoteMeta(d.sock), out)
	assert.Regexp(t, `default/e2e-d-ready\s+accepted\s+uid [0-9a-f-]{36}, qos BestEffort`, out)
	for _, step := range []string{"sandbox", "image", "created", "started", "running", "ready"} {
		assert.Regexp(t, `(?m)^\[[ 0-9.]+s\] default/e2e-d-ready\s+`+step+`\s`, out, "the %s step line", step)
	}
	lines := statusLines(out, pod)
	unready := slices.IndexFunc(lines, func(l string) bool { return strings.Contains(l, "ready=0/1 web:running,unready") })
	ready := slices.IndexFunc(lines, func(l string) bool { return strings.Contains(l, "ready=1/1 web:running") })
	assert.GreaterOrEqual(t, unready, 0, "no Running-but-unready status line:\n%s", strings.Join(lines, "\n"))
	require.GreaterOrEqual(t, ready, 0, "no ready=1/1 status line:\n%s", strings.Join(lines, "\n"))
	assert.Less(t, unready, ready, "status lines out of order:\n%s", strings.Join(lines, "\n"))
	assert.Equal(t, len(lines)-1, ready, "run went on after Ready:\n%s", strings.Join(lines, "\n"))

	c, cancel := shortCtx()
	got, err := d.api().GetPod(c, "default", pod)
	cancel()
	require.NoError(t, err)
	assert.True(t, isReady(got), "run returned but the pod is not Ready: %s", podSummary(got))

	t.Run("GetPodsJSONIsPodList", func(t *testing.T) {
		r := d.cli(t, "get", "pods", "-o", "json")
		require.Equal(t, 0, r.code, "%s", r)
		var l v1.PodList
		dec := json.NewDecoder(strings.NewReader(r.stdout))
		dec.DisallowUnknownFields()
		require.NoError(t, dec.Decode(&l), "get -o json is not a v1.PodList:\n%s", r.stdout)
		assert.Equal(t, "PodList", l.Kind)
		assert.Equal(t, "v1", l.APIVersion)
		i := slices.IndexFunc(l.Items, func(p v1.Pod) bool { return p.Name == pod })
		require.GreaterOrEqual(t, i, 0, "%s not in the list:\n%s", pod, r.stdout)
		item := l.Items[i]
		assert.Equal(t, "default", item.Namespace)
		assert.NotEmpty(t, item.UID)
		assert.Equal(t, e2eNode, item.Spec.NodeName)
		assert.Equal(t, v1.PodRunning, item.Status.Phase)
		ip := net.ParseIP(item.Status.PodIP)
		require.NotNil(t, ip, "podIP %q", item.Status.PodIP)
		_, cidr, _ := net.ParseCIDR(e2ePodCIDR)
		assert.True(t, cidr.Contains(ip), "podIP %s outside %s", ip, e2ePodCIDR)
		sbs := podSandboxes(t, pod)
		require.Len(t, sbs, 1)
		st, err := suite.rt.PodSandboxStatus(ctx(t), sbs[0].Id, false)
		require.NoError(t, err)
		assert.Equal(t, st.GetStatus().GetNetwork().GetIp(), item.Status.PodIP, "podIP vs the runtime's sandbox IP")
		require.Len(t, item.Status.ContainerStatuses, 1)
		cs := item.Status.ContainerStatuses[0]
		assert.True(t, cs.Ready)
		assert.NotNil(t, cs.State.Running)
		assert.Equal(t, "containerd://"+containerID(t, pod, "web"), cs.ContainerID)
	})

	t.Run("GetPodsTable", func(t *testing.T) {
		r := d.cli(t, "get", "pods")
		require.Equal(t, 0, r.code, "%s", r)
		rows := strings.Split(strings.TrimRight(r.stdout, "\n"), "\n")
		assert.Equal(t, []string{"NAME", "READY", "STATUS", "RESTARTS", "AGE"}, strings.Fields(rows[0]), "header:\n%s", r.stdout)
		var row []string
		for _, l := range rows[1:] {
			if f := strings.Fields(l); len(f) > 0 && f[0] == pod {
				row = f
			}
		}
		require.NotNil(t, row, "no row for %s:\n%s", pod, r.stdout)
		require.Len(t, row, 5, "row %q", row)
		assert.Equal(t, []string{pod, "1/1", "Running", "0"}, row[:4], "table:\n%s", r.stdout)
		assert.Regexp(t, `^\d+(s|m\d*s?)$`, row[4], "AGE")

		r = d.cli(t, "get", "pods", pod, "-o", "wide")
		require.Equal(t, 0, r.code, "%s", r)
		rows = strings.Split(strings.TrimRight(r.stdout, "\n"), "\n")
		require.Len(t, rows, 2, "get pods %s -o wide:\n%s", pod, r.stdout)
		assert.Equal(t, []string{"NAME", "READY", "STATUS", "RESTARTS", "AGE", "IP", "NODE"}, strings.Fields(rows[0]))
		f := strings.Fields(rows[1])
		require.Len(t, f, 7, "row %q", rows[1])
		assert.Equal(t, got.Status.PodIP, f[5])
		assert.Equal(t, e2eNode, f[6])
	})

	t.Run("ExecExitCode", func(t *testing.T) {
		r := d.cli(t, "exec", pod, "--", "sh", "-c", "echo out; echo err >&2; exit 7")
		assert.Equal(t, 7, r.code, "%s", r)
		assert.Equal(t, "out\n", r.stdout)
		assert.Contains(t, r.stderr, "err\n")
		r = d.cli(t, "exec", pod, "--", "hostname")
		assert.Equal(t, 0, r.code, "%s", r)
		assert.Equal(t, pod+"\n", r.stdout)
	})

	t.Run("Metrics", func(t *testing.T) {
		out, err := exec.Command("curl", "-sS", "--fail", "--unix-socket", d.sock, "http://localhost/metrics").CombinedOutput()
		require.NoError(t, err, "curl /metrics:\n%s", out)
		text := string(out)
		v, ok := metricValue(text, "kubelet_running_pods")
		assert.True(t, ok, "no kubelet_running_pods")
		assert.GreaterOrEqual(t, v, 1.0, "kubelet_running_pods")
		v, ok = metricValue(text, "kubelet_running_containers")
		assert.True(t, ok, "no kubelet_running_containers")
		assert.GreaterOrEqual(t, v, 1.0, "kubelet_running_containers")
		v, ok = metricValue(text, "kubelet_pod_start_sli_duration_seconds_count")
		assert.True(t, ok, "no kubelet_pod_start_sli_duration_seconds_count")
		assert.GreaterOrEqual(t, v, 1.0, "kubelet_pod_start_sli_duration_seconds_count")
		v, ok = metricValue(text, "kubelet_runtime_operations_duration_seconds_count", `operation_type="RunPodSandbox"`)
		assert.True(t, ok, `no kubelet_runtime_operations_duration_seconds_count{operation_type="RunPodSandbox"}`)
		assert.GreaterOrEqual(t, v, 1.0, "RunPodSandbox operations")
		if t.Failed() {
			t.Logf("/metrics:\n%s", grepLines(text, "kubelet_"))
		}
	})

	deletePodWait(t, d, pod)
}

// deletePodWait deletes an API pod with `delete pod NAME --wait` and
// requires that the runtime holds nothing of it afterwards.
func deletePodWait(t *testing.T, d *daemon, pod string) {
	t.Helper()
	r := d.cli(t, "delete", "pod", pod, "--wait", "--timeout", "90s")
	require.Equal(t, 0, r.code, "%s", r)
	assert.Equal(t, fmt.Sprintf("pod %q deleted\n", pod), r.stdout)
	assert.Empty(t, podSandboxes(t, pod), "sandboxes left after delete --wait")
	assert.Empty(t, podContainers(t, pod), "containers left after delete --wait")
}

// testRunCrashLoop: `run` on a pod whose container keeps exiting with
// code exit exits non-zero naming CrashLoopBackOff and the last exit code.
func testRunCrashLoop(t *testing.T, d *daemon, pod, manifest string, exit int) {
	p := d.run(t, manifest, "--timeout", "2m")
	code := waitExit(t, p, 3*time.Minute)
	out := p.output()
	errOut, _ := p.stderr.snapshot()
	t.Logf("run exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	assert.Equal(t, 1, code, "run's exit code")
	assert.Regexp(t, `default/`+pod+`\s+accepted\s+uid `, out)
	assert.Regexp(t, `default/`+pod+`\s+started\s`, out)
	assert.Contains(t, errOut, "default/"+pod)
	assert.Contains(t, errOut, "CrashLoopBackOff")
	assert.Regexp(t, fmt.Sprintf(`last exit code %d\b`, exit), errOut)
	assert.NotContains(t, errOut, "not Running/Ready after", "ended by --timeout, not by the failure state")

	c, cancel := shortCtx()
	got, err := d.api().GetPod(c, "default", pod)
	cancel()
	require.NoError(t, err, "the pod stays with the daemon after run failed")
	require.Len(t, got.Status.ContainerStatuses, 1)
	assert.GreaterOrEqual(t, got.Status.ContainerStatuses[0].RestartCount, int32(1), "restarts when run returned: %s", podSummary(got))
	deletePodWait(t, d, pod)
}

// testLogsFollowRotation: `logs -f` on a pod printing numbered lines fast
// reads every number exactly once, in order, across a rotation of 0.log by
// the daemon (32Ki, checked every 10 s).
func testLogsFollowRotation(t *testing.T, d *daemon) {
	const pod = "e2e-d-logs"
	p := d.run(t, logsPodManifest)
	code := waitExit(t, p, 3*time.Minute)
	require.Equal(t, 0, code, "run's exit code\n%s", p.output())
	got := d.waitPod(t, pod, "Running", time.Minute, isRunning)
	dir := filepath.Join(d.logDir, fmt.Sprintf("default_%s_%s", pod, got.UID), "app")
	before := rotatedLogs(t, dir)

	f := d.startCLI(t, "logs", "-f", pod)
	lineRE := regexp.MustCompile(`^line (\d+)$`)
	maxRead := func() int {
		out, _ := f.stdout.snapshot()
		lines := strings.Split(out, "\n")
		for i := len(lines) - 2; i >= 0; i-- { // the last element is a partial line
			if m := lineRE.FindStringSubmatch(lines[i]); m != nil {
				n, _ := strconv.Atoi(m[1])
				return n
			}
		}
		return -1
	}
	var rotated string
	lastRotated := -1
	deadline := time.Now().Add(90 * time.Second)
	for {
		if rotated == "" {
			for _, r := range rotatedLogs(t, dir) {
				if !slices.Contains(before, r) {
					rotated = r
					lastRotated = lastLogNumber(t, filepath.Join(dir, r))
					t.Logf("rotated: %s, last number in it %d (follower at %d)", r, lastRotated, maxRead())
					break
				}
			}
		}
		if rotated != "" && maxRead() >= lastRotated+50 {
			break
		}
		select {
		case <-f.done:
			out, _ := f.stdout.snapshot()
			errOut, _ := f.stderr.snapshot()
			t.Fatalf("logs -f exited (%v) while following\nstdout (tail):\n%s\nstderr:\n%s", f.err, tail(out, 2000), errOut)
		default:
		}
		if time.Now().After(deadline) {
			files, _ := os.ReadDir(dir)
			var names []string
			for _, e := range files {
				fi, _ := e.Info()
				names = append(names, fmt.Sprintf("%s(%d)", e.Name(), fi.Size()))
			}
			t.Fatalf("timed out: rotated=%q (last %d), follower at %d; files in %s: %v", rotated, lastRotated, maxRead(), dir, names)
		}
		time.Sleep(200 * time.Millisecond)
	}
	require.NoError(t, f.cmd.Process.Signal(syscall.SIGINT))
	select {
	case <-f.done:
	case <-time.After(30 * time.Second):
		t.Fatal("logs -f did not exit within 30s of SIGINT")
	}
	// A user's Ctrl-C is a normal end: exit 130 with no message, as
	// kubectl dying of the signal (issue #28).
	var exit *exec.ExitError
	if assert.ErrorAs(t, f.err, &exit, "logs -f exit after SIGINT") {
		assert.Equal(t, 130, exit.ExitCode(), "logs -f exit after SIGINT")
	}
	errOut, _ := f.stderr.snapshot()
	assert.NotContains(t, errOut, "context canceled")

	out, _ := f.stdout.snapshot()
	lines := strings.Split(out, "\n")
	lines = lines[:len(lines)-1] // drop the partial (or empty) last line
	var nums []int
	for i, l := range lines {
		m := lineRE.FindStringSubmatch(l)
		require.NotNil(t, m, "line %d of logs -f is %q", i, l)
		n, _ := strconv.Atoi(m[1])
		nums = append(nums, n)
	}
	require.NotEmpty(t, nums)
	if len(before) == 0 {
		assert.Equal(t, 0, nums[0], "logs -f started following before any rotation: it must start at the first line")
	}
	for i := 1; i < len(nums); i++ {
		if nums[i] != nums[i-1]+1 {
			lo, hi := max(0, i-5), min(len(nums), i+5)
			t.Fatalf("logs -f: line %d after line %d (index %d; rotated file %s ends at %d); around it: %v", nums[i], nums[i-1], i, rotated, lastRotated, nums[lo:hi])
		}
	}
	t.Logf("logs -f read lines %d..%d (%d lines) across the rotation after line %d", nums[0], nums[len(nums)-1], len(nums), lastRotated)
	assert.Greater(t, nums[len(nums)-1], lastRotated, "the follower did not get past the rotation")
	assert.LessOrEqual(t, nums[0], lastRotated, "the follower started after the rotation")
	deletePodWait(t, d, pod)
}

// rotatedLogs lists the rotated files (0.log.<timestamp>) of a container's
// log dir, sorted.
func rotatedLogs(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if os.IsNotExist(err) {
		return nil
	}
	require.NoError(t, err)
	rx := regexp.MustCompile(`^0\.log\.\d{8}-\d{6}`)
	var out []string
	for _, e := range entries {
		if rx.MatchString(e.Name()) {
			out = append(out, e.Name())
		}
	}
	slices.Sort(out)
	return out
}

// lastLogNumber returns the number of the last "line N" in a CRI log file.
func lastLogNumber(t *testing.T, path string) int {
	t.Helper()
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	rx := regexp.MustCompile(`^\S+ (?:stdout|stderr) F line (\d+)$`)
	last := -1
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if m := rx.FindStringSubmatch(sc.Text()); m != nil {
			last, _ = strconv.Atoi(m[1])
		}
	}
	require.NoError(t, sc.Err())
	require.GreaterOrEqual(t, last, 0, "no line in %s", path)
	return last
}

// testManifestDir: a manifest dropped into the manifest dir starts a pod
// (get shows it Running, the runtime has its sandbox); removing the file
// deletes the pod and everything it had in the runtime.
func testManifestDir(t *testing.T, d *daemon) {
	const pod = "e2e-d-static"
	path := filepath.Join(d.manifests, pod+".yaml")
	tmp := filepath.Join(d.manifests, "."+pod+".yaml.tmp") // dotfiles are ignored
	require.NoError(t, os.WriteFile(tmp, []byte(strings.ReplaceAll(staticPodManifest, "REGISTRY", suite.registry)), 0o644))
	require.NoError(t, os.Rename(tmp, path))
	t0 := time.Now()
	got := d.waitPod(t, pod, "Running from the manifest dir", 90*time.Second, isRunning)
	t.Logf("static pod Running %s after the file appeared", time.Since(t0).Round(time.Millisecond))
	assert.Equal(t, "file", got.Annotations["kubernetes.io/config.source"])

	r := d.cli(t, "get", "pods", pod)
	require.Equal(t, 0, r.code, "%s", r)
	assert.Regexp(t, `(?m)^e2e-d-static\s+1/1\s+Running\s+0\s`, r.stdout)
	sbs := podSandboxes(t, pod)
	require.Len(t, sbs, 1, "one sandbox for the static pod")
	assert.Equal(t, runtimeapi.PodSandboxState_SANDBOX_READY, sbs[0].State)
	assert.Equal(t, string(got.UID), sbs[0].GetMetadata().GetUid())

	require.NoError(t, os.Remove(path))
	t1 := time.Now()
	d.waitPod(t, pod, "gone after its manifest was removed", 90*time.Second, func(p *v1.Pod) bool { return p == nil })
	t.Logf("static pod gone from the API %s after its file was removed", time.Since(t1).Round(time.Millisecond))
	assert.Empty(t, podSandboxes(t, pod), "sandboxes left after the pod went")
	assert.Empty(t, podContainers(t, pod), "containers left after the pod went")
}

// testDescribeUnknownImage: run fails on an image the registry lacks, and
// describe names the stuck step (image) with the registry's message.
func testDescribeUnknownImage(t *testing.T, d *daemon) {
	const pod = "e2e-d-noimage"
	p := d.run(t, noImagePodManifest, "--timeout", "2m")
	code := waitExit(t, p, 3*time.Minute)
	errOut, _ := p.stderr.snapshot()
	assert.Equal(t, 1, code, "run's exit code\nstdout:\n%s\nstderr:\n%s", p.output(), errOut)
	assert.Regexp(t, `ErrImagePull|ImagePullBackOff`, errOut)

	var r cliResult
	deadline := time.Now().Add(time.Minute)
	for {
		r = d.cli(t, "describe", "pod", pod)
		require.Equal(t, 0, r.code, "%s", r)
		if strings.Contains(r.stdout, "Stuck at:") || time.Now().After(deadline) {
			break
		}
		time.Sleep(500 * time.Millisecond)
	}
	t.Logf("describe pod %s:\n%s", pod, r.stdout)
	m := regexp.MustCompile(`(?m)^Stuck at:\s+(\S+?): (.*)$`).FindStringSubmatch(r.stdout)
	require.NotNil(t, m, "no Stuck at line")
	assert.Equal(t, "image", m[1], "stuck step")
	assert.Regexp(t, `^container app: (ErrImagePull|ImagePullBackOff): .*does-not-exist`, m[2])
	// The registry's answer: in the Stuck line while the state is
	// ErrImagePull, in the Failed event once it is ImagePullBackOff.
	assert.Regexp(t, `does-not-exist:v1: not found`, r.stdout, "the registry's message")
	if !strings.Contains(m[2], "not found") {
		t.Logf("note: the Stuck at line does not carry the registry's message (only the Failed event does): %q", m[2])
	}
	assert.Len(t, podSandboxes(t, pod), 1, "the sandbox exists")
	assert.Empty(t, podContainers(t, pod), "no container without an image")
	deletePodWait(t, d, pod)
}

const k9aManifest = `
apiVersion: v1
kind: Pod
metadata:
  name: e2e-d-k9-a
spec:
  terminationGracePeriodSeconds: 2
  containers:
  - name: app
    image: REGISTRY/minikubelet/busybox:1.36
    command: ["sleep", "3600"]
`

const k9bManifest = `
apiVersion: v1
kind: Pod
metadata:
  name: e2e-d-k9-b
spec:
  terminationGracePeriodSeconds: 2
  containers:
  - name: web
    image: REGISTRY/minikubelet/testserver:v1
    readinessProbe:
      tcpSocket:
        port: 8080
      periodSeconds: 1
`

// apiRec is what must not change in the API's view of a pod that was not
// restarted.
type apiRec struct {
	uid, ip, containerID string
	started              time.Time
	restarts             int32
}

func apiRecOf(p *v1.Pod) (apiRec, error) {
	if p == nil || len(p.Status.ContainerStatuses) != 1 {
		return apiRec{}, fmt.Errorf("pod has no single container status: %s", podSummary(p))
	}
	cs := p.Status.ContainerStatuses[0]
	if cs.State.Running == nil {
		return apiRec{}, fmt.Errorf("container not running: %s", podSummary(p))
	}
	return apiRec{uid: string(p.UID), ip: p.Status.PodIP, containerID: cs.ContainerID, started: cs.State.Running.StartedAt.Time, restarts: cs.RestartCount}, nil
}

// TestDaemon_Kill9KeepsPods: pods submitted through the API survive a
// SIGKILL of the daemon and are adopted by the next start: the same
// sandbox and containers (IDs, StartedAt), restart count 0, one sandbox per
// pod, and the API reports them as before.
func TestDaemon_Kill9KeepsPods(t *testing.T) {
	pods := []string{"e2e-d-k9-a", "e2e-d-k9-b"}
	d := newDaemon(t, pods)
	d.start(t)
	pa := d.run(t, k9aManifest)
	pb := d.run(t, k9bManifest)
	for _, p := range []*runProc{pa, pb} {
		code := waitExit(t, p, 3*time.Minute)
		errOut, _ := p.stderr.snapshot()
		require.Equal(t, 0, code, "run's exit code\nstdout:\n%s\nstderr:\n%s", p.output(), errOut)
	}

	c := d.api()
	before := map[string]podObjects{}
	beforeAPI := map[string]apiRec{}
	for _, pod := range pods {
		got := d.waitPod(t, pod, "Running and Ready", time.Minute, func(p *v1.Pod) bool { return isRunning(p) && isReady(p) })
		rec, err := apiRecOf(got)
		require.NoError(t, err)
		require.Equal(t, int32(0), rec.restarts)
		beforeAPI[pod] = rec
		before[pod] = snapshotPod(t, pod)
		require.Len(t, before[pod].sandboxes, 1, "%s: %s", pod, before[pod])
		require.Len(t, before[pod].containers, 1, "%s: %s", pod, before[pod])
	}
	t.Logf("before: %v", before)

	d.kill9(t)
	for _, pod := range pods {
		assert.Equal(t, before[pod].String(), snapshotPod(t, pod).String(), "%s changed while no daemon ran", pod)
	}
	_, err := os.Stat(d.sock)
	t.Logf("socket after SIGKILL: stat err %v (a stale socket must not stop the next start)", err)

	restartedAt := time.Now()
	d.start(t)
	for _, pod := range pods {
		d.waitPod(t, pod, "adopted, Running and Ready", time.Minute, func(p *v1.Pod) bool { return isRunning(p) && isReady(p) })
	}
	t.Logf("both pods Running and Ready %s after the restart", time.Since(restartedAt).Round(time.Millisecond))

	// Several relist periods (1 s) and probe periods: nothing is restarted,
	// recreated or duplicated.
	consistently(t, 5*time.Second, func() error {
		for _, pod := range pods {
			if now := snapshotPod(t, pod); now.String() != before[pod].String() {
				return fmt.Errorf("%s changed after the restart:\nbefore %s\nnow    %s", pod, before[pod], now)
			}
			cx, cancel := shortCtx()
			got, err := c.GetPod(cx, "default", pod)
			cancel()
			if err != nil {
				return fmt.Errorf("get %s: %w", pod, err)
			}
			rec, err := apiRecOf(got)
			if err != nil {
				return fmt.Errorf("%s: %w", pod, err)
			}
			if !rec.started.Equal(beforeAPI[pod].started) || rec.uid != beforeAPI[pod].uid || rec.ip != beforeAPI[pod].ip ||
				rec.containerID != beforeAPI[pod].containerID || rec.restarts != 0 {
				return fmt.Errorf("%s: the API's view changed after the restart:\nbefore %+v\nnow    %+v", pod, beforeAPI[pod], rec)
			}
		}
		return nil
	})
	out, _ := d.out.snapshot()
	for _, pod := range pods {
		assert.NotRegexp(t, `Removing a pod no source wants.*pod=default/`+pod, out, "the restarted daemon treated %s as an orphan", pod)
	}

	r := d.cli(t, "get", "pods", "-o", "json")
	require.Equal(t, 0, r.code, "%s", r)
	var l v1.PodList
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &l))
	for _, pod := range pods {
		n := 0
		for _, it := range l.Items {
			if it.Name == pod {
				n++
				assert.Equal(t, v1.PodRunning, it.Status.Phase, pod)
			}
		}
		assert.Equal(t, 1, n, "%s listed %d times", pod, n)
	}
	mout, err := exec.Command("curl", "-sS", "--fail", "--unix-socket", d.sock, "http://localhost/metrics").CombinedOutput()
	require.NoError(t, err, "curl /metrics:\n%s", mout)
	v, ok := metricValue(string(mout), "kubelet_running_pods")
	assert.True(t, ok, "no kubelet_running_pods")
	assert.GreaterOrEqual(t, v, float64(len(pods)), "kubelet_running_pods after adopting %d pods", len(pods))

	r = d.cli(t, "delete", "pod", pods[0], pods[1], "--wait", "--timeout", "90s")
	require.Equal(t, 0, r.code, "%s", r)
	for _, pod := range pods {
		assert.Empty(t, podSandboxes(t, pod), "%s: sandboxes left after delete --wait", pod)
		assert.Empty(t, podContainers(t, pod), "%s: containers left after delete --wait", pod)
	}
	d.stop(t)
	_, err = os.Stat(d.sock)
	assert.True(t, os.IsNotExist(err), "the socket is removed at a clean stop (stat: %v)", err)
}

// grepLines returns the lines of text containing s.
func grepLines(text, s string) string {
	var out []string
	for _, l := range strings.Split(text, "\n") {
		if strings.Contains(l, s) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// configDataManifest is a ConfigMap, a Secret and a pod using both as env
// and as volumes; the objects are named after the pod.
func configDataManifest(pod string) string {
	return strings.ReplaceAll(`
apiVersion: v1
kind: ConfigMap
metadata:
  name: POD-settings
data:
  mode: fast
---
apiVersion: v1
kind: Secret
metadata:
  name: POD-creds
stringData:
  password: s3cret
---
apiVersion: v1
kind: Pod
metadata:
  name: POD
spec:
  terminationGracePeriodSeconds: 2
  volumes:
  - {name: cfg, configMap: {name: POD-settings}}
  - {name: sec, secret: {secretName: POD-creds}}
  containers:
  - name: app
    image: REGISTRY/minikubelet/busybox:1.36
    command: ["sleep", "3600"]
    env:
    - {name: MODE, valueFrom: {configMapKeyRef: {name: POD-settings, key: mode}}}
    - {name: PASSWORD, valueFrom: {secretKeyRef: {name: POD-creds, key: password}}}
    volumeMounts:
    - {name: cfg, mountPath: /etc/config}
    - {name: sec, mountPath: /etc/secret}
`, "POD", pod)
}

// runConfigData: `run` through the daemon submits the file's ConfigMap
// and Secret before the pod, which sees them as env and as volumes; the
// daemon keeps them under its root dir (secrets 0600). It returns the
// manifest's path.
func runConfigData(t *testing.T, d *daemon, pod string) string {
	t.Helper()
	path := writeManifest(t, configDataManifest(pod))
	p := d.startCLI(t, "run", path)
	code := waitExit(t, p, 3*time.Minute)
	out := p.output()
	errOut, _ := p.stderr.snapshot()
	require.Equal(t, 0, code, "run's exit code\nstdout:\n%s\nstderr:\n%s", out, tail(errOut, 4000))
	assert.Regexp(t, `default/`+pod+`-settings\s+accepted\s+configmap, 1 keys`, out)
	assert.Regexp(t, `default/`+pod+`-creds\s+accepted\s+secret, type Opaque, 1 keys`, out)
	assert.Less(t, strings.Index(out, pod+"-creds"), strings.Index(out, "default/"+pod+" "), "the Secret is submitted before the pod:\n%s", out)

	checkConfigDataInPod(t, d, pod)

	for _, f := range []struct {
		path string
		mode os.FileMode
	}{
		{filepath.Join(d.root, "api-pods", "configmaps", "default_"+pod+"-settings.yaml"), 0o600},
		{filepath.Join(d.runDir, "secrets", "default_"+pod+"-creds.yaml"), 0o600}, // the tmpfs secret dir
		{filepath.Join(d.root, "configdata", "configmaps", "default", pod+"-settings.json"), 0o644},
	} {
		fi, err := os.Stat(f.path)
		if assert.NoError(t, err, "kept") {
			assert.Equal(t, f.mode, fi.Mode().Perm(), f.path)
		}
	}

	c, cancel := shortCtx()
	defer cancel()
	sec, err := d.api().GetSecret(c, "default", pod+"-creds")
	require.NoError(t, err)
	assert.Equal(t, "s3cret", string(sec.Data["password"]))
	assert.Equal(t, v1.SecretTypeOpaque, sec.Type)
	return path
}

// checkConfigDataInPod reads the ConfigMap's and the Secret's values
// inside the pod's container, as env and as files.
func checkConfigDataInPod(t *testing.T, d *daemon, pod string) {
	t.Helper()
	r := d.cli(t, "exec", pod, "--", "sh", "-c", `echo "$MODE $PASSWORD"; cat /etc/config/mode; echo; cat /etc/secret/password`)
	require.Equal(t, 0, r.code, "%s", r)
	assert.Equal(t, "fast s3cret\nfast\ns3cret", r.stdout)
}

// deleteConfigData: `delete -f` removes the pod, then the ConfigMap and
// the Secret, from the API and from the root dir.
func deleteConfigData(t *testing.T, d *daemon, pod, path string) {
	t.Helper()
	r := d.cli(t, "delete", "-f", path, "--wait", "--timeout", "90s")
	require.Equal(t, 0, r.code, "%s", r)
	assert.Equal(t, fmt.Sprintf("pod %q deleted\nconfigmap %q deleted\nsecret %q deleted\n", pod, pod+"-settings", pod+"-creds"), r.stdout)
	assert.Empty(t, podSandboxes(t, pod), "sandboxes left after delete --wait")
	c, cancel := shortCtx()
	defer cancel()
	_, err := d.api().GetConfigMap(c, "default", pod+"-settings")
	assert.True(t, apierrors.IsNotFound(err), "the ConfigMap after delete -f: %v", err)
	_, err = d.api().GetSecret(c, "default", pod+"-creds")
	assert.True(t, apierrors.IsNotFound(err), "the Secret after delete -f: %v", err)
	for _, f := range []string{
		filepath.Join(d.runDir, "secrets", "default_"+pod+"-creds.yaml"),
		filepath.Join(d.root, "api-pods", "secrets"),
		filepath.Join(d.root, "configdata", "secrets"),
	} {
		_, err := os.Stat(f)
		assert.ErrorIs(t, err, os.ErrNotExist, f)
	}
}

// TestDaemon_ConfigDataSurvivesKill9: the ConfigMaps and Secrets submitted
// through the API are persisted: after kill -9 and a restart the daemon
// serves them again, and the pod using them keeps running (same
// container) and still reads them.
func TestDaemon_ConfigDataSurvivesKill9(t *testing.T) {
	const pod = "e2e-d-config-k9"
	d := newDaemon(t, []string{pod})
	d.start(t)
	path := runConfigData(t, d, pod)
	before := containerID(t, pod, "app")

	d.kill9(t)
	d.start(t)
	got := d.waitPod(t, pod, "Running after the restart", 90*time.Second, isRunning)
	require.Len(t, got.Status.ContainerStatuses, 1)
	assert.Equal(t, "containerd://"+before, got.Status.ContainerStatuses[0].ContainerID, "the container was adopted, not recreated")
	c, cancel := shortCtx()
	cms, err := d.api().ListConfigMaps(c, "default")
	cancel()
	require.NoError(t, err)
	require.Len(t, cms.Items, 1)
	assert.Equal(t, "fast", cms.Items[0].Data["mode"])
	checkConfigDataInPod(t, d, pod)
	// Several relist periods: the restarted daemon does not restart it.
	time.Sleep(3 * time.Second)
	assert.Equal(t, before, containerID(t, pod, "app"))

	deleteConfigData(t, d, pod, path)
}

// testWatchFollowsAPod: a watch opened before the pod is created sees it
// ADDED, MODIFIED up to Running, MODIFIED with its deletion mark, and
// DELETED only once the runtime holds nothing of it any more.
func testWatchFollowsAPod(t *testing.T, d *daemon) {
	const name = "e2e-d-watch"
	ctx, cancel := context.WithTimeout(context.Background(), scaled(2*time.Minute))
	defer cancel()
	c := d.api()
	w, err := c.WatchPods(ctx, "default", api.WatchOptions{Name: name})
	require.NoError(t, err)
	defer w.Stop()
	next := func(what string) watch.Event {
		t.Helper()
		select {
		case ev, ok := <-w.ResultChan():
			require.True(t, ok, "the watch ended before %s", what)
			require.NotEqual(t, watch.Error, ev.Type, "%s: error event %+v", what, ev.Object)
			return ev
		case <-ctx.Done():
			t.Fatalf("no event for %s", what)
		}
		return watch.Event{}
	}

	_, err = c.CreatePod(ctx, chaosPod(name))
	require.NoError(t, err)
	ev := next("the new pod")
	require.Equal(t, watch.Added, ev.Type)
	for {
		ev = next("Running")
		require.Equal(t, watch.Modified, ev.Type)
		if p := ev.Object.(*v1.Pod); isRunning(p) {
			require.Equal(t, name, p.Name)
			break
		}
	}

	_, err = c.DeletePod(ctx, "default", name, nil)
	require.NoError(t, err)
	sawMark := false
	for {
		ev = next("the deletion")
		if ev.Type == watch.Deleted {
			break
		}
		require.Equal(t, watch.Modified, ev.Type)
		sawMark = sawMark || ev.Object.(*v1.Pod).DeletionTimestamp != nil
	}
	require.True(t, sawMark, "the deletion mark was not streamed before DELETED")
	sbs, err := suite.rt.ListPodSandbox(ctx, &runtimeapi.PodSandboxFilter{LabelSelector: map[string]string{"io.kubernetes.pod.name": name}})
	require.NoError(t, err)
	require.Empty(t, sbs, "DELETED came before the sandbox was removed")
}
