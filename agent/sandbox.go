package agent

import (
	"os"

	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/minikubelet/minikubelet/agent/podspec"
)

// podLogDir is <podLogsDir>/<namespace>_<name>_<uid> (podspec.LogDir).
func podLogDir(root string, pod *v1.Pod) string { return podspec.LogDir(root, pod) }

// generatePodSandboxConfig converts a pod into the CRI sandbox config for the
// given attempt (podspec.SandboxConfig).
func (a *Agent) generatePodSandboxConfig(pod *v1.Pod, attempt uint32) (*runtimeapi.PodSandboxConfig, error) {
	in := a.sandboxInputs()
	var err error
	if in.UserNamespace, err = a.podUserNamespace(pod); err != nil { // userns.go
		return nil, err
	}
	cfg, _, err := podspec.SandboxConfig(pod, attempt, in)
	return cfg, err
}

// sandboxInputs are the engine's part of every sandbox config.
func (a *Agent) sandboxInputs() podspec.SandboxInputs {
	return podspec.SandboxInputs{
		PodLogDir:  a.cfg.PodLogDir,
		AgentID:    a.cfg.AgentID,
		DNS:        a.clusterDNS(),
		ResolvConf: a.readResolvConf,
	}
}

// mkdirLogDir creates the pod log directory (0755, before RunPodSandbox,
// as the kubelet does).
func mkdirLogDir(dir string) error {
	return os.MkdirAll(dir, 0o755)
}
