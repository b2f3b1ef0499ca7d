package e2e

import (
	"encoding/base64"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// dnsPolicy None puts exactly the pod's dnsConfig in /etc/resolv.conf; the
// managed /etc/hosts names the pod (with its subdomain FQDN) and carries the
// host aliases; setHostnameAsFQDN makes the kernel hostname the FQDN.
func TestDNS_NonePolicyHostsAndFQDN(t *testing.T) {
	t.Parallel()
	p := startRun(t, `
apiVersion: v1
kind: Pod
metadata:
  name: e2e-dns
spec:
  terminationGracePeriodSeconds: 2
  hostname: front
  subdomain: sub
  setHostnameAsFQDN: true
  dnsPolicy: "None"
  dnsConfig:
    nameservers: [192.0.2.1]
    searches: [ns1.svc.cluster-domain.example, my.dns.search.suffix]
    options:
    - name: ndots
      value: "2"
    - name: edns0
  hostAliases:
  - ip: "127.0.0.1"
    hostnames: [foo.local, bar.local]
  - ip: "10.1.2.3"
    hostnames: [foo.remote, bar.remote]
  containers:
  - name: app
    image: REGISTRY/minikubelet/busybox:1.36
    command: [sleep, "3600"]
`)
	ip := p.waitRunning("e2e-dns")
	id := containerID(t, "e2e-dns", "app")

	assert.Equal(t, "search ns1.svc.cluster-domain.example my.dns.search.suffix\nnameserver 192.0.2.1\noptions ndots:2 edns0\n",
		execIn(t, id, "cat", "/etc/resolv.conf"))

	hosts := execIn(t, id, "cat", "/etc/hosts")
	assert.True(t, strings.HasPrefix(hosts, "# Kubernetes-managed hosts file.\n127.0.0.1\tlocalhost\n"), hosts)
	assert.Contains(t, hosts, ip+"\tfront.sub.default.svc.cluster.local\tfront\n")
	assert.True(t, strings.HasSuffix(hosts, "\n# Entries added by HostAliases.\n127.0.0.1\tfoo.local\tbar.local\n10.1.2.3\tfoo.remote\tbar.remote\n"), hosts)

	assert.Equal(t, "front.sub.default.svc.cluster.local\n", execIn(t, id, "hostname"))
	p.interrupt()
}

// With --cluster-dns a ClusterFirst pod gets the kubelet's cluster
// resolv.conf: the cluster nameservers, the search list
// <ns>.svc.<domain> svc.<domain> <domain> and the node's own search
// domains, ndots:5; no MissingClusterDNS warning. A Default pod keeps the
// node's file (--resolv-conf).
func TestDNS_ClusterFirstWithClusterDNS(t *testing.T) {
	t.Parallel()
	resolv := filepath.Join(t.TempDir(), "resolv.conf")
	require.NoError(t, os.WriteFile(resolv, []byte("nameserver 192.0.2.53\nsearch corp.example\n"), 0o644))
	path := writeManifest(t, `
apiVersion: v1
kind: Pod
metadata:
  name: e2e-cluster-dns
  namespace: shop
spec:
  terminationGracePeriodSeconds: 0
  containers:
  - name: app
    image: REGISTRY/minikubelet/busybox:1.36
    command: [sleep, "3600"]
---
apiVersion: v1
kind: Pod
metadata:
  name: e2e-default-dns
  namespace: shop
spec:
  terminationGracePeriodSeconds: 0
  dnsPolicy: Default
  containers:
  - name: app
    image: REGISTRY/minikubelet/busybox:1.36
    command: [sleep, "3600"]
`)
	args := append([]string{"run"}, agentArgs()...)
	args = append(args, "--cluster-dns", "10.96.0.10,10.96.0.11", "--cluster-domain", "example.local", "--resolv-conf", resolv, path)
	p := startRunArgs(t, args...)
	for _, pod := range []string{"e2e-cluster-dns", "e2e-default-dns"} {
		p.waitFor(`shop/`+pod+`\s+status\s+Running ip=`, 2*time.Minute)
	}
	assert.Equal(t, "search shop.svc.example.local svc.example.local example.local corp.example\nnameserver 10.96.0.10\nnameserver 10.96.0.11\noptions ndots:5\n",
		execIn(t, containerID(t, "e2e-cluster-dns", "app"), "cat", "/etc/resolv.conf"))
	assert.Equal(t, "search corp.example\nnameserver 192.0.2.53\n",
		execIn(t, containerID(t, "e2e-default-dns", "app"), "cat", "/etc/resolv.conf"))
	out, _ := p.stdout.snapshot()
	assert.NotContains(t, out, "MissingClusterDNS")
	p.interrupt()
}

// authRegistry is a registry with htpasswd auth holding one image.
type authRegistry struct {
	addr, user, pass string
	image            string // addr/private/busybox:1.36
}

// startAuthRegistry starts hack/start-registry-auth.sh on a free loopback
// port, tells the private containerd to reach it over plain HTTP, and
// pushes the suite's busybox there with the credentials. Cleanup stops it.
func startAuthRegistry(t *testing.T) *authRegistry {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	r := &authRegistry{addr: l.Addr().String(), user: "e2e-user", pass: "e2e-s3cret"}
	require.NoError(t, l.Close())
	r.image = r.addr + "/private/busybox:1.36"

	dir := t.TempDir()
	start := exec.Command(filepath.Join(suite.repo, "hack/start-registry-auth.sh"), r.addr, r.user, r.pass, dir)
	out, err := start.CombinedOutput()
	require.NoError(t, err, "%s", out)
	t.Cleanup(func() {
		stop := exec.Command(filepath.Join(suite.repo, "hack/stop-registry-auth.sh"), r.addr)
		if out, err := stop.CombinedOutput(); err != nil {
			t.Errorf("stop auth registry: %v\n%s", err, out)
		}
	})

	// containerd reads certs.d/<host>/hosts.toml on every pull.
	hostsDir := filepath.Join(containerdDir(), "certs.d", r.addr)
	require.NoError(t, os.MkdirAll(hostsDir, 0o755))
	hostsToml := fmt.Sprintf("server = %[1]q\n\n[host.%[1]q]\n  capabilities = [\"pull\", \"resolve\"]\n", "http://"+r.addr)
	require.NoError(t, os.WriteFile(filepath.Join(hostsDir, "hosts.toml"), []byte(hostsToml), 0o644))
	t.Cleanup(func() { _ = os.RemoveAll(hostsDir) })

	src, err := name.ParseReference(suite.registry+"/minikubelet/busybox:1.36", name.Insecure)
	require.NoError(t, err)
	img, err := remote.Image(src)
	require.NoError(t, err)
	dst, err := name.ParseReference(r.image, name.Insecure)
	require.NoError(t, err)
	require.NoError(t, remote.Write(dst, img, remote.WithAuth(&authn.Basic{Username: r.user, Password: r.pass})))
	// And without credentials the registry refuses.
	_, err = remote.Image(dst)
	require.Error(t, err)
	return r
}

// dockerConfig is a config.json naming the registry with user and pass.
func (r *authRegistry) dockerConfig(user, pass string) string {
	auth := base64.StdEncoding.EncodeToString([]byte(user + ":" + pass))
	return fmt.Sprintf(`{"auths": {%q: {"auth": %q}}}`, r.addr, auth)
}

// authPod is a pod pulling the registry's image on every start (Always),
// so an image pulled by an earlier case cannot make a later one pass.
func (r *authRegistry) authPod(podName, extra string) string {
	return fmt.Sprintf(`
apiVersion: v1
kind: Pod
metadata:
  name: %s
spec:
  terminationGracePeriodSeconds: 2
%s  containers:
  - name: app
    image: %s
    imagePullPolicy: Always
    command: [sleep, "3600"]
`, podName, extra, r.image)
}

// A pull from a registry with htpasswd auth fails without credentials
// (ErrImagePull with the registry's answer) and with wrong ones, and works
// with the node's docker config file and with an imagePullSecrets Secret.
// The cases share one registry and run in turn.
func TestPullSecrets_AuthenticatedRegistry(t *testing.T) {
	t.Parallel()
	r := startAuthRegistry(t)

	t.Run("no credentials", func(t *testing.T) {
		p := startRun(t, r.authPod("e2e-auth-none", ""))
		m := p.waitFor(`e2e-auth-none\s+status\s+Pending .*app:waiting\(ErrImagePull: ([^)]*)`, 2*time.Minute)
		// containerd 1.6 passes on the registry's 401; 2.x says it had no
		// credentials to answer the challenge with.
		assert.Regexp(t, `(?i)401 unauthorized|authentication required|unauthorized|authorization failed: no basic auth credentials`, m[1], "the registry's message")
		assert.Empty(t, podContainers(t, "e2e-auth-none"))
		p.interrupt()
	})

	t.Run("wrong password in the node's docker config", func(t *testing.T) {
		cfg := filepath.Join(t.TempDir(), "config.json")
		require.NoError(t, os.WriteFile(cfg, []byte(r.dockerConfig(r.user, "wrong")), 0o600))
		p := startRunPath(t, writeManifest(t, r.authPod("e2e-auth-wrong", "")), "--pull-secret-file", cfg)
		m := p.waitFor(`e2e-auth-wrong\s+status\s+Pending .*app:waiting\(ErrImagePull: ([^)]*)`, 2*time.Minute)
		assert.Regexp(t, `(?i)401 unauthorized|authentication required|unauthorized`, m[1])
		p.interrupt()
	})

	t.Run("node docker config file", func(t *testing.T) {
		cfg := filepath.Join(t.TempDir(), "config.json")
		require.NoError(t, os.WriteFile(cfg, []byte(r.dockerConfig(r.user, r.pass)), 0o600))
		p := startRunPath(t, writeManifest(t, r.authPod("e2e-auth-node", "")), "--pull-secret-file", cfg)
		p.waitRunning("e2e-auth-node")
		p.interrupt()
	})

	t.Run("imagePullSecrets Secret in the manifest", func(t *testing.T) {
		secret := fmt.Sprintf(`apiVersion: v1
kind: Secret
metadata:
  name: regcred
type: kubernetes.io/dockerconfigjson
data:
  .dockerconfigjson: %s
---
`, base64.StdEncoding.EncodeToString([]byte(r.dockerConfig(r.user, r.pass))))
		// A wrong credential first: the next one is tried.
		wrong := fmt.Sprintf(`---
apiVersion: v1
kind: Secret
metadata:
  name: wrongcred
type: kubernetes.io/dockercfg
data:
  .dockercfg: %s
`, base64.StdEncoding.EncodeToString(fmt.Appendf(nil, `{%q: {"username": %q, "password": "nope"}}`, r.addr, r.user)))
		manifest := secret + r.authPod("e2e-auth-secret", "  imagePullSecrets:\n  - name: wrongcred\n  - name: regcred\n") + wrong
		// `run` takes the Secret documents of its manifest (before or after
		// the pod): the pull tries wrongcred's credential, then regcred's,
		// within one pull, so the pod never reports ErrImagePull.
		p := startRunPath(t, writeManifest(t, manifest))
		if !p.waitForOrExit(`e2e-auth-secret\s+status\s+Running`, 2*time.Minute) {
			errOut, _ := p.stderr.snapshot()
			t.Fatalf("the pod did not run with the manifest's imagePullSecrets:\n%s\n%s", p.output(), errOut)
		}
		assert.NotRegexp(t, `e2e-auth-secret\s+status\s+.*ErrImagePull`, p.output(), "the wrong credential is not the last one tried")
		assert.NotEmpty(t, podContainers(t, "e2e-auth-secret"))
		p.interrupt()
	})
}
