// Package sourcetest holds what the benchmarks of the pod store and of the
// daemon on top of it share: concurrent submission of a batch of pods and
// the throughput report. It imports nothing of the repository (the store's
// own tests use it).
package sourcetest

import (
	"fmt"
	"sync"
	"testing"
	"time"
)

// BenchNames are the n pod names of one benchmark iteration: new ones each
// time, so a pod still being torn down never clashes with its successor.
func BenchNames(iter, n int) []string {
	names := make([]string, n)
	for i := range names {
		names[i] = fmt.Sprintf("bench-%d-%d", iter, i)
	}
	return names
}

// Concurrently calls f for every name at once and returns the time until
// the last call returned; any error fails the benchmark.
func Concurrently(b *testing.B, names []string, f func(string) error) time.Duration {
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

// ReportConcurrent reports the throughput of pods creates and deletes of
// b.N iterations of perIter pods each, and fsyncs per pod (an Add and a
// Delete each) from the store's sync counter.
func ReportConcurrent(b *testing.B, perIter int, addTime, delTime time.Duration, fsyncs int64) {
	n := float64(b.N * perIter)
	b.ReportMetric(n/addTime.Seconds(), "creates/s")
	b.ReportMetric(n/delTime.Seconds(), "deletes/s")
	b.ReportMetric(float64(fsyncs)/n, "fsyncs/pod")
	b.ReportMetric(0, "ns/op")
}
