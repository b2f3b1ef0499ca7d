// Package e2e drives the real minikubelet binary against a real containerd,
// runc, CNI plugins and registry. It runs only with MINIKUBELET_E2E=1 (make
// test-e2e sets it up); TestMain starts a private containerd with its own
// root, state, socket, config and CNI conf dir, and removes it afterwards.
package e2e

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/minikubelet/minikubelet/cni"
	"github.com/minikubelet/minikubelet/cri"
)

// suite holds what TestMain set up for every test.
var suite struct {
	repo     string      // repository root
	dir      string      // private state: containerd, agent root, logs
	bin      string      // the minikubelet binary under test
	endpoint string      // private containerd's CRI endpoint
	registry string      // local registry host:port
	network  cni.Config  // the pod network the tests use
	rt       *cri.Client // CRI client for assertions
}

// The suite's pod network: a /24 of 10.89.0.0/16 (the range
// hack/isolate-pod-network.sh keeps on the machine) and a bridge of its own,
// both picked per run so that two suites on one machine (make test-e2e runs
// one per containerd at the same time) do not share a bridge or hand out the
// same IPs.
var (
	e2ePodCIDR = "10.89.0.0/24"
	e2eBridge  = "mkle2e0"
	// e2eNetLock is the flock on /tmp/mkc-net-<N>.lock that reserves the
	// suite's /24 for the process's life; the private runtimes of any
	// suite's tests pick their /24 under the same locks (pickNet).
	e2eNetLock *os.File
)

// e2eNode is the suite's node name, e2e-node-<N> after its /24
// (pickNetwork). A local pod's UID is a hash of the node name and the pod
// (manifest.SetPodDefaults), and every suite's daemon puts pods in the
// host's one /kubepods: under a shared "e2e-node", the suites against
// containerd 1.6 and 2.x running at once gave the same test pod the same
// UID, hence the same pod cgroup, and the one suite's teardown
// (destroyPodCgroup SIGKILLs what is left in it) killed the other's
// running pod (its preStop hook exited 137 in
// TestBoundaryHooks_ServeExitsWhilePodTerminates).
var e2eNode = "e2e-node"

// pickNetwork chooses the run's subnet and bridge: the first /24 from one
// derived from the process ID that no interface on the machine uses and no
// other suite or private runtime has locked.
func pickNetwork() error {
	used := map[int]bool{}
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return err
	}
	for _, a := range addrs {
		if ipn, ok := a.(*net.IPNet); ok {
			if ip4 := ipn.IP.To4(); ip4 != nil && ip4[0] == 10 && ip4[1] == 89 {
				used[int(ip4[2])] = true
			}
		}
	}
	start := os.Getpid() % 253
	for i := range 253 {
		n := (start+i)%253 + 1
		if used[n] {
			continue
		}
		if _, err := os.Stat(fmt.Sprintf("/sys/class/net/mkle2e%d", n)); err == nil {
			continue
		}
		if _, err := os.Stat(fmt.Sprintf("/sys/class/net/mkc%d", n)); err == nil {
			continue
		}
		f, err := os.OpenFile(fmt.Sprintf("/tmp/mkc-net-%d.lock", n), os.O_RDWR|os.O_CREATE, 0o600)
		if err != nil {
			return err
		}
		if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
			_ = f.Close()
			continue
		}
		e2eNetLock = f
		e2ePodCIDR = fmt.Sprintf("10.89.%d.0/24", n)
		e2eBridge = fmt.Sprintf("mkle2e%d", n)
		e2eNode = fmt.Sprintf("e2e-node-%d", n)
		return nil
	}
	return fmt.Errorf("no free /24 in 10.89.0.0/16 (each suite and private runtime holds /tmp/mkc-net-<N>.lock)")
}

func TestMain(m *testing.M) {
	if os.Getenv("MINIKUBELET_E2E") != "1" {
		fmt.Println("e2e: skipped; set MINIKUBELET_E2E=1 or run `make test-e2e` (root, real containerd)")
		os.Exit(0)
	}
	flag.Parse() // docsPreflight reads -test.run
	os.Exit(runSuite(m))
}

