package e2e

// Over 600 lines: the QoS cases read real cgroup files for each class and each
// driver; they share the helpers that find and read them.

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/minikubelet/minikubelet/cri"
)

// End-to-end tests of QoS classes and cgroups (issue #4). On the
// development machines: cgroup v1 (hybrid), cgroupfs driver, containerd 1.6
// whose restrict_oom_score_adj raises negative oom_score_adj values to its
// own. In the cgroup v2 guest of hack/vm (issue #9) the same tests run on
// the unified hierarchy, with E2E_CGROUP_DRIVER=systemd (slices and scopes)
// and with cgroupfs: the expected values are the same cgroup v1 numbers,
// rendered as the v2 files runc 1.1 writes (cpu.weight, cpu.max,
// memory.max). They read the real cgroup files and /proc/<pid>/oom_score_adj
// and compare them with the kubelet's numbers (kubelet-facts §5). Every pod
// has its own name and the tests run in parallel, except the burstable tier
// test, which needs to be the only one with Burstable pods.

const (
	cgroupRoot = "/sys/fs/cgroup"
	// memUnlimited is cgroup v1's memory.limit_in_bytes when no limit is
	// set (PAGE_COUNTER_MAX pages of 4 KiB).
	memUnlimited int64 = 9223372036854771712
	// quotaPeriod is the kubelet's CFS period, 100 ms.
	quotaPeriod int64 = 100000
	// Sandbox annotations the agent sums the burstable tier from.
	annotationQOSClass = "io.minikubelet.qos-class"
	mi                 = int64(1) << 20
)

// milliCPUToShares is the kubelet's MilliCPUToShares (§5.4).
func milliCPUToShares(m int64) int64 {
	if m == 0 {
		return 2
	}
	return min(max(m*1024/1000, 2), 262144)
}

// burstableOOMScore is the kubelet's Burstable oom_score_adj (§5.2).
func burstableOOMScore(request, capacity int64) int64 {
	adj := 1000 - (1000*request)/capacity
	switch {
	case adj < 3:
		return 3
	case adj == 1000:
		return 999
	}
	return adj
}

// memTotal is MemTotal of /proc/meminfo in bytes (the agent's memory
// capacity).
func memTotal(t *testing.T) int64 {
	t.Helper()
	f, err := os.Open("/proc/meminfo")
	require.NoError(t, err)
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		fields := strings.Fields(s.Text())
		if len(fields) >= 2 && fields[0] == "MemTotal:" {
			kb, err := strconv.ParseInt(fields[1], 10, 64)
			require.NoError(t, err)
			return kb * 1024
		}
	}
	t.Fatal("no MemTotal in /proc/meminfo")
	return 0
}

// cgroupV2 reports whether /sys/fs/cgroup is the unified hierarchy (the
// root of cgroup v2 has cgroup.controllers; v1 and hybrid have tmpfs).
var cgroupV2 = func() bool {
	_, err := os.Stat(filepath.Join(cgroupRoot, "cgroup.controllers"))
	return err == nil
}()

// systemdDriver reports whether the agent and the private containerd run
// with the systemd cgroup driver (E2E_CGROUP_DRIVER=systemd).
var systemdDriver = os.Getenv("E2E_CGROUP_DRIVER") == "systemd"

// podCgroupPath is the pod cgroup the kubelet uses under tier (a cgroupfs
// path such as /kubepods/burstable): tier/pod<uid>, or with the systemd
// driver the nested slices
// /kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod<uid>.slice
// where each "-" of the uid becomes "_".
func podCgroupPath(tier, uid string) string {
	if !systemdDriver {
		return tier + "/pod" + uid
	}
	var out, prefix string
	for _, c := range append(strings.Split(strings.Trim(tier, "/"), "/"), "pod"+strings.ReplaceAll(uid, "-", "_")) {
		out += "/" + prefix + c + ".slice"
		prefix += c + "-"
	}
	return out
}

