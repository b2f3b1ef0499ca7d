package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
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
// procsQuiet, a quarter of a core (the hysteresis keeps it from flapping
// at the edge). System calls count as busy too: they are what a busy
// agent spends on. Going back to all processors hands GOMAXPROCS to Go
// (runtime.SetDefaultGOMAXPROCS), which then follows the CPUs and the
// cgroup's limit again, as it does when the governor ends.
//
// The same samples time dropping the binary's pages again
// (dropBinaryPages). A drop waits for procsQuietPeriods calm periods in a
// row: quiet, and mapping less than procsTrimStep of file pages (RssFile).
// After the start, the daemon only unmaps them, and the quiet loop maps
// back what it runs. After a burst it evicts them from the page cache
// too (dropBinaryPages says why). A burst is a period that was not quiet,
// or a stretch of periods that mapped at least procsTrimGrowth of file
// pages in all, not counting a drop's own refaults (a stretch that starts
// within procsQuietPeriods periods of it). CPU alone missed bursts: 110
// pods created from manifests kept the daemon under a quarter of a core
// (0.23 at most) while its RssFile grew by 4.4 MiB of code the quiet loop
// never runs again.
const (
	procsPeriod       = time.Second
	procsBusy         = 0.5
	procsQuiet        = 0.25
	procsQuietPeriods = 10
	// In KiB: 64 KiB a period is the steady loop's creep (fault-around,
	// code run once a minute); one pod created maps hundreds.
	procsTrimStep   = 256
	procsTrimGrowth = 2048
)

// procsGovernor sets GOMAXPROCS from the process's recent CPU use.
type procsGovernor struct {
	// cpu returns the process's CPU time (user and system) so far; now
	// the wall clock.
	cpu func() time.Duration
	now func() time.Time
	// one sets GOMAXPROCS to 1 (runtime.GOMAXPROCS). all hands it back
	// to Go (runtime.SetDefaultGOMAXPROCS: the CPUs, or the cgroup's
	// limit, which Go then follows again as it changes) and returns it.
	one func()
	all func() int
	// procs is whether the governor sets GOMAXPROCS at all.
	procs bool
	// trim drops the binary's read-only pages (dropBinaryPages),
	// evicting them too when evict is set, or is nil. rssFile returns the
	// process's resident file pages in KiB, -1 when it cannot (then only
	// the CPU tells a burst).
	trim    func(evict bool)
	rssFile func() int64
	// logger gets a debug line at each change.
	logger *slog.Logger

	// cur is the GOMAXPROCS set last; quiet counts the quiet periods in a
	// row (a busy period that moved cur off 1 reset it too).
	cur, quiet int
	// trimDue is set at start and by a burst, and cleared by the trim
	// that follows procsQuietPeriods calm periods; trimEvict is set by a
	// burst, with it. calm counts the calm periods in a row; sinceTrim
	// the periods since the last trim.
	trimDue, trimEvict bool
	calm, sinceTrim    int
	// lastRSS is the previous sample's RssFile; mapped is what the
	// current stretch of periods mapping procsTrimStep or more mapped,
	// and refault whether that stretch started within procsQuietPeriods
	// periods of a trim.
	lastRSS, mapped int64
	refault         bool
	// lastCPU and lastAt are the previous sample.
	lastCPU time.Duration
	lastAt  time.Time
}

// newProcsGovernor sets one processor and returns the governor. It leaves
// GOMAXPROCS alone when the environment sets it (any value: Go's to judge)
// or Go chose one processor anyway; it drops the binary's pages after
// bursts either way.
func newProcsGovernor(getenv func(string) string, logger *slog.Logger) *procsGovernor {
	g := &procsGovernor{
		cpu: processCPU, now: time.Now, logger: logger, rssFile: rssFileKiB,
		procs: getenv("GOMAXPROCS") == "" && runtime.GOMAXPROCS(0) > 1,
		one:   func() { runtime.GOMAXPROCS(1) },
		all:   func() int { runtime.SetDefaultGOMAXPROCS(); return runtime.GOMAXPROCS(0) },
		trim: func(evict bool) {
			after := "the start"
			if evict {
				after = "a busy stretch"
			}
			dropBinaryPagesLogged(logger, after, evict)
		},
	}
	g.start()
	return g
}

// startProcsGovernor starts the governor and returns what stops it and
// waits for it to end (serve defers it: the governor ends with the
// command, whatever the return).
func startProcsGovernor(ctx context.Context, logger *slog.Logger) (stop func()) {
	g := newProcsGovernor(os.Getenv, logger)
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		g.run(ctx, procsPeriod)
	}()
	return func() {
		cancel()
		<-done
	}
}

// start sets one processor (when it governs them) and takes the first
// sample.
func (g *procsGovernor) start() {
	if g.procs {
		g.one()
		g.cur = 1
	}
	g.trimDue = g.trim != nil
	g.lastRSS = g.rssFile()
	g.lastCPU, g.lastAt = g.cpu(), g.now()
}

// run samples every period until ctx is done, then hands GOMAXPROCS back
// to Go.
func (g *procsGovernor) run(ctx context.Context, period time.Duration) {
	t := time.NewTicker(period)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			if g.procs {
				g.all()
			}
			return
		case <-t.C:
			g.sample()
		}
	}
}

// sample takes the CPU time since the last sample, over the wall time
// since then (a late tick covers more), and changes GOMAXPROCS when it
// calls for it.
func (g *procsGovernor) sample() {
	cpu, at := g.cpu(), g.now()
	elapsed := at.Sub(g.lastAt)
	used := 0.0
	if elapsed > 0 {
		used = float64(cpu-g.lastCPU) / float64(elapsed)
	}
	g.lastCPU, g.lastAt = cpu, at
	if used < procsQuiet {
		g.quiet++
	} else {
		g.quiet = 0
	}
	g.sampleTrim(used < procsQuiet)
	if !g.procs {
		return
	}
	switch {
	case g.cur == 1 && used > procsBusy:
		g.changed(g.all(), used)
	case g.cur != 1 && g.quiet >= procsQuietPeriods:
		g.one()
		g.changed(1, used)
	}
}

// sampleTrim counts a period toward the next drop of the binary's pages,
// and drops them when it is due.
func (g *procsGovernor) sampleTrim(quiet bool) {
	if g.trim == nil {
		return
	}
	g.sinceTrim++
	rss := g.rssFile()
	step := int64(0)
	if rss >= 0 && g.lastRSS >= 0 {
		step = rss - g.lastRSS
	}
	g.lastRSS = rss
	if step >= procsTrimStep {
		if g.mapped == 0 {
			g.refault = g.sinceTrim <= procsQuietPeriods
		}
		g.mapped += step
	} else {
		if g.mapped >= procsTrimGrowth && !g.refault {
			g.trimDue, g.trimEvict = true, true
		}
		g.mapped = 0
	}
	switch {
	case !quiet:
		g.calm, g.trimDue, g.trimEvict = 0, true, true
	case g.mapped > 0:
		g.calm = 0
	default:
		g.calm++
	}
	if g.trimDue && g.calm >= procsQuietPeriods {
		g.trim(g.trimEvict)
		g.trimDue, g.trimEvict, g.sinceTrim = false, false, 0
	}
}

// changed records that GOMAXPROCS is now n.
func (g *procsGovernor) changed(n int, used float64) {
	if g.logger != nil {
		g.logger.Debug("GOMAXPROCS changed", "from", g.cur, "to", n, "cpu", fmt.Sprintf("%.2f of a core", used))
	}
	g.cur = n
}

// processCPU is the process's user and system time so far.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
