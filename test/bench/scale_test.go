package main

import (
	"encoding/json"
	"encoding/xml"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestParseScale(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		want     []int
		wantErr  string
	}{
		{name: "issue #27's", in: "10,50,110,250", want: []int{10, 50, 110, 250}},
		{name: "sorted, repeats dropped, spaces", in: " 250, 10,10 ,50", want: []int{10, 50, 250}},
		{name: "one", in: "2", want: []int{2}},
		{name: "zero", in: "0,10", wantErr: `"0" is not a pod count`},
		{name: "word", in: "ten", wantErr: `"ten" is not a pod count`},
		{name: "empty", in: ",", wantErr: "no pod count"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parseScale(tc.in)
			if tc.wantErr != "" {
				require.ErrorContains(t, err, tc.wantErr)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.want, got)
		})
	}
}

// The flag adds the scenario; naming the scenario alone takes issue #27's
// counts; the default set leaves the curve out.
func TestParseFlags_Scale(t *testing.T) {
	base := []string{"--runtime-endpoint", "unix:///x", "--cni-conf-dir", "/x", "--work-dir", "/x"}
	o, err := parseFlags(base)
	require.NoError(t, err)
	require.NotContains(t, strings.Split(o.scenarios, ","), "scale")
	require.Contains(t, strings.Split(o.scenarios, ","), "run-launch")
	require.Nil(t, o.scaleCounts)

	o, err = parseFlags(append(base, "--scenarios", "run-launch", "--scale", "4,2"))
	require.NoError(t, err)
	require.Equal(t, "run-launch,scale", o.scenarios)
	require.Equal(t, []int{2, 4}, o.scaleCounts)

	o, err = parseFlags(append(base, "--scenarios", "scale"))
	require.NoError(t, err)
	require.Equal(t, []int{10, 50, 110, 250}, o.scaleCounts)

	_, err = parseFlags(append(base, "--scale", "x"))
	require.ErrorContains(t, err, "--scale")
}

// fixedScale is a curve of two counts with all three columns, and a third
// count the kubelet did not reach.
func fixedScale() []ScalePoint {
	return []ScalePoint{
		{Pods: 10,
			Raw:         &ScaleSide{Throughput: 5, CPU: 0.5, RSS: 8, RSSMax: 8},
			Minikubelet: &ScaleSide{Throughput: 4.5, CPU: 1, RSS: 30, RSSMax: 31, Anon: 8, File: 22},
			Kubelet:     &ScaleSide{Throughput: 3, CPU: 3, RSS: 80, RSSMax: 82, Anon: 30, File: 50}},
		{Pods: 110,
			Raw:         &ScaleSide{Throughput: 2, CPU: 5.5, RSS: 9, RSSMax: 9},
			Minikubelet: &ScaleSide{Throughput: 1.96, Rounds: []float64{2.1, 1.96, 1.9}, CPU: 6.6, RSS: 44, RSSMax: 45, Anon: 18, File: 26},
			Kubelet:     &ScaleSide{Throughput: 1.5, CPU: 22, RSS: 132, RSSMax: 133, Anon: 72, File: 60}},
		{Pods: 250,
			Raw:         &ScaleSide{Throughput: 2, CPU: 12.5, RSS: 10, RSSMax: 10},
			Minikubelet: &ScaleSide{Throughput: 1.8, CPU: 15, RSS: 60, RSSMax: 61, Anon: 30, File: 30}},
	}
}

