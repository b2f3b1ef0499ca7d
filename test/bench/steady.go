package main

// Scenario 3: the daemon's resident memory and CPU, read from /proc, over a
// window in which the bench does not call the daemon at all.

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// clockTicks is USER_HZ, the unit of utime and stime in /proc/PID/stat
// (100 on every Linux architecture Go supports).
const clockTicks = 100

// procCPU returns the process's utime+stime in seconds.
func procCPU(pid int) (float64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	return parseStatCPU(string(b))
}

// parseStatCPU reads utime and stime (fields 14 and 15) of a
// /proc/PID/stat line; the command (field 2) may hold spaces and
// parentheses, so fields are counted after its last ')'.
func parseStatCPU(stat string) (float64, error) {
	i := strings.LastIndexByte(stat, ')')
	if i < 0 {
		return 0, fmt.Errorf("malformed /proc stat line %q", stat)
	}
	f := strings.Fields(stat[i+1:])
	// f[0] is field 3 (state): utime is field 14, f[11].
	if len(f) < 13 {
		return 0, fmt.Errorf("malformed /proc stat line %q", stat)
	}
	u, err1 := strconv.ParseUint(f[11], 10, 64)
	s, err2 := strconv.ParseUint(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("malformed /proc stat line %q", stat)
	}
	return float64(u+s) / clockTicks, nil
}

// memory is a process's resident memory, MiB: VmRSS, and its anonymous
// part (heap, stacks: what the agent's code controls) apart from its
// file-backed part (mostly the binary's pages, which depend on the page
// cache as much as on the code).
type memory struct{ rss, anon, file float64 }

// procMemory reads the process's resident memory.
func procMemory(pid int) (memory, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return memory{}, err
	}
	var m memory
	for _, f := range []struct {
		name string
		dst  *float64
	}{{"VmRSS", &m.rss}, {"RssAnon", &m.anon}, {"RssFile", &m.file}} {
		if *f.dst, err = parseStatusField(string(b), f.name); err != nil {
			return memory{}, err
		}
	}
	return m, nil
}

// parseStatusRSS reads the VmRSS line of /proc/PID/status, in MiB.
func parseStatusRSS(status string) (float64, error) { return parseStatusField(status, "VmRSS") }

// parseStatusField reads a kB line of /proc/PID/status, in MiB.
func parseStatusField(status, name string) (float64, error) {
	for _, l := range strings.Split(status, "\n") {
		if v, ok := strings.CutPrefix(l, name+":"); ok {
			f := strings.Fields(v)
			if len(f) != 2 || f[1] != "kB" {
				return 0, fmt.Errorf("malformed %s line %q", name, l)
			}
			kb, err := strconv.ParseUint(f[0], 10, 64)
			if err != nil {
				return 0, fmt.Errorf("malformed %s line %q", name, l)
			}
			return float64(kb) / 1024, nil
		}
	}
	return 0, fmt.Errorf("no %s line in /proc status", name)
}

// usage is one steady-state window.
type usage struct {
	rss []float64 // MiB, one sample a second
	// anon and file split rss (RssAnon, RssFile), same samples.
	anon, file []float64
	cpu        float64 // % of one core over the window
	// cpuPerSecond is the CPU of each one-second step, % of one core.
	cpuPerSecond []float64
}

// measure samples the daemon for d.
func measure(ctx context.Context, pid int, d time.Duration) (usage, error) {
	var u usage
	c0, err := procCPU(pid)
	if err != nil {
		return u, err
	}
	t0 := time.Now()
	prevC, prevT := c0, t0
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return u, ctx.Err()
		case <-tick.C:
		}
		c, err := procCPU(pid)
		if err != nil {
			return u, err
		}
		m, err := procMemory(pid)
		if err != nil {
			return u, err
		}
		now := time.Now()
		u.rss, u.anon, u.file = append(u.rss, m.rss), append(u.anon, m.anon), append(u.file, m.file)
		u.cpuPerSecond = append(u.cpuPerSecond, 100*(c-prevC)/now.Sub(prevT).Seconds())
		prevC, prevT = c, now
		if now.Sub(t0) >= d {
			u.cpu = 100 * (c - c0) / now.Sub(t0).Seconds()
			return u, nil
		}
	}
}

// steadyIdle measures the daemon with no pod.
func (b *bench) steadyIdle(ctx context.Context) error {
	progress("steady: daemon with 0 pods, %s window (the bench stays off the API meanwhile)", b.o.steadyDuration)
	time.Sleep(min(b.o.settle, 2*time.Second))
	u, err := measure(ctx, b.d.pid(), b.o.steadyDuration)
	if err != nil {
		return fmt.Errorf("steady 0 pods: %w", err)
	}
	progress("steady: 0 pods: RSS %.1f MiB (max %.1f), CPU %.2f %% of one core", summarize(u.rss).Median, summarize(u.rss).Max, u.cpu)
	b.addSteadyRows(0, u, false)
	return nil
}