// containerCgroupPath is the cgroup containerd's runc puts a container in:
// <pod cgroup>/<id>, or with the systemd driver the scope
// <pod slice>/cri-containerd-<id>.scope.
func containerCgroupPath(podCg, id string) string {
	if systemdDriver {
		return podCg + "/cri-containerd-" + id + ".scope"
	}
	return podCg + "/" + id
}

// cgroupDir is the directory of a cgroup for a v1 controller; on cgroup v2
// the controller is ignored (one hierarchy).
func cgroupDir(controller, cg string) string {
	if cgroupV2 {
		return filepath.Join(cgroupRoot, cg)
	}
	return filepath.Join(cgroupRoot, controller, cg)
}

// cgroupFile reads one file of a v1 controller's cgroup (on v2: of the
// cgroup), trimmed.
func cgroupFile(t *testing.T, controller, cg, file string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(cgroupDir(controller, cg), file))
	require.NoError(t, err)
	return strings.TrimSpace(string(b))
}

// cgroupInt reads one integer file of a v1 controller's cgroup.
func cgroupInt(t *testing.T, controller, cg, file string) int64 {
	t.Helper()
	s := cgroupFile(t, controller, cg, file)
	n, err := strconv.ParseInt(s, 10, 64)
	require.NoError(t, err, "%s/%s/%s: %q", controller, cg, file, s)
	return n
}

// cgroupValues is what the tests compare at one cgroup level.
type cgroupValues struct {
	shares, quota, period, memory int64
}

// String renders v as the cgroup files show it: the v1 files, or on cgroup
// v2 what runc 1.1 (Debian 12's, under containerd 1.6) writes for the same
// v1 numbers: cpu.weight by its linear conversion of the shares, cpu.max
// "<quota|max> <period>" and memory.max "<bytes|max>".
func (v cgroupValues) String() string {
	if cgroupV2 {
		quota, memory := "max", "max"
		if v.quota > 0 {
			quota = strconv.FormatInt(v.quota, 10)
		}
		if v.memory != memUnlimited {
			memory = strconv.FormatInt(v.memory, 10)
		}
		return fmt.Sprintf("cpu.weight=%d cpu.max=%s %d memory.max=%s", sharesToWeight(v.shares), quota, v.period, memory)
	}
	return fmt.Sprintf("cpu.shares=%d cpu.cfs_quota_us=%d cpu.cfs_period_us=%d memory.limit_in_bytes=%d", v.shares, v.quota, v.period, v.memory)
}

// sharesToWeight is runc 1.1's cgroup v2 cpu.weight for cpu.shares (the
// kubelet's KEP-2254 formula): 1 + ((shares-2)*9999)/262142. runc 1.3.2+
// and containerd/cgroups 3.1 use a quadratic mapping instead (1024 → 100);
// the guest's runc is 1.1.5.
func sharesToWeight(shares int64) int64 {
	return 1 + ((shares-2)*9999)/262142
}

// readCgroupValues reads the CPU weight/shares, the CFS quota and period
// and the memory limit of a cgroup path (relative to each v1 controller, or
// to the v2 root) and renders them like cgroupValues.String.
func readCgroupValues(t *testing.T, cg string) string {
	t.Helper()
	if cgroupV2 {
		return fmt.Sprintf("cpu.weight=%s cpu.max=%s memory.max=%s",
			cgroupFile(t, "cpu", cg, "cpu.weight"), cgroupFile(t, "cpu", cg, "cpu.max"), cgroupFile(t, "memory", cg, "memory.max"))
	}
	return cgroupValues{
		shares: cgroupInt(t, "cpu", cg, "cpu.shares"),
		quota:  cgroupInt(t, "cpu", cg, "cpu.cfs_quota_us"),
		period: cgroupInt(t, "cpu", cg, "cpu.cfs_period_us"),
		memory: cgroupInt(t, "memory", cg, "memory.limit_in_bytes"),
	}.String()
}

