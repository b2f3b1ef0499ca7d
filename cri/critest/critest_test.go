package critest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/minikubelet/minikubelet/cri"
)

// manualClock is a settable clock for exit-after tests.
type manualClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *manualClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *manualClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

func sandboxConfig(name string, attempt uint32) *runtimeapi.PodSandboxConfig {
	return &runtimeapi.PodSandboxConfig{
		Metadata: &runtimeapi.PodSandboxMetadata{Name: name, Namespace: "default", Uid: name + "-uid", Attempt: attempt},
	}
}

func containerConfig(name string, annotations map[string]string) *runtimeapi.ContainerConfig {
	return &runtimeapi.ContainerConfig{
		Metadata:    &runtimeapi.ContainerMetadata{Name: name},
		Image:       &runtimeapi.ImageSpec{Image: "127.0.0.1:5000/x:1"},
		Annotations: annotations,
	}
}

// runPod runs a sandbox and one started container, returning their ids.
func runPod(t *testing.T, f *Fake, pod, ctr string, annotations map[string]string) (string, string) {
	t.Helper()
	ctx := context.Background()
	sc := sandboxConfig(pod, 0)
	sid, err := f.Runtime.RunPodSandbox(ctx, sc, "")
	require.NoError(t, err)
	cid, err := f.Runtime.CreateContainer(ctx, sid, containerConfig(ctr, annotations), sc)
	require.NoError(t, err)
	require.NoError(t, f.Runtime.StartContainer(ctx, cid))
	return sid, cid
}

func TestFake_CallLog(t *testing.T) {
	f := New()
	ctx := context.Background()
	sc := sandboxConfig("web", 0)

	sid, err := f.Runtime.RunPodSandbox(ctx, sc, "")
	require.NoError(t, err)
	_, err = f.Images.ImageStatus(ctx, &runtimeapi.ImageSpec{Image: "127.0.0.1:5000/x:1"}, false)
	require.NoError(t, err)
	_, err = f.Images.PullImage(ctx, &runtimeapi.ImageSpec{Image: "127.0.0.1:5000/x:1"}, nil, sc)
	require.NoError(t, err)
	cid, err := f.Runtime.CreateContainer(ctx, sid, containerConfig("app", nil), sc)
	require.NoError(t, err)
	require.NoError(t, f.Runtime.StartContainer(ctx, cid))
	require.NoError(t, f.Runtime.StopContainer(ctx, cid, 30))
	require.NoError(t, f.Runtime.StopPodSandbox(ctx, sid))
	require.NoError(t, f.Runtime.RemovePodSandbox(ctx, sid))

	assert.Equal(t, []string{
		"RunPodSandbox web attempt=0",
		"ImageStatus 127.0.0.1:5000/x:1",
		"PullImage 127.0.0.1:5000/x:1",
		"CreateContainer app attempt=0",
		"StartContainer app",
		"StopContainer app timeout=30",
		"StopPodSandbox web",
		"RemovePodSandbox web",
	}, f.Calls())

	f.Reset()
	assert.Empty(t, f.Calls())
}

func TestFake_InjectError(t *testing.T) {
	f := New()
	ctx := context.Background()
	boom := status.Error(codes.Internal, "boom")
	f.InjectError("RunPodSandbox", boom)
	f.Runtime.InjectError("RunPodSandbox", errors.New("second")) // same queue

	_, err := f.Runtime.RunPodSandbox(ctx, sandboxConfig("web", 0), "")
	require.ErrorIs(t, err, boom)
	_, err = f.Runtime.RunPodSandbox(ctx, sandboxConfig("web", 0), "")
	require.EqualError(t, err, "second")
	sid, err := f.Runtime.RunPodSandbox(ctx, sandboxConfig("web", 0), "")
	require.NoError(t, err)
	assert.NotEmpty(t, sid)

	f.Images.InjectError("PullImage", boom)
	_, err = f.Images.PullImage(ctx, &runtimeapi.ImageSpec{Image: "x"}, nil, nil)
	require.ErrorIs(t, err, boom)
	assert.False(t, f.HasImage("x"))

	// Failed calls are logged too.
	assert.Equal(t, []string{
		"RunPodSandbox web attempt=0",
		"RunPodSandbox web attempt=0",
		"RunPodSandbox web attempt=0",
		"PullImage x",
	}, f.Calls())
}

func TestFake_Images(t *testing.T) {
	f := New()
	ctx := context.Background()
	f.SetImages("present:1")

	resp, err := f.Images.ImageStatus(ctx, &runtimeapi.ImageSpec{Image: "present:1"}, false)
	require.NoError(t, err)
	assert.NotNil(t, resp.Image)
	resp, err = f.Images.ImageStatus(ctx, &runtimeapi.ImageSpec{Image: "absent:1"}, false)
	require.NoError(t, err)
	assert.Nil(t, resp.Image)

	ref, err := f.Images.PullImage(ctx, &runtimeapi.ImageSpec{Image: "absent:1"}, nil, nil)
	require.NoError(t, err)
	assert.Equal(t, "absent:1", ref)
	assert.True(t, f.HasImage("absent:1"))

	regErr := status.Error(codes.NotFound, "127.0.0.1:5000/nope:1: not found")
	f.FailPull("nope:1", regErr)
	for range 2 {
		_, err = f.Images.PullImage(ctx, &runtimeapi.ImageSpec{Image: "nope:1"}, nil, nil)
		require.ErrorIs(t, err, regErr)
	}
	f.FailPull("nope:1", nil)
	_, err = f.Images.PullImage(ctx, &runtimeapi.ImageSpec{Image: "nope:1"}, nil, nil)
	require.NoError(t, err)
}

