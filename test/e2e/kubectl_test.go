package e2e

// Over 600 lines: the real kubectl against a lone node, one case per command
// group, sharing the kubeconfig and server setup.

import (
	"bufio"
	"bytes"
	"context"
	"crypto/md5" //nolint:gosec // a checksum to compare copies, as md5sum in the pod
	"crypto/rand"
	"crypto/x509"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/minikubelet/minikubelet/test/controlplane"
)

// kubectlBin builds (or finds cached) kubectl from the pinned Kubernetes
// module, beside the control plane (hack/cluster/build.sh), so the test
// does not depend on whatever kubectl the machine has.
func kubectlBin(t *testing.T) string {
	t.Helper()
	repo, err := controlplane.RepoRoot()
	require.NoError(t, err)
	bin, err := controlplane.Build(context.Background(), repo, t.Logf)
	require.NoError(t, err, "hack/cluster/build.sh")
	p := filepath.Join(bin, "kubectl")
	_, err = os.Stat(p)
	require.NoError(t, err, "hack/cluster/build.sh builds kubectl")
	return p
}

// TestKubectl drives a daemon's TCP API (--api-address, the admin
// kubeconfig it writes) with a real kubectl, as a user would against a
// cluster (issue #20): discovery, get (plain, wide, yaml, watch), apply
// twice, describe with events, logs, delete --wait; and a client without
// the admin certificate is refused.
func TestKubectl(t *testing.T) {
	const pod = "e2e-kubectl"
	kubectl := kubectlBin(t)
	port := freeTCPPort(t)
	addr := "127.0.0.1:" + port
	dir := t.TempDir()
	kubeconfig := filepath.Join(dir, "admin.kubeconfig")
	d := newDaemon(t, []string{pod}, "--api-address", addr, "--admin-kubeconfig", kubeconfig)
	d.start(t)
	waitTLS(t, addr)

	k := func(t *testing.T, args ...string) (string, error) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
		defer cancel()
		cmd := exec.CommandContext(ctx, kubectl, append([]string{"--kubeconfig", kubeconfig}, args...)...)
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		err := cmd.Run()
		t.Logf("kubectl %s:\n%s", strings.Join(args, " "), out.String())
		return out.String(), err
	}
	manifest := filepath.Join(dir, "pod.yaml")
	require.NoError(t, os.WriteFile(manifest, []byte(`apiVersion: v1
kind: Pod
metadata:
  name: `+pod+`
spec:
  containers:
  - name: c
    image: `+suite.registry+`/minikubelet/busybox:1.36
    # A page for port-forward (busybox httpd daemonizes), a greeting for
    # logs, then a line a second for attach; SIGTERM ends it (a replaced
    # pod is gone within a second, not its 30 s grace period).
    command: ["sh", "-c", "trap 'exit 0' TERM; mkdir -p /www && echo hello-port-forward > /www/index.html && httpd -p 8080 -h /www && echo hello-kubectl; i=0; while true; do echo tick-$i; i=$((i+1)); sleep 1; done"]
`), 0o644))

	t.Run("APIResources", func(t *testing.T) {
		out, err := k(t, "api-resources")
		require.NoError(t, err)
		for _, re := range []string{`(?m)^pods\s+po\s+v1\s+true\s+Pod$`, `(?m)^configmaps\s+cm\s+v1\s+true\s+ConfigMap$`,
			`(?m)^secrets\s+v1\s+true\s+Secret$`, `(?m)^events\s+ev\s+v1\s+true\s+Event$`,
			`(?m)^namespaces\s+ns\s+v1\s+false\s+Namespace$`, `(?m)^nodes\s+no\s+v1\s+false\s+Node$`} {
			assert.Regexp(t, re, out)
		}
		assert.NotContains(t, out, "deployments", "only what the node serves")
		out, err = k(t, "get", "deployments")
		require.Error(t, err)
		assert.Contains(t, out, `the server doesn't have a resource type "deployments"`)
	})

	t.Run("Explain", func(t *testing.T) {
		out, err := k(t, "explain", "pod.spec.containers")
		require.NoError(t, err)
		assert.Regexp(t, `(?m)^KIND:\s+Pod$`, out)
		assert.Regexp(t, `(?m)^FIELD:\s+containers <\[\]Container>$`, out)
		assert.Contains(t, out, "List of containers belonging to the pod.")
		assert.Regexp(t, `(?m)^\s+image\s+<string>$`, out, "the Container's fields")
		out, err = k(t, "explain", "configmap.data")
		require.NoError(t, err)
		assert.Regexp(t, `(?m)^FIELD:\s+data <map\[string\]string>$`, out)
		out, err = k(t, "explain", "services")
		require.Error(t, err, "only what the node serves")
		assert.Contains(t, out, `the server doesn't have a resource type "services"`)
	})

	t.Run("ApplyTwice", func(t *testing.T) {
		out, err := k(t, "apply", "-f", manifest)
		require.NoError(t, err)
		assert.Contains(t, out, "pod/"+pod+" created")
		out, err = k(t, "apply", "-f", manifest)
		require.NoError(t, err)
		assert.Contains(t, out, "pod/"+pod+" unchanged")
	})
	p := d.waitPod(t, pod, "Running", 2*time.Minute, isRunning)

	t.Run("InvalidPodIs422NamingTheField", func(t *testing.T) {
		bad := filepath.Join(dir, "bad.yaml")
		require.NoError(t, os.WriteFile(bad, []byte("apiVersion: v1\nkind: Pod\nmetadata:\n  name: e2e-kubectl-bad\nspec:\n  containers: []\n"), 0o644))
		out, err := k(t, "create", "-f", bad)
		require.Error(t, err)
		assert.Contains(t, out, `The Pod "e2e-kubectl-bad" is invalid`)
		assert.Contains(t, out, "spec.containers")
	})

	t.Run("OtherResources", func(t *testing.T) {
		cm := filepath.Join(dir, "cm.yaml")
		require.NoError(t, os.WriteFile(cm, []byte("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: e2e-kubectl-cm\ndata:\n  a: \"1\"\n  b: \"2\"\n"), 0o644))
		out, err := k(t, "create", "-f", cm)
		require.NoError(t, err)
		assert.Contains(t, out, "configmap/e2e-kubectl-cm created")
		out, err = k(t, "get", "cm")
		require.NoError(t, err)
		assert.Regexp(t, `(?m)^NAME\s+DATA\s+AGE\ne2e-kubectl-cm\s+2\s+\d+s$`, out, "a creation time")
		out, err = k(t, "delete", "cm", "e2e-kubectl-cm")
		require.NoError(t, err)
		assert.Contains(t, out, `configmap "e2e-kubectl-cm" deleted`)

		out, err = k(t, "get", "ns")
		require.NoError(t, err)
		assert.Regexp(t, `(?m)^default\s+Active\s+\d+[sm]$`, out)
		out, err = k(t, "get", "nodes", "-o", "wide")
		require.NoError(t, err)
		assert.Regexp(t, `(?m)^NAME\s+STATUS\s+ROLES\s+AGE\s+VERSION\s+INTERNAL-IP`, out)
		assert.Regexp(t, `(?m)^\S+\s+Ready\s+`, out)
		out, err = k(t, "describe", "nodes")
		require.NoError(t, err)
		assert.Regexp(t, `(?m)^Non-terminated Pods:\s+\(1 in total\)$`, out, "pods selected by spec.nodeName")
		assert.Regexp(t, `(?m)^\s+default\s+`+pod+`\s+`, out)
		out, err = k(t, "get", "events", "--field-selector", "involvedObject.name="+pod)
		require.NoError(t, err)
		assert.Regexp(t, `(?m)^LAST SEEN\s+TYPE\s+REASON\s+OBJECT\s+MESSAGE$`, out)
		assert.Contains(t, out, "pod/"+pod)
		out, err = k(t, "version")
		require.NoError(t, err)
		assert.Regexp(t, `Server Version: v1\.\d+\.\d+`, out)
	})

	t.Run("GetPods", func(t *testing.T) {
		out, err := k(t, "get", "pods")
		require.NoError(t, err)
		assert.Regexp(t, `^NAME\s+READY\s+STATUS\s+RESTARTS\s+AGE\n`, out)
		assert.Regexp(t, `(?m)^`+pod+`\s+1/1\s+Running\s+0\s+\d+s$`, out)

		out, err = k(t, "get", "pods", "-o", "wide")
		require.NoError(t, err)
		assert.Regexp(t, `^NAME\s+READY\s+STATUS\s+RESTARTS\s+AGE\s+IP\s+NODE\s+NOMINATED NODE\s+READINESS GATES\n`, out)
		assert.Regexp(t, `(?m)^`+pod+`\s+1/1\s+Running\s+0\s+\d+s\s+`+regexp.QuoteMeta(p.Status.PodIP)+`\s+\S+\s+<none>\s+<none>$`, out)

		out, err = k(t, "get", "pod", pod, "-o", "yaml")
		require.NoError(t, err)
		assert.Contains(t, out, "kind: Pod")
		assert.Contains(t, out, "name: "+pod)
		assert.Contains(t, out, "podIP: "+p.Status.PodIP)
		assert.Contains(t, out, "kubectl.kubernetes.io/last-applied-configuration")

		// -w prints the list, then a row per change, until stopped.
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		cmd := exec.CommandContext(ctx, kubectl, "--kubeconfig", kubeconfig, "get", "pods", "-w")
		var buf bytes.Buffer
		cmd.Stdout, cmd.Stderr = &buf, &buf
		_ = cmd.Run() // killed at the timeout
		t.Logf("kubectl get pods -w:\n%s", buf.String())
		assert.Regexp(t, `^NAME\s+READY\s+STATUS\s+RESTARTS\s+AGE\n`+pod+`\s+1/1\s+Running`, buf.String())
	})

	t.Run("DescribeShowsEvents", func(t *testing.T) {
		out, err := k(t, "describe", "pod", pod)
		require.NoError(t, err)
		assert.Regexp(t, `(?m)^Status:\s+Running$`, out)
		assert.Regexp(t, `(?m)^Events:\n\s+Type\s+Reason\s+Age\s+From\s+Message`, out)
		assert.Regexp(t, `(?m)^\s+Normal\s+Started\s+`, out)
	})

	t.Run("Logs", func(t *testing.T) {
		var out string
		require.Eventually(t, func() bool {
			var err error
			out, err = k(t, "logs", pod)
			return err == nil && strings.Contains(out, "hello-kubectl")
		}, 30*time.Second, time.Second, "kubectl logs: %s", out)
	})

	// kubectl started in the background, its output collected.
	startK := func(t *testing.T, ctx context.Context, args ...string) (*exec.Cmd, *syncBuffer) {
		t.Helper()
		cmd := exec.CommandContext(ctx, kubectl, append([]string{"--kubeconfig", kubeconfig}, args...)...)
		out := newSyncBuffer()
		cmd.Stdout, cmd.Stderr = out, out
		require.NoError(t, cmd.Start())
		return cmd, out
	}

	t.Run("Exec", func(t *testing.T) {
		out, err := k(t, "exec", pod, "--", "sh", "-c", "echo out-$((1+1)); echo err-$((2+2)) >&2; exit 3")
		var ee *exec.ExitError
		require.ErrorAs(t, err, &ee)
		assert.Equal(t, 3, ee.ExitCode(), "the command's exit code")
		assert.Contains(t, out, "out-2")
		assert.Contains(t, out, "err-4")
	})

	t.Run("ExecInteractiveTTY", func(t *testing.T) {
		term := openPTY(t, 40, 120)
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, kubectl, "--kubeconfig", kubeconfig, "exec", "-it", pod, "--", "sh")
		term.start(t, cmd)
		// stdin reaches the shell, its output the terminal (the echo of
		// the typed line does not contain the result).
		at := term.waitFor(t, 0, "#", time.Minute)
		term.send(t, "echo tty-$((6*7))\r")
		at = term.waitFor(t, at, "tty-42", 30*time.Second)
		// The terminal's size, then a resize.
		term.send(t, "stty size\r")
		at = term.waitFor(t, at, "40 120", 30*time.Second)
		term.resize(t, 50, 132)
		deadline := time.Now().Add(30 * time.Second)
		for {
			term.send(t, "stty size\r")
			next := term.waitFor(t, at, "\n", 10*time.Second)
			if strings.Contains(term.output()[at:], "50 132") {
				break
			}
			require.True(t, time.Now().Before(deadline), "the resize did not reach the container:\n%s", term.output())
			at = next
			time.Sleep(200 * time.Millisecond) // kubectl forwards SIGWINCH asynchronously
		}
		term.send(t, "exit 7\r")
		err := cmd.Wait()
		t.Logf("kubectl exec -it:\n%s", term.output())
		var ee *exec.ExitError
		require.ErrorAs(t, err, &ee)
		assert.Equal(t, 7, ee.ExitCode())
	})

	t.Run("Attach", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		cmd, out := startK(t, ctx, "attach", pod)
		require.Eventually(t, func() bool { return regexp.MustCompile(`(?m)^tick-\d+$`).MatchString(out.String()) },
			time.Minute, 100*time.Millisecond, "kubectl attach shows the container's output:\n%s", out)
		cancel()
		_ = cmd.Wait()
	})

	t.Run("CopyBothWays", func(t *testing.T) {
		local := filepath.Join(dir, "payload.bin")
		payload := make([]byte, 300<<10)
		_, err := rand.Read(payload)
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(local, payload, 0o644))
		_, err = k(t, "cp", local, pod+":/tmp/payload.bin")
		require.NoError(t, err)
		out, err := k(t, "exec", pod, "--", "md5sum", "/tmp/payload.bin")
		require.NoError(t, err)
		assert.Contains(t, out, fmt.Sprintf("%x", md5.Sum(payload)), "the file arrived whole")

		back := filepath.Join(dir, "back.bin")
		_, err = k(t, "cp", pod+":/tmp/payload.bin", back)
		require.NoError(t, err)
		got, err := os.ReadFile(back)
		require.NoError(t, err)
		assert.True(t, bytes.Equal(payload, got), "the copy back is identical (%d bytes, want %d)", len(got), len(payload))
	})

	t.Run("PortForward", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		cmd, out := startK(t, ctx, "port-forward", "pod/"+pod, ":8080")
		re := regexp.MustCompile(`Forwarding from 127\.0\.0\.1:(\d+) -> 8080`)
		require.Eventually(t, func() bool { return re.MatchString(out.String()) }, time.Minute, 100*time.Millisecond,
			"kubectl port-forward listens:\n%s", out)
		local := re.FindStringSubmatch(out.String())[1]
		resp, err := http.Get("http://127.0.0.1:" + local + "/index.html")
		require.NoError(t, err)
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		assert.Equal(t, http.StatusOK, resp.StatusCode)
		assert.Equal(t, "hello-port-forward\n", string(body))
		cancel()
		_ = cmd.Wait()
		t.Logf("kubectl port-forward:\n%s", out)
	})

	t.Run("ApplyChangedImageRestartsTheContainer", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		// Events streamed while the container restarts.
		evCmd, evOut := startK(t, ctx, "get", "events", "-w", "--field-selector", "involvedObject.name="+pod)
		require.Eventually(t, func() bool { return strings.Contains(evOut.String(), "Started") }, time.Minute, 100*time.Millisecond,
			"the list first:\n%s", evOut)

		old := d.waitPod(t, pod, "Running", time.Minute, isRunning)
		changed := strings.Replace(string(must(os.ReadFile(manifest))), "busybox:1.36", "busybox:1.36@"+imageDigest(t, "minikubelet/busybox", "1.36"), 1)
		changedFile := filepath.Join(dir, "pod-changed.yaml")
		require.NoError(t, os.WriteFile(changedFile, []byte(changed), 0o644))
		out, err := k(t, "apply", "-f", changedFile)
		require.NoError(t, err)
		assert.Contains(t, out, "pod/"+pod+" configured")
		assert.NotContains(t, out, "Warning", "an update in place, as on the API server")
		p := d.waitPod(t, pod, "the container restarted", 2*time.Minute, func(p *v1.Pod) bool {
			return isRunning(p) && p.Status.ContainerStatuses[0].RestartCount == 1
		})
		assert.Equal(t, old.UID, p.UID, "the same pod")
		assert.Equal(t, old.Status.PodIP, p.Status.PodIP, "the same sandbox")
		assert.Contains(t, p.Spec.Containers[0].Image, "@sha256:")

		out, err = k(t, "apply", "-f", changedFile)
		require.NoError(t, err)
		assert.Contains(t, out, "pod/"+pod+" unchanged")
		out, err = k(t, "describe", "pod", pod)
		require.NoError(t, err)
		assert.Regexp(t, `(?m)^\s+Normal\s+Killing\s+.*Container c definition changed`, out)
		require.Eventually(t, func() bool { return strings.Contains(evOut.String(), "definition changed") }, 30*time.Second, 100*time.Millisecond,
			"kubectl get events -w streams the restart:\n%s", evOut)
		cancel()
		_ = evCmd.Wait()
		t.Logf("kubectl get events -w:\n%s", evOut)
	})

	t.Run("ApplyConfigMapInPlace", func(t *testing.T) {
		cm := filepath.Join(dir, "cm-apply.yaml")
		write := func(v string) {
			require.NoError(t, os.WriteFile(cm, []byte("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: e2e-kubectl-applied\ndata:\n  mode: "+v+"\n"), 0o644))
		}
		write("fast")
		out, err := k(t, "apply", "-f", cm)
		require.NoError(t, err)
		assert.Contains(t, out, "configmap/e2e-kubectl-applied created")
		out, err = k(t, "apply", "-f", cm)
		require.NoError(t, err)
		assert.Contains(t, out, "configmap/e2e-kubectl-applied unchanged")
		write("slow")
		out, err = k(t, "apply", "-f", cm)
		require.NoError(t, err)
		assert.Contains(t, out, "configmap/e2e-kubectl-applied configured")
		out, err = k(t, "get", "cm", "e2e-kubectl-applied", "-o", "jsonpath={.data.mode}")
		require.NoError(t, err)
		assert.Equal(t, "slow", out)
	})

	// kubectl apply --server-side (application/apply-patch+yaml): created,
	// then unchanged (kubectl says serverside-applied both times), then a
	// changed image restarts the container in place; a ConfigMap applied
	// again without a key loses it (the applied configuration is the
	// object).
	t.Run("ServerSideApply", func(t *testing.T) {
		const ssaPod = "e2e-kubectl-ssa"
		podFile := filepath.Join(dir, "ssa-pod.yaml")
		writePod := func(image string) {
			require.NoError(t, os.WriteFile(podFile, []byte("apiVersion: v1\nkind: Pod\nmetadata:\n  name: "+ssaPod+
				"\nspec:\n  terminationGracePeriodSeconds: 1\n  containers:\n  - name: c\n    image: "+image+
				"\n    command: [\"sh\", \"-c\", \"trap 'exit 0' TERM; while true; do sleep 1; done\"]\n"), 0o644))
		}
		image := suite.registry + "/minikubelet/busybox:1.36"
		writePod(image)
		out, err := k(t, "apply", "--server-side", "-f", podFile)
		require.NoError(t, err)
		assert.Contains(t, out, "pod/"+ssaPod+" serverside-applied")
		first := d.waitPod(t, ssaPod, "Running", 2*time.Minute, isRunning)
		out, err = k(t, "apply", "--server-side", "-f", podFile)
		require.NoError(t, err)
		assert.Contains(t, out, "pod/"+ssaPod+" serverside-applied")
		assert.NotContains(t, out, "Warning", "unchanged: not replaced")
		p := d.waitPod(t, ssaPod, "Running", time.Minute, isRunning)
		assert.Equal(t, first.UID, p.UID, "unchanged: the same pod")

		writePod(image + "@" + imageDigest(t, "minikubelet/busybox", "1.36"))
		out, err = k(t, "apply", "--server-side", "--force-conflicts", "-f", podFile)
		require.NoError(t, err)
		assert.Contains(t, out, "pod/"+ssaPod+" serverside-applied")
		assert.NotContains(t, out, "Warning")
		p = d.waitPod(t, ssaPod, "the container restarted", 2*time.Minute, func(p *v1.Pod) bool {
			return isRunning(p) && p.Status.ContainerStatuses[0].RestartCount == 1
		})
		assert.Equal(t, first.UID, p.UID, "updated in place")
		assert.Contains(t, p.Spec.Containers[0].Image, "@sha256:")
		out, err = k(t, "get", "pod", ssaPod, "-o", "jsonpath={.metadata.managedFields}")
		require.NoError(t, err)
		assert.Empty(t, out, "managedFields are not modelled")

		cm := filepath.Join(dir, "ssa-cm.yaml")
		require.NoError(t, os.WriteFile(cm, []byte("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: e2e-kubectl-ssa\ndata:\n  mode: fast\n  level: \"3\"\n"), 0o644))
		out, err = k(t, "apply", "--server-side", "-f", cm)
		require.NoError(t, err)
		assert.Contains(t, out, "configmap/e2e-kubectl-ssa serverside-applied")
		require.NoError(t, os.WriteFile(cm, []byte("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: e2e-kubectl-ssa\ndata:\n  mode: slow\n"), 0o644))
		out, err = k(t, "apply", "--server-side", "-f", cm)
		require.NoError(t, err)
		assert.Contains(t, out, "configmap/e2e-kubectl-ssa serverside-applied")
		out, err = k(t, "get", "cm", "e2e-kubectl-ssa", "-o", "jsonpath={.data}")
		require.NoError(t, err)
		assert.JSONEq(t, `{"mode":"slow"}`, out, "the key the applied configuration omits is removed")

		bad := filepath.Join(dir, "ssa-bad.yaml")
		require.NoError(t, os.WriteFile(bad, []byte("apiVersion: v1\nkind: Pod\nmetadata:\n  name: e2e-kubectl-ssa-bad\nspec:\n  containers: []\n"), 0o644))
		out, err = k(t, "apply", "--server-side", "-f", bad)
		require.Error(t, err)
		assert.Contains(t, out, `The Pod "e2e-kubectl-ssa-bad" is invalid`)
		assert.Contains(t, out, "spec.containers")

		out, err = k(t, "delete", "pod", ssaPod, "--grace-period", "1", "--wait", "--timeout", "90s")
		require.NoError(t, err, out)
	})

	// client-go, as a program written against a cluster uses it: the
	// typed clientset from the admin kubeconfig, an informer (list, then
	// watch from the list's resource version), a watch, logs.
	t.Run("ClientGo", func(t *testing.T) {
		cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
		require.NoError(t, err)
		cs, err := kubernetes.NewForConfig(cfg)
		require.NoError(t, err)
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		defer cancel()

		list, err := cs.CoreV1().Pods("default").List(ctx, metav1.ListOptions{})
		require.NoError(t, err)
		require.NotEmpty(t, list.ResourceVersion)
		assert.True(t, slices.ContainsFunc(list.Items, func(p v1.Pod) bool { return p.Name == pod }), "the list holds %s", pod)

		factory := informers.NewSharedInformerFactoryWithOptions(cs, 0, informers.WithNamespace("default"))
		podInformer := factory.Core().V1().Pods()
		lister := podInformer.Lister()
		podInformer.Informer() // registered before Start
		factory.Start(ctx.Done())
		defer func() { cancel(); factory.Shutdown() }() // Shutdown waits for the informers, which stop with ctx
		for typ, ok := range factory.WaitForCacheSync(ctx.Done()) {
			require.True(t, ok, "informer %v synced", typ)
		}

		w, err := cs.CoreV1().Pods("default").Watch(ctx, metav1.ListOptions{ResourceVersion: list.ResourceVersion, FieldSelector: "metadata.name=e2e-clientgo"})
		require.NoError(t, err)
		defer w.Stop()
		created, err := cs.CoreV1().Pods("default").Create(ctx, &v1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: "e2e-clientgo"},
			Spec: v1.PodSpec{
				TerminationGracePeriodSeconds: new(int64(1)),
				Containers: []v1.Container{{Name: "c", Image: suite.registry + "/minikubelet/busybox:1.36",
					Command: []string{"sh", "-c", "echo hello-client-go; exec sleep 3600"}}},
			},
		}, metav1.CreateOptions{})
		require.NoError(t, err)
		assert.NotEmpty(t, created.UID)

		seen := map[watch.EventType]bool{}
		for running := false; !running; {
			select {
			case ev, ok := <-w.ResultChan():
				require.True(t, ok, "the watch ended early")
				seen[ev.Type] = true
				if p, ok := ev.Object.(*v1.Pod); ok && isRunning(p) {
					running = true
				}
			case <-ctx.Done():
				t.Fatalf("no Running pod on the watch; saw %v", seen)
			}
		}
		assert.True(t, seen[watch.Added], "ADDED first: %v", seen)

		require.Eventually(t, func() bool {
			p, err := lister.Pods("default").Get("e2e-clientgo")
			return err == nil && isRunning(p)
		}, time.Minute, 100*time.Millisecond, "the informer's cache follows")

		logs, err := cs.CoreV1().Pods("default").GetLogs("e2e-clientgo", &v1.PodLogOptions{Follow: true}).Stream(ctx)
		require.NoError(t, err)
		line, err := bufio.NewReader(logs).ReadString('\n')
		logs.Close()
		require.NoError(t, err)
		assert.Equal(t, "hello-client-go\n", line)

		require.NoError(t, cs.CoreV1().Pods("default").Delete(ctx, "e2e-clientgo", metav1.DeleteOptions{}))
		for deleted := false; !deleted; {
			select {
			case ev, ok := <-w.ResultChan():
				require.True(t, ok, "the watch ended early")
				deleted = ev.Type == watch.Deleted
			case <-ctx.Done():
				t.Fatal("no DELETED on the watch")
			}
		}
		require.Eventually(t, func() bool {
			_, err := lister.Pods("default").Get("e2e-clientgo")
			return apierrors.IsNotFound(err)
		}, time.Minute, 100*time.Millisecond, "the informer's cache drops it")
	})

	t.Run("NoClientCertificateRefused", func(t *testing.T) {
		kc, err := clientcmd.LoadFromFile(kubeconfig)
		require.NoError(t, err)
		roots := x509.NewCertPool()
		require.True(t, roots.AppendCertsFromPEM(kc.Clusters[kc.Contexts[kc.CurrentContext].Cluster].CertificateAuthorityData))
		code, body, err := tlsDo(roots, nil, http.MethodGet, "https://"+addr+"/api/v1/namespaces/default/pods", "", "", nil)
		if err == nil {
			assert.Equal(t, http.StatusUnauthorized, code, "%s", body)
		}
		// kubectl with the server's CA and a token, but no client
		// certificate.
		out, err := k(t, "--kubeconfig", os.DevNull, "--server", "https://"+addr, "--certificate-authority", filepath.Join(d.root, "pki", "ca.crt"), "--token", "guess", "get", "pods")
		require.Error(t, err, "kubectl without a client certificate got through:\n%s", out)
		assert.NotContains(t, out, pod)
	})

	t.Run("DeleteWait", func(t *testing.T) {
		// A watch running meanwhile prints the pod's Terminating row (each
		// watch event's object is a Table).
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		watch := exec.CommandContext(ctx, kubectl, "--kubeconfig", kubeconfig, "get", "pods", "-w", "--output-watch-events")
		wout := newSyncBuffer()
		watch.Stdout, watch.Stderr = wout, wout
		require.NoError(t, watch.Start())
		t.Cleanup(func() {
			if t.Failed() {
				t.Logf("kubectl get pods -w --output-watch-events:\n%s", wout.String())
			}
		})
		// The watch is set up once it listed the pod (its initial list
		// comes as ADDED events): a fixed sleep was the synchronisation,
		// and a watch that started after the deletion mark shows no
		// MODIFIED Terminating row.
		eventually(t, 30*time.Second, "kubectl get -w listing "+pod, func() bool {
			return regexp.MustCompile(`(?m)^ADDED\s+` + pod + `\s`).MatchString(wout.String())
		})

		out, err := k(t, "delete", "pod", pod, "--grace-period", "1", "--wait", "--timeout", "90s")
		require.NoError(t, err)
		assert.Contains(t, out, `pod "`+pod+`" deleted`)
		// The watch gets the DELETED event about when delete --wait does.
		deleted := regexp.MustCompile(`(?m)^DELETED\s+` + pod + `\s+`)
		eventually(t, 30*time.Second, "kubectl get -w showing "+pod+" DELETED", func() bool { return deleted.MatchString(wout.String()) })
		cancel()
		_ = watch.Wait()
		t.Logf("kubectl get pods -w --output-watch-events:\n%s", wout.String())
		assert.Regexp(t, `(?m)^EVENT\s+NAME\s+READY\s+STATUS\s+RESTARTS\s+AGE$`, wout.String())
		assert.Regexp(t, `(?m)^MODIFIED\s+`+pod+`\s+\d/1\s+Terminating\s+`, wout.String())
		assert.Regexp(t, `(?m)^DELETED\s+`+pod+`\s+`, wout.String())
		d.waitPod(t, pod, "gone", 5*time.Second, func(p *v1.Pod) bool { return p == nil })
		out, err = k(t, "get", "pod", pod)
		require.Error(t, err)
		assert.Contains(t, out, `pods "`+pod+`" not found`)
	})
}

// String is the output so far.
func (b *syncBuffer) String() string {
	s, _ := b.snapshot()
	return s
}

// must returns v, panicking on err (for reads of files the test wrote).
func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

// imageDigest is the digest the test registry serves for repo:tag.
func imageDigest(t *testing.T, repo, tag string) string {
	t.Helper()
	req, err := http.NewRequest(http.MethodHead, "http://"+suite.registry+"/v2/"+repo+"/manifests/"+tag, nil)
	require.NoError(t, err)
	req.Header.Set("Accept", strings.Join([]string{"application/vnd.oci.image.index.v1+json", "application/vnd.docker.distribution.manifest.list.v2+json",
		"application/vnd.oci.image.manifest.v1+json", "application/vnd.docker.distribution.manifest.v2+json"}, ", "))
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	dg := resp.Header.Get("Docker-Content-Digest")
	require.True(t, strings.HasPrefix(dg, "sha256:"), "digest %q", dg)
	return dg
}
