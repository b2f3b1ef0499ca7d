// Command testsum sits behind `go test -json` in make test (hack/gotest.sh):
// it prints what a plain `go test` would (each package's closing line, and
// the output of the tests that failed), keeps the JSON stream in a log
// file, and, with -summary, reads the logs of a whole make test run and
// prints the skipped tests grouped by reason, then the closing line
// "N passed, N failed, N skipped" (issue #17: a skip must be visible).
//
//	go test -json ./... | testsum -log LOG        # filter one run
//	testsum -summary LOG...                       # the run's summary
package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
)

// event is one line of `go test -json` (cmd/test2json).
type event struct {
	Action  string
	Package string
	Test    string
	Output  string
}

func main() {
	logPath := flag.String("log", "", "append the JSON stream to this file")
	summary := flag.Bool("summary", false, "summarise the JSON logs named as arguments")
	stream := flag.Bool("stream", false, "print every test's output as it comes (go test -v), not only a failed test's")
	flag.Parse()
	if *summary {
		if err := summarise(os.Stdout, flag.Args()); err != nil {
			fmt.Fprintln(os.Stderr, "testsum:", err)
			os.Exit(2)
		}
		return
	}
	var log io.Writer = io.Discard
	if *logPath != "" {
		f, err := os.OpenFile(*logPath, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
		if err != nil {
			fmt.Fprintln(os.Stderr, "testsum:", err)
			os.Exit(2)
		}
		defer f.Close()
		log = f
	}
	if failed := filter(os.Stdin, os.Stdout, log, *stream); failed {
		os.Exit(1)
	}
}

// filter copies the stream to log and prints go test's plain output: the
// package lines, and a test's output only when it failed. Lines that are
// not JSON (build errors, go vet) are printed as they are. It reports
// whether anything failed. With stream, every test's output is printed as
// it comes (go test -v), for suites that report progress.
func filter(in io.Reader, out, log io.Writer, stream bool) (failed bool) {
	// buf holds each running test's output until it ends.
	buf := map[string]*strings.Builder{}
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		line := sc.Bytes()
		var ev event
		if len(line) == 0 || line[0] != '{' || json.Unmarshal(line, &ev) != nil {
			fmt.Fprintf(out, "%s\n", line)
			continue
		}
		fmt.Fprintf(log, "%s\n", line)
		key := ev.Package + " " + ev.Test
		switch {
		case ev.Test == "" && ev.Action == "output":
			// The package's own lines: ok/FAIL/PASS, panics, TestMain.
			if !strings.HasPrefix(ev.Output, "PASS\n") {
				fmt.Fprint(out, ev.Output)
			}
		case ev.Test == "" && ev.Action == "fail":
			failed = true
			// Tests of the package that never ended (it timed out or
			// panicked: the panic is in one of their outputs).
			for k, b := range buf {
				if strings.HasPrefix(k, ev.Package+" ") {
					fmt.Fprintf(out, "--- DID NOT FINISH: %s\n%s", strings.TrimPrefix(k, ev.Package+" "), upToGoroutines(dropRunLines(b.String())))
					delete(buf, k)
				}
			}
		case ev.Action == "output" && stream:
			fmt.Fprint(out, ev.Output)
		case ev.Action == "fail" && stream:
			failed = true
		case ev.Action == "output":
			b := buf[key]
			if b == nil {
				b = &strings.Builder{}
				buf[key] = b
			}
			b.WriteString(ev.Output)
		case ev.Action == "fail":
			failed = true
			// test2json gives each subtest its own output: a failed
			// subtest prints its lines, then its parent its own.
			if b := buf[key]; b != nil {
				fmt.Fprint(out, dropRunLines(b.String()))
			}
			delete(buf, key)
		case ev.Action == "pass" || ev.Action == "skip":
			delete(buf, key)
		}
	}
	return failed
}

// upToGoroutines cuts a timed-out test's output after the panic's list of
// running tests: the goroutine dump after it runs to thousands of lines
// (the JSON log keeps it).
func upToGoroutines(s string) string {
	i := strings.Index(s, "\ngoroutine ")
	if i < 0 || !strings.Contains(s[:i], "panic: ") {
		return s
	}
	return s[:i+1] + fmt.Sprintf("… %d more lines: the goroutines (in the JSON log)\n", strings.Count(s[i+1:], "\n"))
}

// runLine matches the verbose bookkeeping lines a plain run does not print.
var runLine = regexp.MustCompile(`(?m)^\s*=== (RUN|PAUSE|CONT|NAME)\s.*\n`)

func dropRunLines(s string) string { return runLine.ReplaceAllString(s, "") }

// skipReason is the reason line a skipped test printed: the last
// "file_test.go:N: reason" line of its output.
var skipReason = regexp.MustCompile(`(?m)^\s+\S+\.go:\d+: (.*)$`)

