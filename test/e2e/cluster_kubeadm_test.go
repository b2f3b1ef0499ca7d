package e2e

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"encoding/pem"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/minikubelet/minikubelet/test/controlplane"
)

// TestCluster_KubeadmJoin joins a node to the harness's control plane with
// the real `kubeadm join`, minikubelet as its node agent:
//   - kubeadm is built from the pinned k8s.io/kubernetes
//     (hack/cluster/build-kubeadm.sh);
//   - the control plane is prepared as `kubeadm init` leaves it, by
//     kubeadm's own phases against its API server with the admin
//     kubeconfig: `init phase bootstrap-token` (the token Secret, the
//     cluster-info ConfigMap, the bootstrap RBAC) and `init phase
//     upload-config all` (kubeadm-config, kubelet-config); the
//     KubeletConfiguration it uploads has free ports for 10250 and 10248,
//     so that parallel tests never collide;
//   - `kubeadm join` runs with the preflight errors of a machine without
//     systemd and without a kubelet binary ignored, and minikubelet serve
//     starts with the files kubeadm wrote, as hack/systemd's drop-in passes
//     them (--bootstrap-kubeconfig, --kubeconfig, --config,
//     $KUBELET_KUBEADM_ARGS);
//   - the CSRs are approved and signed as kube-controller-manager would
//     (csrSigner; the harness runs none);
//   - kubeadm join exits 0 (it waited for the healthz endpoint and the
//     TLS-bootstrapped kubelet.conf) and the Node is Ready.
//
// kubeadm's paths are fixed (/etc/kubernetes, /var/lib/kubelet): kubeadm
// and serve run in a private mount namespace where /etc is an overlay
// whose writes go to the test's directory and /var/lib/kubelet a tmpfs, so
// nothing is left on the host.
func TestCluster_KubeadmJoin(t *testing.T) {
	t.Parallel()
	const node = "mkl-cluster-kubeadm"
	repo, err := controlplane.RepoRoot()
	require.NoError(t, err)
	build := exec.Command(filepath.Join(repo, "hack/cluster/build-kubeadm.sh"))
	out, err := build.Output()
	require.NoError(t, err, "hack/cluster/build-kubeadm.sh: %s", out)
	kubeadm := filepath.Join(lastLineOf(string(out)), "kubeadm")

	cp := controlplane.Start(t, node)
	r := newPrivateRuntime(t)
	const tokenID, tokenSecret = "mklkad", "0123456789abcdef"
	signer := &csrSigner{lifetime: time.Hour}
	signer.run(t, cp, node, "system:bootstrap:"+tokenID)

	dir := t.TempDir()
	port, hzPort := freePort(t), freePort(t)
	host, apiPort, ok := strings.Cut(strings.TrimPrefix(cp.Server, "https://"), ":")
	require.True(t, ok, cp.Server)
	cri := r.endpoint
	if !strings.Contains(cri, "://") {
		cri = "unix://" + cri
	}
	initCfg := fmt.Sprintf(`apiVersion: kubeadm.k8s.io/v1beta4
kind: InitConfiguration
bootstrapTokens:
- token: %[1]s.%[2]s
  ttl: 1h
localAPIEndpoint:
  advertiseAddress: %[9]s
  bindPort: %[4]s
nodeRegistration:
  name: %[5]s-control-plane
  criSocket: %[6]s
---
apiVersion: kubeadm.k8s.io/v1beta4
kind: ClusterConfiguration
kubernetesVersion: v1.37.2
controlPlaneEndpoint: %[3]s:%[4]s
---
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
cgroupDriver: cgroupfs
port: %[7]d
healthzPort: %[8]d
healthzBindAddress: 127.0.0.1
`, tokenID, tokenSecret, host, apiPort, node, cri, port, hzPort, advertiseIP(t))
	cfgFile := filepath.Join(dir, "init.yaml")
	require.NoError(t, os.WriteFile(cfgFile, []byte(initCfg), 0o600))
	for _, phase := range [][]string{{"bootstrap-token"}, {"upload-config", "all"}} {
		args := append(append([]string{"init", "phase"}, phase...), "--config", cfgFile, "--kubeconfig", cp.AdminKubeconfig)
		out, err := exec.Command(kubeadm, args...).CombinedOutput()
		require.NoError(t, err, "kubeadm %s: %s", strings.Join(args, " "), out)
		t.Logf("kubeadm %s:\n%s", strings.Join(phase, " "), out)
	}

	// kube-controller-manager's bootstrapsigner would sign cluster-info
	// for each token (the harness runs none): the detached JWS that
	// kubeadm join's discovery checks.
	require.Equal(t, "eyJhbGciOiJIUzI1NiIsImtpZCI6Impvc2h1YSJ9..VShe2taLd-YTrmWuRkcL_8QTNDHYxQIEBsAYYiIj1_8",
		jwsDetached("Hello from the other side. I must have called a thousand times.", "joshua", "my voice is my passcode"),
		"k8s.io/cluster-bootstrap's test vector")
	ctx, cancel := context.WithTimeout(context.Background(), scaled(8*time.Minute))
	defer cancel()
	ci, err := cp.Admin.CoreV1().ConfigMaps("kube-public").Get(ctx, "cluster-info", metav1.GetOptions{})
	require.NoError(t, err)
	ci.Data["jws-kubeconfig-"+tokenID] = jwsDetached(ci.Data["kubeconfig"], tokenID, tokenSecret)
	_, err = cp.Admin.CoreV1().ConfigMaps("kube-public").Update(ctx, ci, metav1.UpdateOptions{})
	require.NoError(t, err)

	// The CA's public key hash, as `kubeadm token create --print-join-command` prints it.
	caPEM, err := os.ReadFile(filepath.Join(cp.Dir, "pki", "ca.crt"))
	require.NoError(t, err)
	block, _ := pem.Decode(caPEM)
	ca, err := x509.ParseCertificate(block.Bytes)
	require.NoError(t, err)
	sum := sha256.Sum256(ca.RawSubjectPublicKeyInfo)
	caHash := "sha256:" + hex.EncodeToString(sum[:])

	join := []string{kubeadm, "join", host + ":" + apiPort, "--token", tokenID + "." + tokenSecret,
		"--discovery-token-ca-cert-hash", caHash, "--node-name", node, "--cri-socket", cri,
		// No systemd, no kubelet binary, and the port checks are for
		// the kubelet's defaults (this node serves on free ports).
		"--ignore-preflight-errors", "KubeletVersion,Service-Kubelet,SystemVerification,Port-10250,Swap,FileExisting-crictl,FileExisting-conntrack,FileExisting-socat,FileExisting-ebtables,FileExisting-ethtool,FileExisting-tc,FileExisting-ip,FileExisting-iptables,FileExisting-mount,FileExisting-nsenter",
		"-v", "1"}
	logFile, rcFile := filepath.Join(dir, "kubeadm-join.log"), filepath.Join(dir, "kubeadm-join.rc")
	script := `set -eu
D=$1; shift
mkdir -p "$D/etc-upper" "$D/etc-work"
mount -t overlay overlay -o "lowerdir=/etc,upperdir=$D/etc-upper,workdir=$D/etc-work" /etc
mount -t tmpfs -o mode=0755 tmpfs /var/lib/kubelet
( ` + shellJoin(join) + ` >"$D/kubeadm-join.log" 2>&1; echo $? >"$D/kubeadm-join.rc" ) &
i=0
until [ -s /var/lib/kubelet/kubeadm-flags.env ] && [ -s /var/lib/kubelet/config.yaml ] && [ -s /etc/kubernetes/bootstrap-kubelet.conf ]; do
	i=$((i+1))
	if [ $i -gt 600 ] || [ -s "$D/kubeadm-join.rc" ]; then echo "kubeadm join wrote no kubelet files:" >&2; cat "$D/kubeadm-join.log" >&2; exit 1; fi
	sleep 0.2
done
. /var/lib/kubelet/kubeadm-flags.env
# As hack/systemd/10-kubeadm.conf.
exec "$@" --bootstrap-kubeconfig=/etc/kubernetes/bootstrap-kubelet.conf --kubeconfig=/etc/kubernetes/kubelet.conf --config=/var/lib/kubelet/config.yaml $KUBELET_KUBEADM_ARGS
`
	// The tmpfs needs its mount point: on a fresh machine /var/lib/kubelet
	// does not exist yet (the last CI passed only because an earlier run had
	// made it). Made here and removed after, if this test made it and it is
	// empty again, so that nothing is left on the host.
	if _, err := os.Stat("/var/lib/kubelet"); os.IsNotExist(err) {
		require.NoError(t, os.MkdirAll("/var/lib/kubelet", 0o755))
		t.Cleanup(func() { _ = os.Remove("/var/lib/kubelet") })
	}
	d := r.newDaemon(t, nil)
	d.wrap = []string{"unshare", "--mount", "--propagation", "private", "sh", "-c", script, "sh", dir}
	d.start(t)
	t.Cleanup(func() {
		if t.Failed() {
			b, _ := os.ReadFile(logFile)
			t.Logf("kubeadm join:\n%s", tail(string(b), 6000))
		}
	})

	waitFor(t, "kubeadm join to complete", scaled(5*time.Minute), func() string {
		rc, err := os.ReadFile(rcFile)
		if err != nil {
			b, _ := os.ReadFile(logFile)
			return "running: " + tail(string(b), 300)
		}
		if strings.TrimSpace(string(rc)) != "0" {
			b, _ := os.ReadFile(logFile)
			t.Fatalf("kubeadm join exited %s:\n%s", rc, tail(string(b), 6000))
		}
		return ""
	})
	b, _ := os.ReadFile(logFile)
	require.Contains(t, string(b), "This node has joined the cluster")
	t.Logf("kubeadm join (tail):\n%s", tail(string(b), 1500))
	waitFor(t, "the Node Ready", scaled(2*time.Minute), func() string {
		n := clusterNode(t, cp.Admin, node)
		if c := nodeCondition(n, v1.NodeReady); c.Status != v1.ConditionTrue {
			return fmt.Sprintf("Ready=%s %s", c.Status, c.Message)
		}
		return ""
	})
	n := clusterNode(t, cp.Admin, node)
	require.Equal(t, int32(port), n.Status.DaemonEndpoints.KubeletEndpoint.Port, "the port of kubelet-config's KubeletConfiguration")
	require.NotEmpty(t, signer.certs(), "the node's certificate came from a CSR")
	// Nothing of kubeadm's is left on the host.
	for _, p := range []string{"/etc/kubernetes/kubelet.conf", "/etc/kubernetes/bootstrap-kubelet.conf", "/var/lib/kubelet/config.yaml", "/var/lib/kubelet/kubeadm-flags.env"} {
		_, err := os.Stat(p)
		require.True(t, os.IsNotExist(err), "%s exists on the host", p)
	}
	_, err = os.Stat(filepath.Join(dir, "etc-upper", "kubernetes", "kubelet.conf"))
	require.NoError(t, err, "kubelet.conf went to the overlay's upper directory")
}

