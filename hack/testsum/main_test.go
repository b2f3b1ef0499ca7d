package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const stream = `{"Action":"start","Package":"m/a"}
{"Action":"run","Package":"m/a","Test":"TestOK"}
{"Action":"output","Package":"m/a","Test":"TestOK","Output":"=== RUN   TestOK\n"}
{"Action":"output","Package":"m/a","Test":"TestOK","Output":"--- PASS: TestOK (0.00s)\n"}
{"Action":"pass","Package":"m/a","Test":"TestOK"}
{"Action":"run","Package":"m/a","Test":"TestDocs"}
{"Action":"output","Package":"m/a","Test":"TestDocs","Output":"=== RUN   TestDocs\n"}
{"Action":"output","Package":"m/a","Test":"TestDocs","Output":"    docs_test.go:12: no examples at /x\n"}
{"Action":"output","Package":"m/a","Test":"TestDocs","Output":"--- SKIP: TestDocs (0.00s)\n"}
{"Action":"skip","Package":"m/a","Test":"TestDocs"}
{"Action":"run","Package":"m/a","Test":"TestQOS"}
{"Action":"output","Package":"m/a","Test":"TestQOS","Output":"    qos_test.go:3: no examples at /x\n"}
{"Action":"skip","Package":"m/a","Test":"TestQOS"}
{"Action":"run","Package":"m/a","Test":"TestBad"}
{"Action":"output","Package":"m/a","Test":"TestBad","Output":"=== RUN   TestBad\n"}
{"Action":"output","Package":"m/a","Test":"TestBad","Output":"    bad_test.go:9: boom\n"}
{"Action":"output","Package":"m/a","Test":"TestBad","Output":"--- FAIL: TestBad (0.00s)\n"}
{"Action":"fail","Package":"m/a","Test":"TestBad"}
{"Action":"output","Package":"m/a","Output":"FAIL\n"}
{"Action":"output","Package":"m/a","Output":"FAIL\tm/a\t0.01s\n"}
{"Action":"fail","Package":"m/a"}
`

func TestFilterAndSummary(t *testing.T) {
	log := filepath.Join(t.TempDir(), "unit.json")
	f, err := os.Create(log)
	require.NoError(t, err)
	var out strings.Builder
	failed := filter(strings.NewReader("# m/b\nbuild error\n"+stream), &out, f, false)
	require.NoError(t, f.Close())
	assert.True(t, failed)
	assert.Equal(t, "# m/b\nbuild error\n    bad_test.go:9: boom\n--- FAIL: TestBad (0.00s)\nFAIL\nFAIL\tm/a\t0.01s\n", out.String(), "what plain go test prints")

	var sum strings.Builder
	require.NoError(t, summarise(&sum, []string{log, filepath.Join(t.TempDir(), "missing.json")}))
	assert.Equal(t, `skipped tests by reason (2):
     2  no examples at /x
        m/a.TestDocs, m/a.TestQOS
failed tests (1), each with its own failure lines:
  m/a.TestBad (unit.json)
      bad_test.go:9: boom
failed tests (1):
  m/a.TestBad (unit.json)
      bad_test.go:9: boom
1 passed, 1 failed, 2 skipped
`, sum.String())
}

func TestFilterStream(t *testing.T) {
	var out strings.Builder
	failed := filter(strings.NewReader(stream), &out, io.Discard, true)
	assert.True(t, failed)
	assert.Contains(t, out.String(), "--- PASS: TestOK")
	assert.Contains(t, out.String(), "no examples at /x")
}

