package probes

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"
)

// GRPC calls grpc.health.v1.Health/Check for service on host:port over an
// insecure connection, the whole exchange bounded by timeout. SERVING is
// Success; every other answer, and every failure to get one (connection
// refused, deadline, Unimplemented, unknown service), is Failure with a
// message: like the kubelet, a gRPC probe never reports an error.
//
// Each call opens its own connection and closes it before returning.
func GRPC(ctx context.Context, host string, port int, service string, timeout time.Duration, userAgent string) (Result, string, error) {
	addr := net.JoinHostPort(host, strconv.Itoa(port))
	conn, err := grpc.NewClient("passthrough:///"+addr,
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithUserAgent(userAgent),
		grpc.WithContextDialer(func(ctx context.Context, addr string) (net.Conn, error) {
			return lingerDial(ctx, "tcp", addr)
		}),
	)
	if err != nil {
		return Failure, fmt.Sprintf("gRPC probe could not set up a connection to %s: %v", addr, err), nil
	}
	defer func() { _ = conn.Close() }()

	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	resp, err := healthpb.NewHealthClient(conn).Check(ctx, &healthpb.HealthCheckRequest{Service: service})
	if err != nil {
		st, _ := status.FromError(err)
		switch st.Code() {
		case codes.DeadlineExceeded:
			return Failure, fmt.Sprintf("gRPC health check to %s did not complete within %s", addr, timeout), nil
		case codes.Unavailable:
			return Failure, fmt.Sprintf("gRPC probe could not connect to %s: %s", addr, st.Message()), nil
		case codes.Unimplemented:
			return Failure, fmt.Sprintf("server at %s does not implement the gRPC health protocol (grpc.health.v1.Health): %s", addr, st.Message()), nil
		case codes.NotFound:
			return Failure, fmt.Sprintf("gRPC health server at %s does not know service %q", addr, service), nil
		default:
			return Failure, fmt.Sprintf("gRPC health check to %s failed: %v", addr, err), nil
		}
	}
	if s := resp.GetStatus(); s != healthpb.HealthCheckResponse_SERVING {
		return Failure, fmt.Sprintf("service unhealthy (responded with %q)", s.String()), nil
	}
	return Success, "", nil
}
