// Package cgroupv2 runs minikubelet's end-to-end cgroup, lifecycle and probe
// cases inside a Debian bookworm guest with systemd and cgroup v2 (issue
// #9), with the systemd cgroup driver and with cgroupfs, and reports every
// guest case as a subtest here. It runs only with MINIKUBELET_VM=1 (make
// test-cgroupv2); hack/vm/run.sh builds the guest image once per machine,
// the binaries, and boots the guest.
package cgroupv2

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// drivers are the cgroup drivers the guest runs the cases with, in order.
var drivers = []string{"systemd", "cgroupfs"}

// wantCases are the guest cases that must each run and pass with every
// driver (hack/vm/run.sh selects them with -test.run): a missing one fails,
// so a renamed test cannot silently drop out of the suite.
var wantCases = []string{
	"TestQoS_Guaranteed",
	"TestQoS_Burstable",
	"TestQoS_BestEffort",
	"TestQoS_OOMKilledIsRestarted",
	"TestQoS_PodCgroupsRemovedOnSIGINT",
	"TestQoS_BurstableTierFollowsPods",
	"TestLifecycle_CrashLoopBackOff",
	"TestProbe_ExecLivenessRestarts",
}

// guestCase is one top-level guest test with its subtests' output folded in.
type guestCase struct {
	name    string
	action  string // pass, fail, skip; "" if it never ended (timeout, crash)
	elapsed float64
	output  strings.Builder
}

// marker is a line go test -v prints about a test: "=== RUN   TestX",
// "=== CONT  TestX", "--- FAIL: TestX/sub (1.23s)"; with -test.v=test2json
// it is framed by a leading ^V, which keeps output lines that look alike
// from being taken for one.
var marker = regexp.MustCompile(`^\x16\s*(?:=== (?:RUN|CONT|NAME|PAUSE)\s+(\S*)|--- (PASS|FAIL|SKIP): (\S+) \(([\d.]+)s\))\s*$`)

// parseGuestOutput splits the guest's `-test.v=test2json` output into
// cases in the order they started, plus the output outside any test
// (TestMain's setup errors and the containerd log it dumps on failure). A
// case without its --- line never finished: the guest's test timeout or a
// crash cut it off. (go tool test2json drops a failure report when the
// output ends in a timeout panic, so the markers are read here.)
func parseGuestOutput(t *testing.T, raw []byte) (cases []*guestCase, outside string) {
	t.Helper()
	byName := map[string]*guestCase{}
	caseOf := func(test string) *guestCase {
		top, _, _ := strings.Cut(test, "/")
		c := byName[top]
		if c == nil {
			c = &guestCase{name: top}
			byName[top] = c
			cases = append(cases, c)
		}
		return c
	}
	var rest strings.Builder
	var cur *guestCase
	sc := bufio.NewScanner(bytes.NewReader(raw))
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		line := sc.Text()
		m := marker.FindStringSubmatch(line)
		switch {
		case m == nil:
			if cur != nil {
				cur.output.WriteString(line + "\n")
			} else {
				rest.WriteString(line + "\n")
			}
		case m[1] != "" || strings.HasPrefix(strings.TrimSpace(line[1:]), "==="):
			cur = nil
			if m[1] != "" {
				cur = caseOf(m[1])
			}
		default:
			c := caseOf(m[3])
			c.output.WriteString(strings.TrimPrefix(line, "\x16") + "\n")
			if !strings.Contains(m[3], "/") {
				c.action = strings.ToLower(m[2])
				c.elapsed, _ = strconv.ParseFloat(m[4], 64)
			}
			cur = nil
		}
	}
	require.NoError(t, sc.Err())
	// Output after the last case (a timeout panic with its stacks) belongs
	// to no test: show it with the unfinished ones.
	return cases, rest.String()
}

