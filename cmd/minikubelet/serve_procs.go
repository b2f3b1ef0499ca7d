package main

import (
	"context"
	"fmt"
	"log/slog"
	"runtime"
	"syscall"
	"time"
)

// The daemon runs its Go code on one processor while it is quiet, and on
// all of them (Go's own GOMAXPROCS) while it is busy, unless the user set
// GOMAXPROCS.
//
// Why one: the agent's work is waiting on the runtime, the probes' sockets
// and the API server. With several processors, each of the probes'
// quarter-second wake-ups (55 goroutines with 110 pods) woke idle threads
// that spun looking for work and handed goroutines between them. make
// bench, manifest-steady, 110 pods with two probes each on 2 cores, one
// binary in the same session: 7.28 % of a core (1.93 x the probe floor)
// with GOMAXPROCS=2, 5.92 % (1.42 x) and 1.2 MiB less RSS with 1.
//
// Why not always one: a burst (250 pods at once, a restart adopting a
// node's pods, a cluster's informers filling) can keep one processor
// busy, and goroutines would then queue behind each other. The governor
// samples the process's CPU time every procsPeriod: from one processor it
// goes to all of them when a period used more than procsBusy of a core,
// and back to one after procsQuietPeriods periods in a row under
// procsQuiet (the hysteresis keeps it from flapping at the edge). System
// calls count as busy too: they are what a busy agent spends on.
const (
	procsPeriod       = time.Second
	procsBusy         = 0.5
	procsQuiet        = 0.25
	procsQuietPeriods = 10
)

// procsGovernor sets GOMAXPROCS from the process's recent CPU use.
type procsGovernor struct {
	// max is the GOMAXPROCS Go chose (the CPUs, or the cgroup's limit).
	max int
	// cpu returns the process's CPU time (user and system) so far.
	cpu func() time.Duration
	// set is runtime.GOMAXPROCS.
	set func(int) int
	// logger gets a debug line at each change.
	logger *slog.Logger

	// cur is the GOMAXPROCS set last; quiet counts the quiet periods in a
	// row while cur is max.
	cur, quiet int
	// last is cpu() at the previous sample.
	last time.Duration
}

// newProcsGovernor sets one processor and returns the governor, or nil
// when the user set GOMAXPROCS or Go chose one processor anyway.
func newProcsGovernor(getenv func(string) string, logger *slog.Logger) *procsGovernor {
	if getenv("GOMAXPROCS") != "" {
		return nil
	}
	g := &procsGovernor{max: runtime.GOMAXPROCS(0), cpu: processCPU, set: runtime.GOMAXPROCS, logger: logger}
	if g.max <= 1 {
		return nil
	}
	g.start()
	return g
}

// start sets one processor and takes the first sample.
func (g *procsGovernor) start() {
	g.set(1)
	g.cur, g.last = 1, g.cpu()
}

// run samples every period until ctx is done, then restores Go's choice.
func (g *procsGovernor) run(ctx context.Context, period time.Duration) {
	t := time.NewTicker(period)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			g.set(g.max)
			return
		case <-t.C:
			g.sample(period)
		}
	}
}

// sample takes one period's CPU time and changes GOMAXPROCS when the
// period calls for it.
func (g *procsGovernor) sample(period time.Duration) {
	now := g.cpu()
	used := float64(now-g.last) / float64(period)
	g.last = now
	switch {
	case g.cur == 1 && used > procsBusy:
		g.change(g.max, used)
	case g.cur != 1 && used < procsQuiet:
		g.quiet++
		if g.quiet >= procsQuietPeriods {
			g.change(1, used)
		}
	case g.cur != 1:
		g.quiet = 0
	}
}

// change sets GOMAXPROCS to n.
func (g *procsGovernor) change(n int, used float64) {
	if g.logger != nil {
		g.logger.Debug("GOMAXPROCS changed", "from", g.cur, "to", n, "cpu", fmt.Sprintf("%.2f of a core", used))
	}
	g.cur, g.quiet = n, 0
	g.set(n)
}

// processCPU is the process's user and system time so far.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
