package agent

// The sandbox config and the pod's DNS are agent/podspec's (SandboxConfig,
// PodDNS, LogDir); the engine gathers their inputs: its config, the node's
// resolv.conf, the pod's user namespace (agent/userns).

import (
	"fmt"
	"os"

	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/minikubelet/minikubelet/agent/podspec"
)

// generatePodSandboxConfig converts a pod into the CRI sandbox config for the
// given attempt (podspec.SandboxConfig).
func (a *Agent) generatePodSandboxConfig(pod *v1.Pod, attempt uint32) (*runtimeapi.PodSandboxConfig, error) {
	in := a.sandboxInputs()
	var err error
	if in.UserNamespace, err = a.userNSManager().PodNamespace(pod); err != nil {
		return nil, err
	}
	cfg, _, err := podspec.SandboxConfig(pod, attempt, in)
	return cfg, err
}

// podDNS is the pod's resolver configuration and warnings (podspec.PodDNS).
func (a *Agent) podDNS(pod *v1.Pod) (*runtimeapi.DNSConfig, []podspec.DNSWarning, error) {
	return podspec.PodDNS(pod, a.sandboxInputs())
}

// sandboxInputs are the engine's part of every sandbox config: the cluster
// DNS is --cluster-dns and --cluster-domain; a missing resolv.conf counts
// as empty.
func (a *Agent) sandboxInputs() podspec.SandboxInputs {
	return podspec.SandboxInputs{
		PodLogDir: a.cfg.PodLogDir,
		AgentID:   a.cfg.AgentID,
		DNS:       podspec.ClusterDNS{Servers: a.cfg.ClusterDNS, Domain: a.cfg.ClusterDomain},
		ResolvConf: func() ([]byte, error) {
			resolv, err := os.ReadFile(a.cfg.ResolvConf)
			if err != nil && !os.IsNotExist(err) {
				return nil, fmt.Errorf("read resolver config %s: %w", a.cfg.ResolvConf, err)
			}
			return resolv, nil
		},
	}
}
