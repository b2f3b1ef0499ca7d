package podspec

import (
	"testing"

	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"

	"github.com/minikubelet/minikubelet/agent/manifest"
)

// testPod decodes a manifest with the real loader, so fixtures carry the
// API-server defaults.
func testPod(t *testing.T, text string) *v1.Pod {
	t.Helper()
	pods, err := manifest.PrepareManifest([]byte(text), "test.yaml", "node-1")
	require.NoError(t, err)
	require.Len(t, pods, 1)
	return pods[0]
}

// testInputs are sandbox inputs of a node without cluster DNS whose
// resolv.conf holds resolv.
func testInputs(resolv string) SandboxInputs {
	return SandboxInputs{
		PodLogDir:  "/var/log/pods",
		AgentID:    "test-agent",
		DNS:        ClusterDNS{Domain: "cluster.local"},
		ResolvConf: func() ([]byte, error) { return []byte(resolv), nil },
	}
}
