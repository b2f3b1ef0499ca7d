package e2e

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	authnv1 "k8s.io/api/authentication/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/httpstream"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/portforward"
	"k8s.io/client-go/tools/remotecommand"
	"k8s.io/client-go/transport/spdy"
	"k8s.io/utils/exec"

	"github.com/minikubelet/minikubelet/test/controlplane"
)

// freePort is a TCP port nothing listens on now.
func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// syncWriter is a bytes.Buffer safe for a stream's writer goroutine and
// the test reading it.
type syncWriter struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (w *syncWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.Write(p)
}

func (w *syncWriter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.String()
}

// TestCluster_KubeletServerServesLogsExecAttachPortForward runs `serve
// --kubeconfig` with the kubelet server against a real kube-apiserver
// (which reaches it at the Node's InternalIP and advertised port, with its
// --kubelet-client-certificate, signed by the CA the node trusts as
// --client-ca-file) and uses it the way kubectl does, through client-go:
//   - the Node advertises the port; an unauthenticated request to it is
//     refused (401), the admin's client certificate is let in (the node
//     asked the API server with a SubjectAccessReview);
//   - the API server's node proxy reaches /pods, /healthz and
//     /metrics/resource (the containers' CPU and memory from CRI stats);
//   - `kubectl logs` (tailLines) and `kubectl logs -f`: new lines arrive;
//   - `kubectl exec` without a TTY (stdout, stderr, exit code) over
//     WebSocket (v5.channel.k8s.io, which the API server translates to
//     SPDY towards the node) and over SPDY each alone, and with a TTY and
//     an open stdin (what `-it` sends) the way kubectl does it (WebSocket,
//     SPDY when the upgrade fails);
//   - `kubectl attach` to a running container's output;
//   - `kubectl port-forward` (SPDY tunneled over WebSocket, and SPDY), then
//     an HTTP GET through it.
func TestCluster_KubeletServerServesLogsExecAttachPortForward(t *testing.T) {
	t.Parallel()
	const node = "mkl-cluster-kubeletsrv"
	cp := controlplane.Start(t, node)
	r := newPrivateRuntime(t)
	port := freePort(t)
	d := r.newDaemon(t, nil, "--node-name", node, "--kubeconfig", cp.NodeKubeconfig(t, node),
		"--port", strconv.Itoa(port), "--client-ca-file", filepath.Join(cp.Dir, "pki", "ca.crt"))
	d.deleteClusterPod = func(ctx context.Context, namespace, name string) error {
		zero := int64(0)
		return cp.Admin.CoreV1().Pods(namespace).Delete(ctx, name, metav1.DeleteOptions{GracePeriodSeconds: &zero})
	}
	d.start(t)
	cs := cp.Admin
	cfg, err := cp.RestConfig(cp.AdminKubeconfig)
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), scaled(5*time.Minute))
	defer cancel()

	zero := int64(0)
	pod := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "ks", Namespace: "default"},
		Spec: v1.PodSpec{
			NodeName:                      node,
			TerminationGracePeriodSeconds: &zero,
			Containers: []v1.Container{{
				Name:  "talker",
				Image: suite.registry + "/minikubelet/busybox:1.36",
				Command: []string{"sh", "-c",
					`i=0; while true; do echo "line-$i"; i=$((i+1)); sleep 0.5; done`},
			}, {
				Name:  "web",
				Image: suite.registry + "/minikubelet/testserver:v1",
			}},
		},
	}
	_, err = cs.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{})
	require.NoError(t, err)
	waitFor(t, "ks Running on the API server", scaled(90*time.Second), func() string {
		p, err := serverPod(t, cs, "ks")
		if err != nil || p == nil {
			return fmt.Sprintf("get: %v", err)
		}
		if !isRunning(p) {
			return podSummary(p)
		}
		return ""
	})

	// The Node advertises the port; the node's address answers there.
	n := clusterNode(t, cs, node)
	require.Equal(t, int32(port), n.Status.DaemonEndpoints.KubeletEndpoint.Port)
	var ip string
	for _, a := range n.Status.Addresses {
		if a.Type == v1.NodeInternalIP {
			ip = a.Address
		}
	}
	require.NotEmpty(t, ip, "the Node has an InternalIP")
	t.Run("unauthenticated is refused", func(t *testing.T) {
		base := "https://" + net.JoinHostPort(ip, strconv.Itoa(port))
		get := func(certs ...tls.Certificate) (int, string) {
			c := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{
				InsecureSkipVerify: true, //nolint:gosec // the node's self-signed serving certificate
				Certificates:       certs,
			}}}
			resp, err := c.Get(base + "/pods")
			require.NoError(t, err)
			defer resp.Body.Close()
			b, _ := io.ReadAll(resp.Body)
			return resp.StatusCode, string(b)
		}
		code, body := get()
		require.Equal(t, http.StatusUnauthorized, code, body)
		admin, err := tls.LoadX509KeyPair(filepath.Join(cp.Dir, "pki", "admin.crt"), filepath.Join(cp.Dir, "pki", "admin.key"))
		require.NoError(t, err)
		code, body = get(admin)
		require.Equal(t, http.StatusOK, code, body)
		require.Contains(t, body, `"name":"ks"`)
	})

	// Issue #29, items 9 and 10: a token the API server minted for another
	// audience does not authenticate (401), one for the API server does
	// (403: this service account has no RBAC on nodes); a stream request
	// for the pod's name with another UID is a 404.
	t.Run("token audience and pod UID", func(t *testing.T) {
		base := "https://" + net.JoinHostPort(ip, strconv.Itoa(port))
		do := func(method, path, token string, certs ...tls.Certificate) (int, string) {
			c := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{
				InsecureSkipVerify: true, //nolint:gosec // the node's self-signed serving certificate
				Certificates:       certs,
			}}}
			req, err := http.NewRequest(method, base+path, nil)
			require.NoError(t, err)
			if token != "" {
				req.Header.Set("Authorization", "Bearer "+token)
			}
			resp, err := c.Do(req)
			require.NoError(t, err)
			defer resp.Body.Close()
			b, _ := io.ReadAll(resp.Body)
			return resp.StatusCode, string(b)
		}
		_, err := cs.CoreV1().ServiceAccounts("default").Create(ctx, &v1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "aud-probe"}}, metav1.CreateOptions{})
		require.NoError(t, err)
		token := func(aud ...string) string {
			tr, err := cs.CoreV1().ServiceAccounts("default").CreateToken(ctx, "aud-probe",
				&authnv1.TokenRequest{Spec: authnv1.TokenRequestSpec{Audiences: aud}}, metav1.CreateOptions{})
			require.NoError(t, err)
			return tr.Status.Token
		}
		code, body := do(http.MethodGet, "/pods", token("vault"))
		require.Equal(t, http.StatusUnauthorized, code, "a token for audience vault: %s", body)
		code, body = do(http.MethodGet, "/pods", token())
		require.Equal(t, http.StatusForbidden, code, "a token for the API server: %s", body)

		admin, err := tls.LoadX509KeyPair(filepath.Join(cp.Dir, "pki", "admin.crt"), filepath.Join(cp.Dir, "pki", "admin.key"))
		require.NoError(t, err)
		p, err := serverPod(t, cs, "ks")
		require.NoError(t, err)
		code, body = do(http.MethodPost, "/portForward/default/ks/00000000-0000-0000-0000-000000000000", "", admin)
		require.Equal(t, http.StatusNotFound, code, "another UID: %s", body)
		code, body = do(http.MethodPost, "/portForward/default/ks/"+string(p.UID), "", admin)
		require.NotEqual(t, http.StatusNotFound, code, "the pod's UID (no upgrade: refused for that): %s", body)
	})

	t.Run("node proxy", func(t *testing.T) {
		// What `kubectl get --raw /api/v1/nodes/<node>/proxy/pods` reads.
		b, err := cs.CoreV1().RESTClient().Get().AbsPath("/api/v1/nodes", node, "proxy", "pods").DoRaw(ctx)
		require.NoError(t, err)
		var list v1.PodList
		require.NoError(t, json.Unmarshal(b, &list))
		require.Len(t, list.Items, 1, "%s", b)
		require.Equal(t, "ks", list.Items[0].Name)
		b, err = cs.CoreV1().RESTClient().Get().AbsPath("/api/v1/nodes", node, "proxy", "healthz").DoRaw(ctx)
		require.NoError(t, err)
		require.Equal(t, "ok", string(b))
		// What metrics-server scrapes for `kubectl top`.
		b, err = cs.CoreV1().RESTClient().Get().AbsPath("/api/v1/nodes", node, "proxy", "metrics", "resource").DoRaw(ctx)
		require.NoError(t, err)
		for _, series := range []string{
			`container_cpu_usage_seconds_total{container="talker",namespace="default",pod="ks"} `,
			`container_memory_working_set_bytes{container="web",namespace="default",pod="ks"} `,
			`pod_cpu_usage_seconds_total{namespace="default",pod="ks"} `,
			"\nnode_cpu_usage_seconds_total ", "\nnode_memory_working_set_bytes ", "\nscrape_error 0\n",
		} {
			require.Contains(t, string(b), series)
		}
	})

	t.Run("logs", func(t *testing.T) {
		// The talker writes a line every 0.5 s: once it wrote three, the
		// last two are what tailLines=2 returns.
		tail := int64(2)
		waitFor(t, "two lines of the last two", scaled(20*time.Second), func() string {
			all, err := cs.CoreV1().Pods("default").GetLogs("ks", &v1.PodLogOptions{Container: "talker"}).DoRaw(ctx)
			if err != nil || strings.Count(string(all), "\n") < 3 {
				return fmt.Sprintf("%q %v", all, err)
			}
			b, err := cs.CoreV1().Pods("default").GetLogs("ks", &v1.PodLogOptions{Container: "talker", TailLines: &tail}).DoRaw(ctx)
			if err != nil {
				return err.Error()
			}
			lines := strings.Split(strings.TrimSpace(string(b)), "\n")
			if len(lines) != 2 || !strings.HasPrefix(lines[0], "line-") || !strings.HasPrefix(lines[1], "line-") {
				return fmt.Sprintf("tailLines=2 gave %q", b)
			}
			return ""
		})
	})

	t.Run("logs -f", func(t *testing.T) {
		fctx, fcancel := context.WithTimeout(ctx, scaled(30*time.Second))
		defer fcancel()
		tail := int64(1)
		rc, err := cs.CoreV1().Pods("default").GetLogs("ks", &v1.PodLogOptions{Container: "talker", Follow: true, TailLines: &tail}).Stream(fctx)
		require.NoError(t, err)
		defer rc.Close()
		sc := bufio.NewScanner(rc)
		var got []string
		for len(got) < 4 && sc.Scan() {
			got = append(got, sc.Text())
		}
		require.Len(t, got, 4, "lines followed before the deadline: %q (%v)", got, sc.Err())
		first, _ := strconv.Atoi(strings.TrimPrefix(got[0], "line-"))
		last, _ := strconv.Atoi(strings.TrimPrefix(got[3], "line-"))
		require.Equal(t, first+3, last, "consecutive lines as they are written: %q", got)
	})

	execURL := func(opts *v1.PodExecOptions) *rest.Request {
		return cs.CoreV1().RESTClient().Post().Resource("pods").Namespace("default").Name("ks").
			SubResource("exec").VersionedParams(opts, scheme.ParameterCodec)
	}
	// executor is what kubectl 1.30+ builds: WebSocket (v5.channel.k8s.io,
	// which the API server translates to SPDY towards the node) first,
	// SPDY when the upgrade fails.
	executor := func(t *testing.T, req *rest.Request) remotecommand.Executor {
		ws, err := remotecommand.NewWebSocketExecutor(cfg, "GET", req.URL().String())
		require.NoError(t, err)
		sp, err := remotecommand.NewSPDYExecutor(cfg, "POST", req.URL())
		require.NoError(t, err)
		ex, err := remotecommand.NewFallbackExecutor(ws, sp, func(err error) bool {
			return httpstream.IsUpgradeFailure(err) || httpstream.IsHTTPSProxyError(err)
		})
		require.NoError(t, err)
		return ex
	}
	// Each protocol alone, so that a fallback cannot hide a broken one.
	wsOnly := func(t *testing.T, req *rest.Request) remotecommand.Executor {
		ex, err := remotecommand.NewWebSocketExecutor(cfg, "GET", req.URL().String())
		require.NoError(t, err)
		return ex
	}
	spdyOnly := func(t *testing.T, req *rest.Request) remotecommand.Executor {
		ex, err := remotecommand.NewSPDYExecutor(cfg, "POST", req.URL())
		require.NoError(t, err)
		return ex
	}

	for _, proto := range []struct {
		name string
		new  func(*testing.T, *rest.Request) remotecommand.Executor
	}{{"WebSocket", wsOnly}, {"SPDY", spdyOnly}} {
		t.Run("exec over "+proto.name, func(t *testing.T) {
			req := execURL(&v1.PodExecOptions{Container: "talker", Command: []string{"sh", "-c", "echo out; echo err >&2; exit 3"}, Stdout: true, Stderr: true})
			var stdout, stderr syncWriter
			err := proto.new(t, req).StreamWithContext(ctx, remotecommand.StreamOptions{Stdout: &stdout, Stderr: &stderr})
			var exitErr exec.ExitError
			require.True(t, errors.As(err, &exitErr), "want the command's exit code, got %v", err)
			require.Equal(t, 3, exitErr.ExitStatus())
			require.Equal(t, "out\n", stdout.String())
			require.Equal(t, "err\n", stderr.String())
		})
	}

	t.Run("exec -it", func(t *testing.T) {
		// As a user at a terminal: stdin stays open while the shell works,
		// and the session ends when the shell exits.
		req := execURL(&v1.PodExecOptions{Container: "talker", Command: []string{"sh"}, Stdin: true, Stdout: true, TTY: true})
		stdinR, stdinW := io.Pipe()
		defer stdinW.Close()
		var out syncWriter
		done := make(chan error, 1)
		go func() {
			done <- executor(t, req).StreamWithContext(ctx, remotecommand.StreamOptions{Stdin: stdinR, Stdout: &out, Tty: true})
		}()
		_, err := io.WriteString(stdinW, "tty -s && echo on-a-tty-$((40+2))\n")
		require.NoError(t, err)
		waitFor(t, "the shell's answer on the terminal", scaled(20*time.Second), func() string {
			if !strings.Contains(out.String(), "on-a-tty-42") {
				select {
				case err := <-done:
					return fmt.Sprintf("exec ended: %v (%q)", err, out.String())
				default:
				}
				return fmt.Sprintf("%q", out.String())
			}
			return ""
		})
		_, err = io.WriteString(stdinW, "exit 0\n")
		require.NoError(t, err)
		select {
		case err := <-done:
			require.NoError(t, err, out.String())
		case <-time.After(scaled(20 * time.Second)):
			t.Fatalf("the session did not end after exit: %q", out.String())
		}
	})

	t.Run("attach", func(t *testing.T) {
		actx, acancel := context.WithCancel(ctx)
		defer acancel()
		req := cs.CoreV1().RESTClient().Post().Resource("pods").Namespace("default").Name("ks").
			SubResource("attach").VersionedParams(&v1.PodAttachOptions{Container: "talker", Stdout: true, Stderr: true}, scheme.ParameterCodec)
		var out syncWriter
		done := make(chan error, 1)
		go func() {
			done <- spdyOnly(t, req).StreamWithContext(actx, remotecommand.StreamOptions{Stdout: &out, Stderr: &out})
		}()
		waitFor(t, "attached output", scaled(20*time.Second), func() string {
			if strings.Count(out.String(), "line-") < 2 {
				select {
				case err := <-done:
					return fmt.Sprintf("attach ended: %v (%q)", err, out.String())
				default:
				}
				return fmt.Sprintf("%q", out.String())
			}
			return ""
		})
		acancel()
	})

	t.Run("port-forward", func(t *testing.T) {
		req := cs.CoreV1().RESTClient().Post().Resource("pods").Namespace("default").Name("ks").SubResource("portforward")
		// As kubectl 1.31+: SPDY tunneled over WebSocket first, SPDY after.
		tunnel, err := portforward.NewSPDYOverWebsocketDialer(req.URL(), cfg)
		require.NoError(t, err)
		transport, upgrader, err := spdy.RoundTripperFor(cfg)
		require.NoError(t, err)
		sp := spdy.NewDialer(upgrader, &http.Client{Transport: transport}, "POST", req.URL())
		// Each protocol alone, so that a fallback cannot hide a broken one.
		for _, dialer := range []httpstream.Dialer{tunnel, sp} {
			forwardAndGet(t, dialer)
		}
	})

	require.NoError(t, cs.CoreV1().Pods("default").Delete(ctx, "ks", metav1.DeleteOptions{GracePeriodSeconds: &zero}))
}

