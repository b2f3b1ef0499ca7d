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
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/net/dns/dnsmessage"
	appsv1 "k8s.io/api/apps/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/minikubelet/minikubelet/test/controlplane"
)

// TestCluster_SystemPodsKubeProxyAndCoreDNS runs the cluster's own system
// pods on a minikubelet node as kubeadm installs them
// (hack/cluster/addons: the kube-proxy DaemonSet and the CoreDNS
// Deployment with its kube-dns Service), placed there by the real
// kube-scheduler after kube-controller-manager made their pods, with the
// images hack/cluster/addons.sh builds (kube-proxy from the pinned
// k8s.io/kubernetes, CoreDNS from its Go module). The node runs with
// --cluster-dns set to the kube-dns Service's IP. A client pod then
// resolves kubernetes.default.svc.cluster.local (CoreDNS reaches the API
// server through the `kubernetes` Service, that is through kube-proxy's
// rules), reaches a ClusterIP Service by its name (its backend sits on the
// same bridge: br_netfilter makes the reply go back through the DNAT) and
// a NodePort on the node's address, and resolves a name outside the
// cluster through CoreDNS's forward to a resolver the test runs on the
// node's address.
//
// The node's address is the test's own dummy interface (10.90.N.1): the
// apiserver, NodePorts, kube-proxy's health and metrics ports and the
// upstream resolver listen there and nowhere else, and the FORWARD rule
// that keeps the pod network on the machine is checked to be still in
// force after kube-proxy synced. kube-proxy's rules are global to the
// machine: one such test runs at a time (a lock), and kube-proxy --cleanup
// removes them at the end.
func TestCluster_SystemPodsKubeProxyAndCoreDNS(t *testing.T) {
	lock := lockFile(t, "/tmp/mkl-kube-proxy.lock")
	t.Cleanup(func() { _ = lock.Close() }) // last: after kube-proxy --cleanup

	// The add-on images (kube-proxy, CoreDNS): built once per machine.
	start := time.Now()
	out, err := exec.Command(filepath.Join(suite.repo, "hack/cluster/addons.sh"), "images").CombinedOutput()
	require.NoError(t, err, "hack/cluster/addons.sh images:\n%s", out)
	toolBin := lastLineOf(string(out))
	t.Logf("add-on images ready in %s (%s)", time.Since(start).Round(time.Millisecond), toolBin)
	for _, b := range []string{"kube-proxy", "coredns"} {
		_, err := os.Stat(filepath.Join(toolBin, b))
		require.NoError(t, err, "addons.sh images built no %s", b)
	}

	// kube-proxy's chains outlive its pod: remove them (all modes) once
	// the private containerd, and so the kube-proxy container that would
	// write them again at its next sync, is gone (cleanups run in reverse).
	t.Cleanup(func() {
		if out, err := exec.Command(filepath.Join(toolBin, "kube-proxy"), "--cleanup").CombinedOutput(); err != nil {
			t.Errorf("kube-proxy --cleanup: %v\n%s", err, tail(string(out), 2000))
		}
	})
	r := newPrivateRuntime(t)
	n := strings.Split(r.network.PodCIDR, ".")[2]
	nodeIP := "10.90." + n + ".1"
	serviceCIDR := "10.91." + n + ".0/24"
	kubeSvcIP, dnsIP := "10.91."+n+".1", "10.91."+n+".10"
	nodeIf := "mkn" + n
	addNodeInterface(t, nodeIf, nodeIP+"/24")
	requireBridgeNetfilter(t)

	const node = "mkl-sys-node"
	cp := controlplane.StartWith(t, controlplane.Options{ServiceCIDR: serviceCIDR, AdvertiseAddress: nodeIP, Controllers: true}, node)
	require.True(t, strings.HasPrefix(cp.Server, "https://"+nodeIP+":"), "apiserver at %s", cp.Server)
	upstreamQueries := serveUpstreamDNS(t, nodeIP, "upstream.mkl.test.", "192.0.2.77")

	// The kubelet server on the node's address (the client's logs come
	// through the API server from there).
	d := r.newDaemon(t, nil, "--node-name", node, "--kubeconfig", cp.NodeKubeconfig(t, node),
		"--node-ip", nodeIP, "--cluster-dns", dnsIP,
		"--address", nodeIP, "--port", strconv.Itoa(freePort(t)), "--client-ca-file", filepath.Join(cp.Dir, "pki", "ca.crt"))
	d.deleteClusterPod = func(ctx context.Context, namespace, name string) error {
		zero := int64(0)
		return cp.Admin.CoreV1().Pods(namespace).Delete(ctx, name, metav1.DeleteOptions{GracePeriodSeconds: &zero})
	}
	d.start(t)

	// The add-ons, rendered for this cluster and applied as an admin would.
	manifests := filepath.Join(t.TempDir(), "addons.yaml")
	render := exec.Command(filepath.Join(suite.repo, "hack/cluster/addons.sh"), "render", manifests)
	render.Env = append(os.Environ(), "POD_CIDR="+r.network.PodCIDR, "NODE_IP="+nodeIP, "DNS_IP="+dnsIP,
		"APISERVER="+cp.Server, "UPSTREAM_DNS="+nodeIP)
	out, err = render.CombinedOutput()
	require.NoError(t, err, "addons.sh render:\n%s", out)
	clusterBin, err := controlplane.Build(context.Background(), suite.repo, nil)
	require.NoError(t, err)
	applyStart := time.Now()
	out, err = exec.Command(filepath.Join(clusterBin, "kubectl"), "--kubeconfig", cp.AdminKubeconfig, "apply", "-f", manifests).CombinedOutput()
	require.NoError(t, err, "kubectl apply:\n%s", out)

	ctx, cancel := context.WithTimeout(context.Background(), scaled(8*time.Minute))
	defer cancel()
	cs := cp.Admin
	systemPods := func(label string) []v1.Pod {
		l, err := cs.CoreV1().Pods("kube-system").List(ctx, metav1.ListOptions{LabelSelector: label})
		require.NoError(t, err)
		return l.Items
	}
	// kube-proxy: the DaemonSet's pod, on this node, Running.
	waitFor(t, "the kube-proxy DaemonSet's pod Running on the node", scaled(4*time.Minute), func() string {
		ps := systemPods("k8s-app=kube-proxy")
		if len(ps) != 1 {
			return fmt.Sprintf("%d kube-proxy pods", len(ps))
		}
		p := ps[0]
		if p.Spec.NodeName != node || !isRunning(&p) {
			return podSummary(&p)
		}
		return ""
	})
	kp := systemPods("k8s-app=kube-proxy")[0]
	require.NotNil(t, metav1.GetControllerOf(&kp), podSummary(&kp))
	require.Equal(t, "DaemonSet", metav1.GetControllerOf(&kp).Kind)
	require.Equal(t, "kube-proxy", metav1.GetControllerOf(&kp).Name)
	require.Equal(t, "system-node-critical", kp.Spec.PriorityClassName)
	require.NotNil(t, kp.Spec.Priority)
	require.EqualValues(t, 2000001000, *kp.Spec.Priority)
	require.Equal(t, nodeIP, kp.Status.PodIP, "a host-network pod has the node's address")
	t.Logf("kube-proxy Running %s after apply", time.Since(applyStart).Round(time.Millisecond))

	// CoreDNS: both replicas of the Deployment Ready on this node.
	waitFor(t, "the CoreDNS Deployment's pods Ready on the node", scaled(4*time.Minute), func() string {
		dep, err := cs.AppsV1().Deployments("kube-system").Get(ctx, "coredns", metav1.GetOptions{})
		if err != nil {
			return err.Error()
		}
		ps := systemPods("k8s-app=kube-dns")
		var states []string
		for i := range ps {
			states = append(states, podSummary(&ps[i]))
		}
		if dep.Status.ReadyReplicas != 2 || dep.Status.AvailableReplicas != 2 {
			return fmt.Sprintf("deployment ready %d available %d; pods: %s", dep.Status.ReadyReplicas, dep.Status.AvailableReplicas, strings.Join(states, "; "))
		}
		return ""
	})
	for _, p := range systemPods("k8s-app=kube-dns") {
		require.Equal(t, node, p.Spec.NodeName)
		require.True(t, isReady(&p), podSummary(&p))
		owner := metav1.GetControllerOf(&p)
		require.NotNil(t, owner, podSummary(&p))
		require.Equal(t, "ReplicaSet", owner.Kind)
		rs, err := cs.AppsV1().ReplicaSets("kube-system").Get(ctx, owner.Name, metav1.GetOptions{})
		require.NoError(t, err)
		require.Equal(t, "Deployment", metav1.GetControllerOf(rs).Kind)
		require.Equal(t, "coredns", metav1.GetControllerOf(rs).Name)
		require.Equal(t, "system-cluster-critical", p.Spec.PriorityClassName)
		require.NotNil(t, p.Spec.Priority)
		require.EqualValues(t, 2000000000, *p.Spec.Priority)
	}
	t.Logf("CoreDNS Ready %s after apply", time.Since(applyStart).Round(time.Millisecond))

	// A backend with a ClusterIP and a NodePort Service, scheduled by the
	// scheduler (no nodeName), made by a Deployment.
	require.NoError(t, cp.CreateNamespace(ctx, "apps"))
	one := int32(1)
	labels := map[string]string{"app": "web"}
	_, err = cs.AppsV1().Deployments("apps").Create(ctx, &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec: appsv1.DeploymentSpec{
			Replicas: &one,
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: v1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: v1.PodSpec{Containers: []v1.Container{{
					Name: "web", Image: suite.registry + "/minikubelet/testserver:v1",
					Ports:          []v1.ContainerPort{{ContainerPort: 8080}},
					Env:            []v1.EnvVar{{Name: "POD_NAME", ValueFrom: &v1.EnvVarSource{FieldRef: &v1.ObjectFieldSelector{FieldPath: "metadata.name"}}}},
					ReadinessProbe: &v1.Probe{ProbeHandler: v1.ProbeHandler{HTTPGet: &v1.HTTPGetAction{Path: "/healthz", Port: intstr.FromInt32(8080)}}, PeriodSeconds: 1},
				}}},
			},
		},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	svcPort := []v1.ServicePort{{Port: 80, TargetPort: intstr.FromInt32(8080), Protocol: v1.ProtocolTCP}}
	_, err = cs.CoreV1().Services("apps").Create(ctx, &v1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec:       v1.ServiceSpec{Selector: labels, Ports: svcPort},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	np, err := cs.CoreV1().Services("apps").Create(ctx, &v1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "web-np"},
		Spec:       v1.ServiceSpec{Type: v1.ServiceTypeNodePort, Selector: labels, Ports: svcPort},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	nodePort := np.Spec.Ports[0].NodePort
	require.NotZero(t, nodePort)

	// The client: ClusterFirst DNS (the default), in another namespace,
	// retrying each step while kube-proxy and CoreDNS catch up with the
	// new Services. Names are resolved by busybox's nslookup, which reads
	// resolv.conf's nameserver itself (not its search list: the search
	// list is checked in resolv.conf), and HTTP goes through
	// nc: the image's static busybox links glibc, whose getaddrinfo and
	// getservbyname (wget's "http" port lookup) need NSS modules the image
	// lacks (wget segfaults there).
	script := fmt.Sprintf(`
try() { i=0; until "$@"; do i=$((i+1)); [ $i -lt 60 ] || { echo "FAILED: $*"; return 1; }; sleep 1; done; }
http() { r=$(printf 'GET / HTTP/1.0\r\n\r\n' | nc -w 3 "$1" "$2"); case $r in *"hello from"*) echo "$r" | grep "hello from";; *) return 1;; esac; }
get() { ip=$(nslookup "$1" 2>/dev/null | awk '/^Name:/ {n=1} n && /^Address/ {a=$NF} END {print a}'); [ -n "$ip" ] || return 1; echo "$1 -> $ip"; http "$ip" "$2"; }
echo "--- resolv.conf"; cat /etc/resolv.conf
echo "--- lookup"; try nslookup kubernetes.default.svc.cluster.local
echo "--- clusterip"; try get web.apps.svc.cluster.local 80 && echo
echo "--- nodeport"; try http %s %d && echo
echo "--- upstream"; try nslookup upstream.mkl.test
echo "--- done"
`, nodeIP, nodePort)
	client := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "client"},
		Spec: v1.PodSpec{
			RestartPolicy: v1.RestartPolicyNever,
			Containers: []v1.Container{{
				Name: "c", Image: suite.registry + "/minikubelet/busybox:1.36",
				Command: []string{"sh", "-c", script},
			}},
		},
	}
	_, err = cs.CoreV1().Pods("default").Create(ctx, client, metav1.CreateOptions{})
	require.NoError(t, err)
	var final *v1.Pod
	waitFor(t, "the client pod to finish", scaled(5*time.Minute), func() string {
		p, err := cs.CoreV1().Pods("default").Get(ctx, "client", metav1.GetOptions{})
		if err != nil {
			return err.Error()
		}
		final = p
		if p.Status.Phase != v1.PodSucceeded && p.Status.Phase != v1.PodFailed {
			return podSummary(p)
		}
		return ""
	})
	logs, err := cs.CoreV1().Pods("default").GetLogs("client", &v1.PodLogOptions{}).DoRaw(ctx)
	require.NoError(t, err)
	t.Logf("client pod (on %s, %s):\n%s", final.Spec.NodeName, final.Status.Phase, logs)
	require.Equal(t, node, final.Spec.NodeName, "the scheduler placed the client")
	sections := logSections(string(logs))
	require.Contains(t, sections["resolv.conf"], "nameserver "+dnsIP)
	require.Contains(t, sections["resolv.conf"], "search default.svc.cluster.local svc.cluster.local cluster.local")
	require.Contains(t, sections["lookup"], kubeSvcIP, "kubernetes.default.svc.cluster.local resolves to the kubernetes Service")
	web, err := cs.CoreV1().Services("apps").Get(ctx, "web", metav1.GetOptions{})
	require.NoError(t, err)
	require.Contains(t, sections["clusterip"], "web.apps.svc.cluster.local -> "+web.Spec.ClusterIP+"\n", "the Service's name resolves to its ClusterIP")
	require.Contains(t, sections["clusterip"], "hello from web-", "the ClusterIP Service answers")
	require.Contains(t, sections["nodeport"], "hello from web-", "the NodePort on the node's address")
	require.Contains(t, sections["upstream"], "192.0.2.77", "a name outside the cluster through CoreDNS's forward")
	require.Contains(t, sections, "done")
	require.Equal(t, v1.PodSucceeded, final.Status.Phase)
	require.Positive(t, upstreamQueries(), "CoreDNS forwarded to the resolver on the node's address")

	// kube-proxy's rules did not open the pod network: the isolation rule
	// is still in FORWARD, and kube-proxy's own FORWARD rules accept only
	// its marked (Service) and established traffic.
	out, err = exec.Command("iptables", "-w", "-S", "FORWARD").CombinedOutput()
	require.NoError(t, err, "%s", out)
	require.Regexp(t, `-A FORWARD -s 10\.89\.0\.0/16 ! -d 10\.89\.0\.0/16 .*-j REJECT`, string(out))
	out, err = exec.Command("iptables", "-w", "-S", "KUBE-FORWARD").CombinedOutput()
	require.NoError(t, err, "kube-proxy's KUBE-FORWARD chain: %s", out)
	for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		if strings.Contains(l, "-j ACCEPT") {
			require.True(t, strings.Contains(l, "--mark 0x4000/0x4000") || strings.Contains(l, "RELATED,ESTABLISHED"),
				"kube-proxy accepts more than marked and established traffic: %s", l)
		}
	}
	out, err = exec.Command("iptables", "-w", "-t", "nat", "-S", "KUBE-NODEPORTS").CombinedOutput()
	require.NoError(t, err, "%s", out)
	require.Contains(t, string(out), fmt.Sprintf("--dport %d", nodePort))
	out, err = exec.Command("iptables", "-w", "-t", "nat", "-S", "KUBE-SERVICES").CombinedOutput()
	require.NoError(t, err, "%s", out)
	require.Regexp(t, `-d `+strings.ReplaceAll(nodeIP, ".", `\.`)+`/32 .*-j KUBE-NODEPORTS`, string(out),
		"NodePorts only on the node's address (nodePortAddresses)")

	// The controllers would make the pods again as the daemon's teardown
	// deletes them: remove their owners first.
	bg := metav1.DeletePropagationBackground
	del := metav1.DeleteOptions{PropagationPolicy: &bg}
	require.NoError(t, cs.AppsV1().DaemonSets("kube-system").Delete(ctx, "kube-proxy", del))
	require.NoError(t, cs.AppsV1().Deployments("kube-system").Delete(ctx, "coredns", del))
	require.NoError(t, cs.AppsV1().Deployments("apps").Delete(ctx, "web", del))
}