// cgroupMounts lists the cgroup hierarchies mounted under /sys/fs/cgroup
// (every v1 controller, the named systemd hierarchy, and unified in
// hybrid mode), by directory name.
func cgroupMounts(t *testing.T) []string {
	t.Helper()
	if cgroupV2 {
		return []string{""} // the one unified hierarchy
	}
	entries, err := os.ReadDir(cgroupRoot)
	require.NoError(t, err)
	var dirs []string
	for _, e := range entries {
		if _, err := os.Stat(filepath.Join(cgroupRoot, e.Name(), "cgroup.procs")); err == nil {
			dirs = append(dirs, e.Name())
		}
	}
	require.NotEmpty(t, dirs, "no cgroup hierarchies under %s", cgroupRoot)
	return dirs
}

// assertCgroupGone asserts that cg exists in no mounted hierarchy.
func assertCgroupGone(t *testing.T, cg string) {
	t.Helper()
	for _, m := range cgroupMounts(t) {
		dir := filepath.Join(cgroupRoot, m, cg)
		_, err := os.Stat(dir)
		assert.True(t, os.IsNotExist(err), "%s still exists after the pod was removed (stat: %v)", dir, err)
	}
	if systemdDriver {
		// The slice or scope unit is stopped too, not only its directory.
		unit := filepath.Base(cg)
		out, err := exec.Command("systemctl", "show", "--property=ActiveState", "--value", unit).Output()
		require.NoError(t, err, "systemctl show %s", unit)
		state := strings.TrimSpace(string(out))
		assert.Contains(t, []string{"inactive", ""}, state, "systemd unit %s is %s after the pod was removed", unit, state)
	}
}

// sandboxCgroup returns the pod cgroup printed on the pod's sandbox step
// line.
func (p *runProc) sandboxCgroup(pod string) string {
	p.t.Helper()
	return p.waitFor(`default/`+regexp.QuoteMeta(pod)+`\s+sandbox\s+.*, cgroup (\S+)\n`, 2*time.Minute)[1]
}

// validatedQOS returns the UID and QoS class run printed on the pod's
// "validated" line.
func (p *runProc) validatedQOS(pod string) (uid, qos string) {
	p.t.Helper()
	m := p.waitFor(`default/`+regexp.QuoteMeta(pod)+`\s+validated\s+.*uid ([0-9a-f-]+), qos (\w+)`, 30*time.Second)
	return m[1], m[2]
}

// containerPid returns the pid of a container's process, from containerd's
// verbose container info.
func containerPid(t *testing.T, id string) int {
	t.Helper()
	resp, err := suite.rt.ContainerStatus(ctx(t), id, true)
	require.NoError(t, err)
	var info struct {
		Pid int `json:"pid"`
	}
	require.NoError(t, json.Unmarshal([]byte(resp.Info["info"]), &info))
	require.NotZero(t, info.Pid, "container info has no pid: %s", resp.Info["info"])
	return info.Pid
}

// oomScoreAdj reads /proc/<pid>/oom_score_adj.
func oomScoreAdj(t *testing.T, pid int) int64 {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/oom_score_adj", pid))
	require.NoError(t, err)
	n, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	require.NoError(t, err)
	return n
}

// procCgroups maps each v1 controller (and "" for the unified hierarchy)
// to the process's cgroup path, from /proc/<pid>/cgroup. On cgroup v2 the
// "cpu" and "memory" keys are the unified path too.
func procCgroups(t *testing.T, pid int) map[string]string {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cgroup", pid))
	require.NoError(t, err)
	out := map[string]string{}
	for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		parts := strings.SplitN(l, ":", 3)
		if len(parts) != 3 {
			continue
		}
		for _, c := range strings.Split(parts[1], ",") {
			out[c] = parts[2]
		}
	}
	if cgroupV2 {
		out["cpu"], out["memory"] = out[""], out[""]
	}
	return out
}

