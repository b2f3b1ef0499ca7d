package agent

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	testclock "k8s.io/utils/clock/testing"

	"github.com/minikubelet/minikubelet/agent/fingerprint"
	"github.com/minikubelet/minikubelet/agent/podcgroup"
	"github.com/minikubelet/minikubelet/agent/podspec"
	"github.com/minikubelet/minikubelet/cri"
	"github.com/minikubelet/minikubelet/cri/critest"
)

// baselineRelister is the relister as it was before it kept its buffers
// between relists (a map of part slices, a string per part and a new map of
// fingerprints every relist): the reference TestRelister_SameAsBaseline
// compares the relister with, and the baseline of BenchmarkRelist.
type baselineRelister struct {
	a    *Agent
	last map[types.UID]string
}

func (r *baselineRelister) relist(ctx context.Context) ([]types.UID, error) {
	sel := map[string]string{podspec.LabelManagedBy: podspec.ManagedByValue}
	sbs, err := r.a.runtime.ListPodSandbox(ctx, &runtimeapi.PodSandboxFilter{LabelSelector: sel})
	if err != nil {
		return nil, fmt.Errorf("list sandboxes: %w", err)
	}
	ctrs, err := r.a.runtime.ListContainers(ctx, &runtimeapi.ContainerFilter{LabelSelector: sel})
	if err != nil {
		return nil, fmt.Errorf("list containers: %w", err)
	}
	parts := map[types.UID][]string{}
	for _, sb := range sbs {
		uid := types.UID(sb.Labels[podspec.LabelPodUID])
		parts[uid] = append(parts[uid], fingerprint.Sandbox(sb.Id, sb.State))
	}
	r.a.podCgroups().UpdateBurstableTier(podcgroup.BurstableMilli(sbs))
	ready := 0
	for _, sb := range sbs {
		if sb.State == runtimeapi.PodSandboxState_SANDBOX_READY {
			ready++
		}
	}
	states := map[string]int{}
	for _, c := range ctrs {
		states[strings.ToLower(strings.TrimPrefix(c.State.String(), "CONTAINER_"))]++
	}
	for _, s := range []string{"created", "running", "exited", "unknown"} {
		r.a.metrics.RunningContainers.WithLabelValues(s).Set(float64(states[s]))
	}
	for _, c := range ctrs {
		uid := types.UID(c.Labels[podspec.LabelPodUID])
		parts[uid] = append(parts[uid], fingerprint.Container(c.Id, c.State))
	}
	now := make(map[types.UID]string, len(parts))
	for uid, p := range parts {
		now[uid] = fingerprint.Join(p)
	}
	r.a.mu.Lock()
	defer r.a.mu.Unlock()
	r.a.readySandboxes = ready
	r.a.lastRelist = r.a.clock.Now()
	var changed []types.UID
	report := func(uid types.UID, fp string) bool {
		w, ok := r.a.workers[uid]
		if !ok {
			changed = append(changed, uid)
			return true
		}
		w.mu.Lock()
		busy, seen := w.busy, w.observed == fp
		w.mu.Unlock()
		if busy {
			return false
		}
		if !seen {
			changed = append(changed, uid)
		}
		return true
	}
	for uid, fp := range now {
		if r.last[uid] != fp && !report(uid, fp) {
			now[uid] = r.last[uid]
		}
	}
	for uid, fp := range r.last {
		if _, ok := now[uid]; !ok && !report(uid, "") {
			now[uid] = fp
		}
	}
	r.last = now
	return changed, nil
}

func TestContainerStateNames(t *testing.T) {
	assert.Len(t, containerStateNames, len(runtimeapi.ContainerState_name))
	for s, name := range containerStateNames {
		assert.Equal(t, "CONTAINER_"+strings.ToUpper(name), runtimeapi.ContainerState(s).String())
	}
}