// A long test's failure comes after its first 64 KiB of output (what the
// summary keeps for skip reasons); its own last lines are still repeated.
func TestSummaryFailureLinesAfterLongOutput(t *testing.T) {
	log := filepath.Join(t.TempDir(), "e2e-containerd-2.4.json")
	var b strings.Builder
	filler := strings.Repeat("x", 1000)
	for range 80 {
		b.WriteString(`{"Action":"output","Package":"m/e2e","Test":"TestChaos","Output":"        time=` + filler + `\n"}` + "\n")
	}
	b.WriteString(`{"Action":"output","Package":"m/e2e","Test":"TestChaos","Output":"    chaos_test.go:160: the status does not show the container killed\n"}` + "\n")
	b.WriteString(`{"Action":"output","Package":"m/e2e","Test":"TestChaos","Output":"        time=runtime log dump\n"}` + "\n")
	b.WriteString(`{"Action":"fail","Package":"m/e2e","Test":"TestChaos"}` + "\n")
	require.NoError(t, os.WriteFile(log, []byte(b.String()), 0o644))
	var sum strings.Builder
	require.NoError(t, summarise(&sum, []string{log}))
	assert.Equal(t, `failed tests (1), each with its own failure lines:
  m/e2e.TestChaos (e2e-containerd-2.4.json)
      chaos_test.go:160: the status does not show the container killed
        time=runtime log dump
failed tests (1):
  m/e2e.TestChaos (e2e-containerd-2.4.json)
      chaos_test.go:160: the status does not show the container killed
0 passed, 1 failed, 0 skipped
`, sum.String())
}

// A multi-line failure (what did not converge) keeps its first lines: CI
// shows only the end of make test's output, and the first line alone
// says nothing of why. A blank or an unindented line ends one.
func TestSummaryKeepsAFailuresContinuation(t *testing.T) {
	log := filepath.Join(t.TempDir(), "e2e-containerd-2.4.json")
	var b strings.Builder
	out := func(s string) {
		b.WriteString(`{"Action":"output","Package":"m/e2e","Test":"TestChaos","Output":"` + s + `\n"}` + "\n")
	}
	out("    chaos_test.go:112: round 0: killed")
	out("    chaos_test.go:118: deletion: not converged after 1m30s:")
	for i := range 9 {
		out(fmt.Sprintf("        still in the API: p%d", i))
	}
	out("")
	out("        after a blank line")
	out("    helpers_test.go:126: serve output (tail):")
	out("        level=ERROR msg=Pod teardown incomplete; retrying")
	out("--- FAIL: TestChaos (90.00s)")
	out("        after the FAIL line")
	b.WriteString(`{"Action":"fail","Package":"m/e2e","Test":"TestChaos"}` + "\n")
	require.NoError(t, os.WriteFile(log, []byte(b.String()), 0o644))
	var sum strings.Builder
	require.NoError(t, summarise(&sum, []string{log}))
	assert.Equal(t, `failed tests (1), each with its own failure lines:
  m/e2e.TestChaos (e2e-containerd-2.4.json)
      chaos_test.go:112: round 0: killed
      chaos_test.go:118: deletion: not converged after 1m30s:
        still in the API: p0
        still in the API: p1
        still in the API: p2
        still in the API: p3
        still in the API: p4
        still in the API: p5
        … 3 more lines
      helpers_test.go:126: serve output (tail):
        level=ERROR msg=Pod teardown incomplete; retrying
failed tests (1):
  m/e2e.TestChaos (e2e-containerd-2.4.json)
      chaos_test.go:118: deletion: not converged after 1m30s:
0 passed, 1 failed, 0 skipped
`, sum.String())
}

// However many failures a test printed, what it repeats stays within
// maxTestLines: the oldest go first.
func TestSummaryBoundsATestsLines(t *testing.T) {
	log := filepath.Join(t.TempDir(), "e2e.json")
	var b strings.Builder
	for i := range 10 {
		b.WriteString(fmt.Sprintf(`{"Action":"output","Package":"m/e2e","Test":"TestMany","Output":"    many_test.go:%d: failure %d\n"}`+"\n", i, i))
		for j := range 8 {
			b.WriteString(fmt.Sprintf(`{"Action":"output","Package":"m/e2e","Test":"TestMany","Output":"        detail %d.%d\n"}`+"\n", i, j))
		}
	}
	b.WriteString(`{"Action":"fail","Package":"m/e2e","Test":"TestMany"}` + "\n")
	require.NoError(t, os.WriteFile(log, []byte(b.String()), 0o644))
	var sum strings.Builder
	require.NoError(t, summarise(&sum, []string{log}))
	out := sum.String()
	// Each failure: its line, 6 continuing ones, "… 2 more lines"; then
	// the names again and the totals.
	assert.Equal(t, 1+3*8+1+3+1, strings.Count(out, "\n"), out)
	assert.NotContains(t, out, "failure 6\n")
	assert.Contains(t, out, "failure 7\n")
	assert.Contains(t, out, "failure 9\n")
}

