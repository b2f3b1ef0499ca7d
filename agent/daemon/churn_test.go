package daemon

import (
	"context"
	"fmt"
	"github.com/minikubelet/minikubelet/agent"
	"github.com/prometheus/client_golang/prometheus"
	"maps"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/minikubelet/minikubelet/agent/api"
	"github.com/minikubelet/minikubelet/agent/source"
	"github.com/minikubelet/minikubelet/agent/volume/volumetest"
	"github.com/minikubelet/minikubelet/cri/critest"
)

// churnDaemon is a daemon as serve wires it (the pod store, its loop, the
// watch feed), over the fake runtime.
type churnDaemon struct {
	fake *critest.Fake
	a    *agent.Agent
	d    *Daemon
}

func newChurnDaemon(tb testing.TB) *churnDaemon {
	tb.Helper()
	fake := critest.New()
	fake.SetImages("reg.local/app:1")
	rt := scriptedRuntime{FakeRuntime: fake.Runtime, annotate: map[string]map[string]string{
		"crash": {critest.AnnotationExitAfterMs: "0", critest.AnnotationExitCode: "1"},
	}}
	a := agent.New(agent.Config{NodeName: "node-1", RootDir: tb.TempDir(), PodLogDir: tb.TempDir(), ResolvConf: "/nonexistent", Network: testNetwork(tb), HostIPs: []string{"192.0.2.1"},
		RelistPeriod: 50 * time.Millisecond},
		agent.Deps{Runtime: rt, Images: fake.Images, Mounter: volumetest.NewFakeMounter()})
	s, err := source.NewPodStore(filepath.Join(tb.TempDir(), "api-pods"), "node-1")
	require.NoError(tb, err)
	d := New(a, s, nil, Config{})
	ctx, cancel := context.WithCancel(context.Background())
	ran := make(chan error, 1)
	go func() { ran <- d.Run(ctx) }()
	tb.Cleanup(func() {
		cancel()
		<-ran
		a.StopWorkers()
	})
	_, err = d.CreateConfigMap(ctx, &v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "churn", Namespace: "default"}, Data: map[string]string{"greeting": "hello"}})
	require.NoError(tb, err)
	_, err = d.CreateSecret(ctx, &v1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "churn", Namespace: "default"}, StringData: map[string]string{"token": "s3cret"}})
	require.NoError(tb, err)
	return &churnDaemon{fake: fake, a: a, d: d}
}

// churnPod is the soak's mix: probed pods with a ConfigMap and a Secret
// volume, plain pods and crash-looping pods; each is done once it is ready
// (probed, plain) or restarted once (crash).
func churnPod(name string, kind int) (*v1.Pod, func(*v1.Pod) bool) {
	p := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name}}
	c := v1.Container{Name: "app", Image: "reg.local/app:1"}
	ready := func(p *v1.Pod) bool {
		for _, cs := range p.Status.ContainerStatuses {
			if cs.Ready {
				return true
			}
		}
		return false
	}
	switch kind % 3 {
	case 0:
		probe := &v1.Probe{ProbeHandler: v1.ProbeHandler{Exec: &v1.ExecAction{Command: []string{"true"}}}, PeriodSeconds: 1}
		c.LivenessProbe, c.ReadinessProbe = probe, probe.DeepCopy()
		c.Ports = []v1.ContainerPort{{ContainerPort: 80}}
		p.Spec.Volumes = []v1.Volume{
			{Name: "cm", VolumeSource: v1.VolumeSource{ConfigMap: &v1.ConfigMapVolumeSource{LocalObjectReference: v1.LocalObjectReference{Name: "churn"}}}},
			{Name: "sec", VolumeSource: v1.VolumeSource{Secret: &v1.SecretVolumeSource{SecretName: "churn"}}},
		}
		c.VolumeMounts = []v1.VolumeMount{{Name: "cm", MountPath: "/etc/cm"}, {Name: "sec", MountPath: "/etc/sec"}}
	case 1:
	case 2:
		c.Name = "crash"
		p.Spec.Containers = []v1.Container{c}
		return p, func(p *v1.Pod) bool {
			return len(p.Status.ContainerStatuses) == 1 && p.Status.ContainerStatuses[0].RestartCount >= 1
		}
	}
	p.Spec.Containers = []v1.Container{c}
	return p, ready
}