func TestFake_SandboxStatusIP(t *testing.T) {
	f := New()
	ctx := context.Background()
	sid, err := f.Runtime.RunPodSandbox(ctx, sandboxConfig("web", 0), "")
	require.NoError(t, err)
	resp, err := f.Runtime.PodSandboxStatus(ctx, sid, false)
	require.NoError(t, err)
	assert.Equal(t, DefaultPodIP, resp.Status.Network.Ip)

	f.SetPodIP("10.88.0.9")
	resp, err = f.Runtime.PodSandboxStatus(ctx, sid, false)
	require.NoError(t, err)
	assert.Equal(t, "10.88.0.9", resp.Status.Network.Ip)

	host := sandboxConfig("host", 0)
	host.Linux = &runtimeapi.LinuxPodSandboxConfig{SecurityContext: &runtimeapi.LinuxSandboxSecurityContext{
		NamespaceOptions: &runtimeapi.NamespaceOption{Network: runtimeapi.NamespaceMode_NODE},
	}}
	hid, err := f.Runtime.RunPodSandbox(ctx, host, "")
	require.NoError(t, err)
	resp, err = f.Runtime.PodSandboxStatus(ctx, hid, false)
	require.NoError(t, err)
	assert.Empty(t, resp.Status.Network.Ip)
}

func TestFake_NotFound(t *testing.T) {
	f := New()
	ctx := context.Background()
	_, err := f.Runtime.PodSandboxStatus(ctx, "nope", false)
	assert.True(t, cri.IsNotFound(err), "PodSandboxStatus: %v", err)
	assert.True(t, cri.IsNotFound(f.Runtime.StopPodSandbox(ctx, "nope")))
	_, err = f.Runtime.ContainerStatus(ctx, "nope", false)
	assert.True(t, cri.IsNotFound(fmt.Errorf("wrapped: %w", err)))
	assert.True(t, cri.IsNotFound(f.Runtime.StartContainer(ctx, "nope")))
	assert.True(t, cri.IsNotFound(f.Runtime.StopContainer(ctx, "nope", 0)))
	_, err = f.Runtime.CreateContainer(ctx, "nope", containerConfig("app", nil), nil)
	assert.True(t, cri.IsNotFound(err))
	// Removal is idempotent, as in CRI.
	assert.NoError(t, f.Runtime.RemoveContainer(ctx, "nope"))
	assert.NoError(t, f.Runtime.RemovePodSandbox(ctx, "nope"))
}

func TestFake_ExitAfter(t *testing.T) {
	clock := &manualClock{t: time.Unix(1000, 0)}
	f := New()
	f.Now = clock.Now
	ctx := context.Background()
	_, cid := runPod(t, f, "web", "app", map[string]string{
		AnnotationExitAfterMs: "500",
		AnnotationExitCode:    "3",
	})

	clock.Advance(499 * time.Millisecond)
	st, err := f.Runtime.ContainerStatus(ctx, cid, false)
	require.NoError(t, err)
	assert.Equal(t, runtimeapi.ContainerState_CONTAINER_RUNNING, st.Status.State)

	clock.Advance(time.Millisecond)
	list, err := f.Runtime.ListContainers(ctx, nil)
	require.NoError(t, err)
	require.Len(t, list, 1)
	assert.Equal(t, runtimeapi.ContainerState_CONTAINER_EXITED, list[0].State)

	st, err = f.Runtime.ContainerStatus(ctx, cid, false)
	require.NoError(t, err)
	assert.Equal(t, int32(3), st.Status.ExitCode)
	assert.Equal(t, "Error", st.Status.Reason)
	assert.Equal(t, time.Unix(1000, 0).UnixNano(), st.Status.StartedAt)
	assert.Equal(t, time.Unix(1000, 0).Add(500*time.Millisecond).UnixNano(), st.Status.FinishedAt)
}

func TestFake_ExitAfterDefaultsToZero(t *testing.T) {
	clock := &manualClock{t: time.Unix(1000, 0)}
	f := New()
	f.Now = clock.Now
	_, cid := runPod(t, f, "job", "once", map[string]string{AnnotationExitAfterMs: "0"})
	st, err := f.Runtime.ContainerStatus(context.Background(), cid, false)
	require.NoError(t, err)
	assert.Equal(t, runtimeapi.ContainerState_CONTAINER_EXITED, st.Status.State)
	assert.Equal(t, int32(0), st.Status.ExitCode)
	assert.Equal(t, "Completed", st.Status.Reason)
}

