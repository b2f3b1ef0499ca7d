package main

// The kubelet column: the kubelet of the pinned k8s.io/kubernetes module
// (hack/conformance/build.sh kubelet builds and caches it; hack/bench.sh
// passes it as --kubelet), run standalone — no API server, no kubeconfig —
// with a KubeletConfiguration whose staticPodPath is the directory the
// bench writes its manifests into, against the same private containerd,
// CNI conflist, image and cgroup driver (cgroupfs) as minikubelet, with
// its own root dir and cgroup root.

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// kubeletNode is the name the standalone kubelet goes by: it names its
// static pods <manifest name>-<node name>.
const kubeletNode = "bench-kubelet"

// kubeletCgroupRoot is the kubelet's cgroupRoot: its pods go under
// /mklb-kubelet/kubepods, apart from minikubelet's and the floor's
// /kubepods.
const kubeletCgroupRoot = "/mklb-kubelet"

// kubeletContainerLogs is where the kubelet links its containers' logs.
const kubeletContainerLogs = "/var/log/containers"

// kubeletFixedDir holds the one part of the kubelet's state that
// --root-dir does not move: the device manager's registration socket and
// checkpoint, /var/lib/kubelet/device-plugins (a constant of the device
// plugin API). On start the kubelet empties that directory, which took the
// registration socket from under a node agent running on this machine with
// root /var/lib/kubelet (make node-conformance's minikubelet: its device
// plugin specs then failed with "connection refused"). So the bench's
// kubelet runs in a mount namespace of its own with a tmpfs over this
// directory (unshare(1) execs in place: the kubelet keeps the PID the
// bench measures).
const kubeletFixedDir = "/var/lib/kubelet"

// kubeletSysctls are what the kubelet sets at start
// (protectKernelDefaults false: setupKernelTunables); stop puts the
// machine's values back.
var kubeletSysctls = []string{"vm/overcommit_memory", "vm/panic_on_oom", "kernel/panic", "kernel/panic_on_oops"}

// kubeletSettings are the KubeletConfiguration fields the bench sets or
// relies on, as stated in the report's settings line. The periods are
// the kubelet's defaults: the bench sets none of them.
var kubeletSettings = "standalone (no API server), staticPodPath, cgroupfs, cgroupsPerQOS, failSwapOn false, " +
	"authentication anonymous and webhook off, authorization AlwaysAllow, on 127.0.0.1; defaults: syncFrequency 1m, " +
	"fileCheckFrequency 20s (plus inotify), housekeeping 2s (fixed), PLEG relist 1s (Evented PLEG off), " +
	"cAdvisor housekeeping 10s, serializeImagePulls true; evictionHard and image GC thresholds as minikubelet's"

// kubelet is one standalone kubelet process.
type kubelet struct {
	cmd         *exec.Cmd
	dir         string // its root: config, root-dir, manifests, pod logs, log
	manifests   string
	logPath     string
	healthzPort int
	done        chan struct{}
	err         error
	sysctls     map[string]string
	// madeFixedDir: startKubelet made kubeletFixedDir (the tmpfs's
	// mount point), so stop removes it.
	madeFixedDir bool
}

// freePort returns a TCP port on 127.0.0.1 nobody listens on now.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// kubeletConfig renders the KubeletConfiguration.
func kubeletConfig(endpoint, dir string, port, healthz, maxPods int) string {
	return fmt.Sprintf(`apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
containerRuntimeEndpoint: %[1]s
staticPodPath: %[2]s/manifests
cgroupDriver: cgroupfs
cgroupsPerQOS: true
cgroupRoot: %[6]s
failCgroupV1: false
failSwapOn: false
address: 127.0.0.1
port: %[3]d
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
healthzPort: %[4]d
podLogsDir: %[2]s/pod-logs
volumePluginDir: %[2]s/volume-plugins
authentication:
  anonymous: {enabled: false}
  webhook: {enabled: false}
authorization: {mode: AlwaysAllow}
maxPods: %[5]d
evictionHard: {memory.available: 100Mi, nodefs.available: 1%%, imagefs.available: 1%%, nodefs.inodesFree: 1%%}
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
`, endpoint, dir, port, healthz, maxPods, kubeletCgroupRoot)
}