// lockFile takes an exclusive flock on path, waiting for it.
func lockFile(t *testing.T, path string) *os.File {
	t.Helper()
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	require.NoError(t, err)
	require.NoError(t, syscall.Flock(int(f.Fd()), syscall.LOCK_EX))
	return f
}

// addNodeInterface gives the node an address of its own: a dummy
// interface (an empty bridge where the kernel lacks the dummy driver, as
// hack/conformance/run.sh does), removed at cleanup.
func addNodeInterface(t *testing.T, name, cidr string) {
	t.Helper()
	_ = exec.Command("ip", "link", "del", name).Run()
	if err := exec.Command("ip", "link", "add", name, "type", "dummy").Run(); err != nil {
		out, err := exec.Command("ip", "link", "add", name, "type", "bridge").CombinedOutput()
		require.NoError(t, err, "ip link add %s: %s", name, out)
	}
	t.Cleanup(func() { _ = exec.Command("ip", "link", "del", name).Run() })
	for _, args := range [][]string{{"addr", "add", cidr, "dev", name}, {"link", "set", name, "up"}} {
		out, err := exec.Command("ip", args...).CombinedOutput()
		require.NoError(t, err, "ip %v: %s", args, out)
	}
}

// requireBridgeNetfilter checks that bridged traffic passes iptables: a
// ClusterIP whose backend is on the client's own bridge answers from the
// backend's address straight over the bridge, and only br_netfilter
// (bridge-nf-call-iptables=1) takes that reply back through the DNAT's
// conntrack entry, as on every kubeadm node (kubeadm's preflight checks the
// same sysctl).
func requireBridgeNetfilter(t *testing.T) {
	t.Helper()
	b, err := os.ReadFile("/proc/sys/net/bridge/bridge-nf-call-iptables")
	require.NoError(t, err, "br_netfilter is not loaded: modprobe br_netfilter (kube-proxy needs it for Services whose backends share the client's bridge)")
	require.Equal(t, "1", strings.TrimSpace(string(b)), "set net.bridge.bridge-nf-call-iptables=1 (sysctl -w), as kubeadm's preflight requires")
}

