package podspec

// Pod DNS: which resolver configuration a pod's sandbox gets, and how a
// pod's hostname and domain are formed, as the kubelet's GetPodDNS
// (pkg/kubelet/network/dns). With --cluster-dns the cluster policies get
// the cluster's nameservers, the search list <ns>.svc.<domain>
// svc.<domain> <domain> followed by the node's own search domains, and
// options ndots:5; without it they fall back to the node's resolver, as
// the kubelet does, with a MissingClusterDNS warning.
//
//	dnsPolicy                 hostNetwork  resolver (--cluster-dns set)  without --cluster-dns
//	Default                   any          node                          node
//	ClusterFirst              false        cluster                       node, MissingClusterDNS
//	ClusterFirst              true         node                          node
//	ClusterFirstWithHostNet   any          cluster                       node, MissingClusterDNS
//	None                      any          spec.dnsConfig only           spec.dnsConfig only
//
// spec.dnsConfig is then merged into the result (appended, duplicates
// dropped, options overridden by name) and the resolver limits applied.

import (
	"bufio"
	"bytes"
	"fmt"
	"slices"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/minikubelet/minikubelet/agent/manifest"
)

// Resolver limits of the kubelet; the API's (glibc's resolv.conf limits)
// are manifest.MaxDNSNameservers and its neighbours.
const (
	// maxFQDNLength is the kernel's nodename field (64 chars + NUL).
	maxFQDNLength = 64
)

// DNSWarning is a Warning event the pod gets when its sandbox is created:
// its reason and message.
type DNSWarning struct {
	Reason, Message string
}

// ClusterDNS is the node's cluster DNS: --cluster-dns and
// --cluster-domain (the kubelet's clusterDNS and clusterDomain).
type ClusterDNS struct {
	Servers []string // cluster nameservers; none: the node has no cluster DNS
	Domain  string   // the cluster domain, e.g. cluster.local
}

// defaultDNSOptions are the options of a pod on cluster DNS (the kubelet's
// defaultDNSOptions).
var defaultDNSOptions = []string{"ndots:5"}

// usesClusterDNS reports whether the pod's policy asks for cluster DNS:
// ClusterFirst off the host network, and ClusterFirstWithHostNet always.
func usesClusterDNS(pod *v1.Pod) bool {
	switch pod.Spec.DNSPolicy {
	case v1.DNSClusterFirstWithHostNet:
		return true
	case v1.DNSClusterFirst:
		return !pod.Spec.HostNetwork
	}
	return false
}

// PodDNSConfig computes the pod's resolver configuration from the node's
// resolv.conf content and the cluster DNS, and the warnings to report. nil
// means "the runtime copies the node's file": a pod on the node's resolver
// on the host network without spec.dnsConfig gets exactly the node's file.
func PodDNSConfig(pod *v1.Pod, hostResolv []byte, cluster ClusterDNS) (*runtimeapi.DNSConfig, []DNSWarning) {
	var warns []DNSWarning
	var cfg *runtimeapi.DNSConfig
	onCluster := usesClusterDNS(pod) && len(cluster.Servers) > 0
	if usesClusterDNS(pod) && !onCluster {
		warns = append(warns, missingClusterDNS(pod))
	}
	switch {
	case pod.Spec.DNSPolicy == v1.DNSNone:
		cfg = &runtimeapi.DNSConfig{}
	case onCluster:
		host := parseResolvConf(hostResolv)
		cfg = &runtimeapi.DNSConfig{
			Servers:  slices.Clone(cluster.Servers),
			Searches: clusterSearches(pod.Namespace, cluster.Domain, host.Searches),
			Options:  slices.Clone(defaultDNSOptions),
		}
	case pod.Spec.HostNetwork && pod.Spec.DNSConfig == nil:
		return nil, warns
	default:
		cfg = parseResolvConf(hostResolv)
	}
	if pc := pod.Spec.DNSConfig; pc != nil {
		cfg.Servers = appendUnique(cfg.Servers, pc.Nameservers...)
		cfg.Searches = appendUnique(cfg.Searches, pc.Searches...)
		cfg.Options = mergeDNSOptions(cfg.Options, pc.Options)
	}
	return cfg, append(warns, fitDNSLimits(cfg)...)
}

// clusterSearches is the search list of a pod on cluster DNS: its
// namespace's service domain, the service domain and the cluster domain,
// then the node's own search domains without those three (the kubelet's
// generateSearchesForDNSClusterFirst). Without a cluster domain, the
// node's list alone.
func clusterSearches(namespace, domain string, host []string) []string {
	if domain == "" {
		return slices.Clone(host)
	}
	own := []string{namespace + ".svc." + domain, "svc." + domain, domain}
	out := slices.Clone(own)
	for _, h := range host {
		if !slices.Contains(own, h) {
			out = append(out, h)
		}
	}
	return out
}

// missingClusterDNS is the warning for a cluster DNS policy on a node
// without --cluster-dns.
func missingClusterDNS(pod *v1.Pod) DNSWarning {
	return DNSWarning{"MissingClusterDNS", fmt.Sprintf("this node has no cluster DNS (--cluster-dns), so the %q DNS policy falls back to %q (the node's resolv.conf)", pod.Spec.DNSPolicy, v1.DNSDefault)}
}

