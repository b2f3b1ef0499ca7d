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
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	conn, err := lingerDial(ctx, "tcp", net.JoinHostPort(host, strconv.Itoa(port)))
	if err != nil {
		return Failure, err.Error(), nil
	}
	_ = conn.Close()
	return Success, "", nil
}
