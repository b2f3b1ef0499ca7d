package podspec

// The pod's /etc/hosts content, as the kubelet writes it (kubelet_pods.go
// makeHostsMount). The engine writes the file and mounts it.

import (
	"bytes"
	"fmt"
	"strings"

	v1 "k8s.io/api/core/v1"
)

// Headers of the managed file, the kubelet's, so that tools that recognise
// a Kubernetes-managed /etc/hosts recognise ours.
const (
	managedHostsHeader            = "# Kubernetes-managed hosts file.\n"
	managedHostsHeaderHostNetwork = "# Kubernetes-managed hosts file (host network).\n"
)

// ManagedHostsContent is the hosts file of a pod on the pod network:
// localhost lines, then "<ip>\t<hostname>.<domain>\t<hostname>" (or
// "<ip>\t<hostname>" without a domain) for every pod IP, then the host
// aliases.
func ManagedHostsContent(podIPs []string, hostname, domain string, aliases []v1.HostAlias) []byte {
	var b bytes.Buffer
	b.WriteString(managedHostsHeader)
	b.WriteString("127.0.0.1\tlocalhost\n")
	b.WriteString("::1\tlocalhost ip6-localhost ip6-loopback\n")
	b.WriteString("fe00::0\tip6-localnet\n")
	b.WriteString("fe00::0\tip6-mcastprefix\n")
	b.WriteString("fe00::1\tip6-allnodes\n")
	b.WriteString("fe00::2\tip6-allrouters\n")
	names := hostname
	if domain != "" {
		names = hostname + "." + domain + "\t" + hostname
	}
	for _, ip := range podIPs {
		fmt.Fprintf(&b, "%s\t%s\n", ip, names)
	}
	writeHostAliases(&b, aliases)
	return b.Bytes()
}

// HostNetworkHostsContent is the hosts file of a host-network pod: the
// node's file, then the host aliases.
func HostNetworkHostsContent(nodeHosts []byte, aliases []v1.HostAlias) []byte {
	var b bytes.Buffer
	b.WriteString(managedHostsHeaderHostNetwork)
	b.Write(nodeHosts)
	writeHostAliases(&b, aliases)
	return b.Bytes()
}

// writeHostAliases appends a blank line, a comment and one line per alias
// entry: the IP and all its hostnames, tab separated.
func writeHostAliases(b *bytes.Buffer, aliases []v1.HostAlias) {
	if len(aliases) == 0 {
		return
	}
	b.WriteString("\n# Entries added by HostAliases.\n")
	for _, ha := range aliases {
		fmt.Fprintf(b, "%s\t%s\n", ha.IP, strings.Join(ha.Hostnames, "\t"))
	}
}
