package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestSummarize(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   []float64
		want *Stat
	}{
		{name: "none", in: nil, want: nil},
		{name: "one", in: []float64{3}, want: &Stat{N: 1, Median: 3, P99: 3, Min: 3, Max: 3}},
		{name: "odd, unsorted", in: []float64{5, 1, 3}, want: &Stat{N: 3, Median: 3, P99: 5, Min: 1, Max: 5}},
		{name: "even: mean of the middle two", in: []float64{4, 1, 2, 3}, want: &Stat{N: 4, Median: 2.5, P99: 4, Min: 1, Max: 4}},
		{
			// Nearest rank: ceil(0.99 × 200) = 198th of 1..200.
			name: "p99 by nearest rank", in: seq(200),
			want: &Stat{N: 200, Median: 100.5, P99: 198, Min: 1, Max: 200},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, tc.want, summarize(tc.in))
		})
	}
}

func seq(n int) []float64 {
	out := make([]float64, n)
	for i := range out {
		out[i] = float64(n - i)
	}
	return out
}

func TestNewRowRatioAndTarget(t *testing.T) {
	r := newRow("1 start", "x", "ms", single(100), single(104))
	require.InDelta(t, 1.04, r.Ratio, 1e-9)
	r = r.target("≤ 1.05 × raw", r.Ratio <= 1.05)
	require.NotNil(t, r.Met)
	require.True(t, *r.Met)

	noFloor := newRow("3 steady", "rss", "MiB", nil, single(30))
	require.Zero(t, noFloor.Ratio)
	require.Nil(t, noFloor.Met)

	k := newRow("5 manifest", "start", "ms", single(100), single(120)).withKubelet(single(240))
	require.InDelta(t, 1.2, k.Ratio, 1e-9)
	require.InDelta(t, 0.5, k.KubeletRatio, 1e-9)
	require.Zero(t, newRow("5 manifest", "start", "ms", nil, single(120)).withKubelet(nil).KubeletRatio)
}

func TestMarkdown(t *testing.T) {
	rep := &Report{
		Machine: Machine{CPU: "Test CPU", Cores: 2, Kernel: "6.1.0", Containerd: "containerd 1.6.20", Go: "go1.24", Load: "0.1 0.2 0.3", Date: "2026-01-01T00:00:00Z", Duration: 42},
		Rows: []Row{
			newRow("1 start", "submit → container started", "ms", &Stat{N: 20, Median: 100, P99: 150}, &Stat{N: 20, Median: 103.456, P99: 160}).target("≤ 1.05 × raw", true),
			newRow("3 steady", "agent RSS", "MiB", nil, &Stat{N: 60, Median: 35.25, P99: 36}).target("max ≤ 40 MiB", false),
			newRow("5 manifest", "density", "pods/s", single(10), single(9)).withKubelet(&Stat{N: 3, Median: 4.5, P99: 5}),
		},
	}
	md := rep.markdown()
	require.Contains(t, md, "| 1 start | submit → container started | ms | 100 | 150 | 103 | 160 | n/a | n/a | 1.03 | – | ≤ 1.05 × raw | ✓ |")
	require.Contains(t, md, "| 3 steady | agent RSS | MiB | n/a | n/a | 35.2 | 36.0 | n/a | n/a | – | – | max ≤ 40 MiB | ✗ |")
	// The kubelet column and minikubelet's ratio to it.
	require.Contains(t, md, "| 5 manifest | density | pods/s | 10.0 | – | 9.00 | – | 4.50 | 5.00 | 0.90 | 2.00 |  |  |")
	require.Contains(t, md, "Machine: Test CPU, 2 cores, kernel 6.1.0, containerd 1.6.20, go1.24")
}

func TestReplaceSection(t *testing.T) {
	doc := "# T\n\nintro\n\n" + perfBegin + "\nold table\n" + perfEnd + "\n\n## Next\n"
	for _, tc := range []struct {
		name    string
		doc     string
		want    string
		wantErr string
	}{
		{
			name: "replaces between the markers, keeps the rest",
			doc:  doc,
			want: "# T\n\nintro\n\n" + perfBegin + "\nnew table\n" + perfEnd + "\n\n## Next\n",
		},
		{name: "no markers", doc: "# T\n", wantErr: "has no <!-- BEGIN PERFORMANCE -->"},
		{name: "markers in the wrong order", doc: perfEnd + "\n" + perfBegin + "\n", wantErr: "in that order"},
		{name: "two sections", doc: doc + doc, wantErr: "more than one"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, err := replaceSection([]byte(tc.doc), perfBegin, perfEnd, "\nnew table\n\n")
			if tc.wantErr != "" {
				require.ErrorContains(t, err, tc.wantErr)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.want, string(out))
		})
	}
}

