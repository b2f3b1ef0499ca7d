package main

// Statistics and the report: JSON, a Markdown table, and the results
// section of docs/performance.md between its markers.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"
)

// Stat summarises samples.
type Stat struct {
	N      int     `json:"n"`
	Median float64 `json:"median"`
	P99    float64 `json:"p99"`
	Min    float64 `json:"min"`
	Max    float64 `json:"max"`
}

// summarize returns the median (mean of the middle two for an even count)
// and the nearest-rank 99th percentile. Nil for no samples.
func summarize(xs []float64) *Stat {
	if len(xs) == 0 {
		return nil
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	n := len(s)
	med := s[n/2]
	if n%2 == 0 {
		med = (s[n/2-1] + s[n/2]) / 2
	}
	rank := int(math.Ceil(0.99 * float64(n)))
	return &Stat{N: n, Median: med, P99: s[rank-1], Min: s[0], Max: s[n-1]}
}

// single is a Stat of one measurement.
func single(x float64) *Stat { return &Stat{N: 1, Median: x, P99: x, Min: x, Max: x} }

// ms converts durations to milliseconds.
func ms(ds []time.Duration) []float64 {
	out := make([]float64, len(ds))
	for i, d := range ds {
		out[i] = float64(d) / float64(time.Millisecond)
	}
	return out
}

// Row is one line of the report.
type Row struct {
	Scenario string `json:"scenario"`
	Metric   string `json:"metric"`
	Unit     string `json:"unit"`
	// Raw is the floor (nil: not applicable, the floor has no agent).
	Raw *Stat `json:"raw,omitempty"`
	// Minikubelet is measured through the daemon's API, or on the
	// manifest rows through its --manifest-dir.
	Minikubelet *Stat `json:"minikubelet"`
	// Kubelet is the kubelet given the same pods by the same route (the
	// manifest rows only; nil elsewhere).
	Kubelet *Stat `json:"kubelet,omitempty"`
	// Ratio is minikubelet's median over raw's (0: no floor).
	Ratio float64 `json:"ratio,omitempty"`
	// KubeletRatio is minikubelet's median over the kubelet's (0: no
	// kubelet figure).
	KubeletRatio float64 `json:"ratio_kubelet,omitempty"`
	// Target is the goal in words; Met whether the median meets it (nil:
	// no target on this row).
	Target string `json:"target,omitempty"`
	Met    *bool  `json:"met,omitempty"`
}

// newRow fills the ratio from the medians.
func newRow(scenario, metric, unit string, raw, mkl *Stat) Row {
	r := Row{Scenario: scenario, Metric: metric, Unit: unit, Raw: raw, Minikubelet: mkl}
	if raw != nil && mkl != nil && raw.Median > 0 {
		r.Ratio = mkl.Median / raw.Median
	}
	return r
}

// withKubelet adds the kubelet's figure and minikubelet's ratio to it.
func (r Row) withKubelet(k *Stat) Row {
	r.Kubelet = k
	if k != nil && r.Minikubelet != nil && k.Median > 0 {
		r.KubeletRatio = r.Minikubelet.Median / k.Median
	}
	return r
}

// target sets the target and whether it was met.
func (r Row) target(text string, met bool) Row {
	r.Target, r.Met = text, &met
	return r
}

// Machine describes where the benchmark ran.
type Machine struct {
	CPU        string  `json:"cpu"`
	Cores      int     `json:"cores"`
	Kernel     string  `json:"kernel"`
	Containerd string  `json:"containerd"`
	Go         string  `json:"go"`
	Load       string  `json:"loadavg_at_start"`
	Date       string  `json:"date"`
	Duration   float64 `json:"duration_seconds"`
	// Commit is the minikubelet commit measured (bench.sh passes `git
	// describe --always --dirty`), so hack/bench-compare can name the runs
	// it compares.
	Commit string `json:"commit,omitempty"`
}

// detectMachine reads the CPU model, cores, kernel and load from /proc.
func detectMachine(containerd string) Machine {
	m := Machine{Cores: runtime.NumCPU(), Containerd: containerd, Go: runtime.Version(), Date: time.Now().UTC().Format(time.RFC3339)}
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, l := range strings.Split(string(b), "\n") {
			if k, v, ok := strings.Cut(l, ":"); ok && strings.TrimSpace(k) == "model name" {
				m.CPU = strings.TrimSpace(v)
				break
			}
		}
	}
	if b, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		m.Kernel = strings.TrimSpace(string(b))
	}
	if b, err := os.ReadFile("/proc/loadavg"); err == nil {
		f := strings.Fields(string(b))
		if len(f) >= 3 {
			m.Load = strings.Join(f[:3], " ")
		}
	}
	return m
}

// Report is the whole result, as written to bench-results.json.
type Report struct {
	Machine  Machine           `json:"machine"`
	Settings map[string]string `json:"settings"`
	Rows     []Row             `json:"results"`
	Notes    []string          `json:"notes,omitempty"`
	// Scale is the scale curve's figures per pod count (scenario 7, in
	// the rows too), from which its plot is drawn.
	Scale []ScalePoint `json:"scale,omitempty"`
	// Partial is why the run ended before its last scenario (empty: it
	// ran them all): the report then holds the scenarios it finished and
	// the scale curve's figures taken so far (writePartial).
	Partial string `json:"partial,omitempty"`
}

