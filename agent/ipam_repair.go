package agent

import (
	"context"

	"github.com/minikubelet/minikubelet/agent/ipamrepair"
)

// RepairIPLeaks releases the host-local reservations of sandboxes the
// runtime no longer knows (agent/ipamrepair) with the engine's runtime, pod
// network, clock and leaked-IP metric, which cmd cannot reach otherwise.
func (a *Agent) RepairIPLeaks(ctx context.Context, how ipamrepair.IPRepair) ([]ipamrepair.ReleasedIP, error) {
	return ipamrepair.RepairIPLeaks(ctx, ipamrepair.Config{Runtime: a.runtime, Network: a.cfg.Network, Clock: a.clock, Logger: a.logger, Released: a.metrics.IPsReleased.Inc}, how)
}