// startKubelet starts bin standalone with its state under dir and waits
// until its /healthz answers ok. maxPods is raised to the bench's pod
// count when that is above the kubelet's default of 110.
func startKubelet(ctx context.Context, bin, endpoint, dir string, maxPods int) (*kubelet, error) {
	k := &kubelet{dir: dir, manifests: filepath.Join(dir, "manifests"), logPath: filepath.Join(dir, "kubelet.log"), done: make(chan struct{})}
	for _, sub := range []string{"root", "pod-logs", "manifests", "volume-plugins"} {
		if err := os.MkdirAll(filepath.Join(dir, sub), 0o755); err != nil {
			return nil, err
		}
	}
	// The cgroupfs driver wants the cgroup root to exist in every v1
	// hierarchy (hack/conformance/run.sh does the same).
	for _, h := range cgroupHierarchies() {
		if err := os.Mkdir(filepath.Join(h, kubeletCgroupRoot), 0o755); err != nil && !os.IsExist(err) {
			return nil, fmt.Errorf("the kubelet's cgroup root: %w", err)
		}
	}
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	if k.healthzPort, err = freePort(); err != nil {
		return nil, err
	}
	cfg := filepath.Join(dir, "kubelet.yaml")
	if err := os.WriteFile(cfg, []byte(kubeletConfig(endpoint, dir, port, k.healthzPort, max(110, maxPods))), 0o644); err != nil {
		return nil, err
	}
	k.sysctls = map[string]string{}
	for _, s := range kubeletSysctls {
		if b, err := os.ReadFile("/proc/sys/" + s); err == nil {
			k.sysctls[s] = strings.TrimSpace(string(b))
		}
	}
	logf, err := os.Create(k.logPath)
	if err != nil {
		return nil, err
	}
	if _, err := os.Stat(kubeletFixedDir); os.IsNotExist(err) {
		// The mount point; stop removes it again.
		if err := os.Mkdir(kubeletFixedDir, 0o700); err != nil {
			return nil, fmt.Errorf("the kubelet's mount point %s: %w", kubeletFixedDir, err)
		}
		k.madeFixedDir = true
	}
	k.cmd = exec.Command("unshare", "--mount", "--propagation", "private", "--",
		"sh", "-c", `mount -t tmpfs -o mode=0700 mklb-kubelet "$0" && exec "$@"`, kubeletFixedDir,
		bin, "--config", cfg, "--root-dir", filepath.Join(dir, "root"),
		"--cert-dir", filepath.Join(dir, "root", "pki"), "--hostname-override", kubeletNode)
	k.cmd.Stdout, k.cmd.Stderr = logf, logf
	// A kubelet outliving a killed bench would kill every pod it does not
	// know of on this containerd.
	k.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := k.cmd.Start(); err != nil {
		logf.Close()
		return nil, fmt.Errorf("start %s: %w", bin, err)
	}
	go func() {
		k.err = k.cmd.Wait()
		logf.Close()
		close(k.done)
	}()
	deadline := time.Now().Add(2 * time.Minute)
	for {
		if k.healthy(ctx) {
			return k, nil
		}
		select {
		case <-k.done:
			k.restoreHost()
			return nil, fmt.Errorf("the kubelet exited (%v) before its /healthz answered; log: %s", k.err, k.logPath)
		default:
		}
		if time.Now().After(deadline) {
			k.stop()
			return nil, fmt.Errorf("the kubelet's /healthz did not answer ok within 2m; log: %s", k.logPath)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// healthy reports whether the kubelet's /healthz answers ok.
func (k *kubelet) healthy(ctx context.Context) bool {
	hc, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(hc, http.MethodGet, "http://127.0.0.1:"+strconv.Itoa(k.healthzPort)+"/healthz", nil)
	if err != nil {
		return false
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return false
	}
	defer resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

// pid is the kubelet's process ID.
func (k *kubelet) pid() int { return k.cmd.Process.Pid }

// stop sends SIGTERM and waits (SIGKILL after 30 s), then puts back the
// sysctls the kubelet changed and removes its (empty) cgroup root.
func (k *kubelet) stop() {
	_ = k.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-k.done:
	case <-time.After(30 * time.Second):
		_ = k.cmd.Process.Kill()
		<-k.done
	}
	k.restoreHost()
	// The kubelet links each container's log into /var/log/containers (a
	// fixed path); the links of containers removed after it stopped stay.
	if entries, err := os.ReadDir(kubeletContainerLogs); err == nil {
		for _, e := range entries {
			l := filepath.Join(kubeletContainerLogs, e.Name())
			if t, err := os.Readlink(l); err == nil && strings.HasPrefix(t, k.dir+"/") {
				_ = os.Remove(l)
			}
		}
	}
	// The kubelet also makes its cgroup root in the v2 "unified"
	// hierarchy of a hybrid host.
	for _, h := range append(cgroupHierarchies(), "/sys/fs/cgroup/unified") {
		removeEmptyCgroups(filepath.Join(h, kubeletCgroupRoot))
	}
}

// restoreHost undoes what starting the kubelet changed on the host: its
// sysctls, and kubeletFixedDir if startKubelet made it (empty: the kubelet
// wrote into its tmpfs).
func (k *kubelet) restoreHost() {
	k.restoreSysctls()
	if k.madeFixedDir {
		_ = os.Remove(kubeletFixedDir)
	}
}

func (k *kubelet) restoreSysctls() {
	for s, v := range k.sysctls {
		if err := os.WriteFile("/proc/sys/"+s, []byte(v), 0o644); err != nil {
			progress("kubelet: cannot restore %s=%s: %v", strings.ReplaceAll(s, "/", "."), v, err)
		}
	}
}

// cgroupHierarchies lists the mounted v1 hierarchies under /sys/fs/cgroup
// (their directories; not the v2 "unified" one, nor symlinks such as
// cpu,cpuacct).
func cgroupHierarchies() []string {
	entries, err := os.ReadDir("/sys/fs/cgroup")
	if err != nil {
		return nil
	}
	var out []string
	for _, e := range entries {
		if e.IsDir() && e.Name() != "unified" {
			out = append(out, filepath.Join("/sys/fs/cgroup", e.Name()))
		}
	}
	return out
}

// removeEmptyCgroups removes a cgroup directory tree, deepest first
// (cgroupfs removes a directory only once it has no children or tasks).
func removeEmptyCgroups(dir string) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	for _, e := range entries {
		if e.IsDir() {
			removeEmptyCgroups(filepath.Join(dir, e.Name()))
		}
	}
	_ = os.Remove(dir)
}
