package lifecycle

import (
	"context"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/utils/clock"
)

// TerminationOrder is the order in which a pod's containers stop when the
// whole pod is killed, as the kubelet's terminationOrdering
// (kuberuntime_termination_order.go; kubelet-facts §2.5): every kill begins
// at once (so every preStop hook starts together), then a native sidecar
// waits for its turn: until the containers that are not sidecars and the
// sidecars after it in the spec have exited, within its grace period.
type TerminationOrder struct {
	mu      sync.Mutex
	exited  map[string]chan struct{}
	prereqs map[string][]chan struct{}
}

// NewTerminationOrder is the order of the kill of running, the names of
// pod's running containers.
func NewTerminationOrder(pod *v1.Pod, running []string) *TerminationOrder {
	sidecar := map[string]int{}
	for i := range pod.Spec.InitContainers {
		if c := &pod.Spec.InitContainers[i]; c.RestartPolicy != nil && *c.RestartPolicy == v1.ContainerRestartPolicyAlways {
			sidecar[c.Name] = i
		}
	}
	o := &TerminationOrder{exited: map[string]chan struct{}{}, prereqs: map[string][]chan struct{}{}}
	for _, n := range running {
		if o.exited[n] == nil {
			o.exited[n] = make(chan struct{})
		}
	}
	for n := range o.exited {
		i, ok := sidecar[n]
		if !ok {
			continue // app containers (and anything not in the spec) go first
		}
		for m, ch := range o.exited {
			if j, side := sidecar[m]; m != n && (!side || j > i) {
				o.prereqs[n] = append(o.prereqs[n], ch)
			}
		}
	}
	return o
}

// WaitForTurn waits until the containers name must outlive have exited,
// at most grace seconds, or until ctx ends, and returns the whole seconds
// it waited (to come off the grace period).
func (o *TerminationOrder) WaitForTurn(ctx context.Context, clk clock.Clock, name string, grace int64) int64 {
	if grace <= 0 || len(o.prereqs[name]) == 0 {
		return 0
	}
	start, t := clk.Now(), clk.NewTimer(time.Duration(grace)*time.Second)
	defer t.Stop()
	for _, ch := range o.prereqs[name] {
		select {
		case <-ch:
		case <-t.C():
			return grace
		case <-ctx.Done():
			return int64(clk.Since(start) / time.Second)
		}
	}
	return int64(clk.Since(start) / time.Second)
}

// Exited records that the container name has exited: whoever waits for it
// may go on. Later calls for the same name do nothing.
func (o *TerminationOrder) Exited(name string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if ch := o.exited[name]; ch != nil {
		close(ch)
		o.exited[name] = nil
	}
}
