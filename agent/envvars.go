package agent

// The container's environment is agent/podspec's (Env); the engine
// gathers what it reads: the pod's ConfigMaps and Secrets, the Services,
// the node's addresses (node.HostIPs), the env files of fileKeyRef.

import (
	"path/filepath"

	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/minikubelet/minikubelet/agent/node"
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
		HostIPs:     func() []string { return node.HostIPs(a.cfg.HostIPs) },
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