// jwsDetached is the detached HS256 JWS of content under the bootstrap
// token (k8s.io/cluster-bootstrap/token/jws.ComputeDetachedSignature):
// "<header>..<signature>", the header {"alg":"HS256","kid":<token ID>}.
func jwsDetached(content, tokenID, tokenSecret string) string {
	enc := base64.RawURLEncoding
	header := enc.EncodeToString([]byte(`{"alg":"HS256","kid":"` + tokenID + `"}`))
	mac := hmac.New(sha256.New, []byte(tokenSecret))
	mac.Write([]byte(header + "." + enc.EncodeToString([]byte(content))))
	return header + ".." + enc.EncodeToString(mac.Sum(nil))
}

// advertiseIP is a non-loopback IPv4 address of the machine, for the
// InitConfiguration's localAPIEndpoint (kubeadm refuses a loopback one;
// the phases only record it in kubeadm-config: the API server stays on
// 127.0.0.1, which cluster-info and the join use).
func advertiseIP(t *testing.T) string {
	t.Helper()
	addrs, err := net.InterfaceAddrs()
	require.NoError(t, err)
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && n.IP.To4() != nil && !n.IP.IsLoopback() && !n.IP.IsLinkLocalUnicast() {
			return n.IP.String()
		}
	}
	t.Fatal("the machine has no non-loopback IPv4 address for kubeadm's advertiseAddress")
	return ""
}

// shellJoin quotes args for sh.
func shellJoin(args []string) string {
	q := make([]string, len(args))
	for i, a := range args {
		q[i] = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
	}
	return strings.Join(q, " ")
}

// lastLineOf is the last non-empty line of s.
func lastLineOf(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return strings.TrimSpace(lines[len(lines)-1])
}
