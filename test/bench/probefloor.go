package main

// The steady scenario's floor: the probes' own cost without an agent. A
// child process (the bench binary run as `bench probe-floor IP…`) makes the
// calls the agent's probes make on the same pods at the same rate (per pod
// and second one HTTP GET of /healthz and one TCP connect, on the agent's
// quarter-second slots, each connection closed at once with SO_LINGER 1 s),
// with nothing else: no thresholds, results, statuses, events or CRI. Its
// CPU over a window as long as the agent's, read from /proc in the same
// way, is what 100 pods' probes cost this kernel (connect and close through
// the pod's veth, the bridge and conntrack), so the agent's steady CPU gets
// a ratio like the other scenarios.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"strconv"
	"syscall"
	"time"

	"github.com/minikubelet/minikubelet/probes"
)

// probeFloorCommand is the child process's first argument.
const probeFloorCommand = "probe-floor"

// probeSlot is the agent's probe slot (probes/worker.go: quarter seconds).
const probeSlot = 250 * time.Millisecond

// runProbeFloor probes the pod IPs in args until killed.
func runProbeFloor(args []string) error {
	if len(args) == 0 {
		return errors.New("probe-floor: no pod IP")
	}
	type target struct{ http, tcp string }
	var ts []target
	for _, ip := range args {
		ts = append(ts, target{http: net.JoinHostPort(ip, strconv.Itoa(httpPort)), tcp: net.JoinHostPort(ip, strconv.Itoa(tcpPort))})
	}
	d := net.Dialer{KeepAlive: -1}
	dial := func(addr string) (net.Conn, error) {
		c, err := d.Dial("tcp", addr)
		if err != nil {
			return nil, err
		}
		_ = c.(*net.TCPConn).SetLinger(1)
		return c, nil
	}
	buf := make([]byte, 4096)
	get := func(addr string) error {
		c, err := dial(addr)
		if err != nil {
			return err
		}
		defer c.Close()
		_ = c.SetDeadline(time.Now().Add(time.Second))
		req := "GET /healthz HTTP/1.1\r\nHost: " + addr + "\r\nUser-Agent: " + probes.DefaultUserAgent + "\r\nAccept: */*\r\nConnection: close\r\n\r\n"
		if _, err := io.WriteString(c, req); err != nil {
			return err
		}
		for {
			if _, err := c.Read(buf); err != nil {
				if errors.Is(err, io.EOF) {
					return nil
				}
				return err
			}
		}
	}
	// Pod i is probed in slot i mod 4 of every second, as the agent's
	// probes of pods started at spread-out times end up.
	slots := int(time.Second / probeSlot)
	next := time.Now().Truncate(probeSlot).Add(probeSlot)
	for n := 0; ; n++ {
		time.Sleep(time.Until(next))
		for i := n % slots; i < len(ts); i += slots {
			if err := get(ts[i].http); err != nil {
				return fmt.Errorf("probe-floor: GET %s: %w", ts[i].http, err)
			}
			c, err := dial(ts[i].tcp)
			if err != nil {
				return fmt.Errorf("probe-floor: connect %s: %w", ts[i].tcp, err)
			}
			_ = c.Close()
		}
		next = next.Add(probeSlot)
	}
}

// probeFloor runs the floor prober on ips for d and returns its usage.
func probeFloor(ctx context.Context, ips []string, d time.Duration) (usage, error) {
	self, err := os.Executable()
	if err != nil {
		return usage{}, err
	}
	cmd := exec.CommandContext(ctx, self, append([]string{probeFloorCommand}, ips...)...)
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		return usage{}, err
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	// A second to settle (process start, first slots).
	select {
	case err := <-exited:
		return usage{}, fmt.Errorf("probe floor exited: %v", err)
	case <-time.After(time.Second):
	}
	u, err := measure(ctx, cmd.Process.Pid, d)
	_ = cmd.Process.Signal(syscall.SIGKILL)
	if werr := <-exited; err == nil && !isKilled(werr) {
		err = fmt.Errorf("probe floor: %v", werr)
	}
	return u, err
}

// isKilled reports an exit by SIGKILL, the floor prober's normal end.
func isKilled(err error) bool {
	var ee *exec.ExitError
	if !errors.As(err, &ee) {
		return false
	}
	ws, ok := ee.Sys().(syscall.WaitStatus)
	return ok && ws.Signaled() && ws.Signal() == syscall.SIGKILL
}
