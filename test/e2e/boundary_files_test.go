package e2e

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"sigs.k8s.io/yaml"

	"github.com/minikubelet/minikubelet/agent/api"
)

// The node boundary through files (issue #16, findings 1-4 and 10): everything a
// pod can write is hostile to the agent, which runs as root. Each subtest
// performs one attack against a daemon on a real containerd (a private
// one, so that the subtests run in parallel beside the rest of the suite)
// and checks that the host was not reached: no host directory mounted
// into a pod, no host file read into a status, no worker hung on a FIFO,
// no directory created outside a volume, no unbounded read of a file the
// pod wrote, and no mount left behind.
func TestBoundary_Files(t *testing.T) {
	t.Parallel()
	r := newPrivateRuntime(t)
	pods := []string{"boundary-flipper", "boundary-termlink", "boundary-fifo", "boundary-mkdir", "boundary-hosts"}
	// A short back-off: the flipper's victims restart every few seconds,
	// each restart one more subPath mount raced against the flipper.
	d := r.newDaemon(t, pods, "--backoff-initial", "1s", "--backoff-max", "2s")
	d.start(t)
	t.Cleanup(func() { assertNoMountsUnder(t, d.root) })

	t.Run("SubPathFlipper", func(t *testing.T) {
		t.Parallel()
		testSubPathFlipper(t, d)
	})
	t.Run("TerminationMessageSymlink", func(t *testing.T) {
		t.Parallel()
		testTerminationMessageSymlink(t, d)
	})
	t.Run("TerminationMessageFIFO", func(t *testing.T) {
		t.Parallel()
		testTerminationMessageFIFO(t, d)
	})
	t.Run("SubPathMkdirOutside", func(t *testing.T) {
		t.Parallel()
		testSubPathMkdirOutside(t, d)
	})
	t.Run("HugeHostsFile", func(t *testing.T) {
		t.Parallel()
		testHugeHostsFile(t, d)
	})
}

// hostDir is a directory on the host that no pod may reach, holding a
// canary file with a random secret; it returns the dir and the secret.
func hostDir(t *testing.T) (string, string) {
	t.Helper()
	dir, err := os.MkdirTemp("/tmp", "mkl-boundary-")
	require.NoError(t, err)
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	b := make([]byte, 12)
	_, _ = rand.Read(b)
	secret := "HOST-SECRET-" + hex.EncodeToString(b)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "canary"), []byte(secret+"\n"), 0o600))
	return dir, secret
}

// dirEntries lists the names in dir.
func dirEntries(t *testing.T, dir string) []string {
	t.Helper()
	es, err := os.ReadDir(dir)
	require.NoError(t, err)
	var names []string
	for _, e := range es {
		names = append(names, e.Name())
	}
	return names
}

// createPodYAML creates the pod of a manifest (REGISTRY replaced) through
// the daemon's API.
func createPodYAML(t *testing.T, d *daemon, manifest string) {
	t.Helper()
	var pod v1.Pod
	require.NoError(t, yaml.UnmarshalStrict([]byte(strings.ReplaceAll(manifest, "REGISTRY", suite.registry)), &pod))
	c, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_, err := d.api().CreatePod(c, &pod)
	require.NoError(t, err)
}

// deletePod deletes the pod and waits until it is gone: a pod the attack
// hung would stay.
func deletePod(t *testing.T, d *daemon, name string) {
	t.Helper()
	c, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, err := d.api().DeletePod(c, "default", name, nil)
	require.NoError(t, err)
	d.waitPod(t, name, "gone", scaled(2*time.Minute), func(p *v1.Pod) bool { return p == nil })
}

// emptyDirOf is the host directory of an emptyDir volume of a pod of the
// daemon.
func emptyDirOf(d *daemon, p *v1.Pod, volume string) string {
	return filepath.Join(d.root, "pods", string(p.UID), "volumes", "kubernetes.io~empty-dir", volume)
}

// assertNoMountsUnder fails when the test process's mount table (the
// host's: the daemon mounts there) still has a mount under dir.
func assertNoMountsUnder(t *testing.T, dir string) {
	t.Helper()
	f, err := os.Open("/proc/self/mountinfo")
	require.NoError(t, err)
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) > 4 && (fields[4] == dir || strings.HasPrefix(fields[4], dir+"/")) {
			t.Errorf("mount left behind: %s", sc.Text())
		}
	}
}

