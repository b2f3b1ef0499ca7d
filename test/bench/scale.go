package main

// Scenario 7, the scale curve (issue #27): the manifest route's density
// and steady scenarios at each pod count of --scale (e.g. 10,50,110,250),
// for each column: the raw floor, minikubelet and the kubelet. Per count:
//
//	density  the floor's round of n pods (rawRound), and n manifests at
//	         once into the agent's directory → all running; pods/s, the
//	         median of --scale-rounds such pairs, the floor first in rounds
//	         1, 3, … and last in rounds 2, 4, … (floorFirst; the kubelet: one
//	         round)
//	steady   n pods with two probes each (HTTP liveness, TCP readiness,
//	         every second) through the agent's directory; after --settle,
//	         the agent's CPU and RSS over --steady-duration, then (in
//	         minikubelet's block) the floor prober on the same pods for as
//	         long: the probes' own CPU, and its process's RSS
//
// The floor and minikubelet run in one block, count by count (no floor
// without minikubelet's block); the kubelet in its own block after it (it
// kills the pods it does not know of), with
// maxPods raised to the largest count; minikubelet's daemon gets
// --max-pods likewise. The rows (scenario "7 scale") and the report's
// "scale" points keep every figure per count in the JSON, and the same
// points draw the plot (scaleChart) that --update-docs writes beside the
// performance document.

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/minikubelet/minikubelet/test/plot"
)

// defaultScale is the curve's pod counts when scenario scale is asked
// for without --scale: issue #27's.
const defaultScale = "10,50,110,250"

// parseScale reads --scale: pod counts, comma-separated, each at least 1,
// returned in increasing order without repeats.
func parseScale(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		n, err := strconv.Atoi(f)
		if err != nil || n < 1 {
			return nil, fmt.Errorf("--scale: %q is not a pod count (want counts of 1 or more, comma-separated, e.g. %s)", f, defaultScale)
		}
		out = append(out, n)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("--scale: no pod count in %q (e.g. %s)", s, defaultScale)
	}
	slices.Sort(out)
	return slices.Compact(out), nil
}

// ScaleSide is one column's figures at one pod count.
type ScaleSide struct {
	// Throughput is the pods per second of the density rounds, their
	// median (0: not measured); Rounds are the rounds' own.
	Throughput float64   `json:"throughput_pods_per_s,omitempty"`
	Rounds     []float64 `json:"throughput_rounds,omitempty"`
	// CPU is the mean CPU of the steady window, % of one core: the
	// agent's, or for the floor the probe floor's.
	CPU float64 `json:"cpu_percent,omitempty"`
	// RSS, RSSMax, Anon and File are the window's resident memory, MiB
	// (medians of the 1 s samples, and the largest sample): the agent's,
	// or for the floor the floor prober's process.
	RSS    float64 `json:"rss_mib,omitempty"`
	RSSMax float64 `json:"rss_max_mib,omitempty"`
	Anon   float64 `json:"rss_anon_mib,omitempty"`
	File   float64 `json:"rss_file_mib,omitempty"`
}

// ScalePoint is one pod count of the curve.
type ScalePoint struct {
	Pods        int        `json:"pods"`
	Raw         *ScaleSide `json:"raw,omitempty"`
	Minikubelet *ScaleSide `json:"minikubelet,omitempty"`
	Kubelet     *ScaleSide `json:"kubelet,omitempty"`
}

// steadySide fills the steady figures of a side from a window.
func (s *ScaleSide) steady(u usage) {
	s.CPU = u.cpu
	if st := summarize(u.rss); st != nil {
		s.RSS, s.RSSMax = st.Median, st.Max
	}
	if st := summarize(u.anon); st != nil {
		s.Anon = st.Median
	}
	if st := summarize(u.file); st != nil {
		s.File = st.Median
	}
}

