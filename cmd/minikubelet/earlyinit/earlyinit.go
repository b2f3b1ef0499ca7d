// Package earlyinit runs before the other packages of minikubelet
// initialize: it turns Go's heap profiling off and maps the binary's code
// in one call (prefault.go). It imports only runtime, syscall and unsafe,
// so Go's init order (by import path, among packages whose imports are
// done) runs it within the first twenty package inits, before the first
// sampled allocation and before the heavy ones (protobuf, gRPC, the API
// types).
//
// Heap profiling is on by default in every Go program (one sample per
// 512 KiB allocated), and its first sample allocates the profiler's bucket
// table: 1.4 MiB of the daemon's memory that nobody reads unless the daemon
// serves its profiles. `minikubelet serve --enable-profiling` turns it back
// on with Restore; GODEBUG=memprofilerate=N chooses for the user.
package earlyinit

import "runtime"

// goDefaultMemProfileRate is runtime.MemProfileRate's initial value.
const goDefaultMemProfileRate = 512 * 1024

// disabled records that this package turned heap profiling off.
var disabled bool

func init() {
	// A different value was set by GODEBUG=memprofilerate, which the
	// runtime applies before any package initializes: leave it.
	if runtime.MemProfileRate == goDefaultMemProfileRate {
		runtime.MemProfileRate = 0
		disabled = true
	}
	prefault() // after: its few allocations are not sampled either
}

// Restore turns heap profiling back on at Go's default rate, if this
// package turned it off. Allocations made before the call are not in the
// heap profile.
func Restore() {
	if disabled {
		runtime.MemProfileRate = goDefaultMemProfileRate
		disabled = false
	}
}