// TestRelister_SameAsBaseline drives the relister and the baseline through
// the same random runtime history (pods with several sandboxes and
// containers appearing, changing state and disappearing; workers busy,
// idle, having seen the change or not, forgotten) and requires the same
// pods reported at every relist and the same worker wake-ups, the same
// memory of fingerprints, and the same gauges.
func TestRelister_SameAsBaseline(t *testing.T) {
	for seed := range uint64(20) {
		t.Run(strconv.FormatUint(seed, 10), func(t *testing.T) {
			ctx := context.Background()
			rng := rand.New(rand.NewPCG(seed, 7))
			fake := critest.New()
			a := New(Config{NodeName: "node-1", RootDir: t.TempDir(), PodLogDir: t.TempDir(), ResolvConf: "/nonexistent", Network: testNetwork(t), HostIPs: []string{"192.0.2.1"}},
				Deps{Runtime: fake.Runtime, Images: fake.Images, Clock: testclock.NewFakeClock(time.Unix(0, 0))})
			r, base := newRelister(a), &baselineRelister{a: a, last: map[types.UID]string{}}
			uids := []types.UID{"pod-a", "pod-b", "pod-c", "pod-d", ""}
			var sandboxes = map[types.UID][]string{}
			var containers = map[types.UID][]string{}
			attempt := uint32(0) // makes every object's ID unique
			for step := range 150 {
				// Change the runtime a little.
				for range rng.IntN(4) {
					uid := uids[rng.IntN(len(uids))]
					attempt++
					switch op := rng.IntN(6); {
					case op == 0 || len(sandboxes[uid]) == 0:
						id, err := fake.Runtime.RunPodSandbox(ctx, &runtimeapi.PodSandboxConfig{
							Metadata: &runtimeapi.PodSandboxMetadata{Name: string(uid) + "x", Namespace: "ns", Uid: string(uid), Attempt: attempt},
							Labels:   map[string]string{podspec.LabelManagedBy: podspec.ManagedByValue, podspec.LabelPodUID: string(uid)},
						}, "")
						require.NoError(t, err)
						sandboxes[uid] = append(sandboxes[uid], id)
					case op == 1:
						sb := sandboxes[uid][rng.IntN(len(sandboxes[uid]))]
						id, err := fake.Runtime.CreateContainer(ctx, sb, &runtimeapi.ContainerConfig{
							Metadata: &runtimeapi.ContainerMetadata{Name: "c", Attempt: attempt},
							Image:    &runtimeapi.ImageSpec{Image: "img"},
							Labels:   map[string]string{podspec.LabelManagedBy: podspec.ManagedByValue, podspec.LabelPodUID: string(uid)},
						}, nil)
						require.NoError(t, err)
						containers[uid] = append(containers[uid], id)
					case op == 2 && len(containers[uid]) > 0:
						id := containers[uid][rng.IntN(len(containers[uid]))]
						if rng.IntN(2) == 0 {
							_ = fake.Runtime.StartContainer(ctx, id)
						} else {
							require.NoError(t, fake.Runtime.StopContainer(ctx, id, 0))
						}
					case op == 3 && len(containers[uid]) > 0:
						i := rng.IntN(len(containers[uid]))
						require.NoError(t, fake.Runtime.RemoveContainer(ctx, containers[uid][i]))
						containers[uid] = slices.Delete(containers[uid], i, i+1)
					case op == 4:
						require.NoError(t, fake.Runtime.StopPodSandbox(ctx, sandboxes[uid][rng.IntN(len(sandboxes[uid]))]))
					case op == 5:
						for _, id := range containers[uid] {
							require.NoError(t, fake.Runtime.RemoveContainer(ctx, id))
						}
						for _, id := range sandboxes[uid] {
							require.NoError(t, fake.Runtime.RemovePodSandbox(ctx, id))
						}
						delete(containers, uid)
						delete(sandboxes, uid)
					}
				}
				// Change the workers a little: some have seen the
				// runtime, some are busy, some are gone.
				a.mu.Lock()
				for _, uid := range uids[:4] {
					w := a.workers[uid]
					switch rng.IntN(5) {
					case 0:
						delete(a.workers, uid)
						continue
					case 1:
						if w == nil {
							w = &podWorker{}
							a.workers[uid] = w
						}
					}
					if w == nil {
						continue
					}
					w.mu.Lock()
					w.busy = rng.IntN(3) == 0
					if rng.IntN(2) == 0 {
						w.observed = r.last[uid]
					}
					w.mu.Unlock()
				}
				a.mu.Unlock()

				got, err := r.relist(ctx)
				require.NoError(t, err)
				gotGauges := gaugeValues(t, a)
				want, err := base.relist(ctx)
				require.NoError(t, err)
				slices.Sort(got)
				slices.Sort(want)
				require.Equal(t, want, got, "step %d", step)
				require.Equal(t, base.last, r.last, "step %d", step)
				require.Equal(t, gaugeValues(t, a), gotGauges, "step %d", step)
			}
		})
	}
}

