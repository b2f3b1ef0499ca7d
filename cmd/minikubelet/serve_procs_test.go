package main

import (
	"context"
	"log/slog"
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// fakeProcs is a governor over a CPU clock, a wall clock and a GOMAXPROCS
// of its own; Go's default is max. It does not trim.
func fakeProcs(max int) (g *procsGovernor, cpu *time.Duration, wall *time.Time, sets *[]int) {
	cpu, wall, sets = new(time.Duration), new(time.Time), new([]int)
	*wall = time.Unix(1000, 0)
	g = &procsGovernor{
		cpu:   func() time.Duration { return *cpu },
		now:   func() time.Time { return *wall },
		procs: true,
		one:   func() { *sets = append(*sets, 1) },
		all:   func() int { *sets = append(*sets, max); return max },
	}
	g.start()
	return g, cpu, wall, sets
}

// The code trim comes after procsQuietPeriods quiet periods in a row that
// follow the start or a period that was not quiet, once each time; only a
// trim after a period that was not quiet evicts. A governor that leaves
// GOMAXPROCS alone still trims.
func TestProcsGovernor_Trim(t *testing.T) {
	for _, procs := range []bool{true, false} {
		g, cpu, wall, sets := fakeProcs(2)
		g.procs = procs
		trims, evicts := 0, 0
		g.trim = func(evict bool) {
			trims++
			if evict {
				evicts++
			}
		}
		g.start()
		use := func(frac float64, n int) {
			for range n {
				*cpu += time.Duration(frac * float64(time.Second))
				*wall = wall.Add(time.Second)
				g.sample()
			}
		}
		use(0.10, procsQuietPeriods-1)
		assert.Zero(t, trims, "not before procsQuietPeriods quiet periods")
		use(0.10, 1)
		assert.Equal(t, 1, trims, "after the start's quiet periods")
		assert.Zero(t, evicts, "the start's trim only unmaps")
		use(0.10, 3*procsQuietPeriods)
		assert.Equal(t, 1, trims, "once while it stays quiet")
		use(0.30, 1) // not quiet, not busy
		use(0.10, procsQuietPeriods-1)
		use(0.90, 1) // busy: the count starts over
		use(0.10, procsQuietPeriods-1)
		assert.Equal(t, 1, trims)
		use(0.10, 1)
		assert.Equal(t, 2, trims, "again after a busy stretch ended")
		assert.Equal(t, 1, evicts, "which evicts")
		use(0.10, 3*procsQuietPeriods)
		assert.Equal(t, 2, trims, "once while it stays quiet")
		if !procs {
			assert.Equal(t, []int{1}, *sets, "GOMAXPROCS untouched (fakeProcs's own start aside)")
		}
	}
}

// One processor while quiet; all of them from the first busy period; one
// again only after procsQuietPeriods quiet periods in a row.
func TestProcsGovernor(t *testing.T) {
	g, cpu, wall, sets := fakeProcs(4)
	require.Equal(t, []int{1}, *sets, "starts on one processor")
	period := time.Second
	use := func(frac float64) {
		*cpu += time.Duration(frac * float64(period))
		*wall = wall.Add(period)
		g.sample()
	}

	use(0.10)
	use(0.45)
	assert.Equal(t, []int{1}, *sets, "under half a core stays on one")
	use(0.60)
	assert.Equal(t, []int{1, 4}, *sets, "a busy period takes all")
	for range procsQuietPeriods - 1 {
		use(0.10)
	}
	use(0.30) // between the thresholds: not quiet, the count starts over
	for range procsQuietPeriods - 1 {
		use(0.10)
	}
	assert.Equal(t, []int{1, 4}, *sets, "back to one needs quiet periods in a row")
	use(0.10)
	assert.Equal(t, []int{1, 4, 1}, *sets, "after procsQuietPeriods quiet periods")
	use(0.20)
	assert.Equal(t, []int{1, 4, 1}, *sets)
}

// The CPU time is taken over the wall time since the last sample: 0.8 s
// of CPU over a late tick's 2 s is 0.4 of a core, not busy.
func TestProcsGovernor_LateTick(t *testing.T) {
	g, cpu, wall, sets := fakeProcs(2)
	*cpu += 800 * time.Millisecond
	*wall = wall.Add(2 * time.Second)
	g.sample()
	assert.Equal(t, []int{1}, *sets)
	*cpu += 800 * time.Millisecond
	*wall = wall.Add(time.Second)
	g.sample()
	assert.Equal(t, []int{1, 2}, *sets)
}

// The environment's GOMAXPROCS wins: Go's setting untouched, while the
// governor still drops the binary's pages after bursts. Without it the
// daemon starts on one processor, and the governor's end hands GOMAXPROCS
// back to Go's default.
func TestNewProcsGovernor(t *testing.T) {
	t.Cleanup(runtime.SetDefaultGOMAXPROCS)
	runtime.GOMAXPROCS(3)
	g := newProcsGovernor(func(k string) string {
		if k == "GOMAXPROCS" {
			return "3"
		}
		return ""
	}, nil)
	assert.False(t, g.procs)
	assert.NotNil(t, g.trim)
	assert.Equal(t, 3, runtime.GOMAXPROCS(0))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	g.run(ctx, time.Hour)
	assert.Equal(t, 3, runtime.GOMAXPROCS(0), "its end leaves the environment's GOMAXPROCS")

	runtime.SetDefaultGOMAXPROCS()
	def := runtime.GOMAXPROCS(0)
	runtime.GOMAXPROCS(2) // a machine of one CPU gets no governor
	g = newProcsGovernor(func(string) string { return "" }, slog.New(slog.DiscardHandler))
	assert.True(t, g.procs)
	assert.Equal(t, 1, runtime.GOMAXPROCS(0), "the default starts on one processor")
	g.run(ctx, time.Hour)
	assert.Equal(t, def, runtime.GOMAXPROCS(0), "run hands GOMAXPROCS back to Go's default when it ends")
}

// processCPU reads this process's CPU time, which grows with work.
func TestProcessCPU(t *testing.T) {
	before := processCPU()
	deadline := time.Now().Add(50 * time.Millisecond)
	for n := 0; time.Now().Before(deadline); n++ {
		_ = n * n
	}
	assert.Greater(t, processCPU(), before)
}

// serve's governor runs until the stop it deferred, which waits for it
// and leaves Go's default behind.
func TestStartProcsGovernor(t *testing.T) {
	t.Cleanup(runtime.SetDefaultGOMAXPROCS)
	t.Setenv("GOMAXPROCS", "")
	runtime.SetDefaultGOMAXPROCS()
	def := runtime.GOMAXPROCS(0)
	runtime.GOMAXPROCS(2) // a machine of one CPU gets no governor
	stop := startProcsGovernor(context.Background(), nil)
	assert.Equal(t, 1, runtime.GOMAXPROCS(0))
	stop()
	assert.Equal(t, def, runtime.GOMAXPROCS(0))
}
