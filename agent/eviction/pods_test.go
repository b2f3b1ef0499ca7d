package eviction

import (
	"context"
	"errors"
	"log/slog"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	testclock "k8s.io/utils/clock/testing"

	"github.com/minikubelet/minikubelet/agent/source"
)

// Evictable leaves out stopping pods, terminal phases and critical pods,
// and sorts the rest by UID.
func TestEvictable(t *testing.T) {
	pod := func(name string) *v1.Pod { return testPod(name, nil, nil) }
	static := pod("static")
	static.Annotations = map[string]string{source.AnnotationConfigSource: source.SourceFile}
	b, a := pod("b"), pod("a")
	got := Evictable([]PodState{
		{Pod: b, Phase: v1.PodRunning},
		{Pod: pod("terminating"), Phase: v1.PodRunning, Stopping: true},
		{Pod: pod("done"), Phase: v1.PodSucceeded},
		{Pod: pod("failed"), Phase: v1.PodFailed},
		{Pod: static, Phase: v1.PodRunning},
		{Pod: a, Phase: v1.PodPending},
	})
	assert.Equal(t, []*v1.Pod{a, b}, got)
	assert.Empty(t, Evictable(nil))
}

// Without eviction enabled (a nil manager) every pod is admitted, the
// node reports no pressure and the loop returns at once.
func TestManager_Nil(t *testing.T) {
	var m *Manager
	m.Run(context.Background())
	reason, msg := m.Admit(testPod("be", nil, nil))
	assert.Empty(t, reason)
	assert.Empty(t, msg)
	mem, disk, pid, ok := m.NodePressure()
	assert.False(t, mem || disk || pid || ok)
}

// NodePressure follows the pressure conditions.
func TestManager_NodePressure(t *testing.T) {
	m, _, st, _, _ := newTestManager(t, "memory.available<100Mi", "", "")
	mem, disk, pid, ok := m.NodePressure()
	assert.Equal(t, []bool{false, false, false, true}, []bool{mem, disk, pid, ok})
	st.set(SignalMemoryAvailable, 50*mi, 4096*mi)
	m.Synchronize(context.Background())
	mem, disk, pid, ok = m.NodePressure()
	assert.Equal(t, []bool{true, false, false, true}, []bool{mem, disk, pid, ok})
}

// walkingStats is a StatsProvider that walks the pods' files
// (WalkConfigurer).
type walkingStats struct {
	fakeStats
	period, cyclePeriod time.Duration
	err                 error
}

func (w *walkingStats) ConfigureWalks(period, cyclePeriod time.Duration, _ prometheus.Registerer) error {
	w.period, w.cyclePeriod = period, cyclePeriod
	return w.err
}

// NewManager configures a walking stats provider's walks with the
// configuration's periods, defaults set, and fails with it.
func TestNewManager_ConfiguresWalks(t *testing.T) {
	clk := testclock.NewFakeClock(time.Now())
	st := &walkingStats{}
	_, err := NewManager(Config{Stats: st, Period: 5 * time.Second}, &fakePods{}, clk, slog.New(slog.DiscardHandler), prometheus.NewRegistry())
	require.NoError(t, err)
	assert.Equal(t, DefaultVolumeStatsAggPeriod, st.period)
	assert.Equal(t, 5*time.Second, st.cyclePeriod)

	st.err = errors.New("registered twice")
	_, err = NewManager(Config{Stats: st}, &fakePods{}, clk, slog.New(slog.DiscardHandler), prometheus.NewRegistry())
	require.ErrorIs(t, err, st.err)
}