// scaleAgent runs the curve's counts on one agent. With raw set, the
// floor's round runs beside each density round, in ABBA order
// (floorFirst), and the floor prober after each steady window.
func (b *bench) scaleAgent(ctx context.Context, a manifestAgent, counts []int, pts map[int]*ScalePoint, side func(*ScalePoint) **ScaleSide, raw bool) error {
	progress("scale: %s: warm-up, one manifest pod (not measured)", a.name)
	warm := b.name("swarm-" + a.name)
	_, ids, err := b.manifestStart(ctx, a, warm, kindStart)
	if err == nil {
		_, _, err = b.manifestDelete(ctx, a, []string{warm}, ids, 0)
	}
	if err != nil {
		return fmt.Errorf("scale %s warm-up: %w", a.name, err)
	}
	for _, n := range counts {
		p := pts[n]
		// The side joins the point once its throughput is measured: a run
		// that ends early (writePartial) shows no half-measured column.
		s := &ScaleSide{}
		tag := fmt.Sprintf("scale %d pods", n)
		// Density: --scale-rounds rounds with the floor, the floor's round
		// and the agent's in ABBA order (floorFirst); one round without (the kubelet,
		// whose removal waits for its GC). A single round of 110 or 250
		// pods varied by more than a tenth between runs (2026-11-30).
		rounds := 1
		if raw {
			rounds = b.o.scaleRounds
		}
		var rawTP []float64
		for r := range rounds {
			rtag := tag
			if rounds > 1 {
				rtag = fmt.Sprintf("%s, round %d/%d", tag, r+1, rounds)
			}
			floor := func() error {
				if !raw {
					return nil
				}
				total, _, _, err := b.rawRound(ctx, fmt.Sprintf("scale-raw-%d-%d", n, r), n, rtag)
				if err != nil {
					return err
				}
				rawTP = append(rawTP, float64(n)/total.Seconds())
				return nil
			}
			agent := func() error {
				progress("%s: %d manifests at once into %s's directory", rtag, n, a.name)
				names, _, total, ids, err := b.manifestMany(ctx, a, fmt.Sprintf("scale-%s-%d-%d", a.name, n, r), n, kindStart)
				if err != nil {
					return fmt.Errorf("%s, %s: %w", rtag, a.name, err)
				}
				s.Rounds = append(s.Rounds, float64(n)/total.Seconds())
				progress("%s: %s: %d pods running in %s (%.2f pods/s)", rtag, a.name, n, total.Round(time.Millisecond), s.Rounds[r])
				// Gone, not only down, before the next pods: minikubelet counts a
				// deleted pod against maxPods until its teardown ends (the kubelet
				// does not, kubernetes#104824). At the largest count, maxPods
				// itself, steady pods written when the density pods were only
				// down were rejected OutOfpods, and the bench waited for them for
				// good (2026-11-30).
				if _, _, err := b.manifestDelete(ctx, a, names, ids, manifestGoneWait); err != nil {
					return fmt.Errorf("%s, %s, deletion: %w", rtag, a.name, err)
				}
				return nil
			}
			if err := inOrder(ctx, r, rtag+": "+a.name, floor, agent); err != nil { // ABBA (floorFirst)
				return err
			}
		}
		s.Throughput = summarize(s.Rounds).Median
		*side(p) = s
		if raw {
			p.Raw = &ScaleSide{Throughput: summarize(rawTP).Median, Rounds: rawTP}
		}

		names, _, total, ids, err := b.manifestMany(ctx, a, fmt.Sprintf("scale-steady-%s-%d", a.name, n), n, kindSteady)
		if err != nil {
			return fmt.Errorf("%s steady, %s: %w", tag, a.name, err)
		}
		if err := b.waitServers(ctx, ids); err != nil {
			return err
		}
		progress("%s: %s: %d pods with two probes each running in %s; settling %s, then a %s window", tag, a.name, n, total.Round(time.Millisecond), b.o.settle, b.o.steadyDuration)
		time.Sleep(b.o.settle)
		u, err := measure(ctx, a.pid(), b.o.steadyDuration)
		if err != nil {
			return fmt.Errorf("%s steady, %s: %w", tag, a.name, err)
		}
		s.steady(u)
		progress("%s: %s: RSS %.1f MiB, CPU %.2f %% of a core", tag, a.name, s.RSS, s.CPU)
		if raw {
			ips, err := b.sandboxIPs(ctx, ids)
			if err != nil {
				return err
			}
			fu, err := probeFloor(ctx, ips, b.o.steadyDuration)
			if err != nil {
				return fmt.Errorf("%s probe floor: %w", tag, err)
			}
			p.Raw.steady(fu)
			progress("%s: probe floor of %d pods: CPU %.2f %% of a core", tag, len(ips), fu.cpu)
		}
		if _, _, err := b.manifestDelete(ctx, a, names, ids, manifestGoneWait); err != nil { // gone: as above
			return fmt.Errorf("%s steady, %s, deletion: %w", tag, a.name, err)
		}
	}
	return nil
}

