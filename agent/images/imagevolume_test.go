package images

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestRuntimeMountsImages(t *testing.T) {
	for _, tc := range []struct {
		name, version string
		want          bool
	}{
		{"containerd", "v1.6.38", false},
		{"containerd", "1.7.27", false},
		{"containerd", "v2.0.5", false},
		{"containerd", "v2.1.0", true},
		{"containerd", "v2.1.0-rc.1", true},
		{"containerd", "v2.4.2", true},
		{"containerd", "v3.0.0", true},
		{"containerd", "v2.10+unknown", true},
		{"containerd", "devel", true}, // unparsed: the runtime's own error says
		{"cri-o", "1.30.0", true},     // not containerd: left to the runtime
	} {
		assert.Equal(t, tc.want, runtimeMountsImages(tc.name, tc.version), "%s %s", tc.name, tc.version)
	}
	paths := []string{"spec.volumes[1].image", "spec.volumes[3].image"}
	assert.Equal(t, "", VolumeRefusal(nil, "containerd", "v1.6.38"), "no image volume, nothing to refuse")
	assert.Equal(t, "", VolumeRefusal(paths, "containerd", "v2.1.1"))
	assert.True(t, strings.HasPrefix(VolumeRefusal(paths, "containerd", "v1.6.38"), "spec.volumes[1].image, spec.volumes[3].image: "))
}
