// Package demodown checks that `make demo-down` undoes `make demo`: no
// process, mount, bridge, iptables rule or file of the demo is left, and a
// second `make demo` works after it. It runs the real scripts as root in a
// private network and mount namespace (unshare): its own containerd,
// registry on 127.0.0.1:5000, /etc/containerd, CNI dirs, bridge and
// iptables, so the machine's own containerd and registry are not touched.
// `make test-demo-down` runs it; it is not part of `make test` (setup.sh
// installs Debian packages when some are missing).
package demodown

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestMain(m *testing.M) {
	if os.Getenv("MINIKUBELET_DEMO_DOWN_E2E") != "1" {
		fmt.Println("demodown: not run; `make test-demo-down` runs it (root; runs make demo and make demo-down in private namespaces)")
		os.Exit(0)
	}
	if os.Geteuid() != 0 {
		fmt.Fprintln(os.Stderr, "demodown: must run as root")
		os.Exit(1)
	}
	os.Exit(m.Run())
}

// driver runs inside `unshare --mount --net`. It hides the machine's
// containerd, minikubelet and CNI state behind tmpfs mounts, seeds
// /etc/containerd with a stock config.toml, and prints a snapshot of what
// the demo could leave behind between each step.
const driver = `set -euo pipefail
repo=$1 seed=$2
mount --make-rprivate /
ip link set lo up
for d in /etc/containerd /run/containerd /var/lib/containerd /run/minikubelet /var/lib/minikubelet /etc/cni/net.d /var/lib/cni /var/log /etc/minikubelet; do
	mkdir -p "$d"
	mount -t tmpfs -o mode=0755 tmpfs "$d"
done
cp "$seed" /etc/containerd/config.toml
mynet=$(readlink /proc/self/ns/net)

snapshot() {
	echo "=== SNAPSHOT $1"
	echo "## processes"
	for p in /proc/[0-9]*; do
		c=$(cat "$p/comm" 2>/dev/null) || continue
		case $c in
		containerd*|docker-registry|minikubelet|runc)
			[[ $(readlink "$p/ns/net" 2>/dev/null) == "$mynet" ]] && echo "$c" ;;
		# Pod processes live in the pod's network namespace: theirs
		# when their parent (the shim) is in this one.
		pause|testserver)
			pp=$(awk '/^PPid:/ { print $2 }' "$p/status" 2>/dev/null) || continue
			[[ $(readlink "/proc/$pp/ns/net" 2>/dev/null) == "$mynet" ]] && echo "$c" ;;
		esac
	done | sort
	echo "## mounts"
	awk '{ print $5 }' /proc/self/mountinfo | grep -E '^/(run|var/lib|etc|tmp/minikubelet)' | sort
	echo "## links"
	ip -o link | awk -F': ' '{ print $2 }' | sed 's/@.*//' | sort
	echo "## iptables"
	# Rules and chains; the built-in chains of a table appear once it is used.
	for t in filter nat; do iptables-save -t "$t" 2>/dev/null | grep -E '^(-A|:)' | grep -vE '^:(INPUT|FORWARD|OUTPUT|PREROUTING|POSTROUTING) ' | sed 's/\[[0-9]*:[0-9]*\]//'; done || true
	echo "## files"
	find /etc/containerd /etc/cni/net.d /var/lib/cni /run/minikubelet -mindepth 1 -printf '%p %y\n' | sort | while read -r f y; do
		if [[ $y == f ]]; then echo "$f $(md5sum <"$f" | cut -c1-12)"; else echo "$f $y"; fi
	done
	echo "=== END"
}

wait_running() { # LOG: the pod's status line with Running
	for _ in $(seq 1 600); do grep -q 'status .*Running' "$1" && return 0; sleep 0.2; done
	echo "the pod did not run:"; cat "$1"; return 1
}

# On a failure, stop what the scripts started here (best effort).
trap 'for f in /run/minikubelet/*.pid; do [[ -f $f ]] && kill "$(cat "$f")" 2>/dev/null; done; true' EXIT
cd "$repo"
snapshot seed || true

echo "=== STEP demo 1"
make --no-print-directory demo </dev/null
# Leave the demo's pod running, held by the daemon.
# The test machine's disk may be fuller than the default eviction thresholds.
MINIKUBELET_START_TIMEOUT=120 hack/start-minikubelet.sh --runtime-wait 1m \
	--eviction-hard 'memory.available<100Mi,nodefs.available<1%,imagefs.available<1%,nodefs.inodesFree<1%' \
	--image-gc-high-threshold 100 --image-gc-low-threshold 99
bin/minikubelet run --timeout 2m examples/web.yaml </dev/null
snapshot demo1 || true
echo "=== STEP dry run"
DRY_RUN=1 hack/demo-down.sh
snapshot dry1 || true
echo "=== STEP demo-down 1"
make --no-print-directory demo-down
snapshot down1 || true
echo "=== STEP demo-down again"
hack/demo-down.sh
snapshot again1 || true

echo "=== STEP demo 2"
make --no-print-directory demo </dev/null
# Leave the demo's pod behind a killed foreground run.
bin/minikubelet run --foreground examples/web.yaml >/tmp/minikubelet-demodown-run.log 2>&1 </dev/null &
run=$!
wait_running /tmp/minikubelet-demodown-run.log
kill -KILL "$run"; wait "$run" || true
snapshot demo2 || true
echo "=== STEP demo-down 2"
make --no-print-directory demo-down
snapshot down2 || true
echo "=== DONE"
`