// forwardAndGet forwards a local port to the pod's 8080 through dialer and
// GETs / through it from the pod's testserver.
func forwardAndGet(t *testing.T, dialer httpstream.Dialer) {
	t.Helper()
	stop, ready := make(chan struct{}), make(chan struct{})
	var out, errOut syncWriter
	pf, err := portforward.NewOnAddresses(dialer, []string{"127.0.0.1"}, []string{"0:8080"}, stop, ready, &out, &errOut)
	require.NoError(t, err)
	fwdErr := make(chan error, 1)
	go func() { fwdErr <- pf.ForwardPorts() }()
	defer func() {
		close(stop)
		<-fwdErr
	}()
	select {
	case <-ready:
	case err := <-fwdErr:
		t.Fatalf("port-forward ended: %v (%s)", err, errOut.String())
	case <-time.After(scaled(30 * time.Second)):
		t.Fatalf("port-forward not ready: %s %s", out.String(), errOut.String())
	}
	ports, err := pf.GetPorts()
	require.NoError(t, err)
	require.Len(t, ports, 1)
	c := &http.Client{Timeout: 10 * time.Second}
	resp, err := c.Get(fmt.Sprintf("http://127.0.0.1:%d/", ports[0].Local))
	require.NoError(t, err, errOut.String())
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode, string(body))
	require.Contains(t, string(body), "hello from", "the pod's server answered through the tunnel")
}
