package e2e

import (
	"io"
	"net"
	"net/http"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/minikubelet/minikubelet/cni"
)

// httpGet fetches a URL from the host with a short timeout.
func httpGet(t *testing.T, url string) string {
	t.Helper()
	c := &http.Client{Timeout: 5 * time.Second}
	var lastErr error
	// The server may need a moment after its container started.
	for i := 0; i < 50; i++ {
		resp, err := c.Get(url)
		if err == nil {
			b, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			require.NoError(t, err)
			require.Equal(t, http.StatusOK, resp.StatusCode, "GET %s: %s", url, b)
			return string(b)
		}
		lastErr = err
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("GET %s: %v", url, lastErr)
	return ""
}

// hostVethOf returns the host-side interface name of the pod's eth0: the
// peer index that `ip link` shows inside the sandbox's network namespace.
// (Reading /sys there would show the host's: sysfs belongs to the mount.)
func hostVethOf(t *testing.T, sandboxID string) string {
	t.Helper()
	pid := sandboxPid(t, sandboxID)
	out, err := exec.Command("nsenter", "--net=/proc/"+strconv.Itoa(pid)+"/ns/net", "ip", "-o", "link", "show", "eth0").CombinedOutput()
	require.NoError(t, err, "%s", out)
	m := regexp.MustCompile(`eth0@if(\d+)`).FindStringSubmatch(string(out))
	require.NotNil(t, m, "no peer index in %q", out)
	idx, _ := strconv.Atoi(m[1])
	ifc, err := net.InterfaceByIndex(idx)
	require.NoError(t, err, "host interface %d", idx)
	return ifc.Name
}

// eventually runs fn until it returns true or the timeout passes.
func eventually(t *testing.T, timeout time.Duration, what string, fn func() bool) {
	t.Helper()
	timeout = scaled(timeout)
	deadline := time.Now().Add(timeout)
	for !fn() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", timeout, what)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

const twoContainerPod = `
apiVersion: v1
kind: Pod
metadata:
  name: e2e-two
spec:
  terminationGracePeriodSeconds: 2
  containers:
  - name: web
    image: REGISTRY/minikubelet/testserver:v1
    ports:
    - containerPort: 8080
  - name: client
    image: REGISTRY/minikubelet/busybox:1.36
    command: ["sleep", "3600"]
`

// A two-container pod gets an IP in the pod CIDR and a veth on the bridge,
// both containers run, they reach each other on localhost, the host reaches
// the server on podIP:port, and SIGINT leaves nothing behind.
func TestRun_TwoContainerPod(t *testing.T) {
	t.Parallel()
	p := startRun(t, twoContainerPod)
	ip := p.waitRunning("e2e-two")

	_, cidr, _ := net.ParseCIDR(e2ePodCIDR)
	require.True(t, cidr.Contains(net.ParseIP(ip)), "pod IP %s outside %s", ip, e2ePodCIDR)

	sbs := podSandboxes(t, "e2e-two")
	require.Len(t, sbs, 1)
	sbID := sbs[0].Id
	st, err := suite.rt.PodSandboxStatus(ctx(t), sbID, false)
	require.NoError(t, err)
	assert.Equal(t, ip, st.Status.Network.Ip, "printed IP vs CRI PodSandboxStatus")

	veth := hostVethOf(t, sbID)
	assert.Contains(t, bridgePorts(t), veth, "pod veth %s not on bridge %s", veth, e2eBridge)

	cs := podContainers(t, "e2e-two")
	require.Len(t, cs, 2)
	for _, c := range cs {
		assert.Equal(t, "CONTAINER_RUNNING", c.State.String(), c.Metadata.Name)
	}

	// Containers of a pod share the network namespace.
	// The server may still be binding its port right after its start.
	client := containerID(t, "e2e-two", "client")
	var out string
	eventually(t, 10*time.Second, "the server answering on localhost", func() bool {
		o, _, err := suite.rt.ExecSync(ctx(t), client, []string{"wget", "-qO-", "http://127.0.0.1:8080/"}, 5*time.Second)
		out = string(o)
		return err == nil
	})
	assert.Contains(t, out, "hello from e2e-two")
	// The host reaches the pod IP through the bridge.
	assert.Contains(t, httpGet(t, "http://"+ip+":8080/"), "hello from e2e-two")

	reservations, err := cni.HostLocalReservations(suite.network)
	require.NoError(t, err)
	require.Contains(t, reservations, ip, "host-local holds the pod IP")

	p.interrupt()

	assert.Empty(t, podSandboxes(t, "e2e-two"), "sandboxes left after SIGINT")
	assert.Empty(t, podContainers(t, "e2e-two"), "containers left after SIGINT")
	assert.NotContains(t, bridgePorts(t), veth, "veth left on the bridge")
	_, err = net.InterfaceByName(veth)
	assert.Error(t, err, "veth %s still exists", veth)
	reservations, err = cni.HostLocalReservations(suite.network)
	require.NoError(t, err)
	assert.NotContains(t, reservations, ip, "host-local IP reservation leaked")
	entries, _ := filepath.Glob(filepath.Join(suite.dir, "pod-logs", "default_e2e-two_*"))
	assert.Empty(t, entries, "pod log directory left")
}

// A hostPort is reachable on the host's loopback through portmap.
func TestRun_HostPort(t *testing.T) {
	t.Parallel()
	p := startRunWith(t, `
apiVersion: v1
kind: Pod
metadata:
  name: e2e-hostport
spec:
  terminationGracePeriodSeconds: 2
  containers:
  - name: web
    image: REGISTRY/minikubelet/testserver:v1
    ports:
    - containerPort: 8080
      hostPort: 18089
`, privilegedLevel) // baseline refuses hostPorts
	p.waitRunning("e2e-hostport")
	assert.Contains(t, httpGet(t, "http://127.0.0.1:18089/"), "hello from e2e-hostport")
	p.interrupt()
	c := &http.Client{Timeout: 2 * time.Second}
	_, err := c.Get("http://127.0.0.1:18089/")
	assert.Error(t, err, "hostPort still answers after the pod was removed")
}

// Init containers run to completion one after another before the app
// containers start, observable through a file on a shared emptyDir.
func TestRun_InitContainersInOrder(t *testing.T) {
	t.Parallel()
	p := startRun(t, `
apiVersion: v1
kind: Pod
metadata:
  name: e2e-init
spec:
  terminationGracePeriodSeconds: 2
  volumes:
  - name: work
    emptyDir: {}
  initContainers:
  - name: first
    image: REGISTRY/minikubelet/busybox:1.36
    command: ["sh", "-c", "sleep 1; echo first >> /work/order"]
    volumeMounts: [{name: work, mountPath: /work}]
  - name: second
    image: REGISTRY/minikubelet/busybox:1.36
    command: ["sh", "-c", "echo second >> /work/order"]
    volumeMounts: [{name: work, mountPath: /work}]
  containers:
  - name: app
    image: REGISTRY/minikubelet/busybox:1.36
    command: ["sh", "-c", "echo app >> /work/order; exec sleep 3600"]
    volumeMounts: [{name: work, mountPath: /work}]
`)
	p.waitRunning("e2e-init")
	id := containerID(t, "e2e-init", "app")
	assert.Equal(t, "first\nsecond\napp\n", execIn(t, id, "cat", "/work/order"))
	// Both init containers exited 0 and are kept for their logs.
	exited := map[string]bool{}
	for _, c := range podContainers(t, "e2e-init") {
		if c.State.String() == "CONTAINER_EXITED" {
			exited[c.Metadata.Name] = true
		}
	}
	assert.Equal(t, map[string]bool{"first": true, "second": true}, exited)
	p.interrupt()
	assert.Empty(t, podContainers(t, "e2e-init"))
}

// Environment variables from fieldRef hold the pod's own values.
func TestRun_EnvFieldRef(t *testing.T) {
	t.Parallel()
	p := startRun(t, `
apiVersion: v1
kind: Pod
metadata:
  name: e2e-env
  namespace: e2e-ns
spec:
  terminationGracePeriodSeconds: 2
  containers:
  - name: app
    image: REGISTRY/minikubelet/busybox:1.36
    command: ["sleep", "3600"]
    env:
    - {name: PLAIN, value: "plain value"}
    - {name: MY_NAME, valueFrom: {fieldRef: {fieldPath: metadata.name}}}
    - {name: MY_NAMESPACE, valueFrom: {fieldRef: {fieldPath: metadata.namespace}}}
    - {name: MY_UID, valueFrom: {fieldRef: {fieldPath: metadata.uid}}}
    - {name: MY_IP, valueFrom: {fieldRef: {fieldPath: status.podIP}}}
    - {name: MY_NODE, valueFrom: {fieldRef: {fieldPath: spec.nodeName}}}
`)
	m := p.waitFor(`e2e-ns/e2e-env\s+status\s+Running ip=(\S+)`, 2*time.Minute)
	ip := m[1]
	sbs := podSandboxes(t, "e2e-env")
	require.Len(t, sbs, 1)
	uid := sbs[0].Metadata.Uid
	id := containerID(t, "e2e-env", "app")
	env := map[string]string{}
	for _, l := range strings.Split(execIn(t, id, "env"), "\n") {
		if k, v, ok := strings.Cut(l, "="); ok {
			env[k] = v
		}
	}
	assert.Equal(t, "plain value", env["PLAIN"])
	assert.Equal(t, "e2e-env", env["MY_NAME"])
	assert.Equal(t, "e2e-ns", env["MY_NAMESPACE"])
	assert.Equal(t, uid, env["MY_UID"])
	assert.Equal(t, ip, env["MY_IP"])
	assert.Equal(t, e2eNode, env["MY_NODE"])
	p.interrupt()
}

// An image the registry does not have ends in ErrImagePull carrying the
// registry's message, and no container is created.
func TestRun_UnknownImage(t *testing.T) {
	t.Parallel()
	p := startRun(t, `
apiVersion: v1
kind: Pod
metadata:
  name: e2e-noimage
spec:
  terminationGracePeriodSeconds: 2
  containers:
  - name: app
    image: REGISTRY/minikubelet/does-not-exist:v1
`)
	m := p.waitFor(`e2e-noimage\s+status\s+Pending .*app:waiting\(ErrImagePull: ([^)]*)`, 2*time.Minute)
	assert.Contains(t, m[1], "not found", "the registry's message")
	assert.Contains(t, m[1], "does-not-exist")
	assert.Len(t, podSandboxes(t, "e2e-noimage"), 1, "the sandbox exists")
	assert.Empty(t, podContainers(t, "e2e-noimage"), "no container without an image")
	p.interrupt()
	assert.Empty(t, podSandboxes(t, "e2e-noimage"))
}

// Every invalid manifest of the unit tests is refused with exit code 2 and a
// field-path error before anything reaches the runtime. Not parallel: the
// runtime's object counts must not move while it runs.
func TestRun_InvalidManifestsCreateNothing(t *testing.T) {
	before := len(podSandboxes(t, "")) + len(podContainers(t, ""))
	files, err := filepath.Glob(filepath.Join(suite.repo, "agent/manifest/testdata/manifests/invalid/*.yaml"))
	require.NoError(t, err)
	require.GreaterOrEqual(t, len(files), 25)
	fieldPath := regexp.MustCompile(`(metadata|spec|kind|apiVersion|document|line|yaml|json|status)`)
	for _, f := range files {
		cmd := exec.Command(suite.bin, append(append([]string{"run"}, agentArgs()...), f)...)
		out, err := cmd.CombinedOutput()
		var ee *exec.ExitError
		require.ErrorAs(t, err, &ee, "%s: expected failure, got:\n%s", filepath.Base(f), out)
		assert.Equal(t, 2, ee.ExitCode(), "%s:\n%s", filepath.Base(f), out)
		assert.Contains(t, string(out), "nothing was created", filepath.Base(f))
		assert.Regexp(t, fieldPath, string(out), filepath.Base(f))
	}
	after := len(podSandboxes(t, "")) + len(podContainers(t, ""))
	assert.Equal(t, before, after, "CRI objects appeared while refusing invalid manifests")
}