// summarise reads JSON logs and prints the skips by reason and the totals.
func summarise(out io.Writer, paths []string) error {
	// output is the test's first 64 KiB (skip reasons come early); fails
	// is its last maxFailureLines failure lines, from anywhere in its
	// output, each with its first continuation lines; indent is the last
	// failure line's while the lines after it continue it, else -1.
	// why is its first testify assertion, one line (see assertion).
	type result struct {
		action, output string
		fails          []*failure
		indent         int
		why            assertion
	}
	results := map[string]*result{}
	var order []string
	for _, p := range paths {
		f, err := os.Open(p)
		if os.IsNotExist(err) {
			continue
		}
		if err != nil {
			return err
		}
		sc := bufio.NewScanner(f)
		sc.Buffer(make([]byte, 1<<20), 16<<20)
		for sc.Scan() {
			var ev event
			if json.Unmarshal(sc.Bytes(), &ev) != nil || ev.Test == "" {
				continue
			}
			// The same test in two runs (the e2e suite against each
			// containerd) counts twice: the log name tells them apart.
			key := p + "\x00" + ev.Package + "\x00" + ev.Test
			r := results[key]
			if r == nil {
				r = &result{indent: -1}
				results[key] = r
				order = append(order, key)
			}
			switch ev.Action {
			case "output":
				if len(r.output) < 64<<10 {
					r.output += ev.Output
				}
				r.why.see(ev.Output)
				switch in := indentOf(ev.Output); {
				case failureLine.MatchString(ev.Output):
					r.fails = append(r.fails, &failure{lines: []string{ev.Output}})
					if len(r.fails) > maxFailureLines {
						r.fails = r.fails[1:]
					}
					r.indent = in
				case r.indent >= 0 && in > r.indent && len(r.fails) > 0:
					r.fails[len(r.fails)-1].add(ev.Output)
				default:
					r.indent = -1
				}
			case "pass", "fail", "skip":
				r.action = ev.Action
			}
		}
		f.Close()
		if err := sc.Err(); err != nil {
			return fmt.Errorf("%s: %w", p, err)
		}
	}
	var passed, failed, skipped int
	byReason := map[string][]string{}
	var failures, failedNames []string
	for _, key := range order {
		r := results[key]
		parts := strings.SplitN(key, "\x00", 3)
		switch r.action {
		case "pass":
			passed++
		case "fail", "":
			// "": it never ended (its package timed out or panicked).
			failed++
			name := fmt.Sprintf("%s.%s (%s)", shortPkg(parts[1]), parts[2], filepath.Base(parts[0]))
			if r.action == "" {
				name += ", did not finish"
			}
			failures = append(failures, failureLines(name, r.fails))
			if w := r.why.String(); w != "" {
				name += "\n      " + w
			} else if l := lastOwnFailure(r.fails); l != "" {
				name += "\n      " + l
			}
			failedNames = append(failedNames, name)
		case "skip":
			skipped++
			reason := "(no reason given)"
			if m := skipReason.FindAllStringSubmatch(r.output, -1); len(m) > 0 {
				reason = strings.TrimSpace(m[len(m)-1][1])
			}
			byReason[reason] = append(byReason[reason], shortPkg(parts[1])+"."+parts[2])
		}
	}
	if skipped > 0 {
		reasons := make([]string, 0, len(byReason))
		for r := range byReason {
			reasons = append(reasons, r)
		}
		sort.Slice(reasons, func(i, j int) bool {
			if a, b := len(byReason[reasons[i]]), len(byReason[reasons[j]]); a != b {
				return a > b
			}
			return reasons[i] < reasons[j]
		})
		fmt.Fprintf(out, "skipped tests by reason (%d):\n", skipped)
		for _, r := range reasons {
			tests := byReason[r]
			sort.Strings(tests)
			shown := tests
			more := ""
			if len(shown) > 4 {
				shown, more = shown[:4], fmt.Sprintf(", … %d more", len(tests)-4)
			}
			fmt.Fprintf(out, "  %4d  %s\n        %s%s\n", len(tests), r, strings.Join(shown, ", "), more)
		}
	}
	if len(failures) > 0 {
		fmt.Fprintf(out, "failed tests (%d), each with its own failure lines:\n", len(failures))
		for _, f := range failures {
			fmt.Fprint(out, f)
		}
		// The names again, last, each with its first assertion: CI shows
		// only the end of the output, and one test's lines above can fill
		// it (a runtime's log tail).
		fmt.Fprintf(out, "failed tests (%d):\n", len(failedNames))
		for _, n := range failedNames {
			fmt.Fprintf(out, "  %s\n", n)
		}
	}
	fmt.Fprintf(out, "%d passed, %d failed, %d skipped\n", passed, failed, skipped)
	return nil
}

// failureLine is a line a test printed itself (t.Errorf, t.Fatalf,
// t.Logf: "    file_test.go:N: ...") or testify's "Error:"/"Messages:"
// continuation, or a panic (go test's timeout: "panic: test timed out",
// its running tests continuing it); the runtime's log dumps a failed e2e
// test prints are not.
var failureLine = regexp.MustCompile(`^(\s+(\S+_test\.go:\d+: |Error:|Messages:)|panic: )`)

