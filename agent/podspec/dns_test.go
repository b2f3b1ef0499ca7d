package podspec

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/utils/ptr"
)

const testHostResolv = "nameserver 10.0.0.2\nsearch corp.example. example .\noptions ndots:2 edns0\n"

func TestPodDNSConfig(t *testing.T) {
	for _, tc := range []struct {
		name        string
		policy      v1.DNSPolicy
		hostNetwork bool
		dnsConfig   *v1.PodDNSConfig
		want        *runtimeapi.DNSConfig
		wantWarn    []string
	}{{
		name:   "Default is the node's resolver",
		policy: v1.DNSDefault,
		want:   &runtimeapi.DNSConfig{Servers: []string{"10.0.0.2"}, Searches: []string{"corp.example", "example"}, Options: []string{"ndots:2", "edns0"}},
	}, {
		name:     "ClusterFirst falls back with a warning",
		policy:   v1.DNSClusterFirst,
		want:     &runtimeapi.DNSConfig{Servers: []string{"10.0.0.2"}, Searches: []string{"corp.example", "example"}, Options: []string{"ndots:2", "edns0"}},
		wantWarn: []string{"MissingClusterDNS"},
	}, {
		name:        "ClusterFirst on the host network is Default",
		policy:      v1.DNSClusterFirst,
		hostNetwork: true,
	}, {
		name:        "ClusterFirstWithHostNet on the host network falls back with a warning",
		policy:      v1.DNSClusterFirstWithHostNet,
		hostNetwork: true,
		wantWarn:    []string{"MissingClusterDNS"},
	}, {
		name:      "None is the pod's dnsConfig only",
		policy:    v1.DNSNone,
		dnsConfig: &v1.PodDNSConfig{Nameservers: []string{"1.2.3.4"}, Searches: []string{"ns1.svc.cluster-domain.example"}, Options: []v1.PodDNSConfigOption{{Name: "ndots", Value: ptr.To("2")}, {Name: "edns0"}}},
		want:      &runtimeapi.DNSConfig{Servers: []string{"1.2.3.4"}, Searches: []string{"ns1.svc.cluster-domain.example"}, Options: []string{"ndots:2", "edns0"}},
	}, {
		name:      "dnsConfig is merged: appended, deduplicated, options by name",
		policy:    v1.DNSDefault,
		dnsConfig: &v1.PodDNSConfig{Nameservers: []string{"10.0.0.2", "10.0.0.9"}, Searches: []string{"example", "more.example"}, Options: []v1.PodDNSConfigOption{{Name: "ndots", Value: ptr.To("5")}, {Name: "rotate"}}},
		want:      &runtimeapi.DNSConfig{Servers: []string{"10.0.0.2", "10.0.0.9"}, Searches: []string{"corp.example", "example", "more.example"}, Options: []string{"ndots:5", "edns0", "rotate"}},
	}, {
		name:        "dnsConfig on the host network is merged too",
		policy:      v1.DNSClusterFirst,
		hostNetwork: true,
		dnsConfig:   &v1.PodDNSConfig{Nameservers: []string{"10.0.0.9"}},
		want:        &runtimeapi.DNSConfig{Servers: []string{"10.0.0.2", "10.0.0.9"}, Searches: []string{"corp.example", "example"}, Options: []string{"ndots:2", "edns0"}},
	}, {
		name:      "more than 3 nameservers are cut",
		policy:    v1.DNSDefault,
		dnsConfig: &v1.PodDNSConfig{Nameservers: []string{"10.0.0.3", "10.0.0.4", "10.0.0.5"}},
		want:      &runtimeapi.DNSConfig{Servers: []string{"10.0.0.2", "10.0.0.3", "10.0.0.4"}, Searches: []string{"corp.example", "example"}, Options: []string{"ndots:2", "edns0"}},
		wantWarn:  []string{"DNSConfigForming"},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			pod := &v1.Pod{Spec: v1.PodSpec{DNSPolicy: tc.policy, HostNetwork: tc.hostNetwork, DNSConfig: tc.dnsConfig}}
			got, warns := PodDNSConfig(pod, []byte(testHostResolv), ClusterDNS{Domain: "cluster.local"})
			assert.Equal(t, tc.want, got)
			var reasons []string
			for _, w := range warns {
				reasons = append(reasons, w.Reason)
			}
			assert.Equal(t, tc.wantWarn, reasons)
		})
	}
}