// snapshots parses the driver's output: name → section → lines.
func snapshots(out string) map[string]map[string][]string {
	snaps := map[string]map[string][]string{}
	var cur map[string][]string
	section := ""
	sc := bufio.NewScanner(strings.NewReader(out))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		l := sc.Text()
		switch {
		case strings.HasPrefix(l, "=== SNAPSHOT "):
			cur = map[string][]string{}
			snaps[strings.TrimPrefix(l, "=== SNAPSHOT ")] = cur
		case l == "=== END":
			cur = nil
		case cur != nil && strings.HasPrefix(l, "## "):
			section = strings.TrimPrefix(l, "## ")
			cur[section] = []string{}
		case cur != nil:
			cur[section] = append(cur[section], l)
		}
	}
	return snaps
}

// step returns the output between "=== STEP name" and the next marker.
func step(out, name string) string {
	i := strings.Index(out, "=== STEP "+name+"\n")
	if i < 0 {
		return ""
	}
	rest := out[i+len("=== STEP "+name+"\n"):]
	if j := strings.Index(rest, "\n=== "); j >= 0 {
		rest = rest[:j]
	}
	return rest
}

func diff(a, b []string) (onlyA, onlyB []string) {
	in := func(s []string, x string) bool {
		for _, y := range s {
			if y == x {
				return true
			}
		}
		return false
	}
	for _, x := range a {
		if !in(b, x) {
			onlyA = append(onlyA, x)
		}
	}
	for _, x := range b {
		if !in(a, x) {
			onlyB = append(onlyB, x)
		}
	}
	return onlyA, onlyB
}

// sections whose every line must be as before the demo. /run/minikubelet
// and the other directories are in "files".
var sections = []string{"processes", "mounts", "links", "iptables", "files"}

