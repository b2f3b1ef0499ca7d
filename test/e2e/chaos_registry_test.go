package e2e

import (
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/crane"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
)

// testRegistry is a docker-registry of one test's own on a loopback port,
// stopped and started at will (the suite's on :5000 is shared).
type testRegistry struct {
	addr, conf string
	out        *syncBuffer
	cmd        *exec.Cmd
}

func newTestRegistry(t *testing.T) *testRegistry {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := l.Addr().String()
	require.NoError(t, l.Close())
	dir := t.TempDir()
	g := &testRegistry{addr: addr, conf: filepath.Join(dir, "config.yml"), out: newSyncBuffer()}
	require.NoError(t, os.WriteFile(g.conf, []byte(fmt.Sprintf(`version: 0.1
log:
  level: warn
storage:
  filesystem:
    rootdirectory: %s
http:
  addr: %s
`, filepath.Join(dir, "storage"), addr)), 0o644))
	t.Cleanup(func() {
		g.stop(t)
		if t.Failed() {
			out, _ := g.out.snapshot()
			t.Logf("test registry %s output (tail):\n%s", addr, tail(out, 3000))
		}
	})
	g.start(t)
	return g
}

// start runs docker-registry and waits until /v2/ answers.
func (g *testRegistry) start(t *testing.T) {
	t.Helper()
	g.cmd = exec.Command("/usr/bin/docker-registry", "serve", g.conf)
	g.cmd.Stdout, g.cmd.Stderr = g.out, g.out
	require.NoError(t, g.cmd.Start())
	waitFor(t, "test registry on "+g.addr, 30*time.Second, func() string {
		resp, err := http.Get("http://" + g.addr + "/v2/")
		if err != nil {
			return err.Error()
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return resp.Status
		}
		return ""
	})
}

// stop kills it and waits for the exit.
func (g *testRegistry) stop(t *testing.T) {
	if g.cmd == nil || g.cmd.Process == nil {
		return
	}
	_ = g.cmd.Process.Signal(syscall.SIGKILL)
	_ = g.cmd.Wait()
	g.cmd = nil
}

// TestChaosRegistryStopped stops the registry a pod's image lives in: the
// pod's container goes ErrImagePull then ImagePullBackOff with the
// kubelet's messages, and starts once the registry is back.
func TestChaosRegistryStopped(t *testing.T) {
	t.Parallel()
	r := newPrivateRuntime(t)
	g := newTestRegistry(t)
	image := g.addr + "/chaos/busybox:1.36"
	require.NoError(t, crane.Copy(suite.registry+"/minikubelet/busybox:1.36", image, crane.Insecure))
	hosts := filepath.Join(r.dir, "certs.d", g.addr)
	require.NoError(t, os.MkdirAll(hosts, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(hosts, "hosts.toml"), []byte(fmt.Sprintf(
		"server = \"http://%s\"\n\n[host.\"http://%s\"]\n  capabilities = [\"pull\", \"resolve\"]\n", g.addr, g.addr)), 0o644))
	g.stop(t)

	// A pull back-off (12 s) longer than the worker's retry after an error
	// (10 s, the kubelet's) so that the retry finds it: ImagePullBackOff.
	d := r.newDaemon(t, []string{"chaos-registry"}, "--backoff-initial", "12s", "--backoff-max", "12s")
	d.start(t)
	pod := chaosPod("chaos-registry")
	pod.Spec.Containers[0].Image = image
	_, err := d.api().CreatePod(t.Context(), pod)
	require.NoError(t, err)

	waiting := func(reason string) func(*v1.Pod) bool {
		return func(p *v1.Pod) bool {
			if p == nil || len(p.Status.ContainerStatuses) == 0 {
				return false
			}
			w := p.Status.ContainerStatuses[0].State.Waiting
			return w != nil && w.Reason == reason
		}
	}
	p := d.waitPod(t, "chaos-registry", "ErrImagePull", time.Minute, waiting("ErrImagePull"))
	msg := p.Status.ContainerStatuses[0].State.Waiting.Message
	require.Contains(t, msg, image, "ErrImagePull names the image")
	require.Contains(t, msg, "connection refused", "ErrImagePull says why")
	p = d.waitPod(t, "chaos-registry", "ImagePullBackOff", time.Minute, waiting("ImagePullBackOff"))
	msg = p.Status.ContainerStatuses[0].State.Waiting.Message
	require.True(t, strings.HasPrefix(msg, fmt.Sprintf("Back-off pulling image %q", image)), "the kubelet's message, got %q", msg)
	require.Equal(t, v1.PodPending, p.Status.Phase)
	ev, err := d.api().Events(t.Context(), "default", "chaos-registry")
	require.NoError(t, err)
	var reasons []string
	for _, e := range ev.Items {
		reasons = append(reasons, e.Reason)
	}
	require.Contains(t, reasons, "Failed")
	require.Contains(t, reasons, "BackOff")

	g.start(t)
	back := time.Now()
	d.waitPod(t, "chaos-registry", "Running once the registry is back", time.Minute, isRunning)
	t.Logf("running %s after the registry came back", time.Since(back).Round(time.Millisecond))
}
