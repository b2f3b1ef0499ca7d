package cri_test

import (
	"bytes"
	"context"
	"log/slog"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/minikubelet/minikubelet/cri"
	"github.com/minikubelet/minikubelet/cri/critest"
)

// syncBuffer is a goroutine-safe log sink.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func TestInstrumented_Stats(t *testing.T) {
	f := critest.New()
	var logs syncBuffer
	logger := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	x := cri.Instrument(f.Runtime, f.Images, logger)
	ctx := context.Background()

	sc := &runtimeapi.PodSandboxConfig{Metadata: &runtimeapi.PodSandboxMetadata{Name: "web", Namespace: "default", Uid: "u1"}}
	sid, err := x.RunPodSandbox(ctx, sc, "")
	require.NoError(t, err)

	f.InjectError("PullImage", status.Error(codes.Unknown, "registry said no"))
	_, err = x.PullImage(ctx, &runtimeapi.ImageSpec{Image: "127.0.0.1:5000/nope:1"}, nil, sc)
	require.Error(t, err)
	assert.Equal(t, "registry said no", cri.Message(err))

	_, err = x.ContainerStatus(ctx, "missing", false)
	require.True(t, cri.IsNotFound(err))

	var wg sync.WaitGroup
	for range 50 {
		wg.Go(func() {
			_, err := x.PodSandboxStatus(ctx, sid, false)
			assert.NoError(t, err)
		})
	}
	wg.Wait()

	stats := x.Stats()
	assert.Equal(t, 1, stats["RunPodSandbox"].Count)
	assert.Equal(t, 0, stats["RunPodSandbox"].Errors)
	assert.Equal(t, cri.OpStats{Count: 1, Errors: 1, Total: stats["PullImage"].Total}, stats["PullImage"])
	assert.Equal(t, 1, stats["ContainerStatus"].Errors)
	assert.Equal(t, 50, stats["PodSandboxStatus"].Count)
	assert.Positive(t, stats["PodSandboxStatus"].Total)

	// Stats returns a copy.
	stats["RunPodSandbox"] = cri.OpStats{}
	assert.Equal(t, 1, x.Stats()["RunPodSandbox"].Count)

	out := logs.String()
	assert.Contains(t, out, `level=DEBUG msg="CRI call" component=cri pod=default/web attempt=0 sandboxID=web_default_u1_0 verb=RunPodSandbox`)
	assert.Contains(t, out, `level=WARN msg="CRI call failed" component=cri image=127.0.0.1:5000/nope:1`)
	assert.Contains(t, out, `code=Unknown`)
	// NotFound is expected during cleanup and stays at Debug.
	assert.Contains(t, out, `level=DEBUG msg="CRI call found no object" component=cri containerID=missing verb=ContainerStatus`)
	assert.Contains(t, out, "code=NotFound")
}

func TestInstrument_NilLogger(t *testing.T) {
	f := critest.New()
	x := cri.Instrument(f.Runtime, f.Images, nil)
	_, err := x.Version(context.Background(), "v1")
	require.NoError(t, err)
	assert.Equal(t, 1, x.Stats()["Version"].Count)
}
