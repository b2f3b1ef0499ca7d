package ipamrepair

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	critesting "k8s.io/cri-api/pkg/apis/testing"
	testclock "k8s.io/utils/clock/testing"

	"github.com/minikubelet/minikubelet/cni"
)

// TestRepairIPLeaks drives the repair against a fake runtime and a temp
// host-local store: old reservations of unknown sandboxes go, live ones
// (any state) stay, and a young one is judged again after the settle time,
// kept when its sandbox appeared meanwhile (a RunPodSandbox in flight).
func TestRepairIPLeaks(t *testing.T) {
	tests := []struct {
		name string
		// appears makes the young reservation's sandbox appear during the
		// settle wait.
		appears bool
		want    []string
		left    []string
	}{
		{name: "young leak released after settling", want: []string{"10.89.0.4", "10.89.0.9"}, left: []string{"10.89.0.2", "10.89.0.3"}},
		{name: "young reservation of an in-flight sandbox kept", appears: true, want: []string{"10.89.0.4"}, left: []string{"10.89.0.2", "10.89.0.3", "10.89.0.9"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t)
			ctx := context.Background()
			ready, err := h.fake.Runtime.RunPodSandbox(ctx, &runtimeapi.PodSandboxConfig{Metadata: &runtimeapi.PodSandboxMetadata{Name: "a", Uid: "u1", Namespace: "default"}}, "")
			require.NoError(t, err)
			notReady, err := h.fake.Runtime.RunPodSandbox(ctx, &runtimeapi.PodSandboxConfig{Metadata: &runtimeapi.PodSandboxMetadata{Name: "b", Uid: "u2", Namespace: "default"}}, "")
			require.NoError(t, err)
			require.NoError(t, h.fake.Runtime.StopPodSandbox(ctx, notReady))

			dir := cni.HostLocalDir(h.cfg.Network)
			require.NoError(t, os.MkdirAll(dir, 0o755))
			old := h.clock.Now().Add(-time.Hour)
			for ip, r := range map[string]struct {
				id      string
				written time.Time
			}{
				"10.89.0.2": {ready, old},
				"10.89.0.3": {notReady, old},
				"10.89.0.4": {"deadbeef00", old},
				"10.89.0.9": {"inflight00", h.clock.Now().Add(-time.Second)},
			} {
				path := filepath.Join(dir, ip)
				require.NoError(t, os.WriteFile(path, []byte(r.id+"\r\neth0"), 0o600))
				require.NoError(t, os.Chtimes(path, r.written, r.written))
			}

			type result struct {
				ips []ReleasedIP
				err error
			}
			done := make(chan result, 1)
			go func() {
				ips, err := RepairIPLeaks(ctx, h.cfg, DaemonIPRepair)
				done <- result{ips, err}
			}()
			require.Eventually(t, h.clock.HasWaiters, 5*time.Second, time.Millisecond, "the repair waits for the young reservation to settle")
			if tt.appears {
				// The in-flight RunPodSandbox completes: the fake names
				// sandboxes itself, so rewrite the reservation's owner.
				id, err := h.fake.Runtime.RunPodSandbox(ctx, &runtimeapi.PodSandboxConfig{Metadata: &runtimeapi.PodSandboxMetadata{Name: "c", Uid: "u3", Namespace: "default"}}, "")
				require.NoError(t, err)
				path := filepath.Join(dir, "10.89.0.9")
				require.NoError(t, os.WriteFile(path, []byte(id+"\r\neth0"), 0o600))
				w := h.clock.Now().Add(-time.Second)
				require.NoError(t, os.Chtimes(path, w, w))
			}
			h.clock.Step(ipamSettle)
			var r result
			select {
			case r = <-done:
			case <-time.After(5 * time.Second):
				t.Fatal("repair did not finish after the settle time")
			}
			require.NoError(t, r.err)
			var got []string
			for _, ip := range r.ips {
				got = append(got, ip.IP)
			}
			assert.Equal(t, tt.want, got)
			left, err := cni.HostLocalReservations(h.cfg.Network)
			require.NoError(t, err)
			var leftIPs []string
			for ip := range left {
				leftIPs = append(leftIPs, ip)
			}
			assert.ElementsMatch(t, tt.left, leftIPs)
			assert.Contains(t, ReleasedIPs(r.ips), "10.89.0.4 (sandbox deadbeef00)")
		})
	}
}

func TestRepairIPLeaks_NoStore(t *testing.T) {
	h := newHarness(t)
	ips, err := RepairIPLeaks(context.Background(), h.cfg, DaemonIPRepair)
	require.NoError(t, err)
	assert.Empty(t, ips)
	assert.Empty(t, h.fake.Runtime.GetCalls(), "nothing reserved: the runtime is not even asked")
}

// TestRepairIPLeaks_Foreground: a foreground run releases only reservations
// older than ForegroundIPRepair.MinAge and never waits for younger ones,
// which may belong to another client's RunPodSandbox in flight.
func TestRepairIPLeaks_Foreground(t *testing.T) {
	h := newHarness(t)
	dir := cni.HostLocalDir(h.cfg.Network)
	require.NoError(t, os.MkdirAll(dir, 0o755))
	for ip, age := range map[string]time.Duration{
		"10.89.0.4": time.Hour,        // leaked long ago: released
		"10.89.0.5": 30 * time.Second, // another client's sandbox in flight, maybe: kept
	} {
		path := filepath.Join(dir, ip)
		require.NoError(t, os.WriteFile(path, []byte("unknown"+ip+"\r\neth0"), 0o600))
		w := h.clock.Now().Add(-age)
		require.NoError(t, os.Chtimes(path, w, w))
	}
	ips, err := RepairIPLeaks(context.Background(), h.cfg, ForegroundIPRepair)
	require.NoError(t, err)
	require.Len(t, ips, 1)
	assert.Equal(t, "10.89.0.4", ips[0].IP)
	left, err := cni.HostLocalReservations(h.cfg.Network)
	require.NoError(t, err)
	assert.Contains(t, left, "10.89.0.5")
	assert.NotContains(t, left, "10.89.0.4")
}

// harness is the repair tests' runtime, clock and pod network (the
// engine's test harness, cut down to what the repair reads).
type harness struct {
	fake struct {
		Runtime *critesting.FakeRuntimeService
	}
	clock *testclock.FakeClock
	cfg   Config
}

func newHarness(t *testing.T) *harness {
	h := &harness{clock: testclock.NewFakeClock(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))}
	h.fake.Runtime = critesting.NewFakeRuntimeService()
	h.cfg = Config{Runtime: h.fake.Runtime, Network: repairNetwork(t), Clock: h.clock, Logger: slog.New(slog.DiscardHandler)}
	return h
}

// repairNetwork is the repair tests' pod network: private dirs only (the
// engine's testNetwork: a unit test must not touch the host's CNI dirs).
func repairNetwork(t *testing.T) cni.Config {
	n := cni.Config{ConfDir: t.TempDir(), BinDirs: []string{t.TempDir()}, DataDir: t.TempDir(), CacheDir: t.TempDir()}
	n.Name = "repairnet"
	return n.WithDefaults()
}
