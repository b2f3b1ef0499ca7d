package main

import (
	"context"
	"runtime"
	"runtime/debug"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// The trimmer releases only when enough is free, and stops with its
// context.
func TestTrimHeap_ReleasesOnlyAboveTheMinimum(t *testing.T) {
	var free atomic.Uint64
	var released atomic.Int32
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan int)
	go func() {
		done <- trimHeap(ctx, time.Millisecond, 100, free.Load, func() { released.Add(1) })
	}()
	free.Store(99)
	time.Sleep(30 * time.Millisecond)
	require.Zero(t, released.Load(), "released with 99 bytes free, below the minimum of 100")
	free.Store(100)
	require.Eventually(t, func() bool { return released.Load() >= 2 }, 5*time.Second, time.Millisecond)
	cancel()
	n := <-done
	require.GreaterOrEqual(t, n, 2)
	require.Equal(t, int(released.Load()), n, "trimHeap counts what it released")
}

// heapFree sees this process's own freed heap, and FreeOSMemory (the
// release serve uses) takes it back below the trimmer's minimum.
func TestHeapFree_SeesFreedHeapAndTheReleaseReturnsIt(t *testing.T) {
	old := debug.SetGCPercent(-1) // no collection but ours
	defer debug.SetGCPercent(old)
	var keep [][]byte
	for range 64 {
		keep = append(keep, make([]byte, 256<<10)) // 16 MiB in small spans
	}
	runtime.KeepAlive(keep)
	keep = nil
	runtime.GC()
	require.GreaterOrEqual(t, heapFree(), uint64(heapTrimMin), "16 MiB dropped and collected, yet the runtime reports less than a MiB free")
	debug.FreeOSMemory()
	require.Less(t, heapFree(), uint64(heapTrimMin), "free heap after FreeOSMemory")
}
