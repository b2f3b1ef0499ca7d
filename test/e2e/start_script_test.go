package e2e

import (
	"bytes"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestStartScript_PortTakenFailsFast: hack/start-minikubelet.sh starts a
// daemon whose --api-address port is already taken. The daemon exits at once
// with "bind: address already in use"; the script must notice within 5 s (it
// used to wait 60 s and print only "did not come up") and show the daemon's
// own error. Everything the script touches is private to the test (binary,
// socket, pid file, log, config, root dir, the suite's containerd), so a
// real daemon on the machine is left alone.
func TestStartScript_PortTakenFailsFast(t *testing.T) {
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer taken.Close()
	addr := taken.Addr().String()

	// A socket path under /tmp: a unix socket path has 108 bytes at most.
	sockDir, err := os.MkdirTemp("/tmp", "mks-")
	require.NoError(t, err)
	t.Cleanup(func() {
		// serve mounts a tmpfs for the local API's Secrets beside its socket.
		_ = syscall.Unmount(filepath.Join(sockDir, "secrets"), syscall.MNT_DETACH)
		_ = os.RemoveAll(sockDir)
	})
	base := t.TempDir()
	pidfile := filepath.Join(base, "minikubelet.pid")
	logFile := filepath.Join(base, "minikubelet.log")
	args := append([]string{filepath.Join(suite.repo, "hack/start-minikubelet.sh")}, agentArgs()...)
	args = append(args, serveHostFlags()...)
	args = append(args,
		"--root-dir", filepath.Join(base, "root"),
		"--pod-log-dir", filepath.Join(base, "pod-logs"),
		"--manifest-dir", filepath.Join(base, "manifests"),
		"--api-address", addr,
		"--admin-kubeconfig", filepath.Join(base, "admin.kubeconfig"),
	)
	cmd := exec.Command("bash", args...)
	cmd.Env = append(os.Environ(),
		"MINIKUBELET_BIN="+suite.bin,
		"MINIKUBELET_SOCKET="+filepath.Join(sockDir, "api.sock"),
		"MINIKUBELET_PIDFILE="+pidfile,
		"MINIKUBELET_LOG="+logFile,
		"MINIKUBELET_CONFIG="+filepath.Join(base, "no-config.yaml"),
	)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	start := time.Now()
	require.NoError(t, cmd.Start())
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	var runErr error
	select {
	case runErr = <-done:
	case <-time.After(scaled(30 * time.Second)):
		_ = cmd.Process.Kill()
		<-done
		t.Fatalf("start-minikubelet.sh still waiting after 30s on a daemon that cannot bind %s:\n%s", addr, out.String())
	}
	took := time.Since(start)
	t.Logf("start-minikubelet.sh took %v:\n%s", took.Round(time.Millisecond), out.String())

	require.Error(t, runErr, "the script must fail when the daemon exits")
	require.Less(t, took, scaled(5*time.Second), "the script must notice the daemon's exit at once")
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	last := lines[len(lines)-1]
	require.Contains(t, last, "ERROR: minikubelet exited while starting", "the script's verdict")
	require.Contains(t, last, addr, "the daemon's own error, naming the port")
	require.Contains(t, last, "address already in use", "the daemon's own error")
	require.NotContains(t, out.String(), "did not come up")
	_, err = os.Stat(pidfile)
	require.True(t, os.IsNotExist(err), "the pid file of the dead daemon is removed (stat: %v)", err)
	log, err := os.ReadFile(logFile)
	require.NoError(t, err)
	require.Contains(t, string(log), "address already in use", "the daemon's log")
}
