package cluster

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

func TestNodeAgent_DevicePluginResources(t *testing.T) {
	h := newNodeHarness(t)
	devCap, devAlloc := int64(2), int64(2)
	h.node.cfg.Devices = func() (v1.ResourceList, v1.ResourceList) {
		return v1.ResourceList{"example.com/dev": *resource.NewQuantity(devCap, resource.DecimalSI)},
			v1.ResourceList{"example.com/dev": *resource.NewQuantity(devAlloc, resource.DecimalSI)}
	}
	_, err := h.node.register(context.Background())
	require.NoError(t, err)
	require.NoError(t, h.node.syncStatus(context.Background()))
	n := h.getNode(t)
	got := n.Status.Capacity["example.com/dev"]
	require.Equal(t, int64(2), got.Value())
	got = n.Status.Allocatable["example.com/dev"]
	require.Equal(t, int64(2), got.Value())
	wantCPU := testNodeInfo().Capacity[v1.ResourceCPU]
	require.Equal(t, wantCPU.Value(), n.Status.Capacity.Cpu().Value(), "the node's own resources stay")
	require.NotContains(t, h.node.cfg.Node.Capacity, v1.ResourceName("example.com/dev"), "the agent's node.Info is not changed")

	// A device turning unhealthy is a change: sent before the report period.
	devAlloc = 1
	h.clock.Step(time.Second)
	require.NoError(t, h.node.syncStatus(context.Background()))
	got = h.getNode(t).Status.Allocatable["example.com/dev"]
	require.Equal(t, int64(1), got.Value())
}

func TestNodeAgent_DeviceChangeCutsTheStatusWaitShort(t *testing.T) {
	h := newNodeHarness(t)
	changed := make(chan struct{}, 1)
	h.node.cfg.DevicesChanged = changed
	changed <- struct{}{}
	done := make(chan bool)
	go func() { done <- h.node.waitOr(context.Background(), time.Hour, h.node.cfg.DevicesChanged) }()
	select {
	case ok := <-done:
		require.True(t, ok)
	case <-time.After(10 * time.Second):
		t.Fatal("waitStatus did not return on a device change")
	}
}