// negativeOOMRefused reports whether this machine refuses lowering an
// oom_score_adj (no CAP_SYS_RESOURCE): a child shell tries -999 on itself.
func negativeOOMRefused(t *testing.T) bool {
	t.Helper()
	err := exec.Command("sh", "-c", "echo -999 > /proc/self/oom_score_adj").Run()
	return err != nil
}

// runtimeRestrictsOOM reports whether the private containerd runs with
// restrict_oom_score_adj (it then raises any lower value to its own).
func runtimeRestrictsOOM(t *testing.T) bool {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(containerdDir(), "config.toml"))
	require.NoError(t, err)
	return regexp.MustCompile(`(?m)^\s*restrict_oom_score_adj\s*=\s*true`).Match(b)
}

// guaranteedOOMScore is what a Guaranteed container's process must show:
// -997, or with restrict_oom_score_adj the runtime's floor, containerd's own
// score, when that is higher. It also checks that run printed its notice
// exactly when this machine refuses negative scores.
func guaranteedOOMScore(t *testing.T, runOut string) int64 {
	t.Helper()
	refused := negativeOOMRefused(t)
	notice := strings.Contains(runOut, "negative OOM scores are refused")
	assert.Equal(t, refused, notice, "run's notice about refused negative OOM scores vs this machine (writing -999 refused: %v)", refused)
	want := int64(-997)
	if runtimeRestrictsOOM(t) {
		floor := oomScoreAdj(t, containerdPid(t))
		want = max(want, floor)
		t.Logf("containerd restricts oom_score_adj to >= its own (%d): Guaranteed expects %d (negative scores refused here: %v)", floor, want, refused)
	} else {
		require.False(t, refused, "negative OOM scores are refused but containerd does not restrict them: containers could not start")
	}
	return want
}

// qosContainer is one container's expected cgroup values and score.
type qosContainer struct {
	name   string
	values cgroupValues
	oom    int64
}

// qosCase is a pod and everything expected of it.
type qosCase struct {
	pod        string
	manifest   string
	class      string // printed on the validated line
	tier       string // the pod cgroup's parent
	values     cgroupValues
	containers []qosContainer
}

// checkQoSPod runs the pod, compares the pod and container cgroups and
// each container's oom_score_adj with c, stops it and checks that the pod
// cgroup is gone in every hierarchy.
func checkQoSPod(t *testing.T, c qosCase) {
	p := startRun(t, c.manifest)
	uid, class := p.validatedQOS(c.pod)
	assert.Equal(t, c.class, class, "QoS class on the validated line")
	p.waitRunning(c.pod)
	podCg := p.sandboxCgroup(c.pod)
	require.Equal(t, podCgroupPath(c.tier, uid), podCg, "pod cgroup on the sandbox line")

	got := readCgroupValues(t, podCg)
	t.Logf("pod cgroup %s: %s", podCg, got)
	assert.Equal(t, c.values.String(), got, "pod cgroup %s", podCg)
	assert.Equal(t, "max", cgroupFile(t, "pids", podCg, "pids.max"), "pod cgroup %s pids.max (no --pod-pids-limit)", podCg)

	out := p.output()
	for _, ctr := range c.containers {
		id := containerID(t, c.pod, ctr.name)
		ctrCg := containerCgroupPath(podCg, id)
		got := readCgroupValues(t, ctrCg)
		t.Logf("container %s cgroup %s: %s", ctr.name, ctrCg, got)
		assert.Equal(t, ctr.values.String(), got, "container %s cgroup %s", ctr.name, ctrCg)

		pid := containerPid(t, id)
		procCg := procCgroups(t, pid)
		assert.Equal(t, ctrCg, procCg["cpu"], "container %s pid %d cpu cgroup", ctr.name, pid)
		assert.Equal(t, ctrCg, procCg["memory"], "container %s pid %d memory cgroup", ctr.name, pid)

		want := ctr.oom
		if want == -997 {
			want = guaranteedOOMScore(t, out)
		}
		adj := oomScoreAdj(t, pid)
		t.Logf("container %s pid %d oom_score_adj %d (want %d)", ctr.name, pid, adj, want)
		assert.Equal(t, want, adj, "container %s pid %d oom_score_adj", ctr.name, pid)
	}

	p.interrupt()
	assertCgroupGone(t, podCg)
	if systemdDriver {
		// The systemd driver's tier slices stay (as with the kubelet).
		assert.DirExists(t, filepath.Join(cgroupRoot, filepath.Dir(podCg)), "QoS tier slice of %s", c.tier)
	}
}

