package podspec

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

func TestSandboxConfig(t *testing.T) {
	in := testInputs("# comment\nnameserver 10.0.0.2\nnameserver 10.0.0.3 ; trailing\nsearch corp.example example\noptions ndots:2 edns0\n")
	pod := testPod(t, `
apiVersion: v1
kind: Pod
metadata: {name: web, namespace: shop, uid: 11111111-2222-3333-4444-555555555555, labels: {app: web}, annotations: {note: hi}}
spec:
  hostname: front
  containers:
  - name: web
    image: reg/web:1
    ports:
    - {containerPort: 8080, hostPort: 18080}
    - {containerPort: 53, hostPort: 5353, protocol: UDP, hostIP: 127.0.0.1}
    - {containerPort: 9090}
`)
	cfg, warns, err := SandboxConfig(pod, 3, in)
	require.NoError(t, err)
	require.Len(t, warns, 1)
	assert.Equal(t, "MissingClusterDNS", warns[0].Reason, "ClusterFirst on a node without cluster DNS")
	assert.Equal(t, &runtimeapi.PodSandboxMetadata{Name: "web", Namespace: "shop", Uid: "11111111-2222-3333-4444-555555555555", Attempt: 3}, cfg.Metadata)
	assert.Equal(t, filepath.Join(in.PodLogDir, "shop_web_11111111-2222-3333-4444-555555555555"), cfg.LogDirectory)
	assert.Equal(t, "front", cfg.Hostname)
	assert.Equal(t, []string{"10.0.0.2", "10.0.0.3"}, cfg.DnsConfig.Servers)
	assert.Equal(t, []string{"corp.example", "example"}, cfg.DnsConfig.Searches)
	assert.Equal(t, []string{"ndots:2", "edns0"}, cfg.DnsConfig.Options)
	require.Len(t, cfg.PortMappings, 2, "only ports with a hostPort are mapped")
	assert.Equal(t, &runtimeapi.PortMapping{Protocol: runtimeapi.Protocol_TCP, ContainerPort: 8080, HostPort: 18080}, cfg.PortMappings[0])
	assert.Equal(t, &runtimeapi.PortMapping{Protocol: runtimeapi.Protocol_UDP, ContainerPort: 53, HostPort: 5353, HostIp: "127.0.0.1"}, cfg.PortMappings[1])
	assert.Equal(t, "web", cfg.Labels["app"])
	assert.Equal(t, "minikubelet", cfg.Labels[LabelManagedBy])
	assert.Equal(t, map[string]string{"note": "hi", AnnotationQOSClass: "BestEffort", AnnotationCPURequest: "0"}, cfg.Annotations,
		"the pod's annotations plus what the QoS tiers are computed from")
	ns := cfg.Linux.SecurityContext.NamespaceOptions
	assert.Equal(t, runtimeapi.NamespaceMode_POD, ns.Network)
	assert.Equal(t, runtimeapi.NamespaceMode_CONTAINER, ns.Pid, "PID namespace per container unless asked")
	assert.Equal(t, runtimeapi.NamespaceMode_POD, ns.Ipc)
}

func TestSandboxConfig_HostNamespaces(t *testing.T) {
	in := testInputs("nameserver 1.1.1.1\n")
	pod := testPod(t, `
apiVersion: v1
kind: Pod
metadata: {name: host}
spec:
  hostNetwork: true
  hostPID: true
  hostIPC: true
  containers: [{name: c, image: reg/c:1}]
`)
	cfg, _, err := SandboxConfig(pod, 0, in)
	require.NoError(t, err)
	ns := cfg.Linux.SecurityContext.NamespaceOptions
	assert.Equal(t, runtimeapi.NamespaceMode_NODE, ns.Network)
	assert.Equal(t, runtimeapi.NamespaceMode_NODE, ns.Pid)
	assert.Equal(t, runtimeapi.NamespaceMode_NODE, ns.Ipc)
	assert.Empty(t, cfg.Hostname, "a host-network pod keeps the node's hostname")
	assert.Nil(t, cfg.DnsConfig, "a host-network pod uses the node's resolv.conf")
}

// TestConfigs_UserNamespace: a pod with hostUsers: false gets its user
// namespace, mode POD with its ID range, in the sandbox's and every
// container's namespace options, as the kubelet's NamespacesForPod; a pod
// in the node's user namespace gets no option.
func TestConfigs_UserNamespace(t *testing.T) {
	pod := testPod(t, `
apiVersion: v1
kind: Pod
metadata: {name: userns}
spec:
  hostUsers: false
  containers: [{name: c, image: reg/c:1}]
`)
	ids := func() []*runtimeapi.IDMapping {
		return []*runtimeapi.IDMapping{{HostId: 131072, ContainerId: 0, Length: 65536}}
	}
	userNS := &runtimeapi.UserNamespace{Mode: runtimeapi.NamespaceMode_POD, Uids: ids(), Gids: ids()}
	in := testInputs("nameserver 1.1.1.1\n")
	in.UserNamespace = userNS
	sb, _, err := SandboxConfig(pod, 0, in)
	require.NoError(t, err)
	assert.Equal(t, userNS.String(), sb.Linux.SecurityContext.NamespaceOptions.UsernsOptions.String())
	c, err := ContainerConfig(pod, &pod.Spec.Containers[0], ContainerInputs{UserNamespace: userNS})
	require.NoError(t, err)
	assert.Equal(t, userNS.String(), c.Linux.SecurityContext.NamespaceOptions.UsernsOptions.String())

	// Every mount, the engine's included, is idmapped into the namespace.
	c.Mounts = []*runtimeapi.Mount{{ContainerPath: "/data", HostPath: "/v/data"}, {ContainerPath: "/etc/hosts", HostPath: "/p/etc-hosts"}}
	IDMapMounts(c)
	for _, m := range c.Mounts {
		require.Len(t, m.UidMappings, 1, m.ContainerPath)
		require.Len(t, m.GidMappings, 1, m.ContainerPath)
		assert.Equal(t, ids()[0].String(), m.UidMappings[0].String(), m.ContainerPath)
		assert.Equal(t, ids()[0].String(), m.GidMappings[0].String(), m.ContainerPath)
	}
	plain, err := ContainerConfig(pod, &pod.Spec.Containers[0], ContainerInputs{Mounts: []*runtimeapi.Mount{{ContainerPath: "/data", HostPath: "/v/data"}}})
	require.NoError(t, err)
	IDMapMounts(plain)
	assert.Nil(t, plain.Mounts[0].UidMappings, "the node's user namespace: no idmap")

	sb, _, err = SandboxConfig(pod, 0, testInputs("nameserver 1.1.1.1\n"))
	require.NoError(t, err)
	assert.Nil(t, sb.Linux.SecurityContext.NamespaceOptions.UsernsOptions, "no mapping given: the node's user namespace")
}