// Finding 1: one container flips <emptyDir>/s between a directory and a
// symlink to a host directory, as fast as it can, for over a minute (by
// renames: a directory deleted after it was pinned would fail the start
// with ENOENT, which is safe but races nothing);
// four others mount subPath s and restart every few seconds, each start
// racing the flip (the flipper is held to half a CPU: the machine is
// shared; its loop still flips every few milliseconds). They write into what they got, and report when they
// can see the host's canary. The host directory must never be mounted:
// nothing written into it, the canary never seen, and some victim starts
// must have succeeded (else nothing was raced).
func testSubPathFlipper(t *testing.T, d *daemon) {
	host, _ := hostDir(t)
	victim := func(name string) string {
		return `
  - name: ` + name + `
    image: REGISTRY/minikubelet/busybox:1.36
    command: ["sh", "-c", "echo $HOSTNAME >> /all/starts; touch /mnt/written-by-pod 2>/dev/null; if [ -e /mnt/canary ]; then echo seen >> /all/seen; fi; sleep 1"]
    volumeMounts:
    - {name: data, mountPath: /mnt, subPath: s}
    - {name: data, mountPath: /all}`
	}
	manifest := `
apiVersion: v1
kind: Pod
metadata: {name: boundary-flipper, namespace: default}
spec:
  terminationGracePeriodSeconds: 1
  volumes:
  - {name: data, emptyDir: {}}
  containers:
  - name: flipper
    image: REGISTRY/minikubelet/busybox:1.36
    command: ["sh", "-c", "trap 'exit 0' TERM; mkdir -p /data/d; while :; do mv /data/d /data/s; mv /data/s /data/d; ln -s ` + host + ` /data/s; rm -f /data/s; done"]
    resources: {limits: {cpu: 500m}}
    volumeMounts:
    - {name: data, mountPath: /data}` +
		victim("v1") + victim("v2") + victim("v3") + victim("v4")
	createPodYAML(t, d, manifest)
	p := d.waitPod(t, "boundary-flipper", "Running", scaled(2*time.Minute), isRunning)
	vol := emptyDirOf(d, p, "data")

	// At least 60 s of flipping, checking the host all along.
	deadline := time.Now().Add(65 * time.Second)
	for time.Now().Before(deadline) {
		require.Equal(t, []string{"canary"}, dirEntries(t, host), "a pod wrote into the host directory: its subPath mount escaped")
		time.Sleep(500 * time.Millisecond)
	}
	p = d.waitPod(t, "boundary-flipper", "still there", 10*time.Second, func(p *v1.Pod) bool { return p != nil })
	restarts := 0
	for _, cs := range p.Status.ContainerStatuses {
		restarts += int(cs.RestartCount)
	}
	starts, err := os.ReadFile(filepath.Join(vol, "starts"))
	require.NoError(t, err, "no victim ever started: nothing was raced\n%s", podSummary(p))
	_, err = os.Stat(filepath.Join(vol, "seen"))
	assert.True(t, os.IsNotExist(err), "a victim saw the host's canary")
	n := strings.Count(string(starts), "\n")
	t.Logf("victim starts with subPath s mounted: %d (restarts %d) during 65 s of flipping", n, restarts)
	assert.GreaterOrEqual(t, n, 5, "too few victim starts to have raced the flip")

	deletePod(t, d, "boundary-flipper")
	assert.Equal(t, []string{"canary"}, dirEntries(t, host))
	assert.NoDirExists(t, filepath.Join(d.root, "pods", string(p.UID)), "the pod directory goes, pinned subPaths with it")
}

