package main

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"

	"github.com/minikubelet/minikubelet/agent/manifest"
	"github.com/minikubelet/minikubelet/agent/volume"
)

// serve's control files reach the hostPath guard (issue #29 finding 6):
// the manifest dir, the admin kubeconfig's dir, the config file, the run
// dir, the socket's dir, the cluster kubeconfig and the files it names,
// the kubelet server's certificates; each refused under its aliases
// (symlink, /proc/self/root, a parent directory) and read-only too, the
// refusal naming spec.volumes[i].hostPath.path. A sibling passes. All in
// temp dirs laid out as /etc/minikubelet, /run/minikubelet and the like.
func TestServe_HostPathGuardCoversControlFiles(t *testing.T) {
	host := t.TempDir()
	mk := func(parts ...string) string {
		p := filepath.Join(append([]string{host}, parts...)...)
		require.NoError(t, os.MkdirAll(p, 0o755))
		return p
	}
	etc := mk("etc")
	conf := mk("etc", "minikubelet")
	manifests := mk("etc", "minikubelet", "manifests")
	kube := mk("etc", "kubernetes")
	pki := mk("var", "lib", "kubelet", "pki")
	runDir := mk("run", "minikubelet")
	sockDir := mk("sock")
	other := mk("etc", "other")
	configFile := filepath.Join(host, "etc", "minikubelet.yaml")
	require.NoError(t, os.WriteFile(configFile, []byte("pod-cidr: 10.88.0.0/16\n"), 0o600))
	kubeconfig := filepath.Join(kube, "kubelet.conf")
	require.NoError(t, os.WriteFile(kubeconfig, []byte(`apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:6443", certificate-authority: ../../var/lib/kubelet/pki/ca.crt}}]
users: [{name: u, user: {client-certificate: `+pki+`/client.crt, client-key: `+pki+`/client.key}}]
contexts: [{name: x, context: {cluster: c, user: u}}]
current-context: x
`), 0o600))
	require.NoError(t, os.Symlink(manifests, filepath.Join(host, "manifests-link")))

	sf := serveFlags{
		socket:       filepath.Join(sockDir, "api.sock"),
		runDir:       runDir,
		manifestDir:  manifests,
		adminKubecfg: filepath.Join(conf, "admin.kubeconfig"),
		config:       configFile,
	}
	certDir, bootstrap := mk("srv", "node-pki"), filepath.Join(host, "bootstrap-kubelet.conf")
	paths := sf.protectedPaths(clusterFlags{kubeconfig: kubeconfig, certDir: certDir, bootstrapKubeconfig: bootstrap}, kubeletServerFlags{tlsCertFile: filepath.Join(host, "srv.crt")})
	assert.Contains(t, paths, filepath.Join(pki, "ca.crt"), "a relative path of the kubeconfig, resolved against its directory")
	assert.Contains(t, paths, certDir, "--cert-dir: the node's key pairs")
	assert.Contains(t, paths, bootstrap, "--bootstrap-kubeconfig: the token that requests them")
	m := volume.NewManager(volume.Config{RootDir: mk("var", "lib", "minikubelet"), PodLogDir: mk("var", "log", "pods"), ProtectedPaths: paths}, volume.Deps{})

	pod := func(i int, path string, readOnly bool) *v1.Pod {
		pods, err := manifest.PrepareManifest(fmt.Appendf(nil, `
apiVersion: v1
kind: Pod
metadata: {name: guard%d}
spec:
  volumes: [{name: cfg, configMap: {name: x}}, {name: node, hostPath: {path: %s}}]
  containers: [{name: app, image: reg.local/x:1, volumeMounts: [{name: node, mountPath: /node, readOnly: %t}]}]
`, i, path, readOnly), "test.yaml", "node-1")
		require.NoError(t, err)
		require.Len(t, pods, 1)
		return pods[0]
	}
	for i, tc := range []struct {
		name     string
		path     string
		readOnly bool
		refused  bool
	}{
		{"manifest dir", manifests, false, true},
		{"manifest dir read-only", manifests, true, true},
		{"a new file in the manifest dir", manifests + "/planted.yaml", false, true},
		{"manifest dir through a symlink", host + "/manifests-link", false, true},
		{"manifest dir through /proc/self/root", "/proc/self/root" + manifests, false, true},
		{"admin kubeconfig's dir", conf, false, true},
		{"parent of them all (/etc)", etc, true, true},
		{"config file", configFile, true, true},
		{"run dir (lock, Secrets)", runDir + "/secrets", true, true},
		{"socket dir", sockDir, false, true},
		{"cluster kubeconfig's dir", kube, true, true},
		{"cluster client key", pki + "/client.key", true, true},
		{"kubelet server certificate", host + "/srv.crt", true, true},
		{"--cert-dir (the node's client key)", certDir + "/kubelet-client-current.pem", true, true},
		{"--bootstrap-kubeconfig", bootstrap, true, true},
		{"a sibling under /etc", other, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			reason, msg := m.ProtectedHostPath(pod(i, tc.path, tc.readOnly))
			if !tc.refused {
				assert.Empty(t, reason, msg)
				return
			}
			assert.Equal(t, "HostPathForbidden", reason)
			assert.Contains(t, msg, "spec.volumes[1].hostPath.path: ")
			assert.Contains(t, msg, "--pod-security=privileged")
		})
	}
}
