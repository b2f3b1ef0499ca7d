package podspec

import (
	"testing"

	"github.com/stretchr/testify/assert"
	v1 "k8s.io/api/core/v1"
)

const localhostLines = "# Kubernetes-managed hosts file.\n" +
	"127.0.0.1\tlocalhost\n" +
	"::1\tlocalhost ip6-localhost ip6-loopback\n" +
	"fe00::0\tip6-localnet\n" +
	"fe00::0\tip6-mcastprefix\n" +
	"fe00::1\tip6-allnodes\n" +
	"fe00::2\tip6-allrouters\n"

func TestManagedHostsContent(t *testing.T) {
	aliases := []v1.HostAlias{
		{IP: "127.0.0.1", Hostnames: []string{"foo.local", "bar.local"}},
		{IP: "10.1.2.3", Hostnames: []string{"foo.remote", "bar.remote"}},
	}
	for _, tc := range []struct {
		name, hostname, domain string
		aliases                []v1.HostAlias
		want                   string
	}{{
		name:     "hostname only",
		hostname: "web",
		want:     localhostLines + "10.89.0.5\tweb\n",
	}, {
		name:     "with domain",
		hostname: "front",
		domain:   "sub.shop.svc.cluster.local",
		want:     localhostLines + "10.89.0.5\tfront.sub.shop.svc.cluster.local\tfront\n",
	}, {
		name:     "with host aliases",
		hostname: "hostaliases-pod",
		aliases:  aliases,
		want: localhostLines + "10.89.0.5\thostaliases-pod\n" +
			"\n# Entries added by HostAliases.\n" +
			"127.0.0.1\tfoo.local\tbar.local\n" +
			"10.1.2.3\tfoo.remote\tbar.remote\n",
	}} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, string(ManagedHostsContent([]string{"10.89.0.5"}, tc.hostname, tc.domain, tc.aliases)))
		})
	}
}

func TestHostNetworkHostsContent(t *testing.T) {
	got := HostNetworkHostsContent([]byte("127.0.0.1 localhost\n10.0.0.1 node1\n"), []v1.HostAlias{{IP: "10.1.2.3", Hostnames: []string{"foo"}}})
	assert.Equal(t, "# Kubernetes-managed hosts file (host network).\n127.0.0.1 localhost\n10.0.0.1 node1\n\n# Entries added by HostAliases.\n10.1.2.3\tfoo\n", string(got))
}
