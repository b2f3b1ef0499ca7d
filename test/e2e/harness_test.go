package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/minikubelet/minikubelet/cri"
)

// syncBuffer is a goroutine-safe output buffer that signals every write.
type syncBuffer struct {
	mu      sync.Mutex
	buf     bytes.Buffer
	changed chan struct{} // closed and replaced on every write
}

func newSyncBuffer() *syncBuffer { return &syncBuffer{changed: make(chan struct{})} }

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	n, err := b.buf.Write(p)
	close(b.changed)
	b.changed = make(chan struct{})
	return n, err
}

// snapshot returns the output so far and a channel closed on the next write.
func (b *syncBuffer) snapshot() (string, <-chan struct{}) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String(), b.changed
}

// runProc is one `minikubelet run` process.
type runProc struct {
	t      *testing.T
	cmd    *exec.Cmd
	stdout *syncBuffer
	stderr *syncBuffer
	done   chan struct{} // closed when the process exited
	err    error         // exit error, valid after done
}

// timeScale multiplies the harness's waits and the tests' timing slack
// (E2E_TIME_SCALE, default 1): the cgroup v2 suite (hack/vm) runs this suite
// in an emulated guest where work is ~40x slower than on the host.
var timeScale = func() float64 {
	f, err := strconv.ParseFloat(os.Getenv("E2E_TIME_SCALE"), 64)
	if err != nil || f < 1 {
		return 1
	}
	return f
}()

// scaled is d times the time scale.
func scaled(d time.Duration) time.Duration { return time.Duration(float64(d) * timeScale) }

// agentArgs are the flags that point the binary at the private runtime.
// E2E_CGROUP_DRIVER (set with SYSTEMD_CGROUP=true for the private
// containerd) selects the agent's cgroup driver; containerd 1.6 does not
// report its own through CRI RuntimeConfig.
func agentArgs() []string {
	args := []string{
		"--runtime-endpoint", suite.endpoint,
		"--root-dir", filepath.Join(suite.dir, "root"),
		"--pod-log-dir", filepath.Join(suite.dir, "pod-logs"),
		"--node-name", e2eNode,
		"--pod-cidr", e2ePodCIDR,
		"--cni-conf-dir", suite.network.ConfDir,
		"--cni-bridge", e2eBridge,
		"--cni-data-dir", suite.network.DataDir,
		"--pod-masquerade=false",
		"--log-level", "info",
	}
	if d := os.Getenv("E2E_CGROUP_DRIVER"); d != "" {
		args = append(args, "--cgroup-driver", d)
	}
	if timeScale > 1 {
		args = append(args, "--runtime-request-timeout", scaled(2*time.Minute).String())
	}
	return args
}

// serveHostFlags are the flags every test daemon (serve) gets before its
// own: disk eviction and image GC thresholds a shared CI disk does not
// reach. The daemon's defaults (imagefs.available<15%, image GC at 85 %
// used) measure the host's disk, which the build caches of a CI machine
// fill: at 14.7 % free every pod of every test was rejected Evicted
// (DiskPressure) and unused images were removed under the tests. The
// eviction and GC tests set their own thresholds after these (later flags
// win); the conformance harness gives the kubelet and minikubelet the same.
func serveHostFlags() []string {
	return []string{
		"--eviction-hard", "memory.available<100Mi,nodefs.available<1%,imagefs.available<1%,nodefs.inodesFree<1%",
		"--image-gc-high-threshold", "100", "--image-gc-low-threshold", "99",
		// The pods' files walked every 2 s (the kubelet's 1 m): the local
		// storage tests see a pod's writes within seconds.
		"--volume-stats-agg-period", "2s",
	}
}

// writeManifest writes a manifest into the test's temp dir, replacing
// REGISTRY with the local registry's address.
func writeManifest(t *testing.T, manifest string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "pod.yaml")
	manifest = strings.ReplaceAll(manifest, "REGISTRY", suite.registry)
	require.NoError(t, os.WriteFile(path, []byte(manifest), 0o644))
	return path
}

// startRun starts `minikubelet run` on the manifest. Cleanup interrupts it
// if the test did not stop it, and removes whatever a failed test left.
func startRun(t *testing.T, manifest string) *runProc {
	t.Helper()
	path := writeManifest(t, manifest)
	return startRunArgs(t, append(append([]string{"run"}, agentArgs()...), path)...)
}

// privilegedLevel is the flag a user gives `run` or `serve` for local pods
// that need the host (hostPath, hostPort, added capabilities, unsafe
// sysctls): the default level, baseline, refuses them.
const privilegedLevel = "--pod-security=privileged"

// startRunWith is startRun with extra flags before the manifest.
func startRunWith(t *testing.T, manifest string, extra ...string) *runProc {
	t.Helper()
	path := writeManifest(t, manifest)
	return startRunArgs(t, append(append(append([]string{"run"}, agentArgs()...), extra...), path)...)
}

// startRunArgs starts the minikubelet binary with args (a `run` whose
// flags the caller chose), with startRun's cleanup.
func startRunArgs(t *testing.T, args ...string) *runProc {
	t.Helper()
	p := &runProc{t: t, stdout: newSyncBuffer(), stderr: newSyncBuffer(), done: make(chan struct{})}
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
			t.Logf("minikubelet run stdout:\n%s\nstderr (tail):\n%s", out, tail(errOut, 4000))
		}
	})
	return p
}

