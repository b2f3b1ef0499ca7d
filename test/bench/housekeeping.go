package main

// The cost of the node's housekeeping checks in the steady state (issue
// #21): image GC's pressure checks and collections, container GC, and the
// eviction manager's cycles, from the daemon's own wall-time counters
// (minikubelet_gc_busy_seconds_total, minikubelet_eviction_sync_duration_seconds),
// read before and after the steady window. Wall time bounds the CPU they
// use from above (it includes waiting for the runtime).

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// housekeeping is one reading of the counters.
type housekeeping struct {
	imageGC, containerGC     float64 // busy seconds
	evictionSum, evictionCnt float64
}

// readHousekeeping scrapes the daemon's /metrics.
func (d *daemon) readHousekeeping(ctx context.Context) (housekeeping, error) {
	hc := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var nd net.Dialer
		return nd.DialContext(ctx, "unix", d.sock)
	}}}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://minikubelet/metrics", nil)
	if err != nil {
		return housekeeping{}, err
	}
	resp, err := hc.Do(req)
	if err != nil {
		return housekeeping{}, fmt.Errorf("GET /metrics: %w", err)
	}
	defer resp.Body.Close()
	var h housekeeping
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "#") {
			continue
		}
		name, val, ok := strings.Cut(line, " ")
		if !ok {
			continue
		}
		v, err := strconv.ParseFloat(strings.TrimSpace(val), 64)
		if err != nil {
			continue
		}
		switch name {
		case `minikubelet_gc_busy_seconds_total{loop="image"}`:
			h.imageGC = v
		case `minikubelet_gc_busy_seconds_total{loop="container"}`:
			h.containerGC = v
		case "minikubelet_eviction_sync_duration_seconds_sum":
			h.evictionSum = v
		case "minikubelet_eviction_sync_duration_seconds_count":
			h.evictionCnt = v
		}
	}
	return h, sc.Err()
}

// addHousekeepingRows reports the checks' cost over a window.
func (b *bench) addHousekeepingRows(pods int, before, after housekeeping, window time.Duration) {
	cycles := after.evictionCnt - before.evictionCnt
	mean := 0.0
	if cycles > 0 {
		mean = (after.evictionSum - before.evictionSum) / cycles * 1000
	}
	share := func(s float64) float64 { return s / window.Seconds() * 100 }
	b.rep.Rows = append(b.rep.Rows,
		newRow("3 steady", fmt.Sprintf("eviction check, %d pods (mean of %.0f cycles, wall time)", pods, cycles), "ms", nil, single(mean)),
		newRow("3 steady", fmt.Sprintf("eviction + image GC + container GC checks, %d pods (wall time over the window)", pods), "% of a core", nil,
			single(share(after.evictionSum-before.evictionSum+after.imageGC-before.imageGC+after.containerGC-before.containerGC))),
	)
}