// serveUpstreamDNS answers A queries for name with ip on addr:53 (UDP) for
// the test's life: the resolver CoreDNS forwards to, on the node's own
// address. Every other name gets NXDOMAIN. The returned func counts the
// queries for name.
func serveUpstreamDNS(t *testing.T, addr, name, ip string) func() int {
	t.Helper()
	pc, err := net.ListenPacket("udp4", net.JoinHostPort(addr, "53"))
	require.NoError(t, err)
	t.Cleanup(func() { _ = pc.Close() })
	answer := [4]byte(net.ParseIP(ip).To4())
	hits := make(chan struct{}, 1000)
	go func() {
		buf := make([]byte, 1500)
		for {
			n, from, err := pc.ReadFrom(buf)
			if err != nil {
				return
			}
			var m dnsmessage.Message
			if m.Unpack(buf[:n]) != nil || len(m.Questions) != 1 {
				continue
			}
			q := m.Questions[0]
			m.Header.Response, m.Header.Authoritative, m.Header.RecursionAvailable = true, true, true
			m.Answers, m.Authorities, m.Additionals = nil, nil, nil
			switch {
			case strings.EqualFold(q.Name.String(), name) && q.Type == dnsmessage.TypeA:
				m.Answers = []dnsmessage.Resource{{
					Header: dnsmessage.ResourceHeader{Name: q.Name, Type: dnsmessage.TypeA, Class: dnsmessage.ClassINET, TTL: 5},
					Body:   &dnsmessage.AResource{A: answer},
				}}
				select {
				case hits <- struct{}{}:
				default:
				}
			case strings.EqualFold(q.Name.String(), name):
				// NODATA for AAAA and the rest.
			default:
				m.Header.RCode = dnsmessage.RCodeNameError
			}
			if out, err := m.Pack(); err == nil {
				_, _ = pc.WriteTo(out, from)
			}
		}
	}()
	return func() int { return len(hits) }
}

// logSections splits the client's output at its "--- NAME" lines.
func logSections(s string) map[string]string {
	sections := map[string]string{}
	cur := ""
	for _, l := range strings.Split(s, "\n") {
		if name, ok := strings.CutPrefix(l, "--- "); ok {
			cur = strings.TrimSpace(name)
			sections[cur] = ""
			continue
		}
		if cur != "" {
			sections[cur] += l + "\n"
		}
	}
	return sections
}