func TestCgroupV2Guest(t *testing.T) {
	if os.Getenv("MINIKUBELET_VM") != "1" {
		t.Skip("set MINIKUBELET_VM=1 or run `make test-cgroupv2` (root, qemu; boots a cgroup v2 guest)")
	}
	require.Zero(t, os.Geteuid(), "must run as root (qemu, debootstrap, the local registry)")
	repo, err := filepath.Abs("../..")
	require.NoError(t, err)
	dir := os.Getenv("VM_DIR")
	if dir == "" {
		dir = t.TempDir()
	}

	// run.sh prints one progress line per step; show them as they come.
	run := exec.Command(filepath.Join(repo, "hack/vm/run.sh"), dir)
	run.Env = append(os.Environ(), "VM_DRIVERS="+strings.Join(drivers, " "))
	var runOut bytes.Buffer
	run.Stdout = io.MultiWriter(os.Stderr, &runOut)
	run.Stderr = io.MultiWriter(os.Stderr, &runOut)
	if err := run.Run(); err != nil {
		t.Fatalf("hack/vm/run.sh: %v\n%s\n%s", err, runOut.String(), guestDiagnostics(dir))
	}

	out := filepath.Join(dir, "out")
	info := readFile(t, filepath.Join(out, "guest-info.txt"))
	t.Logf("guest:\n%s", info)
	// The point of the suite: the cases ran on the unified hierarchy.
	require.Contains(t, info, "cgroup fs: cgroup2fs", "the guest's /sys/fs/cgroup is not cgroup v2")
	require.Regexp(t, `(?m)^controllers: .*\bcpu\b.*\bmemory\b`, info, "cpu and memory controllers in the guest")

	failed := false
	for _, driver := range drivers {
		ok := t.Run(driver, func(t *testing.T) {
			raw, err := os.ReadFile(filepath.Join(out, driver+".out"))
			require.NoError(t, err, "the guest wrote no results for driver %s", driver)
			rc := strings.TrimSpace(readFile(t, filepath.Join(out, driver+".rc")))
			cases, outside := parseGuestOutput(t, raw)
			seen := map[string]bool{}
			for _, c := range cases {
				seen[c.name] = true
				t.Run(c.name, func(t *testing.T) {
					t.Logf("guest %s (%.1fs):\n%s", c.action, c.elapsed, c.output.String())
					switch c.action {
					case "pass":
					case "skip":
						t.Errorf("skipped in the guest: every cgroup v2 case must run there")
					case "":
						t.Errorf("never finished in the guest (timeout or crash); output outside the tests:\n%s", tail(outside, 8000))
					default:
						t.Errorf("failed in the guest")
					}
				})
			}
			for _, name := range wantCases {
				assert.True(t, seen[name], "case %s did not run in the guest (renamed? check VM_TEST_RUN in hack/vm/run.sh)", name)
			}
			if rc != "0" {
				t.Errorf("e2e.test exited %s in the guest; output outside the tests (TestMain, containerd log):\n%s", rc, tail(outside, 8000))
			}
			// Teardown left no pod slice, container scope or pod cgroup.
			leftovers := strings.TrimSpace(readFile(t, filepath.Join(out, driver+"-leftovers.txt")))
			assert.Empty(t, leftovers, "pod cgroups or units left in the guest after the %s run", driver)
		})
		failed = failed || !ok
	}
	if failed {
		t.Logf("guest diagnostics:\n%s", guestDiagnostics(dir))
	}
}

// guestDiagnostics is the tail of the guest's serial console and of its
// journal (containerd, systemd and the payload's own lines).
func guestDiagnostics(dir string) string {
	var b strings.Builder
	for _, f := range []struct{ path, what string }{
		{filepath.Join(dir, "console.log"), "serial console"},
		{filepath.Join(dir, "out", "journal.txt"), "journal"},
		{filepath.Join(dir, "out", "registry.log"), "registry log"},
	} {
		raw, err := os.ReadFile(f.path)
		if err != nil {
			fmt.Fprintf(&b, "---- %s: %v ----\n", f.what, err)
			continue
		}
		fmt.Fprintf(&b, "---- tail of the guest's %s (%s) ----\n%s\n", f.what, f.path, tail(stripANSI(string(raw)), 6000))
	}
	return b.String()
}

var ansi = regexp.MustCompile(`\x1b\[[0-9;]*[A-Za-z]`)

func stripANSI(s string) string { return ansi.ReplaceAllString(s, "") }

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	return string(b)
}

func tail(s string, n int) string {
	if len(s) > n {
		return "…" + s[len(s)-n:]
	}
	return s
}
