package source

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/minikubelet/minikubelet/agent/manifest/manifesttest"
	"github.com/minikubelet/minikubelet/agent/source/sourcetest"
)

// benchPods is how many pods the concurrent benchmarks submit at once (the
// density and delete scenarios of test/bench).
const benchPods = 100

// BenchmarkPodStore_Concurrent measures the store alone: benchPods Adds at
// once, then benchPods Deletes at once, on a real directory (fsyncs
// included). It reports the throughput of each phase and the fsyncs per pod.
func BenchmarkPodStore_Concurrent(b *testing.B) {
	s, err := NewPodStore(filepath.Join(b.TempDir(), "api-pods"), "node-1")
	if err != nil {
		b.Fatal(err)
	}
	var addTime, delTime time.Duration
	for i := 0; b.Loop(); i++ {
		names := sourcetest.BenchNames(i, benchPods)
		addTime += sourcetest.Concurrently(b, names, func(name string) error {
			_, err := s.Add(manifesttest.APIPod("default", name, "x"))
			return err
		})
		delTime += sourcetest.Concurrently(b, names, func(name string) error { return s.Delete("default", name) })
	}
	sourcetest.ReportConcurrent(b, benchPods, addTime, delTime, s.Syncs.Load())
}
