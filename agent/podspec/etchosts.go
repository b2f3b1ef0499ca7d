package podspec

// Which /etc/hosts a container gets, as the kubelet chooses it
// (kubelet_pods.go makeHostsMount): a pod on the pod network gets the
// managed file naming its IP, once it has one; a host-network pod gets the
// node's file; spec.hostAliases are appended to either (hosts.go). The
// engine reads the node's file, writes the pod's and mounts it.

import (
	"path/filepath"

	v1 "k8s.io/api/core/v1"
)

// EtcHostsPath is where the pod's hosts file is mounted in containers,
// and the node's own hosts file.
const EtcHostsPath = "/etc/hosts"

// MountsEtcHosts reports whether container c mounts a volume at
// /etc/hosts itself: it then gets no managed file.
func MountsEtcHosts(c *v1.Container) bool {
	for _, m := range c.VolumeMounts {
		if filepath.Clean(m.MountPath) == EtcHostsPath {
			return true
		}
	}
	return false
}

// PodHostsContent is the hosts file of pod: for a host-network pod the
// node's file (nodeHosts, nil when it has none) with the host aliases; for
// a pod on the pod network the managed file naming podIP, or nil when the
// pod has no IP yet (the kubelet mounts the file only once it has one).
func PodHostsContent(pod *v1.Pod, podIP, clusterDomain string, nodeHosts []byte) []byte {
	if pod.Spec.HostNetwork {
		return HostNetworkHostsContent(nodeHosts, pod.Spec.HostAliases)
	}
	if podIP == "" {
		return nil
	}
	host, domain := PodHostnameAndDomain(pod, clusterDomain)
	return ManagedHostsContent([]string{podIP}, host, domain, pod.Spec.HostAliases)
}
