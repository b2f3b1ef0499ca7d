package e2e

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	authnv1 "k8s.io/api/authentication/v1"
	v1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"

	"github.com/minikubelet/minikubelet/test/controlplane"
)

// TestCluster_TopPodAndNode runs a cluster-mode node against a real
// kube-apiserver with the aggregation layer and a real metrics-server
// (built from the Go module proxy, run as a host process and registered as
// the APIService v1beta1.metrics.k8s.io) scraping the node's kubelet
// server, then:
//   - a pod burning CPU (capped at 100m) with 8 MB of ballast: `kubectl top
//     pod` shows it with non-zero CPU and memory, `kubectl top node` shows
//     the node;
//   - GET /stats/summary on the node's port with a service account token
//     whose RBAC allows nodes/stats: the node, the pod (CPU and memory from
//     its pod cgroup), its container (from CRI stats), filesystems; with
//     ?only_cpu_and_memory=true only CPU and memory; with a token without
//     that rule: 403.
func TestCluster_TopPodAndNode(t *testing.T) {
	t.Parallel()
	const node = "mkl-cluster-top"
	kubectl := kubectlBin(t)
	cp := controlplane.Start(t, node)
	r := newPrivateRuntime(t)
	port := freePort(t)
	// --node-ip: the self-signed serving certificate then names the
	// InternalIP, and metrics-server verifies it (no --kubelet-insecure-tls).
	d := r.newDaemon(t, nil, "--node-name", node, "--kubeconfig", cp.NodeKubeconfig(t, node),
		"--port", strconv.Itoa(port), "--client-ca-file", filepath.Join(cp.Dir, "pki", "ca.crt"),
		"--node-ip", outboundIPv4(t))
	d.deleteClusterPod = func(ctx context.Context, namespace, name string) error {
		zero := int64(0)
		return cp.Admin.CoreV1().Pods(namespace).Delete(ctx, name, metav1.DeleteOptions{GracePeriodSeconds: &zero})
	}
	d.start(t)
	cs := cp.Admin
	ctx, cancel := context.WithTimeout(context.Background(), scaled(8*time.Minute))
	defer cancel()

	var ip string
	waitFor(t, "the Node with an InternalIP", scaled(60*time.Second), func() string {
		n := clusterNode(t, cs, node)
		if n == nil {
			return "no Node yet"
		}
		for _, a := range n.Status.Addresses {
			if a.Type == v1.NodeInternalIP {
				ip = a.Address
				return ""
			}
		}
		return fmt.Sprintf("addresses %v", n.Status.Addresses)
	})
	ms := startMetricsServer(t, cp, kubectl, ip, filepath.Join(d.root, "pki", "kubelet.crt"))

	zero := int64(0)
	limits := v1.ResourceList{v1.ResourceCPU: resource.MustParse("100m"), v1.ResourceMemory: resource.MustParse("64Mi")}
	pod := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "burner", Namespace: "default"},
		Spec: v1.PodSpec{
			NodeName:                      node,
			TerminationGracePeriodSeconds: &zero,
			Containers: []v1.Container{{
				Name:  "spin",
				Image: suite.registry + "/minikubelet/busybox:1.36",
				// 8 MB held in a shell variable, then a busy loop that
				// the CFS quota keeps at a tenth of a core.
				Command:   []string{"sh", "-c", `ballast=$(head -c 8000000 /dev/zero | tr '\0' x); while :; do :; done`},
				Resources: v1.ResourceRequirements{Limits: limits, Requests: limits},
			}},
		},
	}
	_, err := cs.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{})
	require.NoError(t, err)
	waitFor(t, "burner Running on the API server", scaled(90*time.Second), func() string {
		p, err := serverPod(t, cs, "burner")
		if err != nil || p == nil {
			return fmt.Sprintf("get: %v", err)
		}
		if !isRunning(p) {
			return podSummary(p)
		}
		return ""
	})

	k := func(args ...string) (string, error) {
		c, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		out, err := exec.CommandContext(c, kubectl, append([]string{"--kubeconfig", cp.AdminKubeconfig}, args...)...).CombinedOutput()
		return string(out), err
	}
	// poll retries cond every 2 s (each try runs kubectl) until it
	// returns "" or the timeout passes.
	poll := func(t *testing.T, what string, timeout time.Duration, cond func() string) {
		t.Helper()
		deadline := time.Now().Add(timeout)
		for {
			diff := cond()
			if diff == "" {
				return
			}
			if ms.exited() {
				t.Fatalf("%s: metrics-server exited (log: %s); last: %s", what, ms.log, diff)
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: not converged after %s:\n%s\n(metrics-server log: %s)", what, timeout, diff, ms.log)
			}
			select {
			case <-ctx.Done():
				t.Fatalf("%s: %v", what, ctx.Err())
			case <-time.After(2 * time.Second):
			}
		}
	}

	t.Run("kubectl top pod", func(t *testing.T) {
		// metrics-server needs two scrapes of the pod (10 s apart) for a
		// CPU rate; the APIService must become Available first.
		var out string
		poll(t, "kubectl top pod burner", scaled(2*time.Minute), func() string {
			var err error
			out, err = k("top", "pod", "burner", "-n", "default")
			if err != nil {
				return fmt.Sprintf("%v: %s", err, out)
			}
			cpu, mem, ok := topLine(out, "burner")
			if !ok || cpu <= 0 || mem <= 0 {
				return "no non-zero CPU and memory yet:\n" + out
			}
			return ""
		})
		t.Logf("kubectl top pod burner:\n%s", out)
		cpu, mem, _ := topLine(out, "burner")
		require.LessOrEqual(t, cpu, int64(150), "the CFS quota caps the pod at 100m (plus a rate's jitter)")
		require.GreaterOrEqual(t, mem, int64(7), "8 MB (7.6 MiB) of ballast")
		out, err := k("top", "pod", "burner", "-n", "default", "--containers")
		require.NoError(t, err, out)
		t.Logf("kubectl top pod burner --containers:\n%s", out)
		require.Contains(t, out, "spin")
	})

	t.Run("kubectl top node", func(t *testing.T) {
		var out string
		poll(t, "kubectl top node", scaled(time.Minute), func() string {
			var err error
			out, err = k("top", "node", node)
			if err != nil {
				return fmt.Sprintf("%v: %s", err, out)
			}
			if cpu, mem, ok := topLine(out, node); !ok || cpu <= 0 || mem <= 0 {
				return "no non-zero CPU and memory yet:\n" + out
			}
			return ""
		})
		t.Logf("kubectl top node:\n%s", out)
	})

	t.Run("stats summary authorized as nodes/stats", func(t *testing.T) {
		allowed := statsToken(ctx, t, cp, "stats-reader", true)
		denied := statsToken(ctx, t, cp, "stats-denied", false)
		get := func(token, query string) (int, []byte) {
			c := &http.Client{Timeout: 20 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{
				InsecureSkipVerify: true, //nolint:gosec // the node's self-signed serving certificate
			}}}
			req, err := http.NewRequestWithContext(ctx, http.MethodGet, "https://"+net.JoinHostPort(ip, strconv.Itoa(port))+"/stats/summary"+query, nil)
			require.NoError(t, err)
			req.Header.Set("Authorization", "Bearer "+token)
			resp, err := c.Do(req)
			require.NoError(t, err)
			defer resp.Body.Close()
			b, err := io.ReadAll(resp.Body)
			require.NoError(t, err)
			return resp.StatusCode, b
		}
		// RBAC changes reach the authorizer through its informers: wait.
		var body []byte
		waitFor(t, "the stats-reader token allowed", scaled(30*time.Second), func() string {
			var code int
			code, body = get(allowed, "")
			if code != http.StatusOK {
				return fmt.Sprintf("%d: %s", code, body)
			}
			return ""
		})
		var s statsapi.Summary
		require.NoError(t, json.Unmarshal(body, &s))
		require.Equal(t, node, s.Node.NodeName)
		require.NotZero(t, *s.Node.CPU.UsageCoreNanoSeconds)
		require.NotZero(t, *s.Node.Memory.WorkingSetBytes)
		require.NotNil(t, s.Node.Fs, "%s", body)
		require.NotZero(t, *s.Node.Fs.CapacityBytes)
		require.NotNil(t, s.Node.Runtime, "image filesystem from CRI ImageFsInfo: %s", body)
		require.NotZero(t, *s.Node.Runtime.ImageFs.UsedBytes)
		require.NotNil(t, s.Node.Rlimit)
		var ps *statsapi.PodStats
		for i := range s.Pods {
			if s.Pods[i].PodRef.Name == "burner" {
				ps = &s.Pods[i]
			}
		}
		require.NotNil(t, ps, "burner in the summary: %s", body)
		require.NotNil(t, ps.CPU, "pod CPU from the pod cgroup: %s", body)
		require.NotZero(t, *ps.CPU.UsageCoreNanoSeconds)
		require.GreaterOrEqual(t, *ps.Memory.WorkingSetBytes, uint64(8_000_000), "the ballast, in the pod cgroup")
		require.Len(t, ps.Containers, 1)
		c := ps.Containers[0]
		require.Equal(t, "spin", c.Name)
		require.NotZero(t, *c.CPU.UsageCoreNanoSeconds)
		require.GreaterOrEqual(t, *c.Memory.WorkingSetBytes, uint64(8_000_000))
		require.NotNil(t, c.Rootfs, "writable layer from CRI stats: %s", body)
		require.NotNil(t, c.Logs)
		require.NotNil(t, ps.EphemeralStorage)
		t.Logf("summary: node cpu %d ns, working set %d B; pod burner cpu %d ns, working set %d B; container rootfs %d B, logs %d B",
			*s.Node.CPU.UsageCoreNanoSeconds, *s.Node.Memory.WorkingSetBytes, *ps.CPU.UsageCoreNanoSeconds, *ps.Memory.WorkingSetBytes,
			*c.Rootfs.UsedBytes, *c.Logs.UsedBytes)

		t.Logf("pod network from CRI ListPodSandboxStats: %v", ps.Network != nil)

		// A later summary has CPU rates (usageNanoCores: the change since
		// an earlier one at least a second before), and with
		// only_cpu_and_memory nothing else.
		waitFor(t, "a summary with CPU rates", scaled(20*time.Second), func() string {
			code, b := get(allowed, "?only_cpu_and_memory=true")
			if code != http.StatusOK {
				return fmt.Sprintf("%d: %s", code, b)
			}
			s = statsapi.Summary{}
			if err := json.Unmarshal(b, &s); err != nil {
				return err.Error()
			}
			body = b
			if len(s.Pods) == 0 || s.Pods[0].CPU == nil || s.Pods[0].CPU.UsageNanoCores == nil {
				return string(b)
			}
			return ""
		})
		require.NotNil(t, s.Node.CPU.UsageNanoCores, "%s", body)
		require.Nil(t, s.Node.Fs)
		require.Len(t, s.Pods, 1)
		require.Nil(t, s.Pods[0].EphemeralStorage)
		require.NotNil(t, s.Pods[0].CPU.UsageNanoCores, "%s", body)
		nano := *s.Pods[0].CPU.UsageNanoCores
		t.Logf("pod burner usageNanoCores %d (its CFS quota: 100m = 100000000)", nano)
		require.Positive(t, nano)
		require.Less(t, nano, uint64(200_000_000), "the CFS quota caps it at 100m")

		code, body := get(denied, "")
		require.Equal(t, http.StatusForbidden, code, "%s", body)
		require.Contains(t, string(body), "subresource=stats")
	})
}