func tail(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}

// waitFor waits until the process's stdout matches re and returns the
// submatches of the first match.
func (p *runProc) waitFor(re string, timeout time.Duration) []string {
	p.t.Helper()
	rx := regexp.MustCompile(re)
	timeout = scaled(timeout)
	deadline := time.After(timeout)
	for {
		out, changed := p.stdout.snapshot()
		if m := rx.FindStringSubmatch(out); m != nil {
			return m
		}
		select {
		case <-changed:
		case <-p.done:
			out, _ := p.stdout.snapshot()
			if m := rx.FindStringSubmatch(out); m != nil {
				return m
			}
			errOut, _ := p.stderr.snapshot()
			p.t.Fatalf("minikubelet exited (%v) before printing /%s/\nstdout:\n%s\nstderr:\n%s", p.err, re, out, tail(errOut, 4000))
		case <-deadline:
			errOut, _ := p.stderr.snapshot()
			p.t.Fatalf("timed out after %s waiting for /%s/\nstdout:\n%s\nstderr:\n%s", timeout, re, out, tail(errOut, 4000))
		}
	}
}

// waitRunning waits for the pod's status line with phase Running and returns
// the pod IP it printed.
func (p *runProc) waitRunning(pod string) string {
	p.t.Helper()
	m := p.waitFor(`default/`+regexp.QuoteMeta(pod)+`\s+status\s+Running ip=(\S+)`, 2*time.Minute)
	return m[1]
}

// interrupt sends SIGINT, waits for a clean exit and returns stdout.
func (p *runProc) interrupt() string {
	p.t.Helper()
	require.NoError(p.t, p.cmd.Process.Signal(syscall.SIGINT))
	select {
	case <-p.done:
	case <-time.After(scaled(2 * time.Minute)):
		p.t.Fatalf("minikubelet did not exit within %s of SIGINT", scaled(2*time.Minute))
	}
	out, _ := p.stdout.snapshot()
	require.NoError(p.t, p.err, "exit status after SIGINT; stdout:\n%s", out)
	return out
}

// ctx returns a context bounded for one assertion.
func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), scaled(time.Minute))
	t.Cleanup(cancel)
	return c
}

// podSandboxes lists the sandboxes the runtime holds for a pod name (all
// sandboxes for "").
func podSandboxes(t *testing.T, pod string) []*runtimeapi.PodSandbox {
	t.Helper()
	var f *runtimeapi.PodSandboxFilter
	if pod != "" {
		f = &runtimeapi.PodSandboxFilter{LabelSelector: map[string]string{"io.kubernetes.pod.name": pod}}
	}
	sbs, err := suite.rt.ListPodSandbox(ctx(t), f)
	require.NoError(t, err)
	return sbs
}

// podContainers lists the containers the runtime holds for a pod name (all
// containers for "").
func podContainers(t *testing.T, pod string) []*runtimeapi.Container {
	t.Helper()
	var f *runtimeapi.ContainerFilter
	if pod != "" {
		f = &runtimeapi.ContainerFilter{LabelSelector: map[string]string{"io.kubernetes.pod.name": pod}}
	}
	cs, err := suite.rt.ListContainers(ctx(t), f)
	require.NoError(t, err)
	return cs
}

// containerID returns the ID of the pod's running container with that name.
func containerID(t *testing.T, pod, name string) string {
	t.Helper()
	for _, c := range podContainers(t, pod) {
		if c.GetMetadata().GetName() == name && c.State == runtimeapi.ContainerState_CONTAINER_RUNNING {
			return c.Id
		}
	}
	t.Fatalf("pod %s has no running container %q", pod, name)
	return ""
}

// execIn runs a command in a container through CRI ExecSync.
func execIn(t *testing.T, id string, cmd ...string) string {
	t.Helper()
	stdout, stderr, err := suite.rt.ExecSync(ctx(t), id, cmd, 30*time.Second)
	var ee *cri.ExitError
	if errors.As(err, &ee) {
		t.Fatalf("exec %q exited %d: stdout %q stderr %q", cmd, ee.ExitCode, stdout, stderr)
	}
	require.NoError(t, err, "exec %q", cmd)
	return string(stdout)
}

// sandboxPid returns the pid of the sandbox's pause process, from
// containerd's verbose sandbox info.
func sandboxPid(t *testing.T, id string) int {
	t.Helper()
	resp, err := suite.rt.PodSandboxStatus(ctx(t), id, true)
	require.NoError(t, err)
	var info struct {
		Pid int `json:"pid"`
	}
	require.NoError(t, json.Unmarshal([]byte(resp.Info["info"]), &info))
	require.NotZero(t, info.Pid, "sandbox info has no pid: %s", resp.Info["info"])
	return info.Pid
}

// bridgePorts lists the interfaces enslaved to the e2e bridge.
func bridgePorts(t *testing.T) []string {
	t.Helper()
	entries, err := os.ReadDir(filepath.Join("/sys/class/net", e2eBridge, "brif"))
	if os.IsNotExist(err) {
		return nil
	}
	require.NoError(t, err)
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return names
}
