package agent

// Pod DNS: the pod's resolver configuration is agent/podspec's
// (PodDNSConfig); the engine reads the node's resolv.conf for it.

import (
	"fmt"
	"os"

	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/minikubelet/minikubelet/agent/podspec"
)

// clusterDNS is the node's cluster DNS: --cluster-dns and --cluster-domain.
func (a *Agent) clusterDNS() podspec.ClusterDNS {
	return podspec.ClusterDNS{Servers: a.cfg.ClusterDNS, Domain: a.cfg.ClusterDomain}
}

// readResolvConf reads the node's resolv.conf; a missing file counts as
// empty.
func (a *Agent) readResolvConf() ([]byte, error) {
	resolv, err := os.ReadFile(a.cfg.ResolvConf)
	if err != nil && !os.IsNotExist(err) {
		return nil, fmt.Errorf("read resolver config %s: %w", a.cfg.ResolvConf, err)
	}
	return resolv, nil
}

// podDNS reads the node's resolv.conf and returns the pod's resolver
// configuration and warnings (podspec.PodDNS).
func (a *Agent) podDNS(pod *v1.Pod) (*runtimeapi.DNSConfig, []podspec.DNSWarning, error) {
	return podspec.PodDNS(pod, a.sandboxInputs()) // sandbox.go
}
