package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

const (
	hostIP    = "[sig-node] Pods should get a host IP [Conformance] [NodeConformance]"
	deadline  = "[sig-node] Pods should allow activeDeadlineSeconds to be updated [Conformance] [NodeConformance]"
	cmEnv     = "[sig-node] ConfigMap should be consumable via the environment [Conformance] [NodeConformance]"
	hostIPs   = "[sig-node] Downward API should provide hostIPs as an env var [Conformance] [NodeConformance]"
	afterEach = "[SynchronizedAfterSuite]"
)

func TestReadJUnit(t *testing.T) {
	got, err := readJUnit("testdata/junit_01.xml")
	if err != nil {
		t.Fatal(err)
	}
	// Sorted by spec (bytewise); the passed suite node and the spec the
	// focus filtered out (message "skipped") are left out; the failed suite
	// node counts.
	want := []result{
		{status: "failed", spec: afterEach, err: "cleanup failed"},
		{status: "failed", spec: cmEnv, err: `expected "data-1=value-1" in container output: Expected (at output.go:263)`},
		{status: "skipped", spec: hostIPs, err: "Only supported for providers [gce gke] (not skeleton)"},
		{status: "failed", spec: deadline, err: "Timed out after 300.001s. (at pods.go:440)"},
		{status: "passed", spec: hostIP},
	}
	if len(got) != len(want) {
		t.Fatalf("got %d results %+v, want %d", len(got), got, len(want))
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("result %d:\n got %+v\nwant %+v", i, got[i], want[i])
		}
	}
	if p, f, s := count(got); p != 1 || f != 3 || s != 1 {
		t.Errorf("count = %d passed, %d failed, %d skipped; want 1, 3, 1", p, f, s)
	}
}