// Guaranteed: cpu 500m/500m and memory 64Mi/64Mi. The pod cgroup sits
// directly under /kubepods with shares(500m)=512, quota 50000/100000 and a
// 64Mi memory limit; the container gets the same; oom_score_adj -997 or the
// runtime's floor.
func TestQoS_Guaranteed(t *testing.T) {
	t.Parallel()
	want := cgroupValues{shares: 512, quota: 50000, period: quotaPeriod, memory: 64 * mi}
	checkQoSPod(t, qosCase{
		pod: "e2e-qos-guaranteed",
		manifest: `
apiVersion: v1
kind: Pod
metadata:
  name: e2e-qos-guaranteed
spec:
  terminationGracePeriodSeconds: 2
  containers:
  - name: app
    image: REGISTRY/minikubelet/busybox:1.36
    command: ["sh", "-c", "exec sleep 3600"]
    resources:
      requests: {cpu: 500m, memory: 64Mi}
      limits: {cpu: 500m, memory: 64Mi}
`,
		class:      "Guaranteed",
		tier:       "/kubepods",
		values:     want,
		containers: []qosContainer{{name: "app", values: want, oom: -997}},
	})
}

// Burstable: one container with requests cpu 250m memory 32Mi and a 128Mi
// memory limit, a second with only a cpu request of 100m. The pod cgroup
// under /kubepods/burstable gets shares(350m)=358 and neither a CFS quota
// nor a memory limit (not every container has one); each container gets
// its own shares and limits, and oom_score_adj 1000 − 1000·request/MemTotal
// clamped to [3, 999].
func TestQoS_Burstable(t *testing.T) {
	t.Parallel()
	capacity := memTotal(t)
	checkQoSPod(t, qosCase{
		pod: "e2e-qos-burstable",
		manifest: `
apiVersion: v1
kind: Pod
metadata:
  name: e2e-qos-burstable
spec:
  terminationGracePeriodSeconds: 2
  containers:
  - name: main
    image: REGISTRY/minikubelet/busybox:1.36
    command: ["sh", "-c", "exec sleep 3600"]
    resources:
      requests: {cpu: 250m, memory: 32Mi}
      limits: {memory: 128Mi}
  - name: side
    image: REGISTRY/minikubelet/busybox:1.36
    command: ["sh", "-c", "exec sleep 3600"]
    resources:
      requests: {cpu: 100m}
`,
		class:  "Burstable",
		tier:   "/kubepods/burstable",
		values: cgroupValues{shares: 358, quota: -1, period: quotaPeriod, memory: memUnlimited},
		containers: []qosContainer{
			{name: "main", values: cgroupValues{shares: 256, quota: -1, period: quotaPeriod, memory: 128 * mi}, oom: burstableOOMScore(32*mi, capacity)},
			{name: "side", values: cgroupValues{shares: 102, quota: -1, period: quotaPeriod, memory: memUnlimited}, oom: burstableOOMScore(0, capacity)},
		},
	})
}

