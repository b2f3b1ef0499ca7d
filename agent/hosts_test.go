package agent

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
)

func TestHostsMount(t *testing.T) {
	a := New(Config{NodeName: "node-1", RootDir: t.TempDir(), PodLogDir: t.TempDir(), ResolvConf: "/nonexistent", Network: testNetwork(t), HostIPs: []string{"192.0.2.1"}}, Deps{})
	pod := &v1.Pod{Spec: v1.PodSpec{Subdomain: "sub", HostAliases: []v1.HostAlias{{IP: "10.1.2.3", Hostnames: []string{"foo"}}}}}
	pod.Name, pod.Namespace, pod.UID = "web", "shop", "uid-1"
	c := &v1.Container{Name: "app"}

	t.Run("no pod IP yet: no mount", func(t *testing.T) {
		m, err := a.hostsMount(pod, c, "")
		require.NoError(t, err)
		assert.Nil(t, m)
	})
	t.Run("pod network", func(t *testing.T) {
		m, err := a.hostsMount(pod, c, "10.89.0.5")
		require.NoError(t, err)
		require.NotNil(t, m)
		assert.Equal(t, "/etc/hosts", m.ContainerPath)
		assert.Equal(t, filepath.Join(a.podDir(pod), "etc-hosts"), m.HostPath)
		b, err := os.ReadFile(m.HostPath)
		require.NoError(t, err)
		assert.Contains(t, string(b), "10.89.0.5\tweb.sub.shop.svc.cluster.local\tweb\n")
		assert.Contains(t, string(b), "10.1.2.3\tfoo\n")
		st, err := os.Stat(m.HostPath)
		require.NoError(t, err)
		assert.Equal(t, os.FileMode(0o644), st.Mode().Perm())
	})
	t.Run("the container mounts /etc/hosts itself", func(t *testing.T) {
		own := &v1.Container{Name: "app", VolumeMounts: []v1.VolumeMount{{Name: "v", MountPath: "/etc/hosts/"}}}
		m, err := a.hostsMount(pod, own, "10.89.0.5")
		require.NoError(t, err)
		assert.Nil(t, m)
	})
	t.Run("host network", func(t *testing.T) {
		node := filepath.Join(t.TempDir(), "hosts")
		require.NoError(t, os.WriteFile(node, []byte("10.0.0.1 node1\n"), 0o644))
		old := nodeHostsFile
		nodeHostsFile = node
		t.Cleanup(func() { nodeHostsFile = old })
		hn := pod.DeepCopy()
		hn.Spec.HostNetwork = true
		m, err := a.hostsMount(hn, c, "")
		require.NoError(t, err)
		require.NotNil(t, m)
		b, err := os.ReadFile(m.HostPath)
		require.NoError(t, err)
		assert.Equal(t, "# Kubernetes-managed hosts file (host network).\n10.0.0.1 node1\n\n# Entries added by HostAliases.\n10.1.2.3\tfoo\n", string(b))
	})
}