// Finding 2: a container's termination-log is a subPath of an emptyDir
// (a file an init container made), and a sibling replaces that file with
// a symlink to a root-only host file holding a secret while the container
// runs. The pod runs as uid 1000: it cannot read the secret itself. The
// container's terminated message must not hold the secret.
func testTerminationMessageSymlink(t *testing.T, d *daemon) {
	host, secret := hostDir(t)
	manifest := `
apiVersion: v1
kind: Pod
metadata: {name: boundary-termlink, namespace: default}
spec:
  terminationGracePeriodSeconds: 1
  restartPolicy: Never
  securityContext: {runAsNonRoot: true, runAsUser: 1000}
  volumes:
  - {name: data, emptyDir: {}}
  initContainers:
  - name: init
    image: REGISTRY/minikubelet/busybox:1.36
    command: ["sh", "-c", "touch /data/term"]
    volumeMounts:
    - {name: data, mountPath: /data}
  containers:
  - name: victim
    image: REGISTRY/minikubelet/busybox:1.36
    command: ["sh", "-c", "sleep 4; exit 3"]
    terminationMessagePolicy: FallbackToLogsOnError
    volumeMounts:
    - {name: data, mountPath: /dev/termination-log, subPath: term}
  - name: swapper
    image: REGISTRY/minikubelet/busybox:1.36
    command: ["sh", "-c", "trap 'exit 0' TERM; sleep 1; rm -f /data/term; ln -s ` + host + `/canary /data/term; ls -l /data; while :; do sleep 1; done"]
    volumeMounts:
    - {name: data, mountPath: /data}
`
	createPodYAML(t, d, manifest)
	p := d.waitPod(t, "boundary-termlink", "victim terminated", scaled(2*time.Minute), func(p *v1.Pod) bool {
		for _, cs := range p.Status.ContainerStatuses {
			if cs.Name == "victim" && cs.State.Terminated != nil {
				return true
			}
		}
		return false
	})
	link, err := os.Readlink(filepath.Join(emptyDirOf(d, p, "data"), "term"))
	require.NoError(t, err, "the swapper replaced the file with a symlink")
	require.Equal(t, host+"/canary", link)
	for _, cs := range p.Status.ContainerStatuses {
		if cs.Name != "victim" {
			continue
		}
		term := cs.State.Terminated
		t.Logf("victim terminated: exit %d reason %q message %q", term.ExitCode, term.Reason, term.Message)
		assert.EqualValues(t, 3, term.ExitCode)
		assert.NotContains(t, term.Message, secret, "the agent read a root-only host file into the status")
		assert.NotContains(t, term.Message, "HOST-SECRET")
	}
	deletePod(t, d, "boundary-termlink")
}

// Finding 3: the file at a container's termination-log is a FIFO (a
// subPath an init container made with mkfifo), and a sibling keeps the
// volume in use. Reading it must not hang the pod's worker: the
// container's status comes, the log and the status answer at once, and
// the pod is deletable.
func testTerminationMessageFIFO(t *testing.T, d *daemon) {
	manifest := `
apiVersion: v1
kind: Pod
metadata: {name: boundary-fifo, namespace: default}
spec:
  terminationGracePeriodSeconds: 1
  restartPolicy: Never
  volumes:
  - {name: data, emptyDir: {}}
  initContainers:
  - name: init
    image: REGISTRY/minikubelet/busybox:1.36
    command: ["sh", "-c", "mkfifo /data/term"]
    volumeMounts:
    - {name: data, mountPath: /data}
  containers:
  - name: victim
    image: REGISTRY/minikubelet/busybox:1.36
    command: ["sh", "-c", "echo bye; exit 2"]
    terminationMessagePolicy: FallbackToLogsOnError
    volumeMounts:
    - {name: data, mountPath: /dev/termination-log, subPath: term}
  - name: keeper
    image: REGISTRY/minikubelet/busybox:1.36
    command: ["sh", "-c", "trap 'exit 0' TERM; while :; do sleep 1; done"]
    volumeMounts:
    - {name: data, mountPath: /data}
`
	createPodYAML(t, d, manifest)
	p := d.waitPod(t, "boundary-fifo", "victim terminated", scaled(2*time.Minute), func(p *v1.Pod) bool {
		for _, cs := range p.Status.ContainerStatuses {
			if cs.Name == "victim" && cs.State.Terminated != nil {
				return true
			}
		}
		return false
	})
	for _, cs := range p.Status.ContainerStatuses {
		if cs.Name == "victim" {
			term := cs.State.Terminated
			t.Logf("victim terminated: exit %d message %q", term.ExitCode, term.Message)
			// The file at the path is the agent's (mounted last, over
			// the FIFO), empty: the message is the log's end, read
			// without an error.
			assert.EqualValues(t, 2, term.ExitCode)
			assert.Contains(t, term.Message, "bye")
			assert.NotContains(t, term.Message, "Error on reading")
		}
	}
	// Status and logs answer promptly, twice (a hung worker would hang
	// the second).
	for range 2 {
		c, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		_, err := d.api().GetPod(c, "default", "boundary-fifo")
		require.NoError(t, err, "status of the pod")
		rc, err := d.api().Logs(c, "default", "boundary-fifo", api.LogRequest{Container: "victim"})
		require.NoError(t, err, "log of the victim")
		out, err := io.ReadAll(rc)
		rc.Close()
		require.NoError(t, err)
		assert.Equal(t, "bye\n", string(out))
		cancel()
	}
	deletePod(t, d, "boundary-fifo")
}