// BestEffort: no requests or limits. The pod cgroup under
// /kubepods/besteffort (whose shares are 2) gets shares 2 and no limits,
// the container likewise, oom_score_adj 1000.
func TestQoS_BestEffort(t *testing.T) {
	t.Parallel()
	want := cgroupValues{shares: 2, quota: -1, period: quotaPeriod, memory: memUnlimited}
	checkQoSPod(t, qosCase{
		pod: "e2e-qos-besteffort",
		manifest: `
apiVersion: v1
kind: Pod
metadata:
  name: e2e-qos-besteffort
spec:
  terminationGracePeriodSeconds: 2
  containers:
  - name: app
    image: REGISTRY/minikubelet/busybox:1.36
    command: ["sh", "-c", "exec sleep 3600"]
`,
		class:      "BestEffort",
		tier:       "/kubepods/besteffort",
		values:     want,
		containers: []qosContainer{{name: "app", values: want, oom: 1000}},
	})
	tier := "/kubepods/besteffort"
	if systemdDriver {
		tier = "/kubepods.slice/kubepods-besteffort.slice"
	}
	if cgroupV2 {
		assert.Equal(t, sharesToWeight(2), cgroupInt(t, "cpu", tier, "cpu.weight"), "besteffort tier weight (shares 2)")
	} else {
		assert.Equal(t, int64(2), cgroupInt(t, "cpu", tier, "cpu.shares"), "besteffort tier shares")
	}
}

// A container limited to 32Mi that builds a 128 MiB string in its shell is
// killed by the kernel: CRI reports reason OOMKilled with exit code 137,
// run prints an OOMKilled warning and status lines, and the container is
// restarted (restartPolicy Always) with a growing restart count.
func TestQoS_OOMKilledIsRestarted(t *testing.T) {
	t.Parallel()
	const pod = "e2e-qos-oom"
	p := startRun(t, `
apiVersion: v1
kind: Pod
metadata:
  name: e2e-qos-oom
spec:
  restartPolicy: Always
  terminationGracePeriodSeconds: 2
  containers:
  - name: app
    image: REGISTRY/minikubelet/busybox:1.36
    command: ["sh", "-c", "a=$(head -c 134217728 /dev/zero | tr '\\0' a); echo survived ${#a}; exec sleep 600"]
    resources:
      limits: {memory: 32Mi}
`)
	podCg := p.sandboxCgroup(pod)
	// The kernel's kill and the restart: the first restart is immediate,
	// so the status may skip the terminated state; the second kill ends in
	// CrashLoopBackOff.
	p.waitFor(`default/e2e-qos-oom\s+status\s+.*app:(terminated\(OOMKilled,exit=137\)|waiting\(CrashLoopBackOff: [^\n]*\)),restarts=[1-9]\d*\n`, 2*time.Minute)
	p.waitFor(`default/e2e-qos-oom\s+warning\s+OOMKilled: Container app was killed by the kernel for exceeding its memory limit of 32Mi \(exit code 137\)`, 30*time.Second)

	// The exited instance CRI holds (the agent keeps the newest) was
	// OOM-killed.
	var exited []*runtimeapi.ContainerStatus
	for _, c := range podContainers(t, pod) {
		if c.State != runtimeapi.ContainerState_CONTAINER_EXITED {
			continue
		}
		resp, err := suite.rt.ContainerStatus(ctx(t), c.Id, false)
		if cri.IsNotFound(err) {
			// Pruned between the list and now: the container keeps
			// crashing, and a newer exited instance replaces it.
			continue
		}
		require.NoError(t, err)
		exited = append(exited, resp.GetStatus())
	}
	require.NotEmpty(t, exited, "no exited instance of app in CRI")
	for _, s := range exited {
		assert.Equal(t, int32(137), s.ExitCode, "exit code of instance %s", shortID(s.Id))
		if cgroupV2 && s.Reason == "Error" {
			// On cgroup v2 containerd may handle the task's exit before its
			// OOM event and report Error (containerd#8180, #12260); the
			// kernel's own count is checked below instead.
			t.Logf("instance %s: CRI reason Error, exit 137 (containerd's OOM event came after the exit)", shortID(s.Id))
			continue
		}
		assert.Equal(t, "OOMKilled", s.Reason, "CRI reason of instance %s (restart count %d)", shortID(s.Id), restartCount(s.Annotations))
	}
	// The allocation really reached the limit, and never got past it.
	peakFile, limitFile := "memory.max_usage_in_bytes", "memory.limit_in_bytes"
	if cgroupV2 {
		peakFile, limitFile = "memory.peak", "memory.max"
	}
	peak := cgroupInt(t, "memory", podCg, peakFile)
	t.Logf("pod cgroup %s peak memory usage %d bytes (%.1f MiB)", podCg, peak, float64(peak)/float64(mi))
	assert.GreaterOrEqual(t, peak, 30*mi, "pod cgroup %s peak memory", podCg)
	assert.Equal(t, 32*mi, cgroupInt(t, "memory", podCg, limitFile), "pod cgroup %s memory limit", podCg)

	// restarts only grows, and reached at least 1.
	last := 0
	for _, l := range statusLines(p.output(), pod) {
		n := restartsOf(l, "app")
		assert.GreaterOrEqual(t, n, last, "restart count went down: %q", l)
		last = max(last, n)
	}
	assert.GreaterOrEqual(t, last, 1, "restarts shown")
	if cgroupV2 {
		// The kernel killed every instance that restarted: memory.events
		// of the pod cgroup counts the kills in the container cgroups
		// below it.
		events := cgroupFile(t, "memory", podCg, "memory.events")
		m := regexp.MustCompile(`(?m)^oom_kill (\d+)$`).FindStringSubmatch(events)
		require.NotNil(t, m, "no oom_kill in pod cgroup %s memory.events:\n%s", podCg, events)
		kills, err := strconv.Atoi(m[1])
		require.NoError(t, err)
		t.Logf("pod cgroup %s: oom_kill %d, restarts shown %d", podCg, kills, last)
		assert.GreaterOrEqual(t, kills, last, "pod cgroup %s memory.events oom_kill vs the restarts", podCg)
	}
	p.interrupt()
	assertCgroupGone(t, podCg)
}

