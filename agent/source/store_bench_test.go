package source

import (
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/minikubelet/minikubelet/agent/manifest/manifesttest"
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
		names := benchNames(i)
		addTime += concurrently(b, names, func(name string) error {
			_, err := s.Add(manifesttest.APIPod("default", name, "x"))
			return err
		})
		delTime += concurrently(b, names, func(name string) error { return s.Delete("default", name) })
	}
	reportConcurrent(b, addTime, delTime, s)
}

// benchNames are the pod names of one iteration: new ones each time, so a
// pod still being torn down never clashes with its successor.
func benchNames(iter int) []string {
	names := make([]string, benchPods)
	for i := range names {
		names[i] = fmt.Sprintf("bench-%d-%d", iter, i)
	}
	return names
}

// concurrently calls f for every name at once and returns the time until
// the last call returned.
func concurrently(b *testing.B, names []string, f func(string) error) time.Duration {
	b.Helper()
	errs := make([]error, len(names))
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i, n := range names {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			errs[i] = f(n)
		}()
	}
	t0 := time.Now()
	close(start)
	wg.Wait()
	took := time.Since(t0)
	for _, err := range errs {
		if err != nil {
			b.Fatal(err)
		}
	}
	return took
}

// reportConcurrent reports each phase's throughput and the store's fsyncs
// per pod (an Add and a Delete each).
func reportConcurrent(b *testing.B, addTime, delTime time.Duration, s *PodStore) {
	n := float64(b.N * benchPods)
	b.ReportMetric(n/addTime.Seconds(), "creates/s")
	b.ReportMetric(n/delTime.Seconds(), "deletes/s")
	b.ReportMetric(float64(s.Syncs.Load())/n, "fsyncs/pod")
	b.ReportMetric(0, "ns/op")
}