func TestReadJUnit_Errors(t *testing.T) {
	if _, err := readJUnit(filepath.Join(t.TempDir(), "none.xml")); err == nil {
		t.Error("a missing file: no error")
	}
	bad := filepath.Join(t.TempDir(), "bad.xml")
	if err := os.WriteFile(bad, []byte("<testsuites><testsuite>"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := readJUnit(bad); err == nil || !strings.Contains(err.Error(), "bad.xml") {
		t.Errorf("truncated XML: err %v, want one naming the file", err)
	}
}

func TestFirstLine(t *testing.T) {
	for _, tc := range []struct {
		texts []string
		want  string
	}{
		{[]string{"", "\n  [FAILED] boom\nmore"}, "boom"},
		{[]string{"first\tline\n", "second"}, "first line"},
		{[]string{"[FAILED]\n", "\n"}, ""},
		{[]string{strings.Repeat("x", 400)}, strings.Repeat("x", 300) + "…"},
	} {
		if got := firstLine(tc.texts...); got != tc.want {
			t.Errorf("firstLine(%q) = %q, want %q", tc.texts, got, tc.want)
		}
	}
}

func TestNormalize(t *testing.T) {
	for _, in := range []struct{ in, want string }{
		// Numbers go; a short, generic line keeps where it happened.
		{"Timed out after 300.001s. (at pods.go:440)", "Timed out after Ns. (at pods.go:440)"},
		// Pod names, UUIDs and generated suffixes go.
		{`pod "pod-a1b2c" failed: uid 0b6e0cde-1111-2222-3333-444455556666`, `pod "<pod>" failed: uid <uid>`},
		{`failed to get logs from client-pod-x for container-7: oops`, "failed to get logs from <pod> for <container>: oops"},
		// A long, specific line needs no location.
		{strings.Repeat("a specific cause ", 5) + "(at x.go:1)", strings.TrimSpace(strings.Repeat("a specific cause ", 5))},
	} {
		if got := strings.TrimSpace(normalize(in.in)); got != in.want {
			t.Errorf("normalize(%q) = %q, want %q", in.in, got, in.want)
		}
	}
}

func TestGroup(t *testing.T) {
	rs := []result{
		{status: "failed", spec: "a", err: "Timed out after 10s. (at x.go:1)"},
		{status: "failed", spec: "b", err: "Timed out after 12s. (at x.go:1)"},
		{status: "failed", spec: "c", err: "Timed out after 12s. (at y.go:2)"},
		{status: "passed", spec: "d"},
	}
	gs := group(rs)
	if len(gs) != 2 || len(gs[0].specs) != 2 || gs[0].key != "Timed out after Ns. (at x.go:1)" || gs[1].specs[0] != "c" {
		t.Fatalf("group = %+v; want [a b] under x.go first, then [c]", gs)
	}
}

func TestTSVRoundTrip(t *testing.T) {
	dir := t.TempDir()
	mkl := run{node: "minikubelet", what: "minikubelet abc1234", duration: "25m07s", date: "2026-11-25", results: []result{
		{status: "passed", spec: hostIP},
		{status: "failed", spec: deadline, err: "Timed out after 300.001s. (at pods.go:440)"},
	}}
	kl := run{node: "kubelet", what: "kubelet v1.37.2", duration: "21m11s", date: "2026-11-25", results: []result{
		{status: "passed", spec: hostIP},
		{status: "passed", spec: deadline},
	}}
	for _, r := range []run{mkl, kl} {
		if err := writeTSV(filepath.Join(dir, r.node+".tsv"), r); err != nil {
			t.Fatal(err)
		}
	}
	runs, err := readRuns(dir)
	if err != nil {
		t.Fatal(err)
	}
	// The anchor first, whatever the file order.
	if len(runs) != 2 || runs[0].node != "kubelet" || runs[1].node != "minikubelet" {
		t.Fatalf("runs %+v: want kubelet, then minikubelet", runs)
	}
	got := runs[1]
	if got.what != mkl.what || got.duration != mkl.duration || got.date != mkl.date || len(got.results) != 2 || got.results[1] != mkl.results[1] {
		t.Errorf("minikubelet read back as %+v, want %+v", got, mkl)
	}
}

func TestGenerate(t *testing.T) {
	runs := []run{
		{node: "kubelet", what: "kubelet v1.37.2", duration: "21m11s", date: "2026-11-25", results: []result{
			{status: "passed", spec: hostIP},
			{status: "passed", spec: deadline},
		}},
		{node: "minikubelet", what: "minikubelet abc1234", duration: "25m07s", date: "2026-11-25", results: []result{
			{status: "passed", spec: hostIP},
			{status: "failed", spec: deadline, err: "a | b <c> `d`"},
		}},
	}
	md := generate(runs)
	for _, want := range []string{
		"| kubelet | 2 | 0 | 0 | kubelet v1.37.2 | 21m11s | 2026-11-25 |",
		"| minikubelet | 1 | 1 | 0 | minikubelet abc1234 | 25m07s | 2026-11-25 |",
		"### Specs whose outcome differs (1)",
		"| " + deadline + " | pass | **FAIL** | a \\| b &lt;c> 'd' |",
		"### kubelet: 0 failures by first error line\n\nNone.",
		"### minikubelet: 1 failures by first error line",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("generated Markdown lacks %q:\n%s", want, md)
		}
	}
	if strings.Contains(md, "| "+hostIP+" | pass | pass |") {
		t.Error("a spec with the same outcome on both nodes is in the differences")
	}
}

func TestUpdateDoc(t *testing.T) {
	dir := t.TempDir()
	doc := filepath.Join(dir, "conformance.md")
	runs := []run{{node: "kubelet", results: []result{{status: "passed", spec: hostIP}}}}
	before := "# Title\n\nhand-written\n\n" + beginMarker + "\nold table\n" + endMarker + "\n\nafter\n"
	if err := os.WriteFile(doc, []byte(before), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := updateDoc(doc, runs); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(doc)
	got := string(b)
	if strings.Contains(got, "old table") || !strings.HasPrefix(got, "# Title\n\nhand-written\n\n"+beginMarker+"\n| node |") || !strings.HasSuffix(got, endMarker+"\n\nafter\n") {
		t.Errorf("updated document:\n%s", got)
	}

	// No markers: refused, the file untouched.
	if err := os.WriteFile(doc, []byte("# no markers\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := updateDoc(doc, runs); err == nil || !strings.Contains(err.Error(), "lacks the markers") {
		t.Errorf("no markers: err %v", err)
	}
	// No file: a new one with the markers.
	fresh := filepath.Join(dir, "new.md")
	if err := updateDoc(fresh, runs); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(fresh); !strings.Contains(string(b), beginMarker+"\n| node |") {
		t.Errorf("new document:\n%s", b)
	}
}

// TestUpdateDoc_Section: --section rewrites only its own markers' part; the
// default section, before it and with an end marker that is a prefix-free
// relative of the named one, stays as it was.
func TestUpdateDoc_Section(t *testing.T) {
	doc := filepath.Join(t.TempDir(), "conformance.md")
	b2, e2 := markers("e2e_node")
	before := "# T\n\n" + beginMarker + "\ne2e table\n" + endMarker + "\n\n## Node\n\n" + b2 + "\nold node table\n" + e2 + "\n"
	if err := os.WriteFile(doc, []byte(before), 0o644); err != nil {
		t.Fatal(err)
	}
	docSection = "e2e_node"
	t.Cleanup(func() { docSection = "" })
	runs := []run{{node: "minikubelet", results: []result{{status: "passed", spec: hostIP}}}}
	if err := updateDoc(doc, runs); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(doc)
	got := string(b)
	if !strings.HasPrefix(got, "# T\n\n"+beginMarker+"\ne2e table\n"+endMarker+"\n\n## Node\n\n"+b2+"\n| node |") ||
		strings.Contains(got, "old node table") || !strings.HasSuffix(got, e2+"\n") || !strings.Contains(got, "| minikubelet | 1 | 0 | 0 |") {
		t.Errorf("updated document:\n%s", got)
	}
	// A document without the section's markers is refused.
	if err := os.WriteFile(doc, []byte(before[:strings.Index(before, "## Node")]), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := updateDoc(doc, runs); err == nil || !strings.Contains(err.Error(), "(e2e_node)") {
		t.Errorf("no section markers: err %v", err)
	}
}

func writeList(t *testing.T, text string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "specs.txt")
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestReadList(t *testing.T) {
	specs, err := readList(writeList(t, "# comment\n\n  "+hostIP+"  \n"+deadline+"\n"))
	if err != nil {
		t.Fatal(err)
	}
	if len(specs) != 2 || specs[0] != hostIP || specs[1] != deadline {
		t.Errorf("readList = %q", specs)
	}
	if _, err := readList(writeList(t, hostIP+"\n"+hostIP+"\n")); err == nil || !strings.Contains(err.Error(), ":2:") {
		t.Errorf("a name listed twice: err %v, want one naming line 2", err)
	}
	if _, err := readList(writeList(t, "# only comments\n")); err == nil {
		t.Error("an empty list: no error")
	}
}

func TestFocusRegexp(t *testing.T) {
	re := regexp.MustCompile(focusRegexp([]string{hostIP, `[sig-node] Variable Expansion should allow substituting values in a container's command [Conformance] [NodeConformance]`}))
	for text, want := range map[string]bool{
		// Ginkgo's full text may start before the printed name.
		" " + hostIP: true,
		"[sig-node] Variable Expansion should allow substituting values in a container's command [Conformance] [NodeConformance]": true,
		// A longer name that starts with a listed one is not selected.
		strings.TrimSuffix(hostIP, " [Conformance] [NodeConformance]") + " twice [Conformance] [NodeConformance]": false,
		hostIP + " [Slow]": false,
		// Brackets are literal, not character classes.
		"[sig-node] Pods should get a host IP C NodeConformance": false,
	} {
		if got := re.MatchString(text); got != want {
			t.Errorf("focus matches %q: %v, want %v", text, got, want)
		}
	}
}

func TestCheckExpected(t *testing.T) {
	const renamed = "[sig-node] Pods should get the host IP [Conformance] [NodeConformance]"
	results := []result{
		{status: "passed", spec: hostIP},
		{status: "failed", spec: deadline, err: "Timed out after 300.001s. (at pods.go:440)"},
		{status: "skipped", spec: hostIPs, err: "Only supported for providers [gce gke]"},
		{status: "passed", spec: cmEnv},
		{status: "failed", spec: afterEach, err: "cleanup failed"},
	}
	problems, missing := checkExpected([]string{hostIP, deadline, hostIPs, renamed}, results)
	text := strings.Join(problems, "\n")
	for _, want := range []string{"FAILED " + deadline, "Timed out after", "SKIPPED " + hostIPs, "Only supported", "NOT RUN " + renamed, "NOT LISTED " + cmEnv, "FAILED " + afterEach + "\n[report]      cleanup failed"} {
		if !strings.Contains(text, want) {
			t.Errorf("problems lack %q:\n%s", want, text)
		}
	}
	if len(problems) != 5 {
		t.Errorf("%d problems, want 5:\n%s", len(problems), text)
	}
	if len(missing) != 1 || missing[0].spec != renamed || missing[0].status != "failed" {
		t.Errorf("missing = %+v, want the renamed spec as failed", missing)
	}
	if p, _ := checkExpected([]string{hostIP}, results[:1]); len(p) != 0 {
		t.Errorf("all listed specs passed: problems %q", p)
	}
}

func TestWriteTestLog(t *testing.T) {
	path := filepath.Join(t.TempDir(), "logs", "conformance.json")
	err := writeTestLog(path, "minikubelet", []result{
		{status: "passed", spec: hostIP},
		{status: "failed", spec: deadline, err: "Timed out"},
		{status: "skipped", spec: hostIPs, err: "Only supported for providers [gce gke]"},
	})
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	final := map[string]string{}
	var skipOutput string
	for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		var ev testEvent
		if err := json.Unmarshal([]byte(l), &ev); err != nil {
			t.Fatalf("line %q: %v", l, err)
		}
		if ev.Package != "conformance/minikubelet" {
			t.Errorf("package %q", ev.Package)
		}
		switch ev.Action {
		case "pass", "fail", "skip":
			final[ev.Test] = ev.Action
		case "output":
			if ev.Test == hostIPs {
				skipOutput += ev.Output
			}
		}
	}
	if final[hostIP] != "pass" || final[deadline] != "fail" || final[hostIPs] != "skip" || len(final) != 3 {
		t.Errorf("final actions %v", final)
	}
	// hack/testsum takes a skip's reason from a "file.go:N: reason" line.
	m := regexp.MustCompile(`(?m)^\s+\S+\.go:\d+: (.*)$`).FindStringSubmatch(skipOutput)
	if m == nil || m[1] != "Only supported for providers [gce gke]" {
		t.Errorf("skip output %q carries no reason hack/testsum reads", skipOutput)
	}
}
