package cri_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/minikubelet/minikubelet/cri"
	"github.com/minikubelet/minikubelet/cri/critest"
)

func TestInstrumented_StreamingAndStatsCalls(t *testing.T) {
	f := critest.New()
	x := cri.Instrument(f.Runtime, f.Images, nil)
	ctx := context.Background()
	_, err := x.Exec(ctx, &runtimeapi.ExecRequest{ContainerId: "c1", Cmd: []string{"ls"}, Stdout: true})
	require.NoError(t, err)
	_, err = x.Attach(ctx, &runtimeapi.AttachRequest{ContainerId: "c1", Stdout: true})
	require.NoError(t, err)
	_, err = x.PortForward(ctx, &runtimeapi.PortForwardRequest{PodSandboxId: "s1"})
	require.NoError(t, err)
	_, err = x.ListContainerStats(ctx, &runtimeapi.ContainerStatsFilter{})
	require.NoError(t, err)
	st := x.Stats()
	for _, verb := range []string{"Exec", "Attach", "PortForward", "ListContainerStats"} {
		require.Equal(t, 1, st[verb].Count, verb)
	}
}
