package agent

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/minikubelet/minikubelet/cri/critest"
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
			_, err := s.Add(apiPod("default", name, "x"))
			return err
		})
		delTime += concurrently(b, names, func(name string) error { return s.Delete("default", name) })
	}
	reportConcurrent(b, addTime, delTime, s)
}

// BenchmarkDaemon_Concurrent measures the API's path: benchPods
// Daemon.CreatePod calls at once (store, hand-over to the agent, the
// returned status), then benchPods DeletePod calls at once, with the pod
// workers running against the fake runtime. Teardowns are awaited between
// iterations, untimed.
func BenchmarkDaemon_Concurrent(b *testing.B) {
	fake := critest.New()
	a := New(Config{NodeName: "node-1", RootDir: b.TempDir(), PodLogDir: b.TempDir(), ResolvConf: "/nonexistent"},
		Deps{Runtime: fake.Runtime, Images: fake.Images})
	b.Cleanup(a.stopWorkers)
	s, err := NewPodStore(filepath.Join(b.TempDir(), "api-pods"), "node-1")
	if err != nil {
		b.Fatal(err)
	}
	d := NewDaemon(a, s, nil, DaemonConfig{})
	ctx := context.Background()
	grace := int64(0)
	var addTime, delTime time.Duration
	for i := 0; b.Loop(); i++ {
		names := benchNames(i)
		var mu sync.Mutex
		uids := map[string]types.UID{}
		addTime += concurrently(b, names, func(name string) error {
			p, err := d.CreatePod(ctx, apiPod("default", name, "x"))
			if err == nil {
				mu.Lock()
				uids[name] = p.UID
				mu.Unlock()
			}
			return err
		})
		delTime += concurrently(b, names, func(name string) error {
			_, err := d.DeletePod(ctx, "default", name, &grace)
			return err
		})
		b.StopTimer()
		for _, uid := range uids {
			if done := a.PodDone(uid); done != nil {
				<-done
			}
		}
		fake.Reset()
		b.StartTimer()
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
	b.ReportMetric(float64(s.syncs.Load())/n, "fsyncs/pod")
	b.ReportMetric(0, "ns/op")
}

var _ = v1.NamespaceDefault
