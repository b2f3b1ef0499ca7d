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

// fakeProcs is a governor over a CPU clock and GOMAXPROCS of its own.
func fakeProcs(max int) (*procsGovernor, *time.Duration, *[]int) {
	var cpu time.Duration
	var sets []int
	g := &procsGovernor{max: max, cpu: func() time.Duration { return cpu }, set: func(n int) int { sets = append(sets, n); return 0 }}
	g.start()
	return g, &cpu, &sets
}

// One processor while quiet; all of them from the first busy period; one
// again only after procsQuietPeriods quiet periods in a row.
func TestProcsGovernor(t *testing.T) {
	g, cpu, sets := fakeProcs(4)
	require.Equal(t, []int{1}, *sets, "starts on one processor")
	period := time.Second
	use := func(frac float64) {
		*cpu += time.Duration(frac * float64(period))
		g.sample(period)
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

// The user's GOMAXPROCS wins: no governor, Go's setting untouched.
func TestNewProcsGovernor_UserChoiceWins(t *testing.T) {
	old := runtime.GOMAXPROCS(3)
	defer runtime.GOMAXPROCS(old)
	g := newProcsGovernor(func(k string) string {
		if k == "GOMAXPROCS" {
			return "3"
		}
		return ""
	}, nil)
	assert.Nil(t, g)
	assert.Equal(t, 3, runtime.GOMAXPROCS(0))

	g = newProcsGovernor(func(string) string { return "" }, slog.New(slog.DiscardHandler))
	require.NotNil(t, g)
	assert.Equal(t, 1, runtime.GOMAXPROCS(0), "the default starts on one processor")
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	g.run(ctx, time.Hour)
	assert.Equal(t, 3, runtime.GOMAXPROCS(0), "run restores Go's choice when it ends")
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
