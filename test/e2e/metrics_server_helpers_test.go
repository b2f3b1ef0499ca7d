package e2e

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/minikubelet/minikubelet/test/controlplane"
)

// metricsServerBin builds (or finds cached) metrics-server with
// hack/metrics-server/build.sh, from its own module pinned in
// hack/metrics-server/go.mod.
func metricsServerBin(t *testing.T) string {
	t.Helper()
	repo, err := controlplane.RepoRoot()
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 45*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, filepath.Join(repo, "hack/metrics-server/build.sh"))
	cmd.Dir = repo
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err = cmd.Run()
	t.Logf("hack/metrics-server/build.sh: %s", strings.TrimSpace(stderr.String()+stdout.String()))
	require.NoError(t, err, "hack/metrics-server/build.sh")
	lines := strings.Split(strings.TrimSpace(stdout.String()), "\n")
	p := filepath.Join(lines[len(lines)-1], "metrics-server")
	_, err = os.Stat(p)
	require.NoError(t, err)
	return p
}

// metricsServer is a metrics-server running as a host process for one
// test's control plane.
type metricsServer struct {
	log string
	// done is closed when the process exited.
	done chan struct{}
}

// exited says whether metrics-server is gone (a bad flag, a crash).
func (ms *metricsServer) exited() bool {
	select {
	case <-ms.done:
		return true
	default:
		return false
	}
}

// startMetricsServer runs metrics-server beside the control plane and
// registers it as the aggregated API v1beta1.metrics.k8s.io, so `kubectl
// top` works. It listens on bindIP (the node's InternalIP: an Endpoints
// address may not be loopback) and scrapes the kubelet server of each
// Node at its InternalIP and advertised port, trusting kubeletCA (the
// node's self-signed serving certificate). Cleanup stops it.
func startMetricsServer(t *testing.T, cp *controlplane.ControlPlane, kubectl, bindIP, kubeletCA string) *metricsServer {
	t.Helper()
	bin := metricsServerBin(t)
	dir := t.TempDir()
	port := freePort(t)
	ms := &metricsServer{log: filepath.Join(dir, "metrics-server.log"), done: make(chan struct{})}
	logf, err := os.Create(ms.log)
	require.NoError(t, err)
	kc := cp.AdminKubeconfig
	cmd := exec.Command(bin,
		// The admin's credentials: its reads of Nodes and Pods, its
		// delegated authentication and authorization of the aggregator's
		// requests, and its client certificate at the kubelet servers
		// (signed by the CA the nodes trust as --client-ca-file).
		"--kubeconfig", kc, "--authentication-kubeconfig", kc, "--authorization-kubeconfig", kc,
		"--bind-address", bindIP, "--secure-port", strconv.Itoa(port), "--cert-dir", filepath.Join(dir, "certs"),
		"--kubelet-preferred-address-types", "InternalIP",
		// The test nodes serve on a free port, advertised in the Node status.
		"--kubelet-use-node-status-port",
		"--kubelet-certificate-authority", kubeletCA,
		// metrics-server's minimum: two scrapes (a CPU rate) within 20 s;
		// the request timeout must be below it.
		"--metric-resolution", "10s", "--kubelet-request-timeout", "5s",
		"--v", "2")
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	require.NoError(t, cmd.Start())
	done := ms.done
	go func() { _ = cmd.Wait(); close(done) }()
	t.Cleanup(func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM)
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			<-done
		}
		_ = logf.Close()
		if t.Failed() {
			b, _ := os.ReadFile(ms.log)
			if len(b) > 6000 { // the head: a flag error is followed by the usage
				b = b[:6000]
			}
			t.Logf("metrics-server.log (head):\n%s", b)
		}
	})

	// The APIService, through a Service without a selector whose
	// endpoints are the host process (the apiserver's
	// --enable-aggregator-routing dials them: no kube-proxy here).
	// insecureSkipTLSVerify: metrics-server serves a certificate it made
	// itself for localhost, as in its upstream manifests; the node side is
	// verified (--kubelet-certificate-authority).
	manifest := fmt.Sprintf(`apiVersion: v1
kind: Service
metadata: {name: metrics-server, namespace: kube-system}
spec:
  ports: [{name: https, port: 443, targetPort: %[2]d, protocol: TCP}]
---
apiVersion: v1
kind: Endpoints
metadata: {name: metrics-server, namespace: kube-system}
subsets:
- addresses: [{ip: %[1]s}]
  ports: [{name: https, port: %[2]d, protocol: TCP}]
---
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata:
  name: metrics-server-host
  namespace: kube-system
  labels: {kubernetes.io/service-name: metrics-server, endpointslice.kubernetes.io/managed-by: minikubelet-e2e}
addressType: IPv4
endpoints: [{addresses: [%[1]s], conditions: {ready: true}}]
ports: [{name: https, port: %[2]d, protocol: TCP}]
---
apiVersion: apiregistration.k8s.io/v1
kind: APIService
metadata: {name: v1beta1.metrics.k8s.io}
spec:
  group: metrics.k8s.io
  version: v1beta1
  service: {name: metrics-server, namespace: kube-system, port: 443}
  insecureSkipTLSVerify: true
  groupPriorityMinimum: 100
  versionPriority: 100
`, bindIP, port)
	path := filepath.Join(dir, "metrics-server.yaml")
	require.NoError(t, os.WriteFile(path, []byte(manifest), 0o600))
	out, err := exec.Command(kubectl, "--kubeconfig", kc, "apply", "-f", path).CombinedOutput()
	require.NoError(t, err, "kubectl apply: %s", out)
	return ms
}