// Finding 4: a subPath through a symlink (absolute, or relative and
// climbing) to a host directory, naming a path below it that does not
// exist. The agent must refuse the mount without creating anything on the
// way: the host directory stays empty.
func testSubPathMkdirOutside(t *testing.T, d *daemon) {
	host, err := os.MkdirTemp("/tmp", "mkl-boundary-mkdir-")
	require.NoError(t, err)
	t.Cleanup(func() { _ = os.RemoveAll(host) })
	manifest := `
apiVersion: v1
kind: Pod
metadata: {name: boundary-mkdir, namespace: default}
spec:
  terminationGracePeriodSeconds: 1
  volumes:
  - {name: data, emptyDir: {}}
  initContainers:
  - name: init
    image: REGISTRY/minikubelet/busybox:1.36
    command: ["sh", "-c", "ln -s ` + host + ` /data/m; ln -s ../../../../../../../../../../../..` + host + ` /data/c"]
    volumeMounts:
    - {name: data, mountPath: /data}
  containers:
  - name: deep
    image: REGISTRY/minikubelet/busybox:1.36
    command: ["sleep", "3600"]
    volumeMounts:
    - {name: data, mountPath: /mnt, subPath: m/deeper/still}
  - name: climb
    image: REGISTRY/minikubelet/busybox:1.36
    command: ["sleep", "3600"]
    volumeMounts:
    - {name: data, mountPath: /mnt, subPath: c/x}
`
	createPodYAML(t, d, manifest)
	p := d.waitPod(t, "boundary-mkdir", "both containers refused their subPath", scaled(2*time.Minute), func(p *v1.Pod) bool {
		n := 0
		for _, cs := range p.Status.ContainerStatuses {
			if w := cs.State.Waiting; w != nil && w.Reason == "CreateContainerConfigError" && strings.Contains(w.Message, "outside the volume") {
				n++
			}
		}
		return n == 2
	})
	for _, cs := range p.Status.ContainerStatuses {
		t.Logf("%s: %s: %s", cs.Name, cs.State.Waiting.Reason, cs.State.Waiting.Message)
	}
	// A few more tries of the agent.
	time.Sleep(5 * time.Second)
	assert.Empty(t, dirEntries(t, host), "the agent created directories outside the volume")
	deletePod(t, d, "boundary-mkdir")
	assert.Empty(t, dirEntries(t, host))
}

// Finding 10: the pod's /etc/hosts is the agent's file
// (<podDir>/etc-hosts), mounted writable in every container, and read back
// by the agent at every container start to rewrite it only when it
// changed. A container grows it to a sparse 1 GiB and exits, again and
// again: each restart must find the managed file rewritten (small), and
// the daemon's RSS, sampled all along, must stay far below the file's
// size (reading it whole took 1 GiB). The bound is loose, 256 MiB: the
// other subtests share the daemon.
func testHugeHostsFile(t *testing.T, d *daemon) {
	manifest := `
apiVersion: v1
kind: Pod
metadata: {name: boundary-hosts, namespace: default}
spec:
  terminationGracePeriodSeconds: 1
  volumes:
  - {name: data, emptyDir: {}}
  containers:
  - name: grower
    image: REGISTRY/minikubelet/busybox:1.36
    command: ["sh", "-c", "stat -c %s /etc/hosts >> /data/sizes; truncate -s 1073741824 /etc/hosts || dd if=/dev/null of=/etc/hosts bs=1 seek=1073741824; stat -c %s /etc/hosts >> /data/grown; sleep 1; exit 1"]
    volumeMounts:
    - {name: data, mountPath: /data}
`
	pid := d.cmd.Process.Pid
	mon := watchRSS(t, pid)
	createPodYAML(t, d, manifest)
	p := d.waitPod(t, "boundary-hosts", "Running", scaled(2*time.Minute), func(p *v1.Pod) bool { return p != nil && p.UID != "" })
	vol := emptyDirOf(d, p, "data")
	var sizes []string
	waitFor(t, "three starts of the grower, two after it grew /etc/hosts", scaled(2*time.Minute), func() string {
		b, _ := os.ReadFile(filepath.Join(vol, "sizes"))
		sizes = strings.Fields(string(b))
		if len(sizes) >= 3 {
			return ""
		}
		return "starts so far: " + strings.Join(sizes, " ")
	})
	peak := mon.stop()
	require.NoError(t, mon.err, "sample the daemon's RSS (did it die?)")
	grown, err := os.ReadFile(filepath.Join(vol, "grown"))
	require.NoError(t, err)
	t.Logf("/etc/hosts at each start: %v bytes; grown to %v; daemon VmRSS peak %d KiB (%d samples)", sizes, strings.Fields(string(grown)), peak/1024, mon.samples)
	assert.Contains(t, strings.Fields(string(grown)), "1073741824", "the container grew /etc/hosts")
	for i, s := range sizes {
		n, err := strconv.Atoi(s)
		require.NoError(t, err)
		assert.Less(t, n, 4096, "start %d found /etc/hosts of %d bytes: the agent did not rewrite it", i, n)
	}
	assert.Less(t, peak, int64(256<<20), "the daemon's VmRSS while the pod's /etc/hosts was 1 GiB")
	deletePod(t, d, "boundary-hosts")
}

