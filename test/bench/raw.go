package main

// The floor (package floor, test/bench/floor): a raw CRI client that makes
// exactly the calls a kubelet must make for the benchmark's pods, with no
// agent. "Ready" is a TCP connect to podIP:port succeeding (waitTCP).

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"time"

	"github.com/minikubelet/minikubelet/test/bench/floor"
)

// The floor's types, by the names the scenarios use.
type (
	rawClient = floor.Client
	rawPod    = floor.Pod
	phases    = floor.Phases
)

// Labels of the raw pods (see package floor) and the namespace of the
// daemon-route scenarios.
const (
	labelBench   = floor.LabelBench
	labelPodName = floor.LabelPodName
	labelPodNS   = floor.LabelPodNS
	benchNS      = floor.DefaultNamespace
)

// waitTCP connects to ip:port until it succeeds (every millisecond).
func waitTCP(ctx context.Context, ip string, port int) error {
	addr := net.JoinHostPort(ip, strconv.Itoa(port))
	d := net.Dialer{Timeout: time.Second}
	for {
		c, err := d.DialContext(ctx, "tcp", addr)
		if err == nil {
			c.Close()
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("connect %s: %w (last: %v)", addr, ctx.Err(), err)
		case <-time.After(time.Millisecond):
		}
	}
}
