package gc

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/utils/clock"

	"github.com/minikubelet/minikubelet/cri/critest"
)

// Both loops register their health on one registry (the daemon's).
func TestRegisterStatus_BothLoops(t *testing.T) {
	reg := prometheus.NewRegistry()
	f := critest.New()
	_, err := NewImageManager(ImageManagerConfig{Images: f.Images, Containers: f.Runtime, Policy: DefaultImagePolicy(), Registerer: reg, Clock: clock.RealClock{}})
	require.NoError(t, err)
	_, err = NewContainerGC(ContainerGCConfig{Runtime: f.Runtime, Owns: func(map[string]string) bool { return true }, PodGone: func(string) bool { return false }, Registerer: reg})
	require.NoError(t, err)
	mfs, err := reg.Gather()
	require.NoError(t, err)
	loops := map[string][]string{}
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "loop" {
					loops[mf.GetName()] = append(loops[mf.GetName()], l.GetValue())
				}
			}
		}
	}
	assert.ElementsMatch(t, []string{"image", "container"}, loops["minikubelet_gc_consecutive_failures"])
	assert.ElementsMatch(t, []string{"image", "container"}, loops["minikubelet_gc_last_success_timestamp_seconds"])
}