func TestParseProc(t *testing.T) {
	// The command may contain spaces and parentheses.
	stat := "4242 (mini (kube) let) S 1 4242 4242 0 -1 4194560 1234 0 0 0 250 75 0 0 20 0 12 0 100 1000000 2000 18446744073709551615"
	cpu, err := parseStatCPU(stat)
	require.NoError(t, err)
	require.InDelta(t, 3.25, cpu, 1e-9) // (250 + 75) ticks / 100

	_, err = parseStatCPU("4242 (x) S 1 2")
	require.ErrorContains(t, err, "malformed")

	rss, err := parseStatusRSS("Name:\tminikubelet\nVmHWM:\t  40000 kB\nVmRSS:\t   30720 kB\nThreads:\t12\n")
	require.NoError(t, err)
	require.InDelta(t, 30.0, rss, 1e-9)

	_, err = parseStatusRSS("Name:\tx\n")
	require.ErrorContains(t, err, "no VmRSS")
}

func TestParseFlags(t *testing.T) {
	_, err := parseFlags(nil)
	require.ErrorContains(t, err, "missing --cni-conf-dir, --runtime-endpoint, --work-dir")
	require.ErrorContains(t, err, "make bench")

	base := []string{"--runtime-endpoint", "unix:///x.sock", "--cni-conf-dir", "/x", "--work-dir", "/w"}
	_, err = parseFlags(append(base, "--scenarios", "start,bogus"))
	require.ErrorContains(t, err, `unknown scenario "bogus"`)

	o, err := parseFlags(append(base, "--scenarios", "start,ready", "--reps", "3"))
	require.NoError(t, err)
	require.Equal(t, 3, o.reps)
	require.True(t, strings.Contains(o.scenarios, "ready"))
}

// docs/performance.md holds the generated results table: --update-docs
// must find exactly one pair of markers there, and rewriting the section
// with what it holds must change nothing else.
func TestPerfDocHasResultsSection(t *testing.T) {
	doc, err := os.ReadFile("../../docs/performance.md")
	require.NoError(t, err)
	s := string(doc)
	begin, end := strings.Index(s, perfBegin), strings.Index(s, perfEnd)
	require.True(t, begin >= 0 && end > begin, "docs/performance.md lacks the %s … %s markers", perfBegin, perfEnd)
	body := s[begin+len(perfBegin) : end]
	require.Contains(t, body, "| scenario | metric |", "the section holds the generated results table")
	out, err := replaceSection(doc, perfBegin, perfEnd, body)
	require.NoError(t, err)
	require.Equal(t, s, string(out))

	// The scale curve's own section, and the main one is not taken for it.
	dir := t.TempDir()
	path := filepath.Join(dir, "performance.md")
	require.NoError(t, os.WriteFile(path, doc, 0o644))
	require.NoError(t, updatePerfDoc(path, "| scenario | metric | scale rows |", true))
	got, err := os.ReadFile(path)
	require.NoError(t, err)
	sb, se := strings.Index(string(got), perfScaleBegin), strings.Index(string(got), perfScaleEnd)
	require.True(t, sb >= 0 && se > sb, "docs/performance.md lacks the %s … %s markers", perfScaleBegin, perfScaleEnd)
	require.Equal(t, "\n| scenario | metric | scale rows |\n", string(got)[sb+len(perfScaleBegin):se])
	require.Contains(t, string(got), perfBegin+body+perfEnd, "the main table is kept")
}

func TestReportKeep_NamedByDateAndCommit(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "bench")
	r := &Report{Machine: Machine{Date: "2026-11-28T23:40:00Z", Commit: "5c7e4e2"}, Rows: []Row{newRow("start", "x", "ms", single(1), single(2))}}
	path, err := r.keep(dir)
	require.NoError(t, err)
	require.Equal(t, filepath.Join(dir, "20261128-2340-5c7e4e2.json"), path)
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	var back Report
	require.NoError(t, json.Unmarshal(b, &back))
	require.Equal(t, "5c7e4e2", back.Machine.Commit)
	require.Equal(t, 2.0, back.Rows[0].Ratio)
}

