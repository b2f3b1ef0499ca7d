package main

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

// Before each timed density round the bench waits until the machine is
// quiet: what the round before left running (an agent's teardown, its
// cgroups and directories, goes on after the runtime lists none of its
// pods; the kernel frees network namespaces and cgroups after their last
// user left) would otherwise run inside the next round, whichever side it
// is. In the full bench of 2026-12-01 (ade1800), the 110-pod rounds right
// after minikubelet's deletion of 110 pods were the slowest on both sides,
// by 0.5 pods/s or more. The floor removes its pods' cgroups itself,
// untimed, before its round returns; this gives the agents the same.
const (
	// quietWindow is one sample of the machine's CPU; quietWindows in a
	// row at or under quietCores busy cores make it quiet.
	quietWindow  = 250 * time.Millisecond
	quietWindows = 2
	quietCores   = 0.15
	// quietMax bounds the wait: a machine busy with something else is
	// reported, and the round goes on.
	quietMax = 20 * time.Second
)

// waitQuiet waits until the machine is quiet (at most quietMax) and says
// how long that took when it was not at once.
func waitQuiet(ctx context.Context, what string) error {
	t0 := time.Now()
	busy0, total0, ncpu, err := machineCPU()
	if err != nil {
		return err
	}
	calm := 0
	for calm < quietWindows {
		if time.Since(t0) >= quietMax {
			progress("%s: the machine is still busy after %s (over %.2f cores); going on", what, quietMax, quietCores)
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(quietWindow):
		}
		busy, total, _, err := machineCPU()
		if err != nil {
			return err
		}
		if busyCores(busy-busy0, total-total0, ncpu) <= quietCores {
			calm++
		} else {
			calm = 0
		}
		busy0, total0 = busy, total
	}
	if d := time.Since(t0); d > time.Duration(quietWindows)*quietWindow+quietWindow {
		progress("%s: waited %s for the machine to be quiet", what, d.Round(10*time.Millisecond))
	}
	return nil
}

// busyCores is the busy share of a window's jiffies over all ncpu CPUs,
// in cores.
func busyCores(busy, total uint64, ncpu int) float64 {
	if total == 0 {
		return 0
	}
	return float64(busy) / float64(total) * float64(ncpu)
}

// countCPULines counts the cpuN lines of /proc/stat.
func countCPULines(stat string) int {
	n := 0
	for _, l := range strings.Split(stat, "\n") {
		if strings.HasPrefix(l, "cpu") && len(l) > 3 && l[3] >= '0' && l[3] <= '9' {
			n++
		}
	}
	return n
}

// machineCPU reads the busy and total jiffies of all CPUs from /proc/stat,
// and how many CPUs it counts.
func machineCPU() (busy, total uint64, ncpu int, err error) {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0, 0, 0, err
	}
	busy, total, err = parseProcStat(string(b))
	return busy, total, max(countCPULines(string(b)), 1), err
}

// parseProcStat reads the aggregate "cpu" line of /proc/stat: busy is
// user, nice, system, irq, softirq and steal; total adds idle and iowait
// (guest time is already in user and nice).
func parseProcStat(stat string) (busy, total uint64, err error) {
	line, _, _ := strings.Cut(stat, "\n")
	f := strings.Fields(line)
	if len(f) < 9 || f[0] != "cpu" {
		return 0, 0, fmt.Errorf("malformed /proc/stat first line %q", line)
	}
	var v [8]uint64
	for i := range v {
		if v[i], err = strconv.ParseUint(f[i+1], 10, 64); err != nil {
			return 0, 0, fmt.Errorf("malformed /proc/stat first line %q", line)
		}
	}
	user, nice, system, idle, iowait, irq, softirq, steal := v[0], v[1], v[2], v[3], v[4], v[5], v[6], v[7]
	busy = user + nice + system + irq + softirq + steal
	return busy, busy + idle + iowait, nil
}