func TestFake_BadAnnotation(t *testing.T) {
	f := New()
	ctx := context.Background()
	sc := sandboxConfig("web", 0)
	sid, err := f.Runtime.RunPodSandbox(ctx, sc, "")
	require.NoError(t, err)
	_, err = f.Runtime.CreateContainer(ctx, sid, containerConfig("app", map[string]string{AnnotationExitAfterMs: "soon"}), sc)
	require.Error(t, err)
	assert.Contains(t, err.Error(), AnnotationExitAfterMs)
}

func TestFake_StartError(t *testing.T) {
	f := New()
	ctx := context.Background()
	sc := sandboxConfig("web", 0)
	sid, err := f.Runtime.RunPodSandbox(ctx, sc, "")
	require.NoError(t, err)
	cid, err := f.Runtime.CreateContainer(ctx, sid, containerConfig("app", map[string]string{AnnotationStartError: "exec: \"nope\": not found"}), sc)
	require.NoError(t, err)
	err = f.Runtime.StartContainer(ctx, cid)
	require.Error(t, err)
	assert.Contains(t, cri.Message(err), `exec: "nope": not found`)

	st, err := f.Runtime.ContainerStatus(ctx, cid, false)
	require.NoError(t, err)
	assert.Equal(t, runtimeapi.ContainerState_CONTAINER_EXITED, st.Status.State)
	assert.Equal(t, int32(128), st.Status.ExitCode)
	assert.Equal(t, "StartError", st.Status.Reason)

	// A second start is refused, as containerd refuses non-CREATED starts.
	require.Error(t, f.Runtime.StartContainer(ctx, cid))
}

func TestFake_StopSandboxStopsContainers(t *testing.T) {
	f := New()
	ctx := context.Background()
	sid, cid := runPod(t, f, "web", "app", nil)
	require.NoError(t, f.Runtime.StopPodSandbox(ctx, sid))
	st, err := f.Runtime.ContainerStatus(ctx, cid, false)
	require.NoError(t, err)
	assert.Equal(t, runtimeapi.ContainerState_CONTAINER_EXITED, st.Status.State)
	assert.Equal(t, int32(137), st.Status.ExitCode)

	require.NoError(t, f.Runtime.RemovePodSandbox(ctx, sid))
	list, err := f.Runtime.ListContainers(ctx, nil)
	require.NoError(t, err)
	assert.Empty(t, list)
}

func TestFake_StatusAndVersion(t *testing.T) {
	f := New()
	ctx := context.Background()
	v, err := f.Runtime.Version(ctx, "v1")
	require.NoError(t, err)
	assert.Equal(t, "containerd", v.RuntimeName)

	ready := func() map[string]bool {
		resp, err := f.Runtime.Status(ctx, false)
		require.NoError(t, err)
		m := map[string]bool{}
		for _, c := range resp.Status.Conditions {
			m[c.Type] = c.Status
		}
		return m
	}
	assert.Equal(t, map[string]bool{runtimeapi.RuntimeReady: true, runtimeapi.NetworkReady: true}, ready())
	f.SetNetworkReady(false, "NetworkPluginNotReady")
	assert.False(t, ready()[runtimeapi.NetworkReady])
}

func TestFake_ExecHandler(t *testing.T) {
	f := New()
	ctx := context.Background()
	_, cid := runPod(t, f, "web", "app", nil)
	f.SetExecHandler(func(_ string, cmd []string) ([]byte, []byte, error) {
		return []byte("hi"), nil, &cri.ExitError{ExitCode: 1}
	})
	out, _, err := f.Runtime.ExecSync(ctx, cid, []string{"cat", "/ready"}, time.Second)
	assert.Equal(t, "hi", string(out))
	var exitErr *cri.ExitError
	require.ErrorAs(t, err, &exitErr)
	assert.Contains(t, f.Calls(), "ExecSync app cat /ready")
}

func TestFake_Concurrent(t *testing.T) {
	f := New()
	ctx := context.Background()
	sc := sandboxConfig("web", 0)
	sid, err := f.Runtime.RunPodSandbox(ctx, sc, "")
	require.NoError(t, err)

	var wg sync.WaitGroup
	for i := range 20 {
		wg.Go(func() {
			name := fmt.Sprintf("c%d", i)
			_, _ = f.Images.PullImage(ctx, &runtimeapi.ImageSpec{Image: name}, nil, sc)
			cid, err := f.Runtime.CreateContainer(ctx, sid, containerConfig(name, map[string]string{AnnotationExitAfterMs: "1"}), sc)
			assert.NoError(t, err)
			assert.NoError(t, f.Runtime.StartContainer(ctx, cid))
			_, err = f.Runtime.ContainerStatus(ctx, cid, false)
			assert.NoError(t, err)
			_, _ = f.Runtime.ListContainers(ctx, nil)
		})
	}
	wg.Wait()
	assert.Len(t, f.Calls(), 1+20*5)
}
