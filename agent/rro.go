package agent

// Recursive read-only mounts (volumeMounts[*].recursiveReadOnly): agent/podspec
// resolves them; the engine asks the runtime whether it can.

import (
	"context"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// supportsRRO is whether the runtime's default handler mounts recursively
// read-only (CRI Status), asked once a volumeMount wants it (container.go,
// status.go) and kept once it answered.
func (a *Agent) supportsRRO() bool {
	ctx, cancel := context.WithTimeout(context.Background(), a.cfg.RuntimeTimeout)
	defer cancel()
	return a.rro.Get(ctx, func(ctx context.Context) (*runtimeapi.StatusResponse, error) { return a.runtime.Status(ctx, false) })
}
