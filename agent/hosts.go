package agent

// The pod's /etc/hosts, managed as the kubelet does (kubelet_pods.go
// makeHostsMount): one file per pod, <podDir>/etc-hosts, bind-mounted at
// /etc/hosts in every container. Its content is agent/podspec's
// (PodHostsContent), reading the node's file and writing the pod's
// agent/volume's (etchosts.go); the engine picks the paths.

import (
	"fmt"
	"os"
	"path/filepath"

	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/minikubelet/minikubelet/agent/podspec"
	"github.com/minikubelet/minikubelet/agent/volume"
)

// nodeHostsFile is the node's hosts file host-network pods start from; a
// variable so that tests can point it elsewhere.
var nodeHostsFile = podspec.EtcHostsPath

// hostsMount writes the pod's hosts file and returns the mount of it at
// /etc/hosts for container c. It returns nil when the container mounts a
// volume at /etc/hosts itself, or when a pod-network pod has no IP yet
// (the kubelet mounts the file only once the pod has one).
func (a *Agent) hostsMount(pod *v1.Pod, c *v1.Container, podIP string) (*runtimeapi.Mount, error) {
	if podspec.MountsEtcHosts(c) {
		return nil, nil
	}
	var nodeHosts []byte
	if pod.Spec.HostNetwork {
		var err error
		if nodeHosts, err = volume.ReadNodeHosts(nodeHostsFile); err != nil && !os.IsNotExist(err) {
			return nil, fmt.Errorf("read %s: %w", nodeHostsFile, err)
		}
	}
	content := podspec.PodHostsContent(pod, podIP, a.cfg.ClusterDomain, nodeHosts)
	if content == nil {
		return nil, nil
	}
	path := filepath.Join(a.podDir(pod), "etc-hosts")
	if err := volume.WriteFileIfChanged(path, content, 0o644); err != nil {
		return nil, fmt.Errorf("write hosts file: %w", err)
	}
	return &runtimeapi.Mount{ContainerPath: podspec.EtcHostsPath, HostPath: path}, nil
}