// A run that ends early writes what it finished and the scale curve's
// points so far to --json and --md, marked partial, and leaves the
// performance document alone.
func TestWritePartial_KeepsWhatWasMeasured(t *testing.T) {
	dir := t.TempDir()
	doc := filepath.Join(dir, "performance.md")
	docText := "x\n" + perfBegin + "\nthe whole table\n" + perfEnd + "\n"
	require.NoError(t, os.WriteFile(doc, []byte(docText), 0o644))
	b := &bench{
		o: options{jsonOut: filepath.Join(dir, "r.json"), mdOut: filepath.Join(dir, "r.md"), perfDoc: doc, updateDoc: true,
			historyDir: filepath.Join(dir, "history"), steadyDuration: time.Minute},
		rep: &Report{Rows: []Row{newRow("1 start", "submit → container started", "ms", single(100), single(103))}},
	}
	// The curve ended in its 250-pod count as scaleAgent leaves it (a
	// side joins a point once its throughput is measured): 110 has all
	// three columns; at 250 the floor's prober failed (no floor CPU) and
	// the kubelet's steady pods never ran (its throughput only); 500
	// measured nothing.
	b.scalePts = []*ScalePoint{
		{Pods: 110, Raw: &ScaleSide{Throughput: 8, CPU: 4}, Minikubelet: &ScaleSide{Throughput: 8, CPU: 4.4, RSS: 25, RSSMax: 26}, Kubelet: &ScaleSide{Throughput: 5, CPU: 20, RSS: 110}},
		{Pods: 250, Raw: &ScaleSide{Throughput: 7, Rounds: []float64{7}}, Minikubelet: &ScaleSide{Throughput: 6.8, CPU: 9, RSS: 30}, Kubelet: &ScaleSide{Throughput: 4}},
		{Pods: 500},
	}
	b.rep.Settings = map[string]string{"scale pods": "110,250,500"}
	cause := fmt.Errorf("kubelet: 177 of 250 pods running: %w", context.DeadlineExceeded)
	b.writePartial(cause)

	var got Report
	raw, err := os.ReadFile(b.o.jsonOut)
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(raw, &got))
	require.Equal(t, cause.Error(), got.Partial)
	require.Len(t, got.Scale, 2, "the count that measured nothing is left out")
	require.Equal(t, 250, got.Scale[1].Pods)
	require.Equal(t, "110,250,500", got.Settings["scale pods"])
	byMetric := map[string]Row{}
	for _, r := range got.Rows {
		byMetric[r.Metric] = r
	}
	require.Contains(t, byMetric, "submit → container started")
	tp := byMetric["throughput, 250 pods at once (1 round)"]
	require.InDelta(t, 6.8/7, tp.Ratio, 1e-9)
	require.InDelta(t, 6.8/4, tp.KubeletRatio, 1e-9)
	require.True(t, *tp.Met, "0.97 × raw")
	cpu := byMetric["agent CPU, 250 pods × 2 probes (mean over 1m0s; raw: the probe floor)"]
	require.Nil(t, cpu.Raw, "the floor prober failed")
	require.Nil(t, cpu.Kubelet, "the kubelet's steady pods never ran")
	require.InDelta(t, 9, cpu.Minikubelet.Median, 1e-9)

	md, err := os.ReadFile(b.o.mdOut)
	require.NoError(t, err)
	require.True(t, strings.HasPrefix(string(md), "A partial run: it ended early (kubelet: 177 of 250 pods running: context deadline exceeded)."), string(md))
	_, err = os.Stat(scaleSVGPath(b.o.mdOut))
	require.NoError(t, err, "the plot of the points so far")
	after, err := os.ReadFile(doc)
	require.NoError(t, err)
	require.Equal(t, docText, string(after), "a partial run never rewrites the docs' table")
	_, err = os.Stat(b.o.historyDir)
	require.True(t, os.IsNotExist(err), "nor keeps history")

	// Nothing measured: nothing written.
	empty := &bench{o: options{jsonOut: filepath.Join(dir, "e.json"), mdOut: filepath.Join(dir, "e.md")}, rep: &Report{}}
	empty.writePartial(cause)
	_, err = os.Stat(empty.o.jsonOut)
	require.True(t, os.IsNotExist(err))
}
