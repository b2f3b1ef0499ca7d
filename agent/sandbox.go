package agent

import (
	"bufio"
	"bytes"
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
// PID is per container unless the node's is asked for (shareProcessNamespace
// is refused for now), exactly as the kubelet sets it; the CRI's zero value
// would mean POD, so it must be explicit.
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
	}
	if pod.Spec.HostIPC {
		ns.Ipc = runtimeapi.NamespaceMode_NODE
	}
	return ns
}

// podHostname is spec.hostname or the pod name, cut to 63 characters as the
// kubelet does (GeneratePodHostNameAndDomain).
func podHostname(pod *v1.Pod) string {
	h := pod.Spec.Hostname
	if h == "" {
		h = pod.Name
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

// dnsConfig returns the pod's resolver configuration. A lone node has no
// cluster DNS, so ClusterFirst falls back to the host's resolv.conf, as the
// kubelet does when --cluster-dns is empty (it also emits a warning event,
// which the caller does). hostNetwork pods use the host's file directly.
func dnsConfig(resolvConf []byte) *runtimeapi.DNSConfig {
	cfg := &runtimeapi.DNSConfig{}
	sc := bufio.NewScanner(bytes.NewReader(resolvConf))
	for sc.Scan() {
		line := sc.Text()
		if i := strings.IndexAny(line, "#;"); i >= 0 {
			line = line[:i]
		}
		f := strings.Fields(line)
		if len(f) < 2 {
			continue
		}
		switch f[0] {
		case "nameserver":
			cfg.Servers = append(cfg.Servers, f[1])
		case "search", "domain":
			cfg.Searches = f[1:]
		case "options":
			cfg.Options = append(cfg.Options, f[1:]...)
		}
	}
	return cfg
}

// generatePodSandboxConfig converts a pod into the CRI sandbox config for the
// given attempt. resolvConf is the host's resolv.conf content.
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
		Labels:       sandboxLabels(pod),
		Annotations:  sandboxAnnotations(pod),
		Linux: &runtimeapi.LinuxPodSandboxConfig{
			SecurityContext: &runtimeapi.LinuxSandboxSecurityContext{
				NamespaceOptions: namespaceOptions(pod),
			},
		},
	}
	if !pod.Spec.HostNetwork {
		cfg.Hostname = podHostname(pod)
		resolv, err := os.ReadFile(a.cfg.ResolvConf)
		if err != nil && !os.IsNotExist(err) {
			return nil, fmt.Errorf("read resolver config %s: %w", a.cfg.ResolvConf, err)
		}
		cfg.DnsConfig = dnsConfig(resolv)
	}
	return cfg, nil
}

// mkdirLogDir creates the pod log directory (0755, before RunPodSandbox,
// as the kubelet does).
func mkdirLogDir(dir string) error {
	return os.MkdirAll(dir, 0o755)
}
