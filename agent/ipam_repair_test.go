package agent

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/minikubelet/minikubelet/agent/ipamrepair"
	"github.com/minikubelet/minikubelet/cni"
)

// The engine's repair (agent/ipamrepair tests the judgement) reconciles
// its own pod network against its runtime and counts each release in
// minikubelet_ipam_leaked_ips_released_total.
func TestAgent_RepairIPLeaksCounts(t *testing.T) {
	h := newHarness(t)
	n := testNetwork(t)
	n.Name = "repairnet"
	h.agent.cfg.Network = n.WithDefaults()
	dir := cni.HostLocalDir(h.agent.cfg.Network)
	require.NoError(t, os.MkdirAll(dir, 0o755))
	path := filepath.Join(dir, "10.89.0.4")
	require.NoError(t, os.WriteFile(path, []byte("deadbeef00\r\neth0"), 0o600))
	old := h.clock.Now().Add(-time.Hour)
	require.NoError(t, os.Chtimes(path, old, old))

	ips, err := h.agent.RepairIPLeaks(context.Background(), ipamrepair.ForegroundIPRepair)
	require.NoError(t, err)
	require.Len(t, ips, 1)
	assert.Equal(t, "10.89.0.4", ips[0].IP)
	var out bytes.Buffer
	require.NoError(t, h.agent.WriteMetrics(&out))
	assert.Contains(t, out.String(), "minikubelet_ipam_leaked_ips_released_total 1")
}
