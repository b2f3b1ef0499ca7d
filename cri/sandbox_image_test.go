package cri

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestSandboxImage(t *testing.T) {
	for _, tc := range []struct {
		name string
		info map[string]string
		want string
	}{
		{name: "containerd 1.x", info: map[string]string{"config": `{"sandboxImage":"reg/pause:3.10","other":1}`}, want: "reg/pause:3.10"},
		{name: "containerd 2.x", info: map[string]string{"config": `{"pinnedImages":{"sandbox":"reg/pause:3.10"}}`}, want: "reg/pause:3.10"},
		{name: "no config", info: map[string]string{}, want: ""},
		{name: "not JSON", info: map[string]string{"config": "{"}, want: ""},
	} {
		t.Run(tc.name, func(t *testing.T) { assert.Equal(t, tc.want, SandboxImage(tc.info)) })
	}
}
