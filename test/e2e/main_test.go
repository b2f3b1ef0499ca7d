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
	"os"
	"os/exec"
	"path/filepath"
	"strings"
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
// both picked per run so that two suites on one machine do not share a
// bridge or hand out the same IPs.
var (
	e2ePodCIDR = "10.89.0.0/24"
	e2eBridge  = "mkle2e0"
)

const e2eNode = "e2e-node"

// pickNetwork chooses the run's subnet and bridge from its process ID.
func pickNetwork() {
	n := os.Getpid()%253 + 1
	e2ePodCIDR = fmt.Sprintf("10.89.%d.0/24", n)
	e2eBridge = fmt.Sprintf("mkle2e%d", n)
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
	pickNetwork()
	suite.registry = os.Getenv("REGISTRY")
	if suite.registry == "" {
		suite.registry = "127.0.0.1:5000"
	}
	suite.dir, err = os.MkdirTemp("", "mkl-e2e-")
	if err != nil {
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
