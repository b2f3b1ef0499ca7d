package agent

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
)

// TestAgent_ClusterProjectionPodsRejectedWithoutClusterMode: SetPods
// refuses a pod that projects a ClusterTrustBundle or a pod certificate on
// a node without a cluster (Failed, reason and message naming the field)
// and creates nothing; agent/volume's tests cover the cluster cases.
func TestAgent_ClusterProjectionPodsRejectedWithoutClusterMode(t *testing.T) {
	for _, tc := range []struct {
		name, source, field string
	}{
		{"clusterTrustBundle", "clusterTrustBundle: {name: roots, path: ca.pem}", "spec.volumes[0].projected.sources[0].clusterTrustBundle"},
		{"podCertificate", "podCertificate: {signerName: example.com/id, keyType: ED25519, keyPath: tls.key}", "spec.volumes[0].projected.sources[0].podCertificate"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t)
			pod := testPod(t, "apiVersion: v1\nkind: Pod\nmetadata: {name: certs}\nspec:\n  containers:\n  - {name: app, image: img}\n"+
				"  volumes:\n  - name: v\n    projected:\n      sources:\n      - "+tc.source+"\n")
			h.agent.SetPods([]*v1.Pod{pod})
			got, ok := h.agent.GetPod(pod.UID)
			require.True(t, ok)
			assert.Equal(t, v1.PodFailed, got.Status.Phase)
			assert.Equal(t, "ClusterProjectionUnavailable", got.Status.Reason)
			assert.Contains(t, got.Status.Message, tc.field)
			assert.Contains(t, got.Status.Message, "which needs cluster mode")
			assert.Empty(t, h.fake.Calls(), "nothing was created")
		})
	}
}
