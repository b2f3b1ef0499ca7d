// Package controlplane starts a private Kubernetes control plane for tests:
// the etcd and kube-apiserver that hack/cluster/build.sh builds from the Go
// module proxy (pinned in hack/cluster/go.mod), started on loopback by
// hack/cluster/start.sh with their own directory, ports and certificates.
// By default there is no controller-manager and no scheduler: tests bind
// pods to a node themselves (spec.nodeName), and start.sh creates the
// default ServiceAccount and kube-root-ca.crt ConfigMap of the default
// namespace (CreateNamespace does the same for others). With
// Options.Controllers, StartWith also starts kube-controller-manager and
// kube-scheduler, built (or found cached) by hack/conformance/build.sh:
// DaemonSets, Deployments, EndpointSlices and scheduling then work as in a
// real cluster.
//
// Tests that use it run only with MINIKUBELET_E2E=1 (Enabled), as root (the
// build cache lives in /var/lib/minikubelet).
package controlplane

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// EnvGate is the variable that turns these tests on (the e2e suite's).
const EnvGate = "MINIKUBELET_E2E"

// Enabled reports whether the end-to-end tests are turned on.
func Enabled() bool { return os.Getenv(EnvGate) == "1" }

// buildTimeout bounds hack/cluster/build.sh: a few seconds when the
// binaries are cached, about 15 minutes for a first build on 2 busy cores.
const buildTimeout = 30 * time.Minute

// ControlPlane is one running etcd + kube-apiserver.
type ControlPlane struct {
	// Dir holds everything of this control plane (start.sh's DIR).
	Dir string
	// Server is the apiserver's URL (https://127.0.0.1:<port>).
	Server string
	// AdminKubeconfig is a kubeconfig with cluster-admin credentials.
	AdminKubeconfig string
	// Admin is a clientset with those credentials.
	Admin kubernetes.Interface
	// StartupTime is how long start.sh took (etcd and apiserver until
	// /readyz answered ok).
	StartupTime time.Duration

	repo string
	opts Options
}

// Options choose what StartWith starts beside etcd and kube-apiserver.
type Options struct {
	// ServiceCIDR is the apiserver's --service-cluster-ip-range (start.sh's
	// default 10.96.0.0/16 when empty).
	ServiceCIDR string
	// AdvertiseAddress, an address of this machine, is where the apiserver
	// listens instead of loopback and the `kubernetes` Service's endpoint
	// (start.sh's ADVERTISE_ADDRESS): pods reach the API server through
	// kube-proxy only so.
	AdvertiseAddress string
	// Controllers starts kube-controller-manager and kube-scheduler.
	Controllers bool
	// ControllerManagerFlags are added to kube-controller-manager's
	// command line (with Controllers), after the harness's own: e.g.
	// --cluster-signing-duration=2m for certificates that expire in a
	// test's lifetime.
	ControllerManagerFlags []string
}

// env is start.sh's environment for the options.
func (o Options) env() []string {
	var env []string
	if o.ServiceCIDR != "" {
		env = append(env, "SERVICE_CIDR="+o.ServiceCIDR)
	}
	if o.AdvertiseAddress != "" {
		env = append(env, "ADVERTISE_ADDRESS="+o.AdvertiseAddress)
	}
	return env
}

// RepoRoot finds the repository root: the nearest parent of the working
// directory with hack/cluster/start.sh.
func RepoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "hack", "cluster", "start.sh")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("no parent directory holds hack/cluster/start.sh")
		}
		dir = parent
	}
}

// Build builds (or finds cached) etcd and kube-apiserver and returns their
// directory. Progress lines go to logf.
func Build(ctx context.Context, repo string, logf func(string, ...any)) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, buildTimeout)
	defer cancel()
	out, err := runScript(ctx, repo, logf, nil, "hack/cluster/build.sh")
	if err != nil {
		return "", fmt.Errorf("build the control plane (hack/cluster/build.sh): %w", err)
	}
	return lastLine(out), nil
}

// Start builds the control plane if needed and starts one in a directory of
// its own, with node credentials for nodes. Cleanup stops it (and, when the
// test failed, logs the tail of both logs first) and removes the directory.
func Start(t testing.TB, nodes ...string) *ControlPlane {
	t.Helper()
	return StartWith(t, Options{}, nodes...)
}

