package cluster

// The pressure conditions. The kubelet raises MemoryPressure and
// DiskPressure when one of its hard eviction thresholds is crossed, and
// keeps them raised for the pressure transition period after the last
// crossing (so a node hovering at the edge does not flap). serve's
// eviction manager (agent/eviction) decides the conditions from
// its own thresholds and hands them over (NodeConfig.Pressure); without
// one, this file applies the kubelet's default thresholds and period and
// only reports. The kubelet has no default PID threshold; minikubelet
// raises PIDPressure when fewer than pidAvailableMinPercent of
// kernel.pid_max are left, where new processes start failing to fork.

import (
	"time"

	v1 "k8s.io/api/core/v1"
)

// The kubelet's defaults (kubelet-facts §8.4; evictionHard on Linux).
const (
	// memoryAvailableMin is memory.available<100Mi.
	memoryAvailableMin = 100 << 20
	// nodefsAvailableMinPercent is nodefs.available<10%.
	nodefsAvailableMinPercent = 10
	// nodefsInodesFreeMinPercent is nodefs.inodesFree<5%.
	nodefsInodesFreeMinPercent = 5
	// pidAvailableMinPercent: see the file comment.
	pidAvailableMinPercent = 5
	// pressureTransitionPeriod is evictionPressureTransitionPeriod.
	pressureTransitionPeriod = 5 * time.Minute
)

// readings are one look at the host; a reading that failed is marked
// unknown and leaves its condition as the last observation made it.
type readings struct {
	memAvailable int64
	memKnown     bool
	fs           fsStats
	fsKnown      bool
	// pidsUsed and pidMax: thread count (every thread takes a PID) and
	// kernel.pid_max.
	pidsUsed, pidMax int64
	pidKnown         bool
}

// thresholdsCrossed says which thresholds the readings cross now.
func (r readings) thresholdsCrossed() map[v1.NodeConditionType]bool {
	out := map[v1.NodeConditionType]bool{}
	if r.memKnown {
		out[v1.NodeMemoryPressure] = r.memAvailable < memoryAvailableMin
	}
	if r.fsKnown && r.fs.totalBytes > 0 {
		low := r.fs.availBytes*100 < r.fs.totalBytes*nodefsAvailableMinPercent
		if r.fs.totalInodes > 0 {
			low = low || r.fs.freeInodes*100 < r.fs.totalInodes*nodefsInodesFreeMinPercent
		}
		out[v1.NodeDiskPressure] = low
	}
	if r.pidKnown && r.pidMax > 0 {
		out[v1.NodePIDPressure] = (r.pidMax-r.pidsUsed)*100 < r.pidMax*pidAvailableMinPercent
	}
	return out
}

// pressureTracker remembers when each threshold was last seen crossed. It
// is used by the status loop's goroutine only.
type pressureTracker struct {
	lastCrossed map[v1.NodeConditionType]time.Time
}

// observe records the readings taken at now and returns the three
// conditions' pressure: crossed now, or within the transition period.
func (p *pressureTracker) observe(r readings, now time.Time) (memory, disk, pid bool) {
	if p.lastCrossed == nil {
		p.lastCrossed = map[v1.NodeConditionType]time.Time{}
	}
	for t, crossed := range r.thresholdsCrossed() {
		if crossed {
			p.lastCrossed[t] = now
		}
	}
	under := func(t v1.NodeConditionType) bool {
		last, ok := p.lastCrossed[t]
		return ok && now.Sub(last) < pressureTransitionPeriod
	}
	return under(v1.NodeMemoryPressure), under(v1.NodeDiskPressure), under(v1.NodePIDPressure)
}
