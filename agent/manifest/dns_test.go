package manifest

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"
)

func TestValidateDNS(t *testing.T) {
	for _, tc := range []struct {
		name   string
		mutate func(*v1.PodSpec)
		want   []string
	}{{
		name:   "None without dnsConfig",
		mutate: func(s *v1.PodSpec) { s.DNSPolicy = v1.DNSNone },
		want:   []string{"spec.dnsConfig: Required value: must provide `dnsConfig` when `dnsPolicy` is None"},
	}, {
		name: "None without nameservers",
		mutate: func(s *v1.PodSpec) {
			s.DNSPolicy = v1.DNSNone
			s.DNSConfig = &v1.PodDNSConfig{Searches: []string{"a.example"}}
		},
		want: []string{"spec.dnsConfig.nameservers: Required value: must provide at least one DNS nameserver when `dnsPolicy` is None"},
	}, {
		name: "None with dnsConfig",
		mutate: func(s *v1.PodSpec) {
			s.DNSPolicy = v1.DNSNone
			s.DNSConfig = &v1.PodDNSConfig{Nameservers: []string{"1.2.3.4"}, Searches: []string{"a.example."}, Options: []v1.PodDNSConfigOption{{Name: "ndots", Value: ptr.To("1")}}}
		},
	}, {
		name: "limits and values",
		mutate: func(s *v1.PodSpec) {
			s.DNSConfig = &v1.PodDNSConfig{Nameservers: []string{"1.1.1.1", "2.2.2.2", "3.3.3.3", "nope"}, Searches: []string{"Bad_Domain"}, Options: []v1.PodDNSConfigOption{{}}}
		},
		want: []string{
			`spec.dnsConfig.nameservers: Invalid value: ["1.1.1.1","2.2.2.2","3.3.3.3","nope"]: must not have more than 3 nameservers`,
			`spec.dnsConfig.nameservers[3]: Invalid value: "nope": must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)`,
			`spec.dnsConfig.searches[0]: Invalid value: "Bad_Domain": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')`,
			`spec.dnsConfig.options[0].name: Required value: must not be empty`,
		},
	}, {
		name: "hostAliases",
		mutate: func(s *v1.PodSpec) {
			s.HostAliases = []v1.HostAlias{{IP: "10.1.2.3", Hostnames: []string{"foo.local", "bar"}}, {IP: "300.1.1.1", Hostnames: []string{"Bad_Name"}}}
		},
		want: []string{
			`spec.hostAliases[1].ip: Invalid value: "300.1.1.1": must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)`,
			`spec.hostAliases[1].hostnames[0]: Invalid value: "Bad_Name": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')`,
		},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			spec := &v1.PodSpec{DNSPolicy: v1.DNSClusterFirst}
			tc.mutate(spec)
			var got []string
			for _, e := range validateDNS(spec, field.NewPath("spec")) {
				got = append(got, e.Error())
			}
			assert.Equal(t, tc.want, got)
		})
	}
}

// TestHostnameOverride_Validation is the validation half of the agent's
// TestHostnameOverride: the API server's rules for the field.
func TestHostnameOverride_Validation(t *testing.T) {
	bad := &v1.PodSpec{HostnameOverride: ptr.To("Not_Valid"), HostNetwork: true, SetHostnameAsFQDN: ptr.To(true)}
	var got []string
	for _, e := range validateDNS(bad, field.NewPath("spec")) {
		got = append(got, e.Error())
	}
	require.Len(t, got, 3, "%q", got)
	assert.Contains(t, got[0], "spec.hostnameOverride: Invalid value: \"Not_Valid\"")
	assert.Contains(t, got[1], "setHostnameAsFQDN")
	assert.Contains(t, got[2], "hostNetwork")
}
