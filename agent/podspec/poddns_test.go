package podspec

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
)

// PodDNS is PodDNSConfig over the resolv.conf the inputs read; their
// error is returned as is.
func TestPodDNS(t *testing.T) {
	pod := &v1.Pod{Spec: v1.PodSpec{DNSPolicy: v1.DNSClusterFirst}}
	pod.Namespace = "shop"
	resolv := func() ([]byte, error) { return []byte("nameserver 192.0.2.53\nsearch example.org\n"), nil }

	cfg, warns, err := PodDNS(pod, SandboxInputs{DNS: ClusterDNS{Servers: []string{"10.96.0.10"}, Domain: "cluster.local"}, ResolvConf: resolv})
	require.NoError(t, err)
	assert.Empty(t, warns)
	assert.Equal(t, []string{"10.96.0.10"}, cfg.Servers)
	assert.Equal(t, []string{"shop.svc.cluster.local", "svc.cluster.local", "cluster.local", "example.org"}, cfg.Searches)

	cfg, warns, err = PodDNS(pod, SandboxInputs{ResolvConf: resolv})
	require.NoError(t, err)
	assert.Equal(t, []string{"192.0.2.53"}, cfg.Servers, "no cluster DNS: the node's resolver")
	require.Len(t, warns, 1)
	assert.Equal(t, "MissingClusterDNS", warns[0].Reason)

	boom := errors.New("boom")
	_, _, err = PodDNS(pod, SandboxInputs{ResolvConf: func() ([]byte, error) { return nil, boom }})
	assert.ErrorIs(t, err, boom)
}