func TestDemoDown_LeavesNothingOfTheDemo(t *testing.T) {
	repo, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	// A stock containerd config: Debian's as the package installs it, or
	// the backup setup-containerd.sh made of it on this machine.
	seed := filepath.Join(t.TempDir(), "config.toml")
	stock := "/usr/share/doc/containerd/examples/config.toml"
	if m, _ := filepath.Glob("/etc/containerd/config.toml.minikubelet-backup-*"); len(m) > 0 {
		stock = m[0]
	}
	b, err := os.ReadFile(stock)
	if err != nil {
		b = []byte("version = 2\n\n[plugins]\n  [plugins.\"io.containerd.grpc.v1.cri\"]\n    sandbox_image = \"registry.k8s.io/pause:3.6\"\n")
	}
	if err := os.WriteFile(seed, b, 0o644); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	cmd := exec.Command("unshare", "--mount", "--net", "bash", "-c", driver, "driver", repo, seed)
	cmd.Env = append(os.Environ(), "PATH="+os.Getenv("PATH")+":/usr/local/go/bin", "MAKEFLAGS=")
	outB, err := cmd.CombinedOutput()
	out := string(outB)
	t.Logf("driver took %v", time.Since(start).Round(time.Second))
	if err != nil || !strings.Contains(out, "=== DONE") {
		t.Fatalf("the driver failed (%v):\n%s", err, tail(out, 20000))
	}
	snaps := snapshots(out)
	for _, name := range []string{"seed", "demo1", "dry1", "down1", "again1", "demo2", "down2"} {
		if snaps[name] == nil {
			t.Fatalf("no snapshot %s:\n%s", name, tail(out, 20000))
		}
	}

	// The snapshots see the demo: its processes, bridge and files.
	for _, name := range []string{"demo1", "demo2"} {
		s := snaps[name]
		for _, want := range []string{"containerd", "docker-registry", "pause", "testserver"} {
			if !contains(s["processes"], want) {
				t.Errorf("%s: no %s process while the demo runs: %v", name, want, s["processes"])
			}
		}
		if !contains(s["links"], "mkl0") {
			t.Errorf("%s: no mkl0 bridge while the demo runs: %v", name, s["links"])
		}
	}
	if !contains(snaps["demo1"]["processes"], "minikubelet") {
		t.Errorf("demo1: the daemon does not run: %v", snaps["demo1"]["processes"])
	}

	// A dry run changes nothing and says what it would change.
	for _, sec := range sections {
		if a, b := diff(snaps["demo1"][sec], snaps["dry1"][sec]); len(a)+len(b) > 0 {
			t.Errorf("DRY_RUN=1 changed %s: gone %q, new %q", sec, a, b)
		}
	}
	dry := step(out, "dry run")
	for _, want := range []string{"would: pod default/web", "would: daemon: stopped minikubelet", "would: config.toml: restored /etc/containerd/config.toml", "would: containerd: stopped pid", "would: registry: stopped docker-registry", "would: network: deleted the bridge mkl0"} {
		if !strings.Contains(dry, want) {
			t.Errorf("the dry run does not say %q:\n%s", want, dry)
		}
	}

	// After each demo-down: as before the demo.
	for _, name := range []string{"down1", "again1", "down2"} {
		for _, sec := range sections {
			if a, b := diff(snaps["seed"][sec], snaps[name][sec]); len(a)+len(b) > 0 {
				t.Errorf("%s: %s differ from before the demo: gone %q, left %q", name, sec, a, b)
			}
		}
	}
	down1, down2 := step(out, "demo-down 1"), step(out, "demo-down 2")
	for _, want := range []string{"pod default/web (Ready): deleted through the daemon", "daemon: stopped minikubelet", "config.toml: restored /etc/containerd/config.toml from /etc/containerd/config.toml.minikubelet-backup-", "network: deleted the bridge mkl0"} {
		if !strings.Contains(down1, want) {
			t.Errorf("demo-down 1 does not say %q:\n%s", want, down1)
		}
	}
	if !strings.Contains(down2, "removed pod default/web") {
		t.Errorf("demo-down 2 does not remove the pod a killed run left:\n%s", down2)
	}
	// Idempotent: the second run changes nothing.
	for _, l := range strings.Split(step(out, "demo-down again"), "\n") {
		for _, verb := range []string{"stopped", "removed", "restored", "deleted", "unmounted", "interrupted"} {
			if strings.Contains(l, verb) {
				t.Errorf("a second demo-down still changed something: %s", l)
			}
		}
	}
	if t.Failed() {
		t.Logf("driver output:\n%s", tail(out, 30000))
	}
}

func contains(lines []string, s string) bool {
	for _, l := range lines {
		if l == s {
			return true
		}
	}
	return false
}

func tail(s string, n int) string {
	if len(s) > n {
		return "…" + s[len(s)-n:]
	}
	return s
}
