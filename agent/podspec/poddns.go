package podspec

import (
	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// PodDNS reads the node's resolv.conf through in.ResolvConf and returns
// the pod's resolver configuration and the warnings to report
// (PodDNSConfig against in.DNS), as SandboxConfig does: the engine reports
// the warnings before it creates the sandbox.
func PodDNS(pod *v1.Pod, in SandboxInputs) (*runtimeapi.DNSConfig, []DNSWarning, error) {
	resolv, err := in.ResolvConf()
	if err != nil {
		return nil, nil, err
	}
	cfg, warns := PodDNSConfig(pod, resolv, in.DNS)
	return cfg, warns, nil
}
