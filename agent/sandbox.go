package agent

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// podLogDir is <podLogsDir>/<namespace>_<name>_<uid>, the kubelet's layout
// (BuildPodLogsDirectory). Names are validated DNS-1123 values, so the path
// cannot leave podLogsDir.
func podLogDir(root string, pod *v1.Pod) string {
	return filepath.Join(root, fmt.Sprintf("%s_%s_%s", pod.Namespace, pod.Name, pod.UID))
}

// namespaceOptions maps hostNetwork/hostPID/hostIPC to CRI namespace modes.
// PID is per container unless the node's is asked for, or the pod's
// (shareProcessNamespace), exactly as the kubelet sets it; the CRI's zero
// value would mean POD, so it must be explicit.
func namespaceOptions(pod *v1.Pod) *runtimeapi.NamespaceOption {
	ns := &runtimeapi.NamespaceOption{
		Network: runtimeapi.NamespaceMode_POD,
		Pid:     runtimeapi.NamespaceMode_CONTAINER,
		Ipc:     runtimeapi.NamespaceMode_POD,
	}
	if pod.Spec.HostNetwork {
		ns.Network = runtimeapi.NamespaceMode_NODE
	}
	if pod.Spec.HostPID {
		ns.Pid = runtimeapi.NamespaceMode_NODE
	} else if pod.Spec.ShareProcessNamespace != nil && *pod.Spec.ShareProcessNamespace {
		ns.Pid = runtimeapi.NamespaceMode_POD
	}
	if pod.Spec.HostIPC {
		ns.Ipc = runtimeapi.NamespaceMode_NODE
	}
	return ns
}

// podHostname is spec.hostnameOverride, else spec.hostname, else the pod
// name, cut to 63 characters as the kubelet does
// (GeneratePodHostNameAndDomain).
func podHostname(pod *v1.Pod) string {
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

// generatePodSandboxConfig converts a pod into the CRI sandbox config for the
// given attempt. Hostname and DNS come from dns.go.
func (a *Agent) generatePodSandboxConfig(pod *v1.Pod, attempt uint32) (*runtimeapi.PodSandboxConfig, error) {
	cfg := &runtimeapi.PodSandboxConfig{
		Metadata: &runtimeapi.PodSandboxMetadata{
			Name:      pod.Name,
			Namespace: pod.Namespace,
			Uid:       string(pod.UID),
			Attempt:   attempt,
		},
		LogDirectory: podLogDir(a.cfg.PodLogDir, pod),
		PortMappings: portMappings(pod),
		Labels:       sandboxLabels(pod, a.cfg.AgentID),
		Annotations:  sandboxAnnotations(pod),
		Linux: &runtimeapi.LinuxPodSandboxConfig{
			SecurityContext: sandboxSecurityContext(pod), // security.go
			Sysctls:         podSysctls(pod),
		},
	}
	if !pod.Spec.HostNetwork {
		host, err := sandboxHostname(pod, a.cfg.ClusterDomain)
		if err != nil {
			return nil, err
		}
		cfg.Hostname = host
	}
	dns, _, err := a.podDNS(pod)
	if err != nil {
		return nil, err
	}
	cfg.DnsConfig = dns
	return cfg, nil
}

// mkdirLogDir creates the pod log directory (0755, before RunPodSandbox,
// as the kubelet does).
func mkdirLogDir(dir string) error {
	return os.MkdirAll(dir, 0o755)
}