// steadyLoaded waits until the pods are Ready, lets them settle, and
// measures the daemon.
func (b *bench) steadyLoaded(ctx context.Context, names []string) error {
	progress("steady: waiting for %d pods to be Ready", len(names))
	for {
		l, err := b.d.c.ListPods(ctx, benchNS)
		if err != nil {
			return err
		}
		ready := 0
		for i := range l.Items {
			if podReady(&l.Items[i]) {
				ready++
			}
		}
		if ready == len(names) {
			break
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("steady: %d of %d pods Ready: %w", ready, len(names), ctx.Err())
		case <-time.After(200 * time.Millisecond):
		}
	}
	progress("steady: %d pods Ready; settling %s, then a %s window", len(names), b.o.settle, b.o.steadyDuration)
	time.Sleep(b.o.settle)
	// The housekeeping counters are read just outside the window.
	hkBefore, hkErr := b.d.readHousekeeping(ctx)
	u, err := measure(ctx, b.d.pid(), b.o.steadyDuration)
	if err != nil {
		return fmt.Errorf("steady %d pods: %w", len(names), err)
	}
	if hkAfter, err := b.d.readHousekeeping(ctx); err == nil && hkErr == nil {
		b.addHousekeepingRows(len(names), hkBefore, hkAfter, b.o.steadyDuration)
	} else {
		progress("steady: housekeeping counters unavailable: %v %v", hkErr, err)
	}
	progress("steady: %d pods: RSS %.1f MiB (max %.1f), CPU %.2f %% of one core", len(names), summarize(u.rss).Median, summarize(u.rss).Max, u.cpu)
	b.addSteadyRows(len(names), u, true)
	if err := b.steadyProbeFloor(ctx, u); err != nil {
		return err
	}
	if b.o.profileDir != "" {
		progress("steady: capturing a 30 s CPU profile and a heap profile into %s (after the window)", b.o.profileDir)
		if err := <-b.profile(ctx, "cpu-steady.pprof", 30*time.Second); err != nil {
			progress("profile: %v", err)
		}
		if err := b.d.getDebug(ctx, "/debug/pprof/heap", filepath.Join(b.o.profileDir, "heap-steady.pprof")); err != nil {
			progress("profile: %v", err)
		}
		if err := b.d.getDebug(ctx, "/debug/pprof/goroutine?debug=1", filepath.Join(b.o.profileDir, "goroutines-steady.txt")); err != nil {
			progress("profile: %v", err)
		}
	}
	return nil
}

// steadyProbeFloor measures the floor prober (probefloor.go) on the
// steady pods for a window as long as the agent's, right after it (the
// agent keeps probing meanwhile), and reports the agent's CPU against it.
func (b *bench) steadyProbeFloor(ctx context.Context, agent usage) error {
	l, err := b.d.c.ListPods(ctx, benchNS)
	if err != nil {
		return err
	}
	var ips []string
	for i := range l.Items {
		if ip := l.Items[i].Status.PodIP; ip != "" {
			ips = append(ips, ip)
		}
	}
	progress("steady: the same probes of %d pods without an agent (the floor), %s window", len(ips), b.o.steadyDuration)
	u, err := probeFloor(ctx, ips, b.o.steadyDuration)
	if err != nil {
		return fmt.Errorf("steady probe floor: %w", err)
	}
	progress("steady: probe floor: CPU %.2f %% of one core (agent %.2f %%)", u.cpu, agent.cpu)
	b.rep.Rows = append(b.rep.Rows, newRow("3 steady", fmt.Sprintf("CPU, %d pods' probes: floor prober vs agent (mean over %s)", len(ips), b.o.steadyDuration),
		"% of a core", single(u.cpu), single(agent.cpu)))
	return nil
}

// addSteadyRows reports a window; targets apply to the loaded one.
func (b *bench) addSteadyRows(pods int, u usage, targets bool) {
	rss := newRow("3 steady", fmt.Sprintf("agent RSS, %d pods (1 s samples)", pods), "MiB", nil, summarize(u.rss))
	cpu := newRow("3 steady", fmt.Sprintf("agent CPU, %d pods (mean over %s)", pods, b.o.steadyDuration), "% of a core", nil, single(u.cpu))
	per := newRow("3 steady", fmt.Sprintf("agent CPU, %d pods (1 s samples)", pods), "% of a core", nil, summarize(u.cpuPerSecond))
	anon := newRow("3 steady", fmt.Sprintf("agent RssAnon (heap, stacks), %d pods", pods), "MiB", nil, summarize(u.anon))
	file := newRow("3 steady", fmt.Sprintf("agent RssFile (binary pages), %d pods", pods), "MiB", nil, summarize(u.file))
	if targets {
		rss = rss.target("max ≤ 40 MiB", rss.Minikubelet.Max <= 40)
		cpu = cpu.target("≤ 5 %", u.cpu <= 5)
	}
	b.rep.Rows = append(b.rep.Rows, rss, anon, file, cpu, per)
}