// gaugeValues reads the running-containers gauge per state.
func gaugeValues(t *testing.T, a *Agent) map[string]float64 {
	t.Helper()
	out := map[string]float64{}
	for _, s := range containerStateNames {
		m := &dto.Metric{}
		require.NoError(t, a.metrics.RunningContainers.WithLabelValues(s).Write(m))
		out[s] = m.GetGauge().GetValue()
	}
	return out
}

// listRuntime answers the relist's two lists with fixed objects, so that
// BenchmarkRelist measures the relister and not a fake runtime's copying.
type listRuntime struct {
	cri.Runtime
	sbs  []*runtimeapi.PodSandbox
	ctrs []*runtimeapi.Container
}

func (r *listRuntime) ListPodSandbox(context.Context, *runtimeapi.PodSandboxFilter) ([]*runtimeapi.PodSandbox, error) {
	return r.sbs, nil
}

func (r *listRuntime) ListContainers(context.Context, *runtimeapi.ContainerFilter) ([]*runtimeapi.Container, error) {
	return r.ctrs, nil
}

// BenchmarkRelist measures one relist in the steady state of 100 running
// pods (one sandbox and one container each, containerd's 64-hex IDs, every
// worker idle and up to date: nothing to report), by the relister and by the
// baseline (the relister before it kept its buffers), in the same run. The
// runtime's answers are fixed, so this is the relister's own work; with
// containerd, decoding its two answers costs more than this (see the
// README's Performance section).
func BenchmarkRelist(b *testing.B) {
	rt := &listRuntime{}
	fake := critest.New()
	a := New(Config{NodeName: "node-1", RootDir: b.TempDir(), PodLogDir: b.TempDir(), ResolvConf: "/nonexistent", Network: testNetwork(b), HostIPs: []string{"192.0.2.1"}},
		Deps{Runtime: rt, Images: fake.Images, Clock: testclock.NewFakeClock(time.Unix(0, 0))})
	hexID := func(kind byte, i int) string {
		return fmt.Sprintf("%c%063x", kind, i)
	}
	for i := range 100 {
		uid := fmt.Sprintf("%08x-0000-4000-8000-%012x", i, i)
		labels := map[string]string{podspec.LabelManagedBy: podspec.ManagedByValue, podspec.LabelPodUID: uid}
		rt.sbs = append(rt.sbs, &runtimeapi.PodSandbox{Id: hexID('s', i), State: runtimeapi.PodSandboxState_SANDBOX_READY, Labels: labels})
		rt.ctrs = append(rt.ctrs, &runtimeapi.Container{Id: hexID('c', i), State: runtimeapi.ContainerState_CONTAINER_RUNNING, Labels: labels})
		a.workers[types.UID(uid)] = &podWorker{observed: fingerprint.Join([]string{
			fingerprint.Sandbox(hexID('s', i), runtimeapi.PodSandboxState_SANDBOX_READY),
			fingerprint.Container(hexID('c', i), runtimeapi.ContainerState_CONTAINER_RUNNING),
		})}
	}
	ctx := context.Background()
	run := func(b *testing.B, relist func(context.Context) ([]types.UID, error)) {
		if _, err := relist(ctx); err != nil { // the first relist reports every pod
			b.Fatal(err)
		}
		b.ReportAllocs()
		b.ResetTimer()
		for range b.N {
			changed, err := relist(ctx)
			if err != nil || len(changed) != 0 {
				b.Fatal(changed, err)
			}
		}
	}
	b.Run("baseline", func(b *testing.B) {
		run(b, (&baselineRelister{a: a, last: map[types.UID]string{}}).relist)
	})
	b.Run("relister", func(b *testing.B) {
		run(b, newRelister(a).relist)
	})
}