// A package that timed out: go test's panic lands in the output of one of
// the tests still running, and none of them ends. They count as failed
// ("did not finish"), the panic and its list of running tests are their
// failure lines, and the plain output prints them without the goroutines.
func TestTimedOutTestsCountAsFailed(t *testing.T) {
	log := filepath.Join(t.TempDir(), "e2e.json")
	lines := []string{
		`{"Action":"run","Package":"m/e2e","Test":"TestDone"}`,
		`{"Action":"pass","Package":"m/e2e","Test":"TestDone"}`,
		`{"Action":"run","Package":"m/e2e","Test":"TestSlow"}`,
		`{"Action":"output","Package":"m/e2e","Test":"TestSlow","Output":"    slow_test.go:5: round 2\n"}`,
		`{"Action":"run","Package":"m/e2e","Test":"TestChaos"}`,
		`{"Action":"output","Package":"m/e2e","Test":"TestChaos","Output":"panic: test timed out after 40m0s\n"}`,
		`{"Action":"output","Package":"m/e2e","Test":"TestChaos","Output":"\trunning tests:\n"}`,
		`{"Action":"output","Package":"m/e2e","Test":"TestChaos","Output":"\t\tTestChaos (1m51s)\n"}`,
		`{"Action":"output","Package":"m/e2e","Test":"TestChaos","Output":"\t\tTestSlow (3m51s)\n"}`,
		`{"Action":"output","Package":"m/e2e","Test":"TestChaos","Output":"\n"}`,
		`{"Action":"output","Package":"m/e2e","Test":"TestChaos","Output":"goroutine 8407 [running]:\n"}`,
		`{"Action":"output","Package":"m/e2e","Test":"TestChaos","Output":"testing.(*M).startAlarm.func1()\n"}`,
		`{"Action":"output","Package":"m/e2e","Output":"FAIL\tm/e2e\t2400.1s\n"}`,
		`{"Action":"fail","Package":"m/e2e"}`,
	}
	in := strings.Join(lines, "\n") + "\n"
	var out strings.Builder
	assert.True(t, filter(strings.NewReader(in), &out, io.Discard, false))
	assert.Contains(t, out.String(), "--- DID NOT FINISH: TestChaos\npanic: test timed out after 40m0s\n\trunning tests:\n\t\tTestChaos (1m51s)\n\t\tTestSlow (3m51s)\n\n… 2 more lines: the goroutines (in the JSON log)\n")
	assert.Contains(t, out.String(), "--- DID NOT FINISH: TestSlow\n    slow_test.go:5: round 2\n")

	require.NoError(t, os.WriteFile(log, []byte(in), 0o644))
	var sum strings.Builder
	require.NoError(t, summarise(&sum, []string{log}))
	assert.Contains(t, sum.String(), "  m/e2e.TestChaos (e2e.json), did not finish\n      panic: test timed out after 40m0s\n        running tests:\n")
	assert.Contains(t, sum.String(), "  m/e2e.TestSlow (e2e.json), did not finish\n      slow_test.go:5: round 2\n")
	assert.True(t, strings.HasSuffix(sum.String(), "1 passed, 2 failed, 0 skipped\n"), sum.String())
}