// Pinned subPath mounts do not outlive their pod when the agent dies: two
// pods with subPaths run from the manifest dir; the daemon is killed; one
// pod's manifest goes (orphan collection tears it down at the restart),
// and the other's too, after its sandbox was removed behind the agent's
// back (only its pod directory, with the pins, is left). After the
// restart no mount is left under the root dir.
func TestBoundary_SubPathMountsAfterAgentKill(t *testing.T) {
	t.Parallel()
	r := newPrivateRuntime(t)
	pods := []string{"boundary-orphan-a", "boundary-orphan-b"}
	d := r.newDaemon(t, pods)
	t.Cleanup(func() { assertNoMountsUnder(t, d.root) })
	manifest := func(name string) string {
		return strings.ReplaceAll(`
apiVersion: v1
kind: Pod
metadata: {name: `+name+`, namespace: default}
spec:
  terminationGracePeriodSeconds: 1
  volumes:
  - {name: data, emptyDir: {}}
  containers:
  - name: c
    image: REGISTRY/minikubelet/busybox:1.36
    command: ["sh", "-c", "trap 'exit 0' TERM; while :; do sleep 1; done"]
    volumeMounts:
    - {name: data, mountPath: /a, subPath: x/y}
    - {name: data, mountPath: /b, subPath: z}
`, "REGISTRY", suite.registry)
	}
	for _, name := range pods {
		require.NoError(t, os.WriteFile(filepath.Join(d.manifests, name+".yaml"), []byte(manifest(name)), 0o644))
	}
	d.start(t)
	for _, name := range pods {
		d.waitPod(t, name, "Running", scaled(2*time.Minute), isRunning)
	}
	pinned := mountPointsOf(t, filepath.Join(d.root, "pods"))
	require.Len(t, pinned, 4, "two subPaths pinned per pod")

	d.kill9(t)
	for _, name := range pods {
		require.NoError(t, os.Remove(filepath.Join(d.manifests, name+".yaml")))
	}
	c, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for _, id := range podSandboxIDs(t, r, "boundary-orphan-b") {
		require.NoError(t, r.rt.StopPodSandbox(c, id))
		require.NoError(t, r.rt.RemovePodSandbox(c, id))
	}

	t0 := time.Now()
	d.start(t)
	waitFor(t, "no mount left under the root dir", scaled(2*time.Minute), func() string {
		if m := mountPointsOf(t, filepath.Join(d.root, "pods")); len(m) > 0 {
			return strings.Join(m, ", ")
		}
		return ""
	})
	out, _ := d.out.snapshot()
	var removals []string
	for _, l := range strings.Split(out, "\n") {
		if strings.Contains(l, "Removing a") || strings.Contains(l, "Removing the subPath mounts") {
			removals = append(removals, l)
		}
	}
	t.Logf("%d pinned mounts before the kill, none %s after the restart; the daemon said:\n%s", len(pinned), time.Since(t0).Round(time.Millisecond), strings.Join(removals, "\n"))
	assert.Contains(t, out, "Removing a pod no source wants", "pod a was collected as an orphan")
}

// mountPointsOf lists the host's mount points at or below dir.
func mountPointsOf(t *testing.T, dir string) []string {
	t.Helper()
	data, err := os.ReadFile("/proc/self/mountinfo")
	require.NoError(t, err)
	var out []string
	for _, l := range strings.Split(string(data), "\n") {
		f := strings.Fields(l)
		if len(f) > 4 && (f[4] == dir || strings.HasPrefix(f[4], dir+"/")) {
			out = append(out, f[4])
		}
	}
	return out
}

// podSandboxIDs lists the sandboxes of a pod on the private runtime.
func podSandboxIDs(t *testing.T, r *privateRuntime, pod string) []string {
	t.Helper()
	c, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	sbs, err := r.rt.ListPodSandbox(c, &runtimeapi.PodSandboxFilter{LabelSelector: map[string]string{"io.kubernetes.pod.name": pod}})
	require.NoError(t, err)
	var ids []string
	for _, sb := range sbs {
		ids = append(ids, sb.Id)
	}
	return ids
}