// keep writes the report into dir as <date>-<commit>.json (the date of
// the run, UTC; "unknown" without a commit) and returns the path: the
// figures per commit that hack/bench-compare diffs.
func (r *Report) keep(dir string) (string, error) {
	date := "undated"
	if t, err := time.Parse(time.RFC3339, r.Machine.Date); err == nil {
		date = t.Format("20060102-1504")
	}
	commit := r.Machine.Commit
	if commit == "" {
		commit = "unknown"
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	path := filepath.Join(dir, date+"-"+commit+".json")
	return path, r.writeJSON(path)
}

func (r *Report) writeJSON(path string) error {
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}

// fmtNum prints a value with a precision that suits its size.
func fmtNum(x float64) string {
	switch {
	case x >= 100:
		return fmt.Sprintf("%.0f", x)
	case x >= 10:
		return fmt.Sprintf("%.1f", x)
	default:
		return fmt.Sprintf("%.2f", x)
	}
}

func fmtStat(s *Stat) (string, string) {
	if s == nil {
		return "n/a", "n/a"
	}
	if s.N == 1 {
		return fmtNum(s.Median), "–"
	}
	return fmtNum(s.Median), fmtNum(s.P99)
}

// markdown renders the table, the machine and the notes.
func (r *Report) markdown() string {
	var b strings.Builder
	if r.Partial != "" {
		what := "Only the scenarios it finished are here."
		if len(r.Scale) > 0 {
			what = "Only the scenarios it finished, and the scale curve's figures taken so far, are here."
		}
		fmt.Fprintf(&b, "A partial run: it ended early (%s). %s\n\n", r.Partial, what)
	}
	b.WriteString("| scenario | metric | unit | raw CRI median | raw p99 | minikubelet median | minikubelet p99 | kubelet median | kubelet p99 | minikubelet/raw | minikubelet/kubelet | target | met |\n")
	b.WriteString("|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---|:-:|\n")
	ratio := func(x float64) string {
		if x > 0 {
			return fmt.Sprintf("%.2f", x)
		}
		return "–"
	}
	for _, row := range r.Rows {
		rm, rp := fmtStat(row.Raw)
		mm, mp := fmtStat(row.Minikubelet)
		km, kp := fmtStat(row.Kubelet)
		met := ""
		if row.Met != nil {
			met = "✗"
			if *row.Met {
				met = "✓"
			}
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n",
			row.Scenario, row.Metric, row.Unit, rm, rp, mm, mp, km, kp, ratio(row.Ratio), ratio(row.KubeletRatio), row.Target, met)
	}
	m := r.Machine
	fmt.Fprintf(&b, "\nMachine: %s, %d cores, kernel %s, %s, %s; load average at start %s; %s (run took %.0f s).\n",
		m.CPU, m.Cores, m.Kernel, m.Containerd, m.Go, m.Load, m.Date, m.Duration)
	if len(r.Settings) > 0 {
		keys := make([]string, 0, len(r.Settings))
		for k := range r.Settings {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		var parts []string
		for _, k := range keys {
			parts = append(parts, k+"="+r.Settings[k])
		}
		fmt.Fprintf(&b, "Settings: %s.\n", strings.Join(parts, ", "))
	}
	for _, n := range r.Notes {
		fmt.Fprintf(&b, "\n%s\n", n)
	}
	return b.String()
}

// Markers of the generated performance results in docs/performance.md: the
// main table, and the table of a run of the scale curve alone.
const (
	perfBegin = "<!-- BEGIN PERFORMANCE -->"
	perfEnd   = "<!-- END PERFORMANCE -->"
	// The scale section's: a run of --scenarios scale alone writes there,
	// so it does not replace the main table with the curve's rows.
	perfScaleBegin = "<!-- BEGIN PERFORMANCE scale -->"
	perfScaleEnd   = "<!-- END PERFORMANCE scale -->"
)

// replaceSection returns doc with the text between the markers replaced by
// body; both markers must be present, in order, once.
func replaceSection(doc []byte, beginMarker, endMarker, body string) ([]byte, error) {
	begin := bytes.Index(doc, []byte(beginMarker))
	end := bytes.Index(doc, []byte(endMarker))
	if begin < 0 || end < 0 || end < begin {
		return nil, fmt.Errorf("the document has no %s … %s section: add both markers, in that order, where the results go", beginMarker, endMarker)
	}
	if bytes.Count(doc, []byte(beginMarker)) != 1 || bytes.Count(doc, []byte(endMarker)) != 1 {
		return nil, fmt.Errorf("the document has more than one %s or %s marker: keep one of each", beginMarker, endMarker)
	}
	var out bytes.Buffer
	out.Write(doc[:begin+len(beginMarker)])
	out.WriteString("\n")
	out.WriteString(strings.TrimSpace(body))
	out.WriteString("\n")
	out.Write(doc[end:])
	return out.Bytes(), nil
}

// updatePerfDoc rewrites a results section of the document at path
// (docs/performance.md): the main table, or with scaleOnly the scale
// curve's.
func updatePerfDoc(path, body string, scaleOnly bool) error {
	doc, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	begin, end := perfBegin, perfEnd
	if scaleOnly {
		begin, end = perfScaleBegin, perfScaleEnd
	}
	out, err := replaceSection(doc, begin, end, body)
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return os.WriteFile(path, out, 0o644)
}
