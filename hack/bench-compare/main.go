// Command bench-compare prints the difference between two `make bench`
// runs: the JSON files test/bench writes (bench-results.json, and with
// --update-docs a copy per commit in docs/bench/<date>-<commit>.json).
//
//	go run ./hack/bench-compare OLD.json NEW.json
//	go run ./hack/bench-compare docs/bench          # the two newest there
//
// Rows are matched by scenario, metric and unit. For each it prints both
// medians of minikubelet and the change, and the ratios to the raw CRI floor
// and to the kubelet measured in the same runs; rows in only one run are
// listed as added or gone. It is a regression guard without a threshold
// (benchmarks are never pass/fail): it always exits 0 when both files read.
// The machines' load at start is printed too, since a busy machine moves
// every figure.
package main

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// The subset of test/bench's Report that a comparison needs.
type stat struct {
	Median float64 `json:"median"`
}

type row struct {
	Scenario     string  `json:"scenario"`
	Metric       string  `json:"metric"`
	Unit         string  `json:"unit"`
	Raw          *stat   `json:"raw"`
	Minikubelet  *stat   `json:"minikubelet"`
	Kubelet      *stat   `json:"kubelet"`
	Ratio        float64 `json:"ratio"`
	KubeletRatio float64 `json:"ratio_kubelet"`
}

type report struct {
	Machine struct {
		Commit string `json:"commit"`
		Date   string `json:"date"`
		Load   string `json:"loadavg_at_start"`
	} `json:"machine"`
	Rows []row `json:"results"`
	// Partial is why the run ended early (test/bench's writePartial):
	// its missing rows are not gone from the code.
	Partial string `json:"partial"`
}

func (r row) key() string { return r.Scenario + "\x00" + r.Metric + "\x00" + r.Unit }

func main() {
	if err := run(os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "bench-compare:", err)
		os.Exit(2)
	}
}

func run(args []string, out io.Writer) error {
	var oldPath, newPath string
	switch len(args) {
	case 1:
		var err error
		if oldPath, newPath, err = newestTwo(args[0]); err != nil {
			return err
		}
	case 2:
		oldPath, newPath = args[0], args[1]
	default:
		return fmt.Errorf("usage: bench-compare OLD.json NEW.json, or bench-compare DIR (its two newest *.json)")
	}
	oldR, err := load(oldPath)
	if err != nil {
		return err
	}
	newR, err := load(newPath)
	if err != nil {
		return err
	}
	compare(out, oldPath, oldR, newPath, newR)
	return nil
}

// newestTwo returns the two last *.json of dir in name order (the names
// start with the run's date).
func newestTwo(dir string) (string, string, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.json"))
	if err != nil {
		return "", "", err
	}
	sort.Strings(files)
	if len(files) < 2 {
		return "", "", fmt.Errorf("%s holds %d run(s); compare needs two (make bench BENCH_FLAGS=--update-docs keeps one per run)", dir, len(files))
	}
	return files[len(files)-2], files[len(files)-1], nil
}

func load(path string) (*report, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var r report
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("%s: not a bench result (%v)", path, err)
	}
	if len(r.Rows) == 0 {
		return nil, fmt.Errorf("%s: no results in it", path)
	}
	return &r, nil
}

func compare(out io.Writer, oldPath string, oldR *report, newPath string, newR *report) {
	name := func(path string, r *report) string {
		c := r.Machine.Commit
		if c == "" {
			c = filepath.Base(path)
		}
		s := fmt.Sprintf("%s (%s, load %s)", c, r.Machine.Date, r.Machine.Load)
		if r.Partial != "" {
			s += "; a partial run, ended early: " + r.Partial
		}
		return s
	}
	fmt.Fprintf(out, "old: %s\nnew: %s\n\n", name(oldPath, oldR), name(newPath, newR))
	fmt.Fprintln(out, "| scenario | metric | unit | old | new | change | old ×raw | new ×raw | old ×kubelet | new ×kubelet |")
	fmt.Fprintln(out, "|---|---|---|---:|---:|---:|---:|---:|---:|---:|")
	olds := map[string]row{}
	for _, r := range oldR.Rows {
		olds[r.key()] = r
	}
	seen := map[string]bool{}
	var added []string
	for _, n := range newR.Rows {
		o, ok := olds[n.key()]
		seen[n.key()] = true
		if !ok {
			added = append(added, n.Scenario+" "+n.Metric)
			continue
		}
		fmt.Fprintf(out, "| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n",
			n.Scenario, n.Metric, n.Unit,
			median(o.Minikubelet), median(n.Minikubelet), change(o.Minikubelet, n.Minikubelet),
			ratio(o.Ratio), ratio(n.Ratio), ratio(o.KubeletRatio), ratio(n.KubeletRatio))
	}
	var gone []string
	for _, o := range oldR.Rows {
		if !seen[o.key()] {
			gone = append(gone, o.Scenario+" "+o.Metric)
		}
	}
	if len(added) > 0 {
		fmt.Fprintf(out, "\nonly in new: %s\n", strings.Join(added, "; "))
	}
	if len(gone) > 0 {
		fmt.Fprintf(out, "\nonly in old: %s\n", strings.Join(gone, "; "))
	}
}

func median(s *stat) string {
	if s == nil {
		return "n/a"
	}
	return num(s.Median)
}

// change is new over old as a signed percentage.
func change(o, n *stat) string {
	if o == nil || n == nil || o.Median == 0 {
		return "–"
	}
	pct := (n.Median/o.Median - 1) * 100
	if math.Abs(pct) < 0.05 {
		return "0.0 %"
	}
	return fmt.Sprintf("%+.1f %%", pct)
}

func ratio(x float64) string {
	if x <= 0 {
		return "–"
	}
	return fmt.Sprintf("%.2f", x)
}

func num(x float64) string {
	switch {
	case math.Abs(x) >= 100:
		return fmt.Sprintf("%.0f", x)
	case math.Abs(x) >= 10:
		return fmt.Sprintf("%.1f", x)
	default:
		return fmt.Sprintf("%.2f", x)
	}
}
