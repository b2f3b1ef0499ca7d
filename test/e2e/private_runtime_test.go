package e2e

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/minikubelet/minikubelet/cni"
	"github.com/minikubelet/minikubelet/cri"
)

// privateRuntime is a containerd of one test's own (hack/start-containerd.sh
// in a short dir under /tmp), with its own CNI conf dir, /24 of 10.89.0.0/16,
// bridge and host-local store: a test may kill it, restart it, or take its
// pod network away without disturbing the tests running in parallel.
type privateRuntime struct {
	dir      string // /tmp/mkc-XXXX: containerd's DIR
	endpoint string
	network  cni.Config
	rt       *cri.Client
	netLock  *os.File // flock that reserves the /24 on this machine
}

// netPickMu serialises the choice of a /24 between this process's tests.
var netPickMu sync.Mutex

// newPrivateRuntime starts a private containerd for the test. Cleanup
// (registered first, so it runs after the test's daemons are gone) stops
// it with hack/stop-containerd.sh and removes its bridge; on failure it
// prints the tail of containerd's log.
func newPrivateRuntime(t *testing.T) *privateRuntime {
	t.Helper()
	dir, err := os.MkdirTemp("/tmp", "mkc-")
	require.NoError(t, err)
	return newPrivateRuntimeIn(t, dir)
}

// newPrivateRuntimeIn is newPrivateRuntime with containerd's DIR in dir (a
// short path: the socket lives there), e.g. on a filesystem of the test's
// own.
func newPrivateRuntimeIn(t *testing.T, dir string) *privateRuntime {
	t.Helper()
	r := &privateRuntime{dir: dir}
	n := r.pickNet(t)
	r.network = cni.Config{
		PodCIDR: fmt.Sprintf("10.89.%d.0/24", n),
		Bridge:  fmt.Sprintf("mkc%d", n),
		ConfDir: filepath.Join(dir, "net.d"),
		DataDir: filepath.Join(dir, "ipam"),
	}.WithDefaults()
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("private containerd log (tail):\n%s", r.logTail(6000))
		}
		if r.rt != nil {
			_ = r.rt.Close()
		}
		stop := exec.Command(filepath.Join(suite.repo, "hack/stop-containerd.sh"), dir)
		if out, err := stop.CombinedOutput(); err != nil {
			t.Errorf("stop private containerd: %v\n%s", err, out)
		}
		_ = exec.Command("ip", "link", "del", r.network.Bridge).Run()
		_ = os.RemoveAll(dir)
		_ = r.netLock.Close()
	})
	r.start(t)
	return r
}

// pickNet chooses a /24 (and bridge mkc<N>) no other test or suite on the
// machine uses: not the suite's, no interface address in it, and an flock
// on /tmp/mkc-net-<N>.lock held for the test's life.
func (r *privateRuntime) pickNet(t *testing.T) int {
	netPickMu.Lock()
	defer netPickMu.Unlock()
	suiteN, _ := strconv.Atoi(strings.Split(e2ePodCIDR, ".")[2])
	addrs, err := net.InterfaceAddrs()
	require.NoError(t, err)
	used := map[int]bool{suiteN: true}
	for _, a := range addrs {
		if ipn, ok := a.(*net.IPNet); ok {
			if ip4 := ipn.IP.To4(); ip4 != nil && ip4[0] == 10 && ip4[1] == 89 {
				used[int(ip4[2])] = true
			}
		}
	}
	start := (suiteN*37 + os.Getpid()) % 253
	for i := range 253 {
		n := (start+i)%253 + 1
		if used[n] {
			continue
		}
		if _, err := os.Stat(fmt.Sprintf("/sys/class/net/mkc%d", n)); err == nil {
			continue
		}
		f, err := os.OpenFile(fmt.Sprintf("/tmp/mkc-net-%d.lock", n), os.O_RDWR|os.O_CREATE, 0o600)
		require.NoError(t, err)
		if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
			_ = f.Close()
			continue
		}
		r.netLock = f
		return n
	}
	t.Fatal("no free /24 in 10.89.0.0/16 for a private runtime")
	return 0
}

// start (re)starts containerd with the same config and dials it.
func (r *privateRuntime) start(t *testing.T) {
	t.Helper()
	cmd := exec.Command(filepath.Join(suite.repo, "hack/start-containerd.sh"), r.dir)
	cmd.Env = append(os.Environ(), "REGISTRY="+suite.registry)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	require.NoError(t, err, "start private containerd in %s:\n%s\n%s", r.dir, out, stderr.String())
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	r.endpoint = "unix://" + strings.TrimSpace(lines[len(lines)-1])
	if r.rt == nil {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		r.rt, err = cri.Dial(ctx, r.endpoint, cri.Options{Timeout: 30 * time.Second})
		require.NoError(t, err)
	}
}

// pid is containerd's pid from its pid file.
func (r *privateRuntime) pid(t *testing.T) int {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(r.dir, "containerd.pid"))
	require.NoError(t, err)
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	require.NoError(t, err)
	return pid
}

// kill9 kills containerd with SIGKILL (its shims and containers live on)
// and waits until the process is gone.
func (r *privateRuntime) kill9(t *testing.T) {
	t.Helper()
	pid := r.pid(t)
	require.NoError(t, syscall.Kill(pid, syscall.SIGKILL))
	deadline := time.Now().Add(30 * time.Second)
	for processAlive(pid) {
		require.True(t, time.Now().Before(deadline), "containerd (pid %d) still alive 30s after SIGKILL", pid)
		time.Sleep(20 * time.Millisecond)
	}
}

// processAlive: the process exists and is not a zombie.
func processAlive(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	s := string(b)
	if i := strings.LastIndexByte(s, ')'); i >= 0 && i+2 < len(s) {
		return s[i+2] != 'Z'
	}
	return true
}

// nodeArgs are the node flags of a daemon on this runtime.
func (r *privateRuntime) nodeArgs() []string {
	return []string{
		"--runtime-endpoint", r.endpoint,
		"--node-name", e2eNode,
		"--pod-cidr", r.network.PodCIDR,
		"--cni-conf-dir", r.network.ConfDir,
		"--cni-bridge", r.network.Bridge,
		"--cni-data-dir", r.network.DataDir,
		"--pod-masquerade=false",
		"--log-level", "info",
	}
}

// newDaemon prepares a daemon on this runtime (see the package's
// newDaemon; cleanup removes leftovers through this runtime).
func (r *privateRuntime) newDaemon(t *testing.T, pods []string, extra ...string) *daemon {
	t.Helper()
	return newDaemonOn(t, r.nodeArgs(), r.rt, pods, extra...)
}

// logTail is the end of containerd's log.
func (r *privateRuntime) logTail(n int) string {
	b, err := os.ReadFile(filepath.Join(r.dir, "containerd.log"))
	if err != nil {
		return fmt.Sprintf("<%v>", err)
	}
	return tail(string(b), n)
}

// reservations are the host-local reservations, IP → sandbox ID.
func (r *privateRuntime) reservations(t *testing.T) map[string]string {
	t.Helper()
	res, err := cni.HostLocalReservations(r.network)
	require.NoError(t, err)
	return res
}

// waitCRI waits until the runtime answers a CRI call again.
func (r *privateRuntime) waitCRI(t *testing.T, timeout time.Duration) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		ctx, cancel := shortCtx()
		_, err := r.rt.Status(ctx, false)
		cancel()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("private containerd does not answer CRI after %s: %v", timeout, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
