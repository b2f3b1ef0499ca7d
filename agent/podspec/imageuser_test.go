package podspec

import (
	"testing"

	"github.com/stretchr/testify/assert"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/utils/ptr"
)

func TestSeccompProfileRoot(t *testing.T) {
	assert.Equal(t, "/r/seccomp", SeccompProfileRoot("", "/r"), "under the root directory by default")
	assert.Equal(t, "/etc/seccomp", SeccompProfileRoot("/etc/seccomp", "/r"), "the flag wins")
}

func TestImageUser(t *testing.T) {
	for _, tc := range []struct {
		name         string
		img          *runtimeapi.Image
		wantUID      *int64
		wantUsername string
	}{
		{"numeric user", &runtimeapi.Image{Uid: &runtimeapi.Int64Value{Value: 1001}, Username: "ignored"}, ptr.To(int64(1001)), ""},
		{"named user", &runtimeapi.Image{Username: "nginx"}, nil, "nginx"},
		{"no user is root", &runtimeapi.Image{}, ptr.To(int64(0)), ""},
		{"no image is root", nil, ptr.To(int64(0)), ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			uid, username := ImageUser(tc.img)
			assert.Equal(t, tc.wantUID, uid)
			assert.Equal(t, tc.wantUsername, username)
		})
	}
}