// scaleScenario is scenario 7: the floor and minikubelet, then the
// kubelet, at each count of the curve.
func (b *bench) scaleScenario(ctx context.Context, work string) error {
	counts := b.o.scaleCounts
	pts := map[int]*ScalePoint{}
	b.scalePts = nil
	for _, n := range counts {
		pts[n] = &ScalePoint{Pods: n}
		b.scalePts = append(b.scalePts, pts[n])
	}
	progress("scale: %d pod counts (%v), agents %s (the floor in minikubelet's block)", len(counts), counts, b.o.agents)
	// The settings first: a run that ends early (writePartial) states them too.
	var cs []string
	for _, n := range counts {
		cs = append(cs, strconv.Itoa(n))
	}
	b.rep.Settings["scale pods"] = strings.Join(cs, ",")
	b.rep.Settings["scale density rounds"] = fmt.Sprintf("%d (the floor and minikubelet, interleaved ABBA; the kubelet 1)", b.o.scaleRounds)
	if b.wantAgent(agentMinikubelet) {
		a := manifestAgent{name: agentMinikubelet, dir: filepath.Join(work, "daemon", "manifests"), pid: b.d.pid, log: b.d.logPath}
		if err := b.scaleAgent(ctx, a, counts, pts, func(p *ScalePoint) **ScaleSide { return &p.Minikubelet }, true); err != nil {
			b.clearManifests(ctx, a)
			return err
		}
	}
	if b.wantAgent(agentKubelet) && b.o.kubelet != "" {
		dir := filepath.Join(work, "kubelet-scale")
		progress("scale: starting the kubelet %s standalone, maxPods %d (log %s)", b.o.kubelet, slices.Max(counts), filepath.Join(dir, "kubelet.log"))
		k, err := startKubelet(ctx, b.o.kubelet, b.o.endpoint, dir, slices.Max(counts))
		if err != nil {
			return err
		}
		b.rep.Settings["kubelet"] = kubeletVersion(b.o.kubelet) + ": " + kubeletSettings
		a := manifestAgent{name: agentKubelet, dir: k.manifests, pid: k.pid, log: k.logPath}
		// Never the floor beside the kubelet: it would kill the floor's pods.
		err = b.scaleAgent(ctx, a, counts, pts, func(p *ScalePoint) **ScaleSide { return &p.Kubelet }, false)
		if err != nil {
			b.clearManifests(ctx, a)
		}
		k.stop()
		b.removeManifestPods(ctx)
		if err != nil {
			return err
		}
	}
	b.takeScale()
	return nil
}

// takeScale moves the curve's points that measured anything (all of them
// after a whole run; those so far after one that ended early) into the
// report, with their rows.
func (b *bench) takeScale() {
	var pts []ScalePoint
	for _, p := range b.scalePts {
		if p.Raw != nil || p.Minikubelet != nil || p.Kubelet != nil {
			pts = append(pts, *p)
		}
	}
	b.scalePts = nil
	if len(pts) == 0 {
		return
	}
	b.rep.Scale = append(b.rep.Scale, pts...)
	b.rep.Rows = append(b.rep.Rows, scaleRows(pts, b.o.steadyDuration)...)
}