// TestPodDNSConfig_ClusterDNS covers the kubelet's cases with a cluster
// DNS (pkg/kubelet/network/dns TestGetPodDNS, TestGetPodDNSCustom).
func TestPodDNSConfig_ClusterDNS(t *testing.T) {
	cluster := ClusterDNS{Servers: []string{"10.96.0.10"}, Domain: "cluster.local"}
	clusterSearch := []string{"shop.svc.cluster.local", "svc.cluster.local", "cluster.local"}
	hostCfg := &runtimeapi.DNSConfig{Servers: []string{"10.0.0.2"}, Searches: []string{"corp.example", "example"}, Options: []string{"ndots:2", "edns0"}}
	for _, tc := range []struct {
		name        string
		policy      v1.DNSPolicy
		hostNetwork bool
		dnsConfig   *v1.PodDNSConfig
		cluster     ClusterDNS
		hostResolv  string
		want        *runtimeapi.DNSConfig
	}{{
		name:   "ClusterFirst: cluster servers, cluster then host searches, ndots:5",
		policy: v1.DNSClusterFirst,
		want:   &runtimeapi.DNSConfig{Servers: []string{"10.96.0.10"}, Searches: append(clusterSearch, "corp.example", "example"), Options: []string{"ndots:5"}},
	}, {
		name:        "ClusterFirst on the host network is the node's resolver",
		policy:      v1.DNSClusterFirst,
		hostNetwork: true,
	}, {
		name:        "ClusterFirstWithHostNet on the host network is cluster DNS",
		policy:      v1.DNSClusterFirstWithHostNet,
		hostNetwork: true,
		want:        &runtimeapi.DNSConfig{Servers: []string{"10.96.0.10"}, Searches: append(clusterSearch, "corp.example", "example"), Options: []string{"ndots:5"}},
	}, {
		name:   "ClusterFirstWithHostNet off the host network is cluster DNS",
		policy: v1.DNSClusterFirstWithHostNet,
		want:   &runtimeapi.DNSConfig{Servers: []string{"10.96.0.10"}, Searches: append(clusterSearch, "corp.example", "example"), Options: []string{"ndots:5"}},
	}, {
		name:   "Default stays the node's resolver",
		policy: v1.DNSDefault,
		want:   hostCfg,
	}, {
		name:      "None ignores the cluster",
		policy:    v1.DNSNone,
		dnsConfig: &v1.PodDNSConfig{Nameservers: []string{"1.2.3.4"}},
		want:      &runtimeapi.DNSConfig{Servers: []string{"1.2.3.4"}},
	}, {
		name:       "host searches equal to the cluster's are not repeated",
		policy:     v1.DNSClusterFirst,
		hostResolv: "nameserver 10.0.0.2\nsearch cluster.local. svc.cluster.local corp.example\n",
		want:       &runtimeapi.DNSConfig{Servers: []string{"10.96.0.10"}, Searches: append(clusterSearch, "corp.example"), Options: []string{"ndots:5"}},
	}, {
		name:    "several cluster nameservers, no cluster domain: the host's searches",
		policy:  v1.DNSClusterFirst,
		cluster: ClusterDNS{Servers: []string{"10.96.0.10", "10.96.0.11"}},
		want:    &runtimeapi.DNSConfig{Servers: []string{"10.96.0.10", "10.96.0.11"}, Searches: []string{"corp.example", "example"}, Options: []string{"ndots:5"}},
	}, {
		name:      "dnsConfig merges into the cluster configuration",
		policy:    v1.DNSClusterFirst,
		dnsConfig: &v1.PodDNSConfig{Nameservers: []string{"10.96.0.10", "192.0.2.53"}, Searches: []string{"my.dns.search.suffix"}, Options: []v1.PodDNSConfigOption{{Name: "ndots", Value: ptr.To("2")}, {Name: "edns0"}}},
		want:      &runtimeapi.DNSConfig{Servers: []string{"10.96.0.10", "192.0.2.53"}, Searches: append(clusterSearch, "corp.example", "example", "my.dns.search.suffix"), Options: []string{"ndots:2", "edns0"}},
	}, {
		name:      "the nameserver limit applies to cluster servers plus the pod's",
		policy:    v1.DNSClusterFirst,
		cluster:   ClusterDNS{Servers: []string{"10.96.0.10", "10.96.0.11"}, Domain: "cluster.local"},
		dnsConfig: &v1.PodDNSConfig{Nameservers: []string{"192.0.2.1", "192.0.2.2"}},
		want:      &runtimeapi.DNSConfig{Servers: []string{"10.96.0.10", "10.96.0.11", "192.0.2.1"}, Searches: append(clusterSearch, "corp.example", "example"), Options: []string{"ndots:5"}},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			pod := &v1.Pod{Spec: v1.PodSpec{DNSPolicy: tc.policy, HostNetwork: tc.hostNetwork, DNSConfig: tc.dnsConfig}}
			pod.Namespace = "shop"
			c := cluster
			if tc.cluster.Servers != nil {
				c = tc.cluster
			}
			resolv := testHostResolv
			if tc.hostResolv != "" {
				resolv = tc.hostResolv
			}
			got, warns := PodDNSConfig(pod, []byte(resolv), c)
			assert.Equal(t, tc.want, got)
			for _, w := range warns {
				assert.NotEqual(t, "MissingClusterDNS", w.Reason, "a node with cluster DNS never warns MissingClusterDNS")
			}
		})
	}
}

