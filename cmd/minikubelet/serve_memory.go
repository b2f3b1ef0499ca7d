package main

import (
	"context"
	"runtime/debug"
	"runtime/metrics"
	"time"
)

// The daemon hands the Go heap's free pages back to the OS once a minute
// when at least a MiB of them waits. Go's background scavenger returns
// them too, but paced to about 1 % of a CPU and only down to a tenth above
// the heap goal, so after a burst (a hundred pods deleted, a soak's churn)
// the daemon's RSS stays up for many minutes: the last hour-long soak
// ended 3.3 MiB of anonymous memory above its start while the live heap
// had grown 0.7 MiB. debug.FreeOSMemory is one forced collection of a
// heap of a few MiB (milliseconds) and one scavenge, at most once a
// minute, and none while nothing is free. The kubelet does not do this;
// it is what "smaller than the kubelet" costs.
const (
	heapTrimPeriod = time.Minute
	heapTrimMin    = 1 << 20
)

// heapFreeMetric is the runtime's count of free heap bytes not yet
// returned to the OS.
const heapFreeMetric = "/memory/classes/heap/free:bytes"

// heapFree reads heapFreeMetric.
func heapFree() uint64 {
	s := []metrics.Sample{{Name: heapFreeMetric}}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindUint64 {
		return 0
	}
	return s[0].Value.Uint64()
}

// trimHeap calls release every period while ctx lives, when free reports
// at least minFree bytes; it returns how many times it released.
func trimHeap(ctx context.Context, period time.Duration, minFree uint64, free func() uint64, release func()) int {
	tick := time.NewTicker(period)
	defer tick.Stop()
	n := 0
	for {
		select {
		case <-ctx.Done():
			return n
		case <-tick.C:
			if free() >= minFree {
				release()
				n++
			}
		}
	}
}

// runHeapTrim is serve's heap trimmer (see heapTrimPeriod).
func runHeapTrim(ctx context.Context) {
	trimHeap(ctx, heapTrimPeriod, heapTrimMin, heapFree, debug.FreeOSMemory)
}
