package podspec

import (
	"fmt"
	"path/filepath"
	"strings"

	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// SandboxInputs are what the sandbox config needs beside the pod: the
// engine's configuration and the node's resolver, read only when asked.
type SandboxInputs struct {
	// PodLogDir is the root of the pods' log directories (LogDir).
	PodLogDir string
	// AgentID is the LabelAgent value of the agent creating the sandbox.
	AgentID string
	// DNS is the node's cluster DNS (--cluster-dns, --cluster-domain).
	DNS ClusterDNS
	// ResolvConf returns the node's resolv.conf content (empty when it
	// does not exist); called once, after the hostname was formed.
	ResolvConf func() ([]byte, error)
	// UserNamespace is the pod's user namespace (spec.hostUsers: false:
	// mode POD with the pod's ID range, agent/userns); nil for the node's.
	UserNamespace *runtimeapi.UserNamespace
}

// LogDir is <podLogsDir>/<namespace>_<name>_<uid>, the kubelet's layout
// (BuildPodLogsDirectory). Names are validated DNS-1123 values, so the path
// cannot leave podLogsDir.
func LogDir(root string, pod *v1.Pod) string {
	return filepath.Join(root, fmt.Sprintf("%s_%s_%s", pod.Namespace, pod.Name, pod.UID))
}

// PodHostname is spec.hostnameOverride, else spec.hostname, else the pod
// name, cut to 63 characters as the kubelet does
// (GeneratePodHostNameAndDomain).
func PodHostname(pod *v1.Pod) string {
	h := pod.Spec.Hostname
	if h == "" {
		h = pod.Name
	}
	if o := pod.Spec.HostnameOverride; o != nil && *o != "" {
		h = *o
	}
	if len(h) > 63 {
		h = strings.TrimRight(h[:63], "-.")
	}
	return h
}

// portMappings turns every container port with a hostPort into a CRI port
// mapping (containerd hands them to the portmap plugin).
func portMappings(pod *v1.Pod) []*runtimeapi.PortMapping {
	var pm []*runtimeapi.PortMapping
	for _, c := range pod.Spec.Containers {
		for _, p := range c.Ports {
			if p.HostPort <= 0 {
				continue
			}
			pm = append(pm, &runtimeapi.PortMapping{
				Protocol:      toCRIProtocol(p.Protocol),
				ContainerPort: p.ContainerPort,
				HostPort:      p.HostPort,
				HostIp:        p.HostIP,
			})
		}
	}
	return pm
}

func toCRIProtocol(p v1.Protocol) runtimeapi.Protocol {
	switch p {
	case v1.ProtocolUDP:
		return runtimeapi.Protocol_UDP
	case v1.ProtocolSCTP:
		return runtimeapi.Protocol_SCTP
	default:
		return runtimeapi.Protocol_TCP
	}
}

// SandboxConfig converts a pod into the CRI sandbox config for the given
// attempt, and returns the DNS warnings to report (PodDNSConfig).
func SandboxConfig(pod *v1.Pod, attempt uint32, in SandboxInputs) (*runtimeapi.PodSandboxConfig, []DNSWarning, error) {
	cfg := &runtimeapi.PodSandboxConfig{
		Metadata: &runtimeapi.PodSandboxMetadata{
			Name:      pod.Name,
			Namespace: pod.Namespace,
			Uid:       string(pod.UID),
			Attempt:   attempt,
		},
		LogDirectory: LogDir(in.PodLogDir, pod),
		PortMappings: portMappings(pod),
		Labels:       SandboxLabels(pod, in.AgentID),
		Annotations:  SandboxAnnotations(pod),
		Linux: &runtimeapi.LinuxPodSandboxConfig{
			SecurityContext: SandboxSecurityContext(pod), // security.go
			Sysctls:         PodSysctls(pod),
		},
	}
	cfg.Linux.SecurityContext.NamespaceOptions.UsernsOptions = in.UserNamespace
	if !pod.Spec.HostNetwork {
		host, err := SandboxHostname(pod, in.DNS.Domain)
		if err != nil {
			return nil, nil, err
		}
		cfg.Hostname = host
	}
	resolv, err := in.ResolvConf()
	if err != nil {
		return nil, nil, err
	}
	dns, warns := PodDNSConfig(pod, resolv, in.DNS)
	cfg.DnsConfig = dns
	return cfg, warns, nil
}
