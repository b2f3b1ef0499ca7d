package userns

import (
	"testing"

	"github.com/stretchr/testify/assert"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

func TestHandlerSupportsUserNamespaces(t *testing.T) {
	withFeature := func(name string, on bool) *runtimeapi.RuntimeHandler {
		return &runtimeapi.RuntimeHandler{Name: name, Features: &runtimeapi.RuntimeHandlerFeatures{UserNamespaces: on}}
	}
	for _, tc := range []struct {
		name     string
		handlers []*runtimeapi.RuntimeHandler
		want     bool
	}{
		{"no handlers (containerd 1.6)", nil, false},
		{"default handler with the feature", []*runtimeapi.RuntimeHandler{withFeature("runc", true), withFeature("", true)}, true},
		{"default handler without it", []*runtimeapi.RuntimeHandler{withFeature("", false), withFeature("crun", true)}, false},
		{"default handler without features", []*runtimeapi.RuntimeHandler{{Name: ""}}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, HandlerSupports(tc.handlers, ""))
		})
	}
}
