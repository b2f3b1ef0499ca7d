package earlyinit

import (
	"os"
	"runtime"
	"strings"
	"testing"
)

// sampled returns the number of allocations the heap profile holds (all
// of them, freed or not), after a GC publishes the latest samples.
func sampled() int64 {
	runtime.GC()
	n, _ := runtime.MemProfile(nil, true)
	recs := make([]runtime.MemProfileRecord, n+50)
	n, _ = runtime.MemProfile(recs, true)
	var objs int64
	for _, r := range recs[:n] {
		objs += r.AllocObjects
	}
	return objs
}

//go:noinline
func allocate(n int) {
	var keep [][]byte
	for range n {
		keep = append(keep, make([]byte, 64<<10))
	}
	runtime.KeepAlive(keep)
}

// Heap profiling is off from the first package init: 32 MiB of
// allocations (64 sampling intervals at Go's default rate) add no sample.
// After Restore the same allocations are sampled.
func TestHeapProfilingOffUntilRestored(t *testing.T) {
	if strings.Contains(os.Getenv("GODEBUG"), "memprofilerate") {
		t.Skip("GODEBUG sets memprofilerate")
	}
	if runtime.MemProfileRate != 0 || !disabled {
		t.Fatalf("MemProfileRate = %d, disabled = %v; want 0, true", runtime.MemProfileRate, disabled)
	}
	// After a rate change the runtime samples one more allocation per P
	// (its per-P counter still holds the old rate): one P, and that
	// allocation made here.
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	allocate(1)
	before := sampled()
	allocate(512)
	if after := sampled(); after != before {
		t.Fatalf("the heap profile went from %d to %d sampled allocations while off", before, after)
	}

	Restore()
	defer func() { runtime.MemProfileRate, disabled = 0, true }()
	if runtime.MemProfileRate != goDefaultMemProfileRate || disabled {
		t.Fatalf("after Restore: MemProfileRate = %d, disabled = %v", runtime.MemProfileRate, disabled)
	}
	allocate(512)
	if after := sampled(); after < before+16 {
		t.Fatalf("the heap profile went from %d to %d sampled allocations after Restore; want at least 16 more of 64 expected", before, after)
	}
}