// churn creates, runs and deletes n pods through the daemon's API, inFlight
// at a time, and waits until every one is gone.
func (c *churnDaemon) churn(tb testing.TB, prefix string, n, inFlight int) {
	tb.Helper()
	ctx := context.Background()
	var next sync.Mutex
	i := 0
	var wg sync.WaitGroup
	errs := make(chan error, inFlight)
	for range inFlight {
		wg.Go(func() {
			for {
				next.Lock()
				k := i
				i++
				next.Unlock()
				if k >= n {
					return
				}
				if err := c.cycle(ctx, fmt.Sprintf("%s-%d", prefix, k), k); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		tb.Fatal(err)
	}
	// The fakes' own call logs grow with every call: not the daemon's.
	c.fake.Reset()
	c.fake.Runtime.Lock()
	c.fake.Runtime.Called = nil
	c.fake.Runtime.Unlock()
	c.fake.Images.Lock()
	c.fake.Images.Called = nil
	c.fake.Images.Unlock()
}

func (c *churnDaemon) cycle(ctx context.Context, name string, kind int) error {
	pod, done := churnPod(name, kind)
	created, err := c.d.CreatePod(ctx, pod)
	if err != nil {
		return fmt.Errorf("create %s: %w", name, err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		p, err := c.d.GetPod("default", name)
		if err == nil && done(p) {
			break
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s not done after 30s: %v", name, p.Status)
		}
		time.Sleep(10 * time.Millisecond)
	}
	zero := int64(0)
	if _, err := c.d.DeletePod(ctx, "default", name, &zero); err != nil {
		return fmt.Errorf("delete %s: %w", name, err)
	}
	if ch := c.a.PodDone(created.UID); ch != nil {
		select {
		case <-ch:
		case <-time.After(30 * time.Second):
			return fmt.Errorf("%s not gone 30s after its deletion", name)
		}
	}
	return nil
}

// inventory counts what the daemon keeps per pod: the watch hub's pods,
// prober_probe_total's series, back-off entries, workers, rejected pods,
// the prober's pods and cached termination messages.
func (c *churnDaemon) inventory(tb testing.TB) map[string]int {
	tb.Helper()
	out := map[string]int{}
	w, err := c.d.WatchPods(api.PodWatchOptions{})
	require.NoError(tb, err)
	out["watch hub pods"] = len(w.Events())
	w.Stop()
	mfs, err := c.a.MetricsRegisterer().(prometheus.Gatherer).Gather()
	require.NoError(tb, err)
	for _, mf := range mfs {
		out["series "+mf.GetName()] = len(mf.GetMetric())
	}
	maps.Copy(out, c.a.PodTables())
	return out
}

func liveHeap() uint64 {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

// TestDaemon_ChurnKeepsNothingPerPod churns pods through the daemon's API
// as the soak does (issue #29 item 11: a live heap that grew with the pods)
// and counts what the daemon keeps per pod once they are all gone: nothing
// may be left of them, whether in the watch hub, the metrics, the back-off
// tables, the termination message cache or the workers. (Before the fix,
// prober_probe_total kept a series of 6 labels, about 1 KiB, per probed pod
// ever seen.) The bounded caches, which fill up and then stop growing (the
// watch history of api.PodWatchHistory events), are not counted here.
func TestDaemon_ChurnKeepsNothingPerPod(t *testing.T) {
	c := newChurnDaemon(t)
	c.churn(t, "churn", 60, 20)
	got := c.inventory(t)
	perPod := map[string]int{"series prober_probe_total": 0} // no series: no family
	for k, v := range got {
		if strings.HasPrefix(k, "series ") && k != "series prober_probe_total" {
			continue // node-wide series: one each, however many pods
		}
		perPod[k] = v
	}
	require.Equal(t, map[string]int{
		"watch hub pods":            0,
		"series prober_probe_total": 0,
		"crash back-off entries":    0,
		"image back-off entries":    0,
		"workers":                   0,
		"rejected":                  0,
		"restartAfterTeardown":      0,
		"termination messages":      0,
	}, perPod, "kept after 60 pods (20 of them probed) were created, run and deleted")
}

// BenchmarkDaemon_ChurnHeap reports the daemon's live heap growth per pod
// created, run and deleted (the soak's mix, 100 pods per iteration, 20 at
// a time) after a warm-up that fills the bounded caches: a leak per pod
// shows as a steady live-B/pod; a bounded cache as a figure that falls
// with -benchtime.
func BenchmarkDaemon_ChurnHeap(b *testing.B) {
	c := newChurnDaemon(b)
	c.churn(b, "warm", 100, 20)
	h0 := liveHeap()
	n := 0
	for i := 0; b.Loop(); i++ {
		c.churn(b, fmt.Sprintf("churn%d", i), 100, 20)
		n += 100
	}
	b.ReportMetric((float64(liveHeap())-float64(h0))/float64(n), "live-B/pod")
}