func runSuite(m *testing.M) int {
	fail := func(format string, args ...any) int {
		fmt.Fprintf(os.Stderr, "e2e setup: "+format+"\n", args...)
		return 1
	}
	repo, err := filepath.Abs("../..")
	if err != nil {
		return fail("%v", err)
	}
	suite.repo = repo
	// Before anything is built or started (and before the root check, so
	// that test/testutil's TestCI_MissingDocsExamplesFailTheRun can run it
	// as any user).
	if err := docsPreflight(); err != nil {
		return fail("%v", err)
	}
	if os.Geteuid() != 0 {
		return fail("must run as root")
	}
	if err := pickNetwork(); err != nil {
		return fail("%v", err)
	}
	suite.registry = os.Getenv("REGISTRY")
	if suite.registry == "" {
		suite.registry = "127.0.0.1:5000"
	}
	suite.dir, err = os.MkdirTemp("", "mkl-e2e-")
	if err != nil {
		return fail("%v", err)
	}
	// Traversable by every user, as containerd's own state dir (/run/containerd,
	// 0711): the runc of a pod with hostUsers: false resolves the sandbox's
	// rootfs under it as the pod's host uid (65536 and up), and MkdirTemp's
	// 0700 made that "remount-propagation ... rootfs: permission denied".
	if err := os.Chmod(suite.dir, 0o711); err != nil {
		return fail("%v", err)
	}
	// MINIKUBELET_BIN is a prebuilt binary, for machines without Go (the
	// cgroup v2 guest of hack/vm).
	if suite.bin = os.Getenv("MINIKUBELET_BIN"); suite.bin == "" {
		suite.bin = filepath.Join(suite.dir, "minikubelet")
		build := exec.Command("go", "build", "-o", suite.bin, "./cmd/minikubelet")
		build.Dir = repo
		build.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := build.CombinedOutput(); err != nil {
			return fail("build minikubelet: %v\n%s", err, out)
		}
	}

	ctrDir := filepath.Join(suite.dir, "containerd")
	start := exec.Command(filepath.Join(repo, "hack/start-containerd.sh"), ctrDir)
	start.Stderr = os.Stderr
	out, err := start.Output()
	if err != nil {
		return fail("start containerd: %v\n%s", err, out)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	sock := strings.TrimSpace(lines[len(lines)-1])
	suite.endpoint = "unix://" + sock
	defer func() {
		stop := exec.Command(filepath.Join(repo, "hack/stop-containerd.sh"), ctrDir)
		stop.Stdout, stop.Stderr = os.Stdout, os.Stderr
		if err := stop.Run(); err != nil {
			fmt.Fprintf(os.Stderr, "e2e teardown: stop containerd: %v\n", err)
		}
		_ = exec.Command("ip", "link", "del", e2eBridge).Run()
		_ = os.RemoveAll(suite.dir)
	}()

	suite.network = cni.Config{
		PodCIDR: e2ePodCIDR,
		Bridge:  e2eBridge,
		ConfDir: filepath.Join(ctrDir, "net.d"),
		DataDir: filepath.Join(suite.dir, "cni-ipam"),
	}.WithDefaults()

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	suite.rt, err = cri.Dial(ctx, suite.endpoint, cri.Options{})
	if err != nil {
		return fail("%v", err)
	}
	defer suite.rt.Close()

	code := m.Run()
	if code != 0 {
		dumpLog(filepath.Join(ctrDir, "containerd.log"))
	}
	return code
}

// dumpLog prints the tail of a log file to help debug a failed run.
func dumpLog(path string) {
	b, err := os.ReadFile(path)
	if err != nil {
		return
	}
	if len(b) > 8000 {
		b = b[len(b)-8000:]
	}
	fmt.Fprintf(os.Stderr, "---- tail of %s ----\n%s\n", path, bytes.TrimSpace(b))
}
