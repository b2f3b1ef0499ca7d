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
// of its own; Go's default is max. It does not trim, and reads no
// RssFile.
func fakeProcs(max int) (g *procsGovernor, cpu *time.Duration, wall *time.Time, sets *[]int) {
	cpu, wall, sets = new(time.Duration), new(time.Time), new([]int)
	*wall = time.Unix(1000, 0)
	g = &procsGovernor{
		cpu:     func() time.Duration { return *cpu },
		now:     func() time.Time { return *wall },
		procs:   true,
		rssFile: func() int64 { return -1 },
		one:     func() { *sets = append(*sets, 1) },
		all:     func() int { *sets = append(*sets, max); return max },
	}
	g.start()
	return g, cpu, wall, sets
}

// The code trim comes after procsQuietPeriods quiet periods in a row that
// follow the start or a period that was not quiet, once each time; only a
// trim after a period that was not quiet evicts (without RssFile, the
// CPU alone counts). A governor that leaves GOMAXPROCS alone still trims.
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

// A stretch of periods that maps procsTrimGrowth of file pages in all is
// a burst even when the CPU stays quiet (110 pods created from manifests:
// under a quarter of a core, 4.4 MiB mapped); a drop's own refaults, the
// steady loop's creep and a smaller stretch are not. Without RssFile only
// the CPU counts.
func TestProcsGovernor_TrimAfterMapping(t *testing.T) {
	g, cpu, wall, _ := fakeProcs(2)
	rss := int64(10 << 10)
	trims, evicts := 0, 0
	g.trim = func(evict bool) {
		trims++
		if evict {
			evicts++
			rss = 2 << 10
		} else {
			rss = 5 << 10
		}
	}
	g.rssFile = func() int64 { return rss }
	g.start()
	// Each period: CPU frac of a core, and RssFile grown by add KiB.
	use := func(frac float64, add int64, n int) {
		for range n {
			rss += add
			*cpu += time.Duration(frac * float64(time.Second))
			*wall = wall.Add(time.Second)
			g.sample()
		}
	}
	use(0.05, 12<<10, 1) // the start-up drop's refault
	use(0.05, 0, procsQuietPeriods-1)
	assert.Zero(t, trims, "not before procsQuietPeriods calm periods")
	use(0.05, 0, 1)
	require.Equal(t, 1, trims, "the start's drop")
	assert.Zero(t, evicts, "which only unmaps")

	use(0.05, 6<<10, 2) // its refault
	use(0.05, 64, 10*procsQuietPeriods)
	assert.Equal(t, 1, trims, "neither a drop's refault nor the steady creep is a burst")

	use(0.20, 300, 3) // a smaller stretch
	use(0.05, 0, 2*procsQuietPeriods)
	assert.Equal(t, 1, trims, "900 KiB mapped is not a burst")

	use(0.23, 3500, 1) // pods created
	use(0.15, 700, 3)
	use(0.05, 0, procsQuietPeriods-1)
	assert.Equal(t, 1, trims, "the drop waits for procsQuietPeriods calm periods")
	use(0.05, 0, 1)
	assert.Equal(t, 2, trims, "a burst of mapping")
	assert.Equal(t, 1, evicts, "evicts")

	use(0.05, 300, 5) // the eviction's refault, read page by page
	use(0.05, 100, 5*procsQuietPeriods)
	assert.Equal(t, 2, trims, "once")

	g.rssFile = func() int64 { return -1 }
	use(0.23, 0, 1)
	use(0.05, 0, 3*procsQuietPeriods)
	assert.Equal(t, 2, trims, "without RssFile, a quiet CPU is calm")
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
