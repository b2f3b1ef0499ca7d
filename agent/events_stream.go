package agent

import (
	"context"
	"time"

	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/minikubelet/minikubelet/cri"
)

// watchContainerEvents streams the runtime's container events (CRI
// GetContainerEvents, containerd ≥ 1.7) and sends the UID of each affected
// pod to out, so a crash is seen at once instead of at the next relist. The
// relist stays the safety net: events can be lost while the stream
// reconnects. A runtime without the API is detected once and left alone.
func (a *Agent) watchContainerEvents(ctx context.Context, out chan<- types.UID) {
	delay := 100 * time.Millisecond
	for ctx.Err() == nil {
		ch := make(chan *runtimeapi.ContainerEventResponse, 64)
		done := make(chan error, 1)
		sctx, cancel := context.WithCancel(ctx)
		go func() { done <- a.runtime.GetContainerEvents(sctx, ch, nil) }()
		var err error
	recv:
		for {
			select {
			case ev := <-ch:
				delay = 100 * time.Millisecond
				uid := types.UID(ev.GetPodSandboxStatus().GetMetadata().GetUid())
				if uid == "" {
					continue
				}
				select {
				case out <- uid:
				case <-ctx.Done():
				}
			case err = <-done:
				break recv
			}
		}
		cancel()
		if cri.IsUnimplemented(err) {
			a.logger.Info("Runtime does not stream container events; relying on the periodic relist", "period", a.cfg.RelistPeriod)
			return
		}
		if ctx.Err() != nil {
			return
		}
		a.logger.Debug("Container event stream ended; reconnecting", "err", err, "in", delay)
		select {
		case <-a.clock.After(delay):
		case <-ctx.Done():
			return
		}
		delay = min(2*delay, 5*time.Second)
	}
}
