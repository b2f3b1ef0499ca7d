package probes

import (
	"context"
	"net"
	"strconv"
	"time"
)

// TCP connects to host:port within timeout and closes the connection at
// once: Success if the connection was established, else Failure with the
// dial error (refused, unreachable, timed out). It never returns an error.
func TCP(ctx context.Context, host string, port int, timeout time.Duration) (Result, string, error) {
	return tcpTargetOf(host, port).probe(ctx, timeout)
}

// tcpTarget is a TCP address to probe, "host:port", joined once: a worker
// keeps it for as long as the pod IP stays the same.
//
// It is dialled by its string even when the host is an IP literal: the
// resolver parses a literal without a system call, while net.Dialer.DialTCP
// binds the socket to the wildcard address first when given a zero local
// address (one more system call and an ephemeral port search per probe).
type tcpTarget string

// tcpTargetOf joins host and port.
func tcpTargetOf(host string, port int) tcpTarget {
	return tcpTarget(net.JoinHostPort(host, strconv.Itoa(port)))
}

// probe connects and closes at once (kubelet pkg/probe/tcp).
func (t tcpTarget) probe(ctx context.Context, timeout time.Duration) (Result, string, error) {
	conn, err := t.dial(ctx, time.Now().Add(timeout))
	if err != nil {
		return Failure, err.Error(), nil
	}
	_ = conn.Close()
	return Success, "", nil
}

// dial connects to the target by deadline (see lingerDialer).
func (t tcpTarget) dial(ctx context.Context, deadline time.Time) (net.Conn, error) {
	return lingerDialer(ctx, net.Dialer{KeepAlive: -1, Deadline: deadline}, "tcp", string(t))
}

// lingerDial dials addr with the probes' socket options (see
// lingerDialer); the gRPC probe's dialer.
func lingerDial(ctx context.Context, network, addr string) (net.Conn, error) {
	return lingerDialer(ctx, net.Dialer{KeepAlive: -1}, network, addr)
}

// lingerDialer dials with d and sets the kubelet's socket options: SO_LINGER
// 1 s so that closed probe connections are reset instead of lingering in
// TIME_WAIT (kubelet pkg/probe/dialer_others.go). d must disable TCP
// keep-alive: a probe's connection lives milliseconds, and enabling it
// costs four setsockopt calls per probe.
func lingerDialer(ctx context.Context, d net.Dialer, network, addr string) (net.Conn, error) {
	conn, err := d.DialContext(ctx, network, addr)
	if err != nil {
		return nil, err
	}
	if tc, ok := conn.(*net.TCPConn); ok {
		_ = tc.SetLinger(1)
	}
	return conn, nil
}
