package agent

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"

	"github.com/minikubelet/minikubelet/agent/manifest"
	"github.com/minikubelet/minikubelet/agent/podspec"
	"github.com/minikubelet/minikubelet/cgroups"
	"github.com/minikubelet/minikubelet/test/testutil"
)

// docsExamples is ../shared/k8s-docs-examples beside the repository (the
// package runs in agent/), or $MINIKUBELET_DOCS_EXAMPLES.
var docsExamples = testutil.DocsExamplesDir("..")

// TestQOSClass_DocsExamples loads the QoS example pods of the Kubernetes
// documentation (tasks/configure-pod-container/quality-service-pod) through
// the real loader and checks the class the documentation states.
func TestQOSClass_DocsExamples(t *testing.T) {
	tests := []struct {
		file string
		want v1.PodQOSClass
	}{
		{"qos-pod.yaml", v1.PodQOSGuaranteed},
		{"qos-pod-2.yaml", v1.PodQOSBurstable},
		{"qos-pod-3.yaml", v1.PodQOSBestEffort},
		{"qos-pod-4.yaml", v1.PodQOSBurstable},
		{"qos-pod-5.yaml", v1.PodQOSGuaranteed},
		{"sidecar-resources.yaml", v1.PodQOSBurstable},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			data, err := os.ReadFile(filepath.Join(docsExamples, tt.file))
			if os.IsNotExist(err) {
				testutil.SkipSuite(t, "no Kubernetes documentation examples at %s (CI checks shared/ out beside the repository, or set MINIKUBELET_DOCS_EXAMPLES)", docsExamples)
			}
			require.NoError(t, err)
			pods, err := manifest.PrepareManifest(data, "x.yaml", "node")
			require.NoError(t, err)
			require.Len(t, pods, 1)
			assert.Equal(t, tt.want, podspec.QOSClass(pods[0]))
		})
	}
}

func TestShareAndQuotaConversions(t *testing.T) {
	for m, want := range map[int64]int64{0: 2, 1: 2, 100: 102, 250: 256, 1000: 1024, 300000: 262144} {
		assert.Equal(t, want, podspec.MilliCPUToShares(m), "shares of %dm", m)
	}
	for m, want := range map[int64]int64{0: 0, 5: 1000, 10: 1000, 500: 50000, 2500: 250000} {
		assert.Equal(t, want, podspec.MilliCPUToQuota(m, podspec.QuotaPeriod), "quota of %dm", m)
	}
	// cgroup v2 weights of the pod shares above (linear, the target's runc).
	assert.Equal(t, uint64(39), cgroups.WeightLinear.SharesToWeight(uint64(podspec.MilliCPUToShares(1000))))
	assert.Equal(t, uint64(100), cgroups.WeightNonLinear.SharesToWeight(uint64(podspec.MilliCPUToShares(1000))))
}
