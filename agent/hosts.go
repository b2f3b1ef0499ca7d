package agent

// The pod's /etc/hosts, managed as the kubelet does (kubelet_pods.go
// makeHostsMount): one file per pod, <podDir>/etc-hosts, bind-mounted at
// /etc/hosts in every container. A pod on the pod network gets localhost
// lines and a line naming its own IP; a host-network pod gets the node's
// file. spec.hostAliases are appended to either.

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"syscall"

	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/minikubelet/minikubelet/agent/podspec"
	"github.com/minikubelet/minikubelet/agent/safepath"
)

// etcHostsPath is where the hosts file is mounted in containers, and the
// node's own hosts file.
const etcHostsPath = "/etc/hosts"

// nodeHostsFile is the node's hosts file host-network pods start from; a
// variable so that tests can point it elsewhere.
var nodeHostsFile = etcHostsPath

// hostsFilePath is <podDir>/etc-hosts.
func (a *Agent) hostsFilePath(pod *v1.Pod) string {
	return filepath.Join(a.podDir(pod), "etc-hosts")
}

// hostsMount writes the pod's hosts file and returns the mount of it at
// /etc/hosts for container c. It returns nil when the container mounts a
// volume at /etc/hosts itself, or when a pod-network pod has no IP yet
// (the kubelet mounts the file only once the pod has one).
func (a *Agent) hostsMount(pod *v1.Pod, c *v1.Container, podIP string) (*runtimeapi.Mount, error) {
	for _, m := range c.VolumeMounts {
		if filepath.Clean(m.MountPath) == etcHostsPath {
			return nil, nil
		}
	}
	var content []byte
	if pod.Spec.HostNetwork {
		node, err := readNodeHosts(nodeHostsFile)
		if err != nil && !os.IsNotExist(err) {
			return nil, fmt.Errorf("read %s: %w", nodeHostsFile, err)
		}
		content = podspec.HostNetworkHostsContent(node, pod.Spec.HostAliases)
	} else {
		if podIP == "" {
			return nil, nil
		}
		host, domain := podspec.PodHostnameAndDomain(pod, a.cfg.ClusterDomain)
		content = podspec.ManagedHostsContent([]string{podIP}, host, domain, pod.Spec.HostAliases)
	}
	path := a.hostsFilePath(pod)
	if err := writeFileIfChanged(path, content, 0o644); err != nil {
		return nil, fmt.Errorf("write hosts file: %w", err)
	}
	return &runtimeapi.Mount{ContainerPath: etcHostsPath, HostPath: path}, nil
}

// maxNodeHostsBytes bounds the node's hosts file a host-network pod gets:
// far above any real one (blocklists of a few MB included).
const maxNodeHostsBytes = 16 << 20

// readNodeHosts reads the node's hosts file: the node's, so a symlink is
// followed (some distributions link /etc/hosts), but a regular file only,
// never blocking, and at most maxNodeHostsBytes.
func readNodeHosts(path string) ([]byte, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, safepath.ErrNotRegular
	}
	return safepath.ReadHead(f, maxNodeHostsBytes)
}

// writeFileIfChanged writes content to path unless the file already holds
// it. Running containers of the pod bind-mount the file, so it is
// rewritten in place (a rename would leave them the old inode); it changes
// only with a new sandbox, whose containers are all new.
//
// The file is the pod's to write: only len(content) bytes of it are read
// (more means it changed), a regular file only, never blocking.
func writeFileIfChanged(path string, content []byte, perm os.FileMode) error {
	if old, err := safepath.ReadFile(path, int64(len(content))); err == nil && bytes.Equal(old, content) {
		return nil
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o750); err != nil {
		return err
	}
	if err := os.WriteFile(path, content, perm); err != nil {
		return err
	}
	return os.Chmod(path, perm) // WriteFile's perm is masked by the umask
}
