package agent

import (
	"context"
	"time"

	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/minikubelet/minikubelet/cri"
)

// watchContainerEvents streams the runtime's container events (CRI
// GetContainerEvents: containerd ≥ 1.7, and 2.x) and sends each event of a
// pod to out, so a start or crash is seen at once instead of at the
// next relist. The relist stays the safety net: events can be lost while the
// stream reconnects. A runtime without the API (containerd 1.6 answers
// Unimplemented) is detected once and left alone.
//
// The first event proves the stream live: it is logged once ("Following the
// runtime's container events") and counted per connection, as the kubelet's
// evented PLEG counts its connections; each event's age on arrival is
// observed as the kubelet's connection latency.
func (a *Agent) watchContainerEvents(ctx context.Context, out chan<- *runtimeapi.ContainerEventResponse) {
	delay := 100 * time.Millisecond
	following := false
	for ctx.Err() == nil {
		ch := make(chan *runtimeapi.ContainerEventResponse, 64)
		done := make(chan error, 1)
		sctx, cancel := context.WithCancel(ctx)
		go func() { done <- a.runtime.GetContainerEvents(sctx, ch, nil) }()
		var err error
		live := false
		deliver := func(ev *runtimeapi.ContainerEventResponse) {
			delay = 100 * time.Millisecond
			if !live {
				live = true
				v, verr := a.runtime.Version(ctx, "")
				a.eventsLive.Store(verr == nil && cri.EventsReachEverySubscriber(v.GetRuntimeName(), v.GetRuntimeVersion()))
				a.metrics.EventedConns.Inc()
				if !following {
					following = true
					a.logger.Info("Following the runtime's container events", "relistPeriod", a.cfg.RelistPeriod)
				}
			}
			a.eventSeen.Store(true)
			if at := ev.GetCreatedAt(); at > 0 {
				a.metrics.EventedLatency.Observe(a.clock.Since(time.Unix(0, at)).Seconds())
			}
			uid := types.UID(ev.GetPodSandboxStatus().GetMetadata().GetUid())
			a.logger.Debug("Runtime container event", "type", ev.GetContainerEventType(),
				"containerID", ev.GetContainerId(), "podUID", uid)
			if uid == "" {
				return
			}
			select {
			case out <- ev:
			case <-ctx.Done():
			}
		}
	recv:
		for {
			select {
			case ev := <-ch:
				deliver(ev)
			case err = <-done:
				// The call returned, and what it received before its end
				// may still be in ch (select picks at random between ready
				// cases): deliver that first. A busy machine lost the event
				// before a broken stream (CI, 2026-12-01).
				for {
					select {
					case ev := <-ch:
						deliver(ev)
					default:
						break recv
					}
				}
			}
		}
		cancel()
		a.eventsLive.Store(false) // events may be lost: relist every period
		if ctx.Err() != nil {
			return
		}
		a.metrics.EventedConnErrors.Inc()
		if cri.IsUnimplemented(err) {
			a.logger.Info("Runtime does not stream container events; relying on the periodic relist", "period", a.cfg.RelistPeriod)
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
