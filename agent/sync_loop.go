package agent

import (
	"context"

	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/minikubelet/minikubelet/probes"
)

// Run is the sync loop (house style rule 4): it relists the runtime a
// RelistPeriod after the last relist (as the kubelet's PLEG), follows the
// runtime's container events where it streams them, and wakes the worker
// of every pod whose runtime objects changed. Where every event reaches
// this agent (cri.EventsReachEverySubscriber), a period relists only after
// an event (the running pods and containers metrics follow the relist) or
// every eventedRelistTicks-th period, the safety net for a change the
// runtime did not send (the kubelet's evented PLEG: 300 s). It returns when
// ctx ends; workers stop without teardown (pods run on, as the kubelet's).
func (a *Agent) Run(ctx context.Context) error {
	const eventedRelistTicks = 10
	relist, ticks := newRelister(a), 0
	timer := a.clock.NewTimer(a.cfg.RelistPeriod)
	defer timer.Stop()
	events := make(chan *runtimeapi.ContainerEventResponse, 64)
	go a.watchContainerEvents(ctx, events)
	for {
		select {
		case <-ctx.Done():
			a.stopWorkers()
			a.probes.Close()
			return nil
		case u := <-a.probes.Updates():
			a.countProbeResult(u)
			// A probe result changed: the pod's status (ready) or its
			// plan (liveness/startup failure) may change.
			a.mu.Lock()
			w, ok := a.workers[u.PodUID]
			a.mu.Unlock()
			if ok {
				w.trigger()
				if u.Kind == probes.Readiness && w.isTerminating() {
					a.readinessWhileTerminating(w)
				}
			}
		case ev := <-events:
			a.wakeForEvent(ev)
		case <-timer.C():
			if ticks++; !a.eventsLive.Load() || a.eventSeen.Swap(false) || ticks%eventedRelistTicks == 0 {
				if changed, err := relist.relist(ctx); err != nil {
					a.eventSeen.Store(true) // again at the next period
					a.logger.Warn("Relist failed", "err", err)
				} else {
					a.wake(changed)
				}
			}
			timer.Reset(a.cfg.RelistPeriod)
		}
	}
}

// wakeForEvent hands a runtime event to the worker of its pod, which
// syncs unless it has seen what the event says (podWorker.runtimeEvent).
func (a *Agent) wakeForEvent(ev *runtimeapi.ContainerEventResponse) {
	a.mu.Lock()
	w, ok := a.workers[types.UID(ev.GetPodSandboxStatus().GetMetadata().GetUid())]
	a.mu.Unlock()
	if ok {
		w.runtimeEvent(ev)
	}
}

// wake triggers the workers of the given pods.
func (a *Agent) wake(uids []types.UID) {
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, uid := range uids {
		if w, ok := a.workers[uid]; ok {
			w.trigger()
		}
	}
}