// maxFailureLines is how many of its own last failure lines a failed
// test's summary repeats; maxContinuation how many of the lines continuing
// each (a multi-line t.Fatalf: what did not converge; a log's tail).
// maxTestLines bounds what one failed test prints in all: its oldest
// failures go first.
const (
	maxFailureLines = 12
	maxContinuation = 6
	maxTestLines    = 30
)

// assertion is a failed test's first testify assertion, for the end of
// the summary: "file_test.go:N: <Error's first line> (<Messages>)". A
// test's own log lines look like its t.Errorf lines in go test's output;
// testify's "Error:" line does not.
type assertion struct {
	loc, err, msg string
	// state: 0 looking, 1 after Error (a Messages line may follow), 2 done.
	state int
}

var (
	locLine      = regexp.MustCompile(`^\s+(\S+_test\.go:\d+):`)
	testifyField = regexp.MustCompile(`^\s+(Error|Messages):\s*(.*)$`)
)

func (a *assertion) see(line string) {
	if a.state == 2 {
		return
	}
	line = strings.TrimRight(line, "\n")
	if m := testifyField.FindStringSubmatch(line); m != nil {
		switch {
		case m[1] == "Error" && a.state == 0:
			a.err, a.state = m[2], 1
		case m[1] == "Messages" && a.state == 1:
			a.msg, a.state = m[2], 2
		}
		return
	}
	if m := locLine.FindStringSubmatch(line); m != nil {
		if a.state == 1 {
			a.state = 2 // the next assertion or log line: no Messages
			return
		}
		a.loc = m[1]
	}
}

func (a *assertion) String() string {
	if a.err == "" {
		return ""
	}
	s := strings.TrimSpace(a.err)
	if a.loc != "" {
		s = a.loc + ": " + s
	}
	if m := strings.TrimSpace(a.msg); m != "" {
		s += " (" + m + ")"
	}
	if len(s) > 300 {
		s = s[:300] + " …"
	}
	return s
}

// failure is one failure line and the first lines continuing it; more
// counts those left out.
type failure struct {
	lines []string
	more  int
}

func (f *failure) add(line string) {
	if len(f.lines) > maxContinuation {
		f.more++
		return
	}
	f.lines = append(f.lines, line)
}

// dumpLine is the first line of a log's tail a test prints (the e2e
// helpers' "… (tail):"), not a failure of its own.
var dumpLine = regexp.MustCompile(`\(tail\):\s*$`)

func (f *failure) isDump() bool { return len(f.lines) > 0 && dumpLine.MatchString(f.lines[0]) }

// lastOwnFailure is the first line of the last failure that is not a log
// dump, for the end of the summary when no testify assertion failed: a
// t.Fatalf's message, which a cleanup's dump would otherwise bury.
func lastOwnFailure(fails []*failure) string {
	for i := len(fails) - 1; i >= 0; i-- {
		if !fails[i].isDump() {
			l := strings.TrimSpace(fails[i].lines[0])
			if len(l) > 300 {
				l = l[:300] + " …"
			}
			return l
		}
	}
	return ""
}

// indentOf is the width of the line's leading blanks, -1 for a blank
// line: go test indents a message's continuation lines deeper than its
// "file_test.go:N:" line.
func indentOf(line string) int {
	t := strings.TrimLeft(line, " \t")
	if strings.TrimSpace(t) == "" {
		return -1
	}
	return len(line) - len(t)
}

// failureLines names a failed test with its log (the e2e suite runs once
// per containerd: "pkg.Test (log)") and repeats the last lines it printed
// itself, so the end of make test's output says why it failed: CI keeps
// only the end.
func failureLines(name string, fails []*failure) string {
	var b strings.Builder
	fmt.Fprintf(&b, "  %s\n", name)
	n := 0
	for _, f := range fails {
		n += len(f.lines) + min(f.more, 1)
	}
	// Over the bound, a log dump goes first, then the oldest failures:
	// the line that failed the test (a t.Fatalf before the dumps its
	// cleanups print) is the one to keep.
	fails = append([]*failure(nil), fails...)
	for len(fails) > 1 && n > maxTestLines {
		i := 0
		for j, f := range fails {
			if f.isDump() {
				i = j
				break
			}
		}
		n -= len(fails[i].lines) + min(fails[i].more, 1)
		fails = append(fails[:i], fails[i+1:]...)
	}
	for _, f := range fails {
		for i, l := range f.lines {
			l = strings.TrimSpace(l)
			if len(l) > 300 {
				l = l[:300] + " …"
			}
			if i > 0 {
				l = "  " + l
			}
			fmt.Fprintf(&b, "      %s\n", l)
		}
		if f.more > 0 {
			fmt.Fprintf(&b, "        … %d more lines\n", f.more)
		}
	}
	return b.String()
}

// shortPkg drops the module path.
func shortPkg(p string) string {
	return strings.TrimPrefix(p, "github.com/minikubelet/minikubelet/")
}
