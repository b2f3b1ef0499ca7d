package daemon

import (
	"context"
	"fmt"
	"github.com/minikubelet/minikubelet/agent"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/minikubelet/minikubelet/agent/manifest/manifesttest"
	"github.com/minikubelet/minikubelet/agent/source"
	"github.com/minikubelet/minikubelet/agent/source/sourcetest"
	"github.com/minikubelet/minikubelet/cri"
	"github.com/minikubelet/minikubelet/cri/critest"
)

// BenchmarkDaemon_Concurrent measures the API's path: benchPods
// Daemon.CreatePod calls at once (store, hand-over to the agent, the
// returned status), then benchPods DeletePod calls at once, with the pod
// workers running against the fake runtime. Teardowns are awaited between
// iterations, untimed.
func BenchmarkDaemon_Concurrent(b *testing.B) {
	fake := critest.New()
	a := agent.New(agent.Config{NodeName: "node-1", RootDir: b.TempDir(), PodLogDir: b.TempDir(), ResolvConf: "/nonexistent", Network: testNetwork(b), HostIPs: []string{"192.0.2.1"}},
		agent.Deps{Runtime: fake.Runtime, Images: fake.Images})
	b.Cleanup(a.StopWorkers)
	s, err := source.NewPodStore(filepath.Join(b.TempDir(), "api-pods"), "node-1")
	if err != nil {
		b.Fatal(err)
	}
	d := New(a, s, nil, Config{})
	ctx := context.Background()
	grace := int64(0)
	var addTime, delTime time.Duration
	for i := 0; b.Loop(); i++ {
		names := sourcetest.BenchNames(i, benchPods)
		var mu sync.Mutex
		uids := map[string]types.UID{}
		addTime += sourcetest.Concurrently(b, names, func(name string) error {
			p, err := d.CreatePod(ctx, manifesttest.APIPod("default", name, "x"))
			if err == nil {
				mu.Lock()
				uids[name] = p.UID
				mu.Unlock()
			}
			return err
		})
		delTime += sourcetest.Concurrently(b, names, func(name string) error {
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
	sourcetest.ReportConcurrent(b, benchPods, addTime, delTime, s.Syncs.Load())
}

// sandboxClock is a runtime that reports when RunPodSandbox is called.
type sandboxClock struct {
	cri.Runtime
	called chan time.Time
}

func (r *sandboxClock) RunPodSandbox(ctx context.Context, config *runtimeapi.PodSandboxConfig, handler string) (string, error) {
	r.called <- time.Now()
	return r.Runtime.RunPodSandbox(ctx, config, handler)
}

// BenchmarkDaemon_CreateToSandbox measures what a single pod's start costs
// before the runtime is asked for its sandbox: Daemon.CreatePod (store,
// durable write, hand-over) and the pod worker's first steps, against the
// fake runtime (whose calls cost next to nothing), with the daemon's loop
// running. It reports the mean time from the call to RunPodSandbox, and
// that of CreatePod alone.
func BenchmarkDaemon_CreateToSandbox(b *testing.B) {
	fake := critest.New()
	rt := &sandboxClock{Runtime: fake.Runtime, called: make(chan time.Time, 1)}
	a := agent.New(agent.Config{NodeName: "node-1", RootDir: b.TempDir(), PodLogDir: b.TempDir(), ResolvConf: "/nonexistent", Network: testNetwork(b), HostIPs: []string{"192.0.2.1"}},
		agent.Deps{Runtime: rt, Images: fake.Images})
	b.Cleanup(a.StopWorkers)
	s, err := source.NewPodStore(filepath.Join(b.TempDir(), "api-pods"), "node-1")
	if err != nil {
		b.Fatal(err)
	}
	d := New(a, s, nil, Config{})
	ctx, cancel := context.WithCancel(context.Background())
	ran := make(chan error, 1)
	go func() { ran <- d.Run(ctx) }() // the loop follows the store's signal, as in the daemon
	b.Cleanup(func() {
		cancel()
		<-ran
	})
	grace := int64(0)
	var toSandbox, create time.Duration
	for i := 0; b.Loop(); i++ {
		name := fmt.Sprintf("single-%d", i)
		t0 := time.Now()
		p, err := d.CreatePod(ctx, manifesttest.APIPod("default", name, "x"))
		create += time.Since(t0)
		if err != nil {
			b.Fatal(err)
		}
		toSandbox += (<-rt.called).Sub(t0)
		b.StopTimer()
		if _, err := d.DeletePod(ctx, "default", name, &grace); err != nil {
			b.Fatal(err)
		}
		if done := a.PodDone(p.UID); done != nil {
			<-done
		}
		b.StartTimer()
	}
	b.ReportMetric(float64(toSandbox.Microseconds())/float64(b.N), "µs-to-sandbox")
	b.ReportMetric(float64(create.Microseconds())/float64(b.N), "µs-CreatePod")
}

// The helpers below are agent/source's (store_bench_test.go), repeated:
// the daemon's benchmarks report the same way.

// benchPods is how many pods the concurrent benchmarks submit at once (the
// density and delete scenarios of test/bench).
const benchPods = 100
