package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/minikubelet/minikubelet/cri"
)

// The agent uses what the runtime offers through the CRI and falls back
// where it does not: the cgroup driver from RuntimeConfig (containerd 2.x;
// 1.6 answers Unimplemented and --cgroup-driver decides), and container
// events from GetContainerEvents (2.x streams them; 1.6 answers
// Unimplemented and the 1 s relist notices every change). The suite runs
// against both (hack/e2e.sh, CONTAINERD); which path a case expects is asked
// of the runtime itself, not of a version string.

// runtimeConfig asks the suite's runtime for its configuration: nil when it
// lacks the RPC.
func runtimeConfig(t *testing.T) *runtimeapi.RuntimeConfigResponse {
	t.Helper()
	resp, err := suite.rt.RuntimeConfig(ctx(t))
	if cri.IsUnimplemented(err) {
		return nil
	}
	require.NoError(t, err, "CRI RuntimeConfig")
	return resp
}

// runtimeStreamsEvents reports whether the suite's runtime serves
// GetContainerEvents: a runtime without it ends the stream at once with
// Unimplemented, one with it keeps it open until the client leaves.
func runtimeStreamsEvents(t *testing.T) bool {
	t.Helper()
	c, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	// Buffered and never read: events of parallel tests may arrive.
	err := suite.rt.GetContainerEvents(c, make(chan *runtimeapi.ContainerEventResponse, 1024), nil)
	if cri.IsUnimplemented(err) {
		return false
	}
	// The deadline travels to the runtime (grpc-timeout): under load the
	// runtime's timer can fire first and end the stream with
	// DeadlineExceeded a moment before our own context's.
	require.True(t, c.Err() != nil || status.Code(err) == codes.DeadlineExceeded,
		"GetContainerEvents ended before its deadline with neither Unimplemented nor events: %v", err)
	return true
}

// waitExited waits for the run process to exit by itself and returns its
// exit code.
func waitExited(t *testing.T, p *runProc, timeout time.Duration) int {
	t.Helper()
	select {
	case <-p.done:
	case <-time.After(timeout):
		t.Fatalf("minikubelet run still running after %s; stdout:\n%s", timeout, p.output())
	}
	var ee *exec.ExitError
	if p.err == nil {
		return 0
	}
	require.ErrorAs(t, p.err, &ee)
	return ee.ExitCode()
}

// The cgroup driver: the runtime's where it reports one, and a
// --cgroup-driver that disagrees with it stops the agent before it creates
// anything; where the runtime does not report one, the flag decides.
func TestRuntime_CgroupDriver(t *testing.T) {
	t.Parallel()
	const pod = "e2e-cgroup-driver"
	manifest := writeManifest(t, `
apiVersion: v1
kind: Pod
metadata:
  name: e2e-cgroup-driver
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: app
    image: REGISTRY/minikubelet/busybox:1.36
    command: [sleep, "3600"]
`)
	cfg := runtimeConfig(t)
	if cfg != nil {
		// hack/containerd/private-v2.toml: SystemdCgroup = false.
		require.Equal(t, runtimeapi.CgroupDriver_CGROUPFS, cfg.GetLinux().GetCgroupDriver(), "the private containerd's runc runs with SystemdCgroup = false")
	}

	t.Run("default", func(t *testing.T) {
		p := startRunPath(t, manifest)
		source := `--cgroup-driver; the runtime does not report its own`
		if cfg != nil {
			source = `the runtime's, from CRI RuntimeConfig`
		}
		p.waitFor(`node\s+cgroups\s+\S+\s+driver cgroupfs \(`+regexp.QuoteMeta(source)+`\), `, 30*time.Second)
		p.waitRunning(pod)
		p.interrupt()
	})

	t.Run("--cgroup-driver=systemd", func(t *testing.T) {
		if _, err := os.Stat("/run/systemd/system"); err == nil && cfg == nil {
			// A runtime that does not report its driver, on a host that
			// runs systemd: nothing can tell the flag is wrong, so the
			// flag decides and the agent says where its driver came from
			// (issue #17: this case used to skip on every systemd host).
			p := startRunPath(t, manifest, "--cgroup-driver", "systemd")
			p.waitFor(`node\s+cgroups\s+\S+\s+driver systemd \(`+regexp.QuoteMeta(`--cgroup-driver; the runtime does not report its own`)+`\), `, 30*time.Second)
			p.interrupt()
			return
		}
		p := startRunPath(t, manifest, "--cgroup-driver", "systemd")
		code := waitExited(t, p, time.Minute)
		errOut, _ := p.stderr.snapshot()
		if cfg != nil {
			assert.Equal(t, 2, code, "a driver mismatch is a usage error")
			assert.Contains(t, errOut, `cgroup driver mismatch: the container runtime uses "cgroupfs" but --cgroup-driver=systemd; change --cgroup-driver to cgroupfs`)
		} else {
			// The flag decides: the systemd driver, which needs systemd.
			assert.NotEqual(t, 0, code)
			assert.Contains(t, errOut, "cgroup driver systemd needs a running systemd")
			assert.NotContains(t, errOut, "mismatch")
		}
		assert.Empty(t, podSandboxes(t, pod), "nothing created")
	})
}

// Container events: where the runtime streams them, the agent follows the
// stream and every change of its containers reaches the pod's worker as an
// event (logged at debug level); where it does not, the agent says so once
// and the relist alone notices the exit. Either way the exit is reported.
func TestRuntime_ContainerEvents(t *testing.T) {
	t.Parallel()
	const pod = "e2e-container-events"
	streams := runtimeStreamsEvents(t)
	p := startRunPath(t, writeManifest(t, `
apiVersion: v1
kind: Pod
metadata:
  name: e2e-container-events
spec:
  restartPolicy: Never
  terminationGracePeriodSeconds: 1
  containers:
  - name: app
    image: REGISTRY/minikubelet/busybox:1.36
    command: [sh, -c, "sleep 1; exit 3"]
`), "--log-level", "debug")
	uid := p.podUID(pod)
	p.waitFor(`default/`+pod+`\s+status\s+.*app:terminated\(Error,exit=3\)`, 2*time.Minute)
	var id string
	for _, c := range podContainers(t, pod) {
		id = c.Id
	}
	require.NotEmpty(t, id, "the exited container is still listed")
	errOut, _ := p.stderr.snapshot()

	followed := strings.Contains(errOut, "Following the runtime's container events")
	fellBack := strings.Contains(errOut, "Runtime does not stream container events; relying on the periodic relist")
	if streams {
		assert.True(t, followed, "the agent follows the runtime's events")
		assert.False(t, fellBack)
		for _, typ := range []runtimeapi.ContainerEventType{
			runtimeapi.ContainerEventType_CONTAINER_CREATED_EVENT,
			runtimeapi.ContainerEventType_CONTAINER_STARTED_EVENT,
			runtimeapi.ContainerEventType_CONTAINER_STOPPED_EVENT,
		} {
			assert.Regexp(t, fmt.Sprintf(`msg="Runtime container event" type=%s containerID=%s podUID=%s`, typ, id, uid), errOut, "the %s of the app container", typ)
		}
	} else {
		assert.True(t, fellBack, "the agent says it relies on the relist")
		assert.False(t, followed)
		assert.NotContains(t, errOut, `msg="Runtime container event"`)
	}
	p.interrupt()
	assert.Empty(t, podContainers(t, pod))
}
