package agent

// The container's environment is agent/podspec's (Env); the engine
// gathers what it reads: the pod's ConfigMaps and Secrets, the Services,
// the node's addresses, the env files of fileKeyRef.

import (
	"net"
	"path/filepath"
	"sync"

	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/minikubelet/minikubelet/agent/podspec"
	"github.com/minikubelet/minikubelet/agent/safepath"
)

// containerEnv is the container's environment as CRI key/values and as a
// map, and the envFrom warnings (podspec.Env), from the pod's ConfigMaps,
// Secrets and Services and the node's facts.
func (a *Agent) containerEnv(pod *v1.Pod, c *v1.Container, podIP string) ([]*runtimeapi.KeyValue, map[string]string, []string, error) {
	// The service links (cluster mode only).
	svcEnv, err := a.serviceEnv(pod)
	if err != nil {
		return nil, nil, nil, err
	}
	return podspec.Env(pod, c, podspec.EnvInputs{
		PodIP:       podIP,
		NodeName:    a.cfg.NodeName,
		HostIPs:     a.hostIPs,
		Allocatable: a.cfg.Node.Allocatable,
		ServiceEnv:  svcEnv,
		ConfigMap:   func(name string) (*v1.ConfigMap, error) { return a.configData().ConfigMap(pod, name) },
		Secret:      func(name string) (*v1.Secret, error) { return a.configData().Secret(pod, name) },
		NotFound:    errConfigNotFound,
		EnvFile: func(volume, rel string) ([]byte, string, error) {
			root := a.volumes().EmptyDirPath(pod, volume)
			data, err := readEnvFile(root, rel)
			return data, filepath.Join(root, rel), err
		},
	})
}

// readEnvFile reads the env file rel of a fileKeyRef beneath root, its
// emptyDir volume's directory. The pod wrote everything beneath root: no
// symlink is followed anywhere in rel, ".." cannot climb out, only a
// regular file is opened (a FIFO or device is refused before it could
// block) and at most podspec.MaxEnvFileBytes are read (a larger file is an
// error, safepath.ErrTooLarge).
func readEnvFile(root, rel string) ([]byte, error) {
	return safepath.ReadFileBeneath(root, rel, podspec.MaxEnvFileBytes)
}

// resourceFieldValue resolves a resourceFieldRef against the node's
// allocatable resources (podspec.ResourceFieldValue).
func (a *Agent) resourceFieldValue(pod *v1.Pod, c *v1.Container, ref *v1.ResourceFieldSelector) (string, error) {
	return podspec.ResourceFieldValue(pod, c, ref, a.cfg.Node.Allocatable)
}

// hostIPs are the node's addresses (Config.HostIPs, else defaultHostIPs).
func (a *Agent) hostIPs() []string {
	if len(a.cfg.HostIPs) > 0 {
		return a.cfg.HostIPs
	}
	return defaultHostIPs()
}

// defaultHostIPs are the node's addresses for status.hostIP(s): the address the
// host would use for its default route, else its first global unicast
// addresses (IPv4 first). Read once: the kubelet reads the node's
// addresses from the Node object, which minikubelet does not have.
var defaultHostIPs = sync.OnceValue(func() []string {
	var out []string
	// A UDP "connection" sends nothing; it only picks a source address.
	if conn, err := net.Dial("udp4", "192.0.2.1:9"); err == nil {
		if ua, ok := conn.LocalAddr().(*net.UDPAddr); ok && !ua.IP.IsLoopback() {
			out = append(out, ua.IP.String())
		}
		_ = conn.Close()
	}
	if len(out) > 0 {
		return out
	}
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return nil
	}
	var v4, v6 []string
	for _, ad := range addrs {
		ipn, ok := ad.(*net.IPNet)
		if !ok || !ipn.IP.IsGlobalUnicast() {
			continue
		}
		if ipn.IP.To4() != nil {
			v4 = append(v4, ipn.IP.String())
		} else {
			v6 = append(v6, ipn.IP.String())
		}
	}
	if len(v4) > 0 {
		out = append(out, v4[0])
	}
	if len(v6) > 0 {
		out = append(out, v6[0])
	}
	return out
})

// envWarnings returns the InvalidEnvironmentVariableNames messages of the
// container's envFrom sources (empty when the environment cannot be built:
// the start fails with that error instead).
func (a *Agent) envWarnings(pod *v1.Pod, c *v1.Container) []string {
	if len(c.EnvFrom) == 0 {
		return nil
	}
	_, _, warnings, err := a.containerEnv(pod, c, "")
	if err != nil {
		return nil
	}
	return warnings
}
