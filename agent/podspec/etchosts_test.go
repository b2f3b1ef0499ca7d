package podspec

import (
	"testing"

	"github.com/stretchr/testify/assert"
	v1 "k8s.io/api/core/v1"
)

func TestMountsEtcHosts(t *testing.T) {
	for name, tc := range map[string]struct {
		mounts []v1.VolumeMount
		want   bool
	}{
		"no mounts":               {nil, false},
		"another path":            {[]v1.VolumeMount{{Name: "v", MountPath: "/etc"}}, false},
		"/etc/hosts":              {[]v1.VolumeMount{{Name: "v", MountPath: "/etc/hosts"}}, true},
		"/etc/hosts/, unclean":    {[]v1.VolumeMount{{Name: "v", MountPath: "/etc//hosts/"}}, true},
		"among others":            {[]v1.VolumeMount{{Name: "a", MountPath: "/data"}, {Name: "v", MountPath: "/etc/hosts"}}, true},
		"a file below /etc/hosts": {[]v1.VolumeMount{{Name: "v", MountPath: "/etc/hosts/x"}}, false},
	} {
		t.Run(name, func(t *testing.T) {
			assert.Equal(t, tc.want, MountsEtcHosts(&v1.Container{Name: "app", VolumeMounts: tc.mounts}))
		})
	}
}

func TestPodHostsContent(t *testing.T) {
	base := func() *v1.Pod {
		pod := &v1.Pod{Spec: v1.PodSpec{Subdomain: "sub", HostAliases: []v1.HostAlias{{IP: "10.1.2.3", Hostnames: []string{"foo"}}}}}
		pod.Name, pod.Namespace, pod.UID = "web", "shop", "uid-1"
		return pod
	}
	aliases := "\n# Entries added by HostAliases.\n10.1.2.3\tfoo\n"
	for name, tc := range map[string]struct {
		hostNetwork bool
		podIP       string
		nodeHosts   []byte
		want        []byte
	}{
		"pod network, no IP yet: none":        {want: nil},
		"pod network":                         {podIP: "10.89.0.5", want: []byte(localhostLines + "10.89.0.5\tweb.sub.shop.svc.cluster.local\tweb\n" + aliases)},
		"pod network ignores the node's file": {podIP: "10.89.0.5", nodeHosts: []byte("10.0.0.1 node1\n"), want: []byte(localhostLines + "10.89.0.5\tweb.sub.shop.svc.cluster.local\tweb\n" + aliases)},
		"host network":                        {hostNetwork: true, nodeHosts: []byte("10.0.0.1 node1\n"), want: []byte("# Kubernetes-managed hosts file (host network).\n10.0.0.1 node1\n" + aliases)},
		"host network, no node file":          {hostNetwork: true, want: []byte("# Kubernetes-managed hosts file (host network).\n" + aliases)},
	} {
		t.Run(name, func(t *testing.T) {
			pod := base()
			pod.Spec.HostNetwork = tc.hostNetwork
			assert.Equal(t, tc.want, PodHostsContent(pod, tc.podIP, "cluster.local", tc.nodeHosts))
		})
	}
}