// parseResolvConf reads nameserver, search (and domain) and options lines of
// a resolv.conf. Search domains lose a trailing dot and "." is dropped, so
// the same domain written both ways counts once against the limits.
func parseResolvConf(content []byte) *runtimeapi.DNSConfig {
	cfg := &runtimeapi.DNSConfig{}
	sc := bufio.NewScanner(bytes.NewReader(content))
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
			// The last search or domain line wins, as in glibc.
			cfg.Searches = nil
			for _, s := range f[1:] {
				if s != "." {
					cfg.Searches = append(cfg.Searches, strings.TrimSuffix(s, "."))
				}
			}
		case "options":
			cfg.Options = mergeOptionStrings(cfg.Options, f[1:])
		}
	}
	return cfg
}

// appendUnique appends the values not already in list, keeping order.
func appendUnique(list []string, values ...string) []string {
	for _, v := range values {
		if !slices.Contains(list, v) {
			list = append(list, v)
		}
	}
	return list
}

// mergeOptionStrings merges "name[:value]" options: a later option replaces
// an earlier one of the same name in place, new names are appended.
func mergeOptionStrings(list, more []string) []string {
	for _, o := range more {
		name, _, _ := strings.Cut(o, ":")
		i := slices.IndexFunc(list, func(e string) bool {
			n, _, _ := strings.Cut(e, ":")
			return n == name
		})
		if i >= 0 {
			list[i] = o
		} else {
			list = append(list, o)
		}
	}
	return list
}

// mergeDNSOptions merges the pod's dnsConfig options over existing ones.
func mergeDNSOptions(existing []string, opts []v1.PodDNSConfigOption) []string {
	more := make([]string, 0, len(opts))
	for _, o := range opts {
		s := o.Name
		if o.Value != nil && *o.Value != "" {
			s += ":" + *o.Value
		}
		more = append(more, s)
	}
	return mergeOptionStrings(existing, more)
}

// fitDNSLimits trims the configuration to the resolver's limits as the
// kubelet does: at most 3 nameservers; at most 32 search domains, none over
// 253 characters, 2048 characters in all. Each trim is a DNSConfigForming
// warning naming what is applied.
func fitDNSLimits(cfg *runtimeapi.DNSConfig) []DNSWarning {
	var warns []DNSWarning
	if len(cfg.Servers) > manifest.MaxDNSNameservers {
		cfg.Servers = cfg.Servers[:manifest.MaxDNSNameservers]
		warns = append(warns, DNSWarning{"DNSConfigForming", "Nameserver limits were exceeded, some nameservers have been omitted, the applied nameserver line is: " + strings.Join(cfg.Servers, " ")})
	}
	trimmed := false
	if len(cfg.Searches) > manifest.MaxDNSSearchPaths {
		cfg.Searches, trimmed = cfg.Searches[:manifest.MaxDNSSearchPaths], true
	}
	kept := cfg.Searches[:0]
	for _, s := range cfg.Searches {
		if len(s) > validation.DNS1123SubdomainMaxLength {
			trimmed = true
			continue
		}
		kept = append(kept, s)
	}
	cfg.Searches = kept
	for len(strings.Join(cfg.Searches, " ")) > manifest.MaxDNSSearchListChars {
		cfg.Searches, trimmed = cfg.Searches[:len(cfg.Searches)-1], true
	}
	if trimmed {
		warns = append(warns, DNSWarning{"DNSConfigForming", "Search Line limits were exceeded, some search paths have been omitted, the applied search line is: " + strings.Join(cfg.Searches, " ")})
	}
	return warns
}

// PodHostnameAndDomain returns the pod's hostname (PodHostname) and its
// domain, <subdomain>.<namespace>.svc.<clusterDomain> when spec.subdomain
// is set, else "" (the kubelet's GeneratePodHostNameAndDomain). A
// hostnameOverride has no domain: it names the pod only, not its DNS record.
func PodHostnameAndDomain(pod *v1.Pod, clusterDomain string) (string, string) {
	domain := ""
	if o := pod.Spec.HostnameOverride; o != nil && *o != "" {
		return PodHostname(pod), ""
	}
	if pod.Spec.Subdomain != "" {
		domain = fmt.Sprintf("%s.%s.svc.%s", pod.Spec.Subdomain, pod.Namespace, clusterDomain)
	}
	return PodHostname(pod), domain
}

// SandboxHostname is the kernel hostname of the pod: its hostname, or with
// setHostnameAsFQDN and a domain, hostname.domain, which must fit the
// kernel's 64 characters (the kubelet's GetNodenameForKernel).
func SandboxHostname(pod *v1.Pod, clusterDomain string) (string, error) {
	host, domain := PodHostnameAndDomain(pod, clusterDomain)
	if domain == "" || pod.Spec.SetHostnameAsFQDN == nil || !*pod.Spec.SetHostnameAsFQDN {
		return host, nil
	}
	fqdn := host + "." + domain
	if len(fqdn) > maxFQDNLength {
		return "", fmt.Errorf("failed to construct FQDN from pod hostname and cluster domain, FQDN %s is too long (%d characters is the max, %d characters requested)", fqdn, maxFQDNLength, len(fqdn))
	}
	return fqdn, nil
}