func TestScaleRows(t *testing.T) {
	rows := scaleRows(fixedScale(), time.Minute)
	require.Len(t, rows, 3*6)
	byMetric := map[string]Row{}
	for _, r := range rows {
		require.Equal(t, "7 scale", r.Scenario)
		byMetric[r.Metric] = r
	}
	// Throughput: ratios to raw and the kubelet; the target only at 110 and 250.
	tp := byMetric["throughput, 110 pods at once (median of 3 rounds)"]
	require.InDelta(t, 0.98, tp.Ratio, 1e-9)
	require.InDelta(t, 1.96/1.5, tp.KubeletRatio, 1e-9)
	require.Equal(t, "≥ 0.95 × raw", tp.Target)
	require.True(t, *tp.Met)
	require.Nil(t, byMetric["throughput, 10 pods at once (1 round)"].Met)
	tp250 := byMetric["throughput, 250 pods at once (1 round)"]
	require.False(t, *tp250.Met, "0.90 × raw")
	require.Nil(t, tp250.Kubelet, "the kubelet did not reach 250")
	require.Zero(t, tp250.KubeletRatio)

	// CPU against the probe floor, total and per pod.
	cpu := byMetric["agent CPU, 110 pods × 2 probes (mean over 1m0s; raw: the probe floor)"]
	require.InDelta(t, 1.2, cpu.Ratio, 1e-9)
	require.False(t, *cpu.Met, "1.2 × the floor is over 1.15 ×")
	per := byMetric["… per pod, 110 pods (raw: the probe floor)"]
	require.Equal(t, "% of a core per pod", per.Unit)
	require.InDelta(t, 0.06, per.Minikubelet.Median, 1e-9)
	require.InDelta(t, 0.05, per.Raw.Median, 1e-9)
	require.InDelta(t, 0.2, per.Kubelet.Median, 1e-9)

	// RSS: no floor column; the 30 MiB target on the max at 110.
	rss := byMetric["agent RSS, 110 pods × 2 probes (median of 1 s samples)"]
	require.Nil(t, rss.Raw)
	require.InDelta(t, 44.0/132, rss.KubeletRatio, 1e-9)
	require.Equal(t, "max ≤ 30 MiB", rss.Target)
	require.False(t, *rss.Met)
	rpp := byMetric["… per pod, 10 pods"]
	require.Equal(t, "MiB per pod", rpp.Unit)
	require.InDelta(t, 3.0, rpp.Minikubelet.Median, 1e-9)
	require.InDelta(t, 8.0, rpp.Kubelet.Median, 1e-9)
	require.InDelta(t, 18.0, byMetric["… RssAnon, 110 pods"].Minikubelet.Median, 1e-9)

	// Every metric names its count, so that hack/bench-compare matches
	// each count's rows across runs.
	require.Len(t, byMetric, len(rows))

	// A figure a run did not reach (it ended early, writePartial) is no
	// missed target: no mark where the floor's throughput or CPU is
	// missing.
	for _, r := range scaleRows([]ScalePoint{{Pods: 110, Minikubelet: &ScaleSide{Throughput: 8, CPU: 4, RSS: 25, RSSMax: 26}}}, time.Minute) {
		if strings.HasPrefix(r.Metric, "throughput") || strings.HasPrefix(r.Metric, "agent CPU") {
			require.Nil(t, r.Met, r.Metric)
			require.Empty(t, r.Target, r.Metric)
		}
		if strings.HasPrefix(r.Metric, "agent RSS") {
			require.True(t, *r.Met, "RSS has no floor: its target stands alone")
		}
	}
}

func TestScaleChart(t *testing.T) {
	c := scaleChart(fixedScale(), "curve <test>")
	require.Len(t, c.Panels, 5)
	for _, p := range c.Panels {
		require.Len(t, p.Series, 3)
		require.Equal(t, []string{"raw floor", "minikubelet", "kubelet"}, []string{p.Series[0].Name, p.Series[1].Name, p.Series[2].Name})
	}
	cpuPerPod := c.Panels[0]
	require.InDelta(t, 0.05, cpuPerPod.Series[0].Points[1].Y, 1e-9)
	require.InDelta(t, 0.06, cpuPerPod.Series[1].Points[2].Y, 1e-9)
	require.Len(t, cpuPerPod.Series[2].Points, 2, "the kubelet has no 250")
	require.Equal(t, 250.0, cpuPerPod.Series[1].Points[2].X)
	rssPerPod := c.Panels[1]
	require.InDelta(t, 3.0, rssPerPod.Series[1].Points[0].Y, 1e-9)

	var b strings.Builder
	require.NoError(t, c.WriteSVG(&b))
	require.NoError(t, xml.Unmarshal([]byte(b.String()), new(struct{})))
	require.Contains(t, b.String(), "curve &lt;test&gt;")
	require.Equal(t, 15, strings.Count(b.String(), "<polyline"))
}

// The curve's points are in the JSON kept per commit, and its plot is
// written beside the file named.
func TestReport_Scale(t *testing.T) {
	dir := t.TempDir()
	rep := &Report{Machine: Machine{Date: "2026-01-01T00:00:00Z", Commit: "abc1234"}, Scale: fixedScale(), Rows: scaleRows(fixedScale(), time.Minute)}
	path, err := rep.keep(dir)
	require.NoError(t, err)
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	var back Report
	require.NoError(t, json.Unmarshal(b, &back))
	require.Equal(t, fixedScale(), back.Scale)
	require.Contains(t, string(b), `"throughput_pods_per_s": 1.96`)

	require.Equal(t, filepath.Join("docs", "performance-scale.svg"), scaleSVGPath(filepath.Join("docs", "performance.md")))
	require.Equal(t, "bench-results-scale.svg", scaleSVGPath("bench-results.md"))
	svg := filepath.Join(dir, "x-scale.svg")
	require.NoError(t, rep.writeScaleSVG(svg))
	out, err := os.ReadFile(svg)
	require.NoError(t, err)
	require.Contains(t, string(out), "abc1234")
}