// StartWith is Start with options.
func StartWith(t testing.TB, opts Options, nodes ...string) *ControlPlane {
	t.Helper()
	if !Enabled() {
		t.Skipf("control-plane tests need %s=1 (make test-e2e) and root", EnvGate)
	}
	repo, err := RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Build(context.Background(), repo, t.Logf); err != nil {
		t.Fatal(err)
	}
	var confBin string
	if opts.Controllers {
		if confBin, err = BuildTools(context.Background(), repo, t.Logf, "kube-controller-manager", "kube-scheduler"); err != nil {
			t.Fatal(err)
		}
	}
	dir, err := os.MkdirTemp("", "mkcp-")
	if err != nil {
		t.Fatal(err)
	}
	cp := &ControlPlane{Dir: dir, repo: repo, opts: opts}
	var controllers []*exec.Cmd
	t.Cleanup(func() {
		if t.Failed() {
			for _, name := range []string{"kube-apiserver.log", "etcd.log", "kube-controller-manager.log", "kube-scheduler.log"} {
				if _, err := os.Stat(filepath.Join(dir, name)); err == nil {
					t.Logf("%s (tail):\n%s", name, cp.logTail(name, 4000))
				}
			}
		}
		for _, c := range controllers {
			_ = c.Process.Signal(syscall.SIGTERM)
			_ = c.Wait()
		}
		if err := cp.stop("all"); err != nil {
			t.Errorf("stop the control plane: %v", err)
		}
		_ = os.RemoveAll(dir)
	})
	start := time.Now()
	if err := cp.start(nodes...); err != nil {
		t.Fatal(err)
	}
	cp.StartupTime = time.Since(start)
	cp.AdminKubeconfig = filepath.Join(dir, "admin.kubeconfig")
	cfg, err := cp.RestConfig(cp.AdminKubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	cp.Server = cfg.Host
	if cp.Admin, err = kubernetes.NewForConfig(cfg); err != nil {
		t.Fatal(err)
	}
	if opts.Controllers {
		for _, name := range []string{"kube-controller-manager", "kube-scheduler"} {
			c, err := cp.startController(confBin, name)
			if err != nil {
				t.Fatal(err)
			}
			controllers = append(controllers, c)
		}
		if err := cp.waitControllers(); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("control plane ready at %s in %s (%s)", cp.Server, cp.StartupTime.Round(time.Millisecond), dir)
	return cp
}

// BuildTools builds (or finds cached) binaries of hack/conformance/build.sh
// (kube-controller-manager, kube-scheduler, kube-proxy, coredns, ...) and
// returns their directory.
func BuildTools(ctx context.Context, repo string, logf func(string, ...any), names ...string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, buildTimeout)
	defer cancel()
	out, err := runScript(ctx, repo, logf, nil, "hack/conformance/build.sh", names...)
	if err != nil {
		return "", fmt.Errorf("build %s (hack/conformance/build.sh): %w", strings.Join(names, ", "), err)
	}
	return lastLine(out), nil
}

// startController starts kube-controller-manager or kube-scheduler with
// admin credentials, on a loopback port the kernel picks, logging to
// Dir/NAME.log; the controller-manager with the cluster CA and the
// service-account key, as hack/conformance/run.sh starts them.
func (cp *ControlPlane) startController(bin, name string) (*exec.Cmd, error) {
	kc := filepath.Join(cp.Dir, "admin.kubeconfig")
	pki := filepath.Join(cp.Dir, "pki")
	args := []string{
		"--kubeconfig", kc, "--authentication-kubeconfig", kc, "--authorization-kubeconfig", kc,
		"--bind-address", "127.0.0.1", "--secure-port", "0", "--leader-elect=false", "--v", "1",
	}
	if name == "kube-controller-manager" {
		args = append(args,
			"--service-account-private-key-file", filepath.Join(pki, "sa.key"), "--root-ca-file", filepath.Join(pki, "ca.crt"),
			"--cluster-signing-cert-file", filepath.Join(pki, "ca.crt"), "--cluster-signing-key-file", filepath.Join(pki, "ca.key"),
			"--use-service-account-credentials=true", "--controllers", "*")
		args = append(args, cp.opts.ControllerManagerFlags...)
	}
	logFile, err := os.Create(filepath.Join(cp.Dir, name+".log"))
	if err != nil {
		return nil, err
	}
	defer logFile.Close()
	c := exec.Command(filepath.Join(bin, name), args...)
	c.Stdout, c.Stderr = logFile, logFile
	c.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := c.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	return c, nil
}

// waitControllers waits until the controller-manager works: its
// root-ca-cert-publisher has written kube-system/kube-root-ca.crt. (The
// scheduler shows itself working when a test's pods get their node.)
func (cp *ControlPlane) waitControllers() error {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	for {
		_, err := cp.Admin.CoreV1().ConfigMaps("kube-system").Get(ctx, "kube-root-ca.crt", metav1.GetOptions{})
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("kube-controller-manager did not publish kube-system/kube-root-ca.crt within 3 minutes (last: %v; log %s)",
				err, filepath.Join(cp.Dir, "kube-controller-manager.log"))
		case <-time.After(500 * time.Millisecond):
		}
	}
}

