package probes_test

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/minikubelet/minikubelet/probes"
)

func TestTCP(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer l.Close()
	accepted := make(chan struct{})
	go func() {
		defer close(accepted)
		if c, err := l.Accept(); err == nil {
			_ = c.Close()
		}
	}()

	res, out, err := probes.TCP(context.Background(), "127.0.0.1", l.Addr().(*net.TCPAddr).Port, time.Second)
	require.NoError(t, err)
	assert.Equal(t, probes.Success, res)
	assert.Empty(t, out)
	<-accepted

	res, out, err = probes.TCP(context.Background(), "127.0.0.1", closedPort(t), time.Second)
	require.NoError(t, err, "refused is a Failure, not an error")
	assert.Equal(t, probes.Failure, res)
	assert.Contains(t, out, "connection refused")
}

// blockingHealth answers Check only when the call's context ends.
type blockingHealth struct {
	healthpb.UnimplementedHealthServer
}

func (blockingHealth) Check(ctx context.Context, _ *healthpb.HealthCheckRequest) (*healthpb.HealthCheckResponse, error) {
	<-ctx.Done()
	return nil, ctx.Err()
}

// startGRPC serves srv on a loopback port and returns the port.
func startGRPC(t *testing.T, register func(*grpc.Server)) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	s := grpc.NewServer()
	register(s)
	go func() { _ = s.Serve(l) }()
	t.Cleanup(s.Stop)
	return l.Addr().(*net.TCPAddr).Port
}

func TestGRPC(t *testing.T) {
	hs := health.NewServer()
	hs.SetServingStatus("", healthpb.HealthCheckResponse_SERVING)
	hs.SetServingStatus("up", healthpb.HealthCheckResponse_SERVING)
	hs.SetServingStatus("down", healthpb.HealthCheckResponse_NOT_SERVING)
	healthPort := startGRPC(t, func(s *grpc.Server) { healthpb.RegisterHealthServer(s, hs) })
	bare := startGRPC(t, func(*grpc.Server) {})
	slow := startGRPC(t, func(s *grpc.Server) { healthpb.RegisterHealthServer(s, blockingHealth{}) })

	tests := []struct {
		name    string
		port    int
		service string
		timeout time.Duration
		want    probes.Result
		wantOut string
	}{
		{name: "SERVING, whole server", port: healthPort, want: probes.Success},
		{name: "SERVING service", port: healthPort, service: "up", want: probes.Success},
		{name: "NOT_SERVING", port: healthPort, service: "down", want: probes.Failure, wantOut: `responded with "NOT_SERVING"`},
		{name: "unknown service", port: healthPort, service: "nope", want: probes.Failure, wantOut: `does not know service "nope"`},
		{name: "health not implemented", port: bare, want: probes.Failure, wantOut: "does not implement the gRPC health protocol"},
		{name: "timeout", port: slow, timeout: 100 * time.Millisecond, want: probes.Failure, wantOut: "did not complete within 100ms"},
		{name: "connection refused", port: closedPort(t), want: probes.Failure, wantOut: "could not connect"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			timeout := tt.timeout
			if timeout == 0 {
				timeout = 5 * time.Second
			}
			start := time.Now()
			res, out, err := probes.GRPC(context.Background(), "127.0.0.1", tt.port, tt.service, timeout, probes.DefaultUserAgent)
			require.NoError(t, err, "gRPC probes never error")
			assert.Equal(t, tt.want, res, out)
			assert.Contains(t, out, tt.wantOut)
			assert.Less(t, time.Since(start), timeout+2*time.Second)
		})
	}
}
