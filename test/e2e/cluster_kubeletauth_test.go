package e2e

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/minikubelet/minikubelet/test/controlplane"
)

// TestCluster_KubeletServerAuthConfigzReadOnly runs `serve --kubeconfig`
// against a real kube-apiserver, first with the kubelet server's defaults
// plus a read-only port and a healthz port, then again with
// --anonymous-auth --authorization-mode AlwaysAllow:
//   - defaults: a request without credentials to the kubelet server gets
//     401; /configz is readable through the API server's node proxy (what
//     `kubectl get --raw /api/v1/nodes/<node>/proxy/configz` and
//     e2e_node's suite setup read), a KubeletConfiguration with the port
//     the node serves on, Webhook, anonymous off, the read-only port;
//   - the read-only port answers /pods and /healthz over plain HTTP without
//     credentials, and refuses exec and container logs (405);
//   - the healthz port answers /healthz (what kubeadm join polls);
//   - --anonymous-auth --authorization-mode AlwaysAllow: the same
//     anonymous request is answered, /configz says so, and the daemon
//     warned about both at start.
func TestCluster_KubeletServerAuthConfigzReadOnly(t *testing.T) {
	t.Parallel()
	const node = "mkl-cluster-kubeletauth"
	cp := controlplane.Start(t, node)
	r := newPrivateRuntime(t)
	port, roPort, hzPort := freePort(t), freePort(t), freePort(t)
	base := []string{"--node-name", node, "--kubeconfig", cp.NodeKubeconfig(t, node),
		"--port", strconv.Itoa(port), "--client-ca-file", filepath.Join(cp.Dir, "pki", "ca.crt"),
		"--read-only-port", strconv.Itoa(roPort), "--healthz-port", strconv.Itoa(hzPort)}
	d := r.newDaemon(t, nil, base...)
	d.start(t)
	cs := cp.Admin
	ctx, cancel := context.WithTimeout(context.Background(), scaled(4*time.Minute))
	defer cancel()

	anonymous := func(path string) (int, string) {
		c := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{
			InsecureSkipVerify: true, //nolint:gosec // the node's self-signed serving certificate
		}}}
		resp, err := c.Get("https://" + net.JoinHostPort("127.0.0.1", strconv.Itoa(port)) + path)
		require.NoError(t, err)
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	plain := func(method string, p int, path string) (int, string) {
		req, err := http.NewRequest(method, "http://"+net.JoinHostPort("127.0.0.1", strconv.Itoa(p))+path, nil)
		require.NoError(t, err)
		resp, err := (&http.Client{Timeout: 10 * time.Second}).Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	type configz struct {
		KubeletConfig struct {
			Kind           string `json:"kind"`
			APIVersion     string `json:"apiVersion"`
			Port           int    `json:"port"`
			ReadOnlyPort   int    `json:"readOnlyPort"`
			HealthzPort    int    `json:"healthzPort"`
			StaticPodPath  string `json:"staticPodPath"`
			Authentication struct {
				Anonymous struct {
					Enabled bool `json:"enabled"`
				} `json:"anonymous"`
			} `json:"authentication"`
			Authorization struct {
				Mode string `json:"mode"`
			} `json:"authorization"`
		} `json:"kubeletconfig"`
	}
	// proxyConfigz reads /configz through the API server's node proxy,
	// waiting for the Node to be registered.
	proxyConfigz := func() configz {
		var got configz
		waitFor(t, "/configz through the node proxy", scaled(90*time.Second), func() string {
			b, err := cs.CoreV1().RESTClient().Get().AbsPath("/api/v1/nodes", node, "proxy", "configz").DoRaw(ctx)
			if err != nil {
				return fmt.Sprintf("%v: %s", err, b)
			}
			got = configz{}
			if err := json.Unmarshal(b, &got); err != nil {
				return fmt.Sprintf("%v: %s", err, b)
			}
			return ""
		})
		return got
	}

	// Defaults: anonymous refused; /configz through the node proxy.
	code, body := anonymous("/pods")
	require.Equal(t, http.StatusUnauthorized, code, body)
	code, body = anonymous("/configz")
	require.Equal(t, http.StatusUnauthorized, code, body)
	cz := proxyConfigz().KubeletConfig
	require.Equal(t, "KubeletConfiguration", cz.Kind)
	require.Equal(t, "kubelet.config.k8s.io/v1beta1", cz.APIVersion)
	require.Equal(t, port, cz.Port)
	require.Equal(t, roPort, cz.ReadOnlyPort)
	require.Equal(t, hzPort, cz.HealthzPort)
	require.Equal(t, "Webhook", cz.Authorization.Mode)
	require.False(t, cz.Authentication.Anonymous.Enabled)
	require.Equal(t, d.manifests, cz.StaticPodPath)

	// The read-only port: /pods and /healthz without credentials, plain
	// HTTP; exec and logs refused as on the kubelet's.
	code, body = plain("GET", roPort, "/pods")
	require.Equal(t, http.StatusOK, code, body)
	require.Contains(t, body, `"kind":"PodList"`)
	code, body = plain("GET", roPort, "/healthz")
	require.Equal(t, http.StatusOK, code, body)
	for _, p := range []string{"/exec/default/x/c?command=id&output=1", "/containerLogs/default/x/c", "/run/default/x/c"} {
		code, body = plain("POST", roPort, p)
		require.Equal(t, http.StatusMethodNotAllowed, code, "%s: %s", p, body)
	}
	code, _ = plain("GET", roPort, "/configz")
	require.Equal(t, http.StatusNotFound, code)
	// The healthz port.
	code, body = plain("GET", hzPort, "/healthz")
	require.Equal(t, http.StatusOK, code, body)
	require.Equal(t, "ok", body)
	out, _ := d.out.snapshot()
	require.Contains(t, string(out), "--read-only-port="+strconv.Itoa(roPort)+": /pods, /stats/summary and /metrics are served")

	// --anonymous-auth --authorization-mode AlwaysAllow: answered.
	d.stop(t)
	d.extra = append(append([]string{}, base...), "--anonymous-auth", "--authorization-mode", "AlwaysAllow")
	d.start(t)
	waitFor(t, "an anonymous /pods answered", scaled(30*time.Second), func() string {
		code, body := anonymous("/pods")
		if code != http.StatusOK || !strings.Contains(body, `"kind":"PodList"`) {
			return fmt.Sprintf("%d %s", code, body)
		}
		return ""
	})
	code, body = anonymous("/configz")
	require.Equal(t, http.StatusOK, code, body)
	var direct configz
	require.NoError(t, json.Unmarshal([]byte(body), &direct), body)
	require.Equal(t, "AlwaysAllow", direct.KubeletConfig.Authorization.Mode)
	require.True(t, direct.KubeletConfig.Authentication.Anonymous.Enabled)
	out, _ = d.out.snapshot()
	require.Contains(t, string(out), "--anonymous-auth: requests to the kubelet server without credentials are served as system:anonymous")
	require.Contains(t, string(out), "--authorization-mode=AlwaysAllow: every request, anonymous ones included,")
}