// After SIGINT the pod cgroup (and the container cgroups below it) is gone
// from every mounted hierarchy: each v1 controller, the named systemd
// hierarchy and, in hybrid mode, the unified one, where runc also places
// the container processes.
func TestQoS_PodCgroupsRemovedOnSIGINT(t *testing.T) {
	t.Parallel()
	const pod = "e2e-qos-cleanup"
	p := startRun(t, `
apiVersion: v1
kind: Pod
metadata:
  name: e2e-qos-cleanup
spec:
  terminationGracePeriodSeconds: 2
  containers:
  - name: a
    image: REGISTRY/minikubelet/busybox:1.36
    command: ["sh", "-c", "exec sleep 3600"]
    resources:
      requests: {cpu: 10m, memory: 8Mi}
      limits: {cpu: 100m, memory: 64Mi}
  - name: b
    image: REGISTRY/minikubelet/busybox:1.36
    command: ["sh", "-c", "exec sleep 3600"]
`)
	p.waitRunning(pod)
	podCg := p.sandboxCgroup(pod)
	ids := []string{containerID(t, pod, "a"), containerID(t, pod, "b")}
	var present []string
	require.Equal(t, podCgroupPath("/kubepods/burstable", p.podUID(pod)), podCg, "pod cgroup on the sandbox line")
	for _, m := range cgroupMounts(t) {
		dir := filepath.Join(cgroupRoot, m, podCg)
		if _, err := os.Stat(dir); err == nil {
			present = append(present, m)
		} else if m != "unified" {
			// The agent creates the pod cgroup in every v1 hierarchy.
			t.Errorf("pod cgroup %s missing while the pod runs: %v", dir, err)
		}
	}
	t.Logf("pod cgroup %s present in %v", podCg, present)

	p.interrupt()
	assertCgroupGone(t, podCg)
	for _, id := range ids {
		assertCgroupGone(t, containerCgroupPath(podCg, id))
	}
}