// scaleRows reports the curve, count by count. Targets (issue #27) sit on
// the counts it names: throughput ≥ 0.95 × raw at 110 and 250 pods; at
// 110 probed pods the agent's RSS max ≤ 30 MiB and its CPU ≤ 1.15 × the
// probe floor's.
func scaleRows(pts []ScalePoint, window time.Duration) []Row {
	const sc = "7 scale"
	get := func(s *ScaleSide, f func(ScaleSide) float64) *Stat {
		if s == nil || f(*s) == 0 {
			return nil
		}
		return single(f(*s))
	}
	var rows []Row
	for _, p := range pts {
		n := float64(p.Pods)
		row := func(metric, unit string, withRaw bool, f func(ScaleSide) float64) Row {
			var raw *Stat
			if withRaw {
				raw = get(p.Raw, f)
			}
			return newRow(sc, metric, unit, raw, get(p.Minikubelet, f)).withKubelet(get(p.Kubelet, f))
		}
		rounds := "1 round"
		if p.Minikubelet != nil && len(p.Minikubelet.Rounds) > 1 {
			rounds = fmt.Sprintf("median of %d rounds", len(p.Minikubelet.Rounds))
		}
		tp := row(fmt.Sprintf("throughput, %d pods at once (%s)", p.Pods, rounds), "pods/s", true, func(s ScaleSide) float64 { return s.Throughput })
		// Targets only where both figures were measured: a partial run's
		// missing column is no miss.
		if (p.Pods == 110 || p.Pods == 250) && tp.Ratio > 0 {
			tp = tp.target("≥ 0.95 × raw", tp.Ratio >= 0.95)
		}
		cpu := row(fmt.Sprintf("agent CPU, %d pods × 2 probes (mean over %s; raw: the probe floor)", p.Pods, window), "% of a core", true, func(s ScaleSide) float64 { return s.CPU })
		rss := row(fmt.Sprintf("agent RSS, %d pods × 2 probes (median of 1 s samples)", p.Pods), "MiB", false, func(s ScaleSide) float64 { return s.RSS })
		if p.Pods == 110 {
			if cpu.Ratio > 0 {
				cpu = cpu.target("≤ 1.15 × probe floor", cpu.Ratio <= 1.15)
			}
			if p.Minikubelet != nil && p.Minikubelet.RSSMax > 0 {
				rss = rss.target("max ≤ 30 MiB", p.Minikubelet.RSSMax <= 30)
			}
		}
		rows = append(rows, tp, cpu,
			row(fmt.Sprintf("… per pod, %d pods (raw: the probe floor)", p.Pods), "% of a core per pod", true, func(s ScaleSide) float64 { return s.CPU / n }),
			rss,
			row(fmt.Sprintf("… RssAnon, %d pods", p.Pods), "MiB", false, func(s ScaleSide) float64 { return s.Anon }),
			row(fmt.Sprintf("… per pod, %d pods", p.Pods), "MiB per pod", false, func(s ScaleSide) float64 { return s.RSS / n }),
		)
	}
	return rows
}

// scaleChart draws the curve: per-pod CPU and RSS, RSS and throughput
// against the pod count, one line per column (the floor's CPU and RSS are
// the probe floor's: the probes' own cost, and its prober process's
// memory). Every panel has the three series in the same order, so that
// each column keeps its colour.
func scaleChart(pts []ScalePoint, title string) plot.Chart {
	series := func(f func(ScaleSide) float64, perPod bool) []plot.Series {
		out := []plot.Series{{Name: "raw floor"}, {Name: "minikubelet"}, {Name: "kubelet"}}
		for _, p := range pts {
			for i, s := range []*ScaleSide{p.Raw, p.Minikubelet, p.Kubelet} {
				if s == nil || f(*s) == 0 {
					continue
				}
				y := f(*s)
				if perPod {
					y /= float64(p.Pods)
				}
				out[i].Points = append(out[i].Points, plot.Point{X: float64(p.Pods), Y: y})
			}
		}
		return out
	}
	cpu := func(s ScaleSide) float64 { return s.CPU }
	rss := func(s ScaleSide) float64 { return s.RSS }
	return plot.Chart{
		Title:   title,
		XLabel:  "pods (two probes each; throughput: pods without probes)",
		Columns: 2,
		Panels: []plot.Panel{
			{Title: "CPU per pod, % of a core (raw: the probe floor)", YZero: true, Series: series(cpu, true)},
			{Title: "RSS per pod, MiB (raw: the floor prober's)", YZero: true, Series: series(rss, true)},
			{Title: "CPU, % of a core", YZero: true, Series: series(cpu, false)},
			{Title: "RSS, MiB", YZero: true, Series: series(rss, false)},
			{Title: "throughput, pods/s (all pods at once)", YZero: true, Series: series(func(s ScaleSide) float64 { return s.Throughput }, false)},
		},
	}
}

// writeScaleSVG draws the report's curve into path.
func (r *Report) writeScaleSVG(path string) error {
	title := fmt.Sprintf("raw floor, minikubelet and the kubelet by pod count (%s, %s)", r.Machine.Date, r.Machine.Commit)
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := scaleChart(r.Scale, title).WriteSVG(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// scaleSVGPath is where the curve's plot goes beside a file: next to
// bench-results.md as bench-results-scale.svg, next to docs/performance.md
// as docs/performance-scale.svg.
func scaleSVGPath(beside string) string {
	return strings.TrimSuffix(beside, filepath.Ext(beside)) + "-scale.svg"
}