// The names at the end carry each test's first testify assertion on one
// line: the lines above may have scrolled off what CI keeps.
func TestSummaryNamesCarryTheFirstAssertion(t *testing.T) {
	log := filepath.Join(t.TempDir(), "e2e.json")
	var b strings.Builder
	out := func(test, s string) {
		b.WriteString(`{"Action":"output","Package":"m/e2e","Test":"` + test + `","Output":"` + s + `\n"}` + "\n")
	}
	out("TestProbe", "    probes_test.go:230: instance 0 finished 9.5s after (bound 9s)")
	out("TestProbe", "    probes_test.go:235: ")
	out("TestProbe", "        \\tError Trace:\\t/w/probes_test.go:235")
	out("TestProbe", "        \\tError:      \\t\\\"9.5s\\\" is not less than \\\"9s\\\"")
	out("TestProbe", "        \\tTest:       \\tTestProbe")
	out("TestProbe", "        \\tMessages:   \\tkilled too late")
	out("TestProbe", "    probes_test.go:240: ")
	out("TestProbe", "        \\tError:      \\tShould be true")
	out("TestProbe", "        \\tMessages:   \\ta second assertion")
	out("TestGC", "    gc_test.go:211: thresholds high 61%, low 53%")
	out("TestGC", "    gc_test.go:238: ")
	out("TestGC", "        \\tError:      \\tNot equal: ")
	out("TestGC", "        \\t            \\texpected: 2")
	out("TestGC", "    harness_test.go:175: containerd log:")
	out("TestGC", "        \\tMessages:   \\tnot this one")
	out("TestFatal", "    fatal_test.go:9: not converged")
	for _, n := range []string{"TestProbe", "TestGC", "TestFatal"} {
		b.WriteString(`{"Action":"fail","Package":"m/e2e","Test":"` + n + `"}` + "\n")
	}
	require.NoError(t, os.WriteFile(log, []byte(b.String()), 0o644))
	var sum strings.Builder
	require.NoError(t, summarise(&sum, []string{log}))
	s := sum.String()
	assert.True(t, strings.HasSuffix(s, `failed tests (3):
  m/e2e.TestProbe (e2e.json)
      probes_test.go:235: "9.5s" is not less than "9s" (killed too late)
  m/e2e.TestGC (e2e.json)
      gc_test.go:238: Not equal:
  m/e2e.TestFatal (e2e.json)
      fatal_test.go:9: not converged
0 passed, 3 failed, 0 skipped
`), s)
}

// A cleanup's log dump after the line that failed the test: over the
// bound, the dump is cut first, and the names at the end carry the
// failing line, not the dump's (CI stop 49: a containerd log tail buried
// a t.Fatalf).
func TestSummaryDumpsGoBeforeTheFailure(t *testing.T) {
	log := filepath.Join(t.TempDir(), "e2e.json")
	var b strings.Builder
	out := func(s string) {
		b.WriteString(`{"Action":"output","Package":"m/e2e","Test":"TestChaos","Output":"` + s + `\n"}` + "\n")
	}
	for i := range 3 {
		out(fmt.Sprintf("    chaos_test.go:%d: step %d", 100+i, i))
		for j := range 8 {
			out(fmt.Sprintf("        step detail %d.%d", i, j))
		}
	}
	out("    chaos_test.go:204: the status does not show the container killed")
	out("    runtime_test.go:64: private containerd log (tail):")
	for j := range 20 {
		out(fmt.Sprintf("        time=%d level=info msg=recovered", j))
	}
	b.WriteString(`{"Action":"fail","Package":"m/e2e","Test":"TestChaos"}` + "\n")
	require.NoError(t, os.WriteFile(log, []byte(b.String()), 0o644))
	var sum strings.Builder
	require.NoError(t, summarise(&sum, []string{log}))
	s := sum.String()
	assert.NotContains(t, s, "containerd log (tail)", s)
	assert.Contains(t, s, "step 0\n", s)
	assert.Contains(t, s, "step 2\n", s)
	assert.True(t, strings.HasSuffix(s, `failed tests (1):
  m/e2e.TestChaos (e2e.json)
      chaos_test.go:204: the status does not show the container killed
0 passed, 1 failed, 0 skipped
`), s)
}