// start runs start.sh for the directory (idempotent: it starts what is
// not running and adds credentials for new nodes).
func (cp *ControlPlane) start(nodes ...string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	args := append([]string{cp.Dir}, nodes...)
	if _, err := runScript(ctx, cp.repo, nil, cp.opts.env(), "hack/cluster/start.sh", args...); err != nil {
		return fmt.Errorf("start the control plane: %w", err)
	}
	return nil
}

// stop runs stop.sh for one component or all.
func (cp *ControlPlane) stop(what string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	_, err := runScript(ctx, cp.repo, nil, nil, "hack/cluster/stop.sh", cp.Dir, what)
	return err
}

// StopAPIServer stops kube-apiserver (etcd keeps running): an outage as
// the nodes see it.
func (cp *ControlPlane) StopAPIServer(t testing.TB) {
	t.Helper()
	if err := cp.stop("kube-apiserver"); err != nil {
		t.Fatal(err)
	}
}

// StartAPIServer starts kube-apiserver again at the same address and
// waits until /readyz answers ok.
func (cp *ControlPlane) StartAPIServer(t testing.TB) {
	t.Helper()
	if err := cp.start(); err != nil {
		t.Fatal(err)
	}
}

// NodeKubeconfig returns the path of a kubeconfig with node's credentials
// (CN system:node:<node>, O system:nodes), creating them if needed.
func (cp *ControlPlane) NodeKubeconfig(t testing.TB, node string) string {
	t.Helper()
	path := filepath.Join(cp.Dir, "node-"+node+".kubeconfig")
	if _, err := os.Stat(path); err != nil {
		if err := cp.start(node); err != nil {
			t.Fatal(err)
		}
	}
	return path
}

// NodeClient is a clientset with node's credentials.
func (cp *ControlPlane) NodeClient(t testing.TB, node string) kubernetes.Interface {
	t.Helper()
	cfg, err := cp.RestConfig(cp.NodeKubeconfig(t, node))
	if err != nil {
		t.Fatal(err)
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return cs
}

// RestConfig loads a kubeconfig of this control plane.
func (cp *ControlPlane) RestConfig(path string) (*rest.Config, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", path)
	if err != nil {
		return nil, fmt.Errorf("load %s: %w", path, err)
	}
	cfg.UserAgent = "minikubelet-tests"
	return cfg, nil
}

// CreateNamespace creates a namespace with what the controller-manager
// would add to it: the default ServiceAccount and the kube-root-ca.crt
// ConfigMap (pods using service-account tokens need both).
func (cp *ControlPlane) CreateNamespace(ctx context.Context, name string) error {
	_, err := cp.Admin.CoreV1().Namespaces().Create(ctx, &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create namespace %s: %w", name, err)
	}
	_, err = cp.Admin.CoreV1().ServiceAccounts(name).Create(ctx, &v1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default"}}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create service account %s/default: %w", name, err)
	}
	ca, err := os.ReadFile(filepath.Join(cp.Dir, "pki", "ca.crt"))
	if err != nil {
		return err
	}
	_, err = cp.Admin.CoreV1().ConfigMaps(name).Create(ctx, &v1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "kube-root-ca.crt"}, Data: map[string]string{"ca.crt": string(ca)},
	}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create configmap %s/kube-root-ca.crt: %w", name, err)
	}
	return nil
}

// logTail returns the last n bytes of one of the control plane's logs.
func (cp *ControlPlane) logTail(name string, n int) string {
	b, err := os.ReadFile(filepath.Join(cp.Dir, name))
	if err != nil {
		return err.Error()
	}
	if len(b) > n {
		b = b[len(b)-n:]
	}
	return string(b)
}

// runScript runs a hack/cluster script from the repository root; stderr
// (the progress lines) goes to logf when given; env is added to the
// environment. It returns stdout.
func runScript(ctx context.Context, repo string, logf func(string, ...any), env []string, script string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, filepath.Join(repo, script), args...)
	cmd.Dir = repo
	if env != nil {
		cmd.Env = append(os.Environ(), env...)
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	// A killed script must not leave its children holding the pipes.
	cmd.WaitDelay = 5 * time.Second
	err := cmd.Run()
	if logf != nil {
		for _, l := range strings.Split(strings.TrimSpace(stdout.String()+stderr.String()), "\n") {
			if strings.HasPrefix(l, "[") {
				logf("%s", l)
			}
		}
	}
	if err != nil {
		return stdout.String(), fmt.Errorf("%s: %w\n%s%s", script, err, stdout.String(), stderr.String())
	}
	return stdout.String(), nil
}

// lastLine is the last non-empty line of s.
func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return strings.TrimSpace(lines[len(lines)-1])
}