// kubepods/burstable's cpu.shares follow the CPU requests of the running
// Burstable pods: A (300m) → 307, plus B (200m, another run) → 512, A
// stopped → 204, B stopped → 2. Also kubepods: shares of the allocatable
// CPU, memory limit MemTotal (no reservations). Not parallel: no other
// Burstable pod may exist meanwhile.
func TestQoS_BurstableTierFollowsPods(t *testing.T) {
	for _, sb := range podSandboxes(t, "") {
		require.False(t, sb.State == runtimeapi.PodSandboxState_SANDBOX_READY && sb.Annotations[annotationQOSClass] == "Burstable",
			"another Burstable sandbox is ready: %s (%s)", sb.GetMetadata().GetName(), shortID(sb.Id))
	}
	kubepods, tier := "/kubepods", "/kubepods/burstable"
	if systemdDriver {
		kubepods, tier = "/kubepods.slice", "/kubepods.slice/kubepods-burstable.slice"
	}
	// cpu.shares on v1; on v2 cpu.weight, runc 1.1's conversion of them.
	cpuFile, cpuValue := "cpu.shares", func(shares int64) int64 { return shares }
	if cgroupV2 {
		cpuFile, cpuValue = "cpu.weight", sharesToWeight
	}
	waitShares := func(shares int64, why string) {
		t.Helper()
		want := cpuValue(shares)
		var got int64
		wait := scaled(15 * time.Second)
		deadline := time.Now().Add(wait)
		for {
			got = cgroupInt(t, "cpu", tier, cpuFile)
			if got == want {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: %s %s is %d, want %d (shares %d; waited %s)", why, tier, cpuFile, got, want, shares, wait)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}

	a := startRun(t, `
apiVersion: v1
kind: Pod
metadata:
  name: e2e-qos-tier-a
spec:
  terminationGracePeriodSeconds: 2
  containers:
  - name: app
    image: REGISTRY/minikubelet/busybox:1.36
    command: ["sh", "-c", "exec sleep 3600"]
    resources:
      requests: {cpu: 300m}
`)
	// Node level: kubepods from the allocatable printed by run.
	m := a.waitFor(`node\s+kubepods\s+(\S+) \(cpu (\S+), memory (\S+) allocatable\)`, time.Minute)
	assert.Equal(t, kubepods, m[1])
	assert.Equal(t, strconv.Itoa(runtime.NumCPU()), m[2], "allocatable cpu (no reservations)")
	capacity := memTotal(t)
	assert.Equal(t, cpuValue(milliCPUToShares(int64(runtime.NumCPU())*1000)), cgroupInt(t, "cpu", kubepods, cpuFile), "kubepods %s", cpuFile)
	page := int64(os.Getpagesize())
	if cgroupV2 {
		assert.Equal(t, capacity/page*page, cgroupInt(t, "memory", kubepods, "memory.max"), "kubepods memory.max (MemTotal %d)", capacity)
		assert.Equal(t, "max 100000", cgroupFile(t, "cpu", kubepods, "cpu.max"), "kubepods has no CFS quota")
	} else {
		assert.Equal(t, capacity/page*page, cgroupInt(t, "memory", kubepods, "memory.limit_in_bytes"), "kubepods memory.limit_in_bytes (MemTotal %d)", capacity)
		assert.Equal(t, int64(-1), cgroupInt(t, "cpu", kubepods, "cpu.cfs_quota_us"), "kubepods has no CFS quota")
	}

	a.waitRunning("e2e-qos-tier-a")
	waitShares(milliCPUToShares(300), "pod A (300m) running")

	b := startRun(t, `
apiVersion: v1
kind: Pod
metadata:
  name: e2e-qos-tier-b
spec:
  terminationGracePeriodSeconds: 2
  containers:
  - name: app
    image: REGISTRY/minikubelet/busybox:1.36
    command: ["sh", "-c", "exec sleep 3600"]
    resources:
      requests: {cpu: 200m}
`)
	b.waitRunning("e2e-qos-tier-b")
	waitShares(milliCPUToShares(500), "pods A (300m) and B (200m) running")

	a.interrupt()
	waitShares(milliCPUToShares(200), "pod A stopped, B (200m) running")

	b.interrupt()
	waitShares(2, "both pods stopped")
}
