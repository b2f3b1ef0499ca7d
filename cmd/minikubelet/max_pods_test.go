package main

import (
	"flag"
	"io"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	agentnode "github.com/minikubelet/minikubelet/agent/node"
)

// --max-pods sets the node's pods capacity and allocatable (the kubelet's
// maxPods); left out, the node keeps what Detect gave it (110).
func TestNodeFlags_MaxPods(t *testing.T) {
	for _, tc := range []struct {
		name    string
		args    []string
		want    int64
		wantErr string
	}{
		{name: "not given: Detect's", want: 110},
		{name: "raised", args: []string{"--max-pods=250"}, want: 250},
		{name: "lowered", args: []string{"--max-pods", "5"}, want: 5},
		{name: "zero", args: []string{"--max-pods=0"}, wantErr: "--max-pods: 0 is not a pod count"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fs := flag.NewFlagSet("serve", flag.ContinueOnError)
			fs.SetOutput(io.Discard)
			var f nodeFlags
			f.register(fs)
			require.NoError(t, fs.Parse(tc.args))
			// Detect's answer for a host with 2 CPUs (no host state read).
			info := agentnode.Info{
				Capacity:    v1.ResourceList{v1.ResourceCPU: resource.MustParse("2"), v1.ResourcePods: *resource.NewQuantity(defaultMaxPods, resource.DecimalSI)},
				Allocatable: v1.ResourceList{v1.ResourceCPU: resource.MustParse("1900m"), v1.ResourcePods: *resource.NewQuantity(defaultMaxPods, resource.DecimalSI)},
			}
			err := f.applyMaxPods(&info)
			if tc.wantErr != "" {
				require.ErrorContains(t, err, tc.wantErr)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, info.Capacity.Pods().Value())
			assert.Equal(t, tc.want, info.Allocatable.Pods().Value())
			assert.Equal(t, "1900m", info.Allocatable.Cpu().String(), "other resources untouched")
		})
	}
}