// outboundIPv4 is the host's source address towards the outside (the
// default route's; a UDP "connection" sends nothing).
func outboundIPv4(t *testing.T) string {
	t.Helper()
	c, err := net.Dial("udp4", "192.0.2.1:9")
	require.NoError(t, err)
	defer c.Close()
	return c.LocalAddr().(*net.UDPAddr).IP.String()
}

// topLine parses kubectl top's line for name: CPU in millicores and
// memory in MiB.
func topLine(out, name string) (cpu, mem int64, ok bool) {
	for line := range strings.Lines(out) {
		f := strings.Fields(line)
		if len(f) < 3 || f[0] != name {
			continue
		}
		c, err1 := strconv.ParseInt(strings.TrimSuffix(f[1], "m"), 10, 64)
		memField := f[2]
		if len(f) >= 4 && strings.HasSuffix(f[2], "%") { // top node: CPU, CPU%, MEMORY, MEMORY%
			memField = f[3]
		}
		m, err2 := strconv.ParseInt(strings.TrimSuffix(memField, "Mi"), 10, 64)
		if err1 != nil || err2 != nil {
			return 0, 0, false
		}
		return c, m, true
	}
	return 0, 0, false
}

// statsToken creates a service account in default (with a ClusterRole
// allowing get on nodes/stats when allow) and returns a token of it.
func statsToken(ctx context.Context, t *testing.T, cp *controlplane.ControlPlane, name string, allow bool) string {
	t.Helper()
	cs := cp.Admin
	_, err := cs.CoreV1().ServiceAccounts("default").Create(ctx, &v1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	require.NoError(t, err)
	if allow {
		_, err = cs.RbacV1().ClusterRoles().Create(ctx, &rbacv1.ClusterRole{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Rules:      []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"nodes/stats"}, Verbs: []string{"get"}}},
		}, metav1.CreateOptions{})
		require.NoError(t, err)
		_, err = cs.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: name},
			Subjects:   []rbacv1.Subject{{Kind: "ServiceAccount", Name: name, Namespace: "default"}},
		}, metav1.CreateOptions{})
		require.NoError(t, err)
	}
	tr, err := cs.CoreV1().ServiceAccounts("default").CreateToken(ctx, name, &authnv1.TokenRequest{}, metav1.CreateOptions{})
	require.NoError(t, err)
	return tr.Status.Token
}
