package agent

import (
	"context"

	"k8s.io/apimachinery/pkg/types"

	"github.com/minikubelet/minikubelet/probes"
)

// Run is the sync loop (house style rule 4): it relists the runtime every
// RelistPeriod, and follows the runtime's container events where it streams
// them, and wakes the worker of every pod whose runtime objects changed.
// While events stream, it relists at the period after an event (the
// running pods and containers metrics follow the relist) and otherwise every
// eventedRelistTicks-th period only: the kubelet's evented PLEG relists
// every 300 s; 10 s here bounds how late a change the runtime did not send
// (or dropped) is seen. It returns when ctx ends;
// workers are stopped without teardown (the pods keep running, as when the
// kubelet stops).
func (a *Agent) Run(ctx context.Context) error {
	const eventedRelistTicks = 10
	relist, ticks := newRelister(a), 0
	ticker := a.clock.NewTicker(a.cfg.RelistPeriod)
	defer ticker.Stop()
	events := make(chan types.UID, 64)
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
		case uid := <-events:
			a.mu.Lock()
			if w, ok := a.workers[uid]; ok {
				w.trigger()
			}
			a.mu.Unlock()
		case <-ticker.C():
			if ticks++; a.eventsLive.Load() && !a.eventSeen.Swap(false) && ticks%eventedRelistTicks != 0 {
				continue
			}
			changed, err := relist.relist(ctx)
			if err != nil {
				a.logger.Warn("Relist failed", "err", err)
				continue
			}
			a.mu.Lock()
			for _, uid := range changed {
				if w, ok := a.workers[uid]; ok {
					w.trigger()
				}
			}
			a.mu.Unlock()
		}
	}
}