func TestFitDNSLimits_Searches(t *testing.T) {
	var many []string
	for i := range 40 {
		many = append(many, fmt.Sprintf("d%d.example", i))
	}
	long := strings.Repeat("a", 254)
	var wide []string
	for i := range 30 {
		wide = append(wide, fmt.Sprintf("%02d%s", i, strings.Repeat("b", 98))) // 100 chars each
	}
	for _, tc := range []struct {
		name     string
		searches []string
		want     []string
		warn     bool
	}{
		{name: "within limits", searches: []string{"a.example", "b.example"}, want: []string{"a.example", "b.example"}},
		{name: "32 at most", searches: many, want: many[:32], warn: true},
		{name: "over 253 characters dropped", searches: []string{"a.example", long, "b.example"}, want: []string{"a.example", "b.example"}, warn: true},
		{name: "2048 characters in all", searches: wide, want: wide[:20], warn: true}, // 20*100+19 spaces
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := &runtimeapi.DNSConfig{Searches: append([]string(nil), tc.searches...)}
			warns := fitDNSLimits(cfg)
			assert.Equal(t, tc.want, cfg.Searches)
			if tc.warn {
				require.Len(t, warns, 1)
				assert.Equal(t, "DNSConfigForming", warns[0].Reason)
				assert.Contains(t, warns[0].Message, "the applied search line is: "+strings.Join(tc.want, " "))
			} else {
				assert.Empty(t, warns)
			}
		})
	}
}

func TestSandboxHostname(t *testing.T) {
	for _, tc := range []struct {
		name, hostname, subdomain string
		fqdn                      bool
		want, wantErr             string
	}{
		{name: "pod name", want: "web"},
		{name: "spec.hostname", hostname: "front", want: "front"},
		{name: "subdomain without FQDN", hostname: "front", subdomain: "sub", want: "front"},
		{name: "FQDN", hostname: "front", subdomain: "sub", fqdn: true, want: "front.sub.shop.svc.cluster.local"},
		{name: "FQDN needs a subdomain", hostname: "front", fqdn: true, want: "front"},
		{name: "FQDN too long", hostname: strings.Repeat("h", 40), subdomain: "sub", fqdn: true,
			wantErr: "FQDN " + strings.Repeat("h", 40) + ".sub.shop.svc.cluster.local is too long (64 characters is the max, 67 characters requested)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pod := &v1.Pod{Spec: v1.PodSpec{Hostname: tc.hostname, Subdomain: tc.subdomain, SetHostnameAsFQDN: ptr.To(tc.fqdn)}}
			pod.Name, pod.Namespace = "web", "shop"
			got, err := SandboxHostname(pod, "cluster.local")
			if tc.wantErr != "" {
				assert.ErrorContains(t, err, tc.wantErr)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
		})
	}
}

func TestSandboxConfig_DNSNone(t *testing.T) {
	pod := testPod(t, `
apiVersion: v1
kind: Pod
metadata: {name: web, namespace: shop}
spec:
  hostname: front
  subdomain: sub
  setHostnameAsFQDN: true
  dnsPolicy: None
  dnsConfig:
    nameservers: [192.0.2.1]
    searches: [ns1.svc.cluster-domain.example, my.dns.search.suffix]
    options:
    - {name: ndots, value: "2"}
    - {name: edns0}
  containers:
  - {name: web, image: reg/web:1}
`)
	cfg, _, err := SandboxConfig(pod, 0, testInputs(testHostResolv))
	require.NoError(t, err)
	assert.Equal(t, "front.sub.shop.svc.cluster.local", cfg.Hostname)
	assert.Equal(t, &runtimeapi.DNSConfig{Servers: []string{"192.0.2.1"}, Searches: []string{"ns1.svc.cluster-domain.example", "my.dns.search.suffix"}, Options: []string{"ndots:2", "edns0"}}, cfg.DnsConfig)
}
