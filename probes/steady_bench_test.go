package probes

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// serversEnv makes TestBenchServers serve: it holds the number of pods.
const serversEnv = "MINIKUBELET_PROBES_BENCH_SERVERS"

// TestBenchServers is not a test: BenchmarkManager_Steady runs the test
// binary again with serversEnv set, so that the probed servers run in
// another process and the benchmark's CPU time is the prober's alone. Pod i
// (from 1) gets the address 127.0.1.i with an HTTP server answering 200 "ok"
// and a TCP listener that accepts and closes; each pod's line
// "ip httpPort tcpPort" goes to stdout, then "ready". It serves until its
// stdin closes.
func TestBenchServers(t *testing.T) {
	n, _ := strconv.Atoi(os.Getenv(serversEnv))
	if n <= 0 {
		t.Skip("helper process of BenchmarkManager_Steady")
	}
	srv := &http.Server{
		Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			_, _ = io.WriteString(w, "ok")
		}),
		ReadHeaderTimeout: 5 * time.Second,
	}
	for i := 1; i <= n; i++ {
		ip := fmt.Sprintf("127.0.1.%d", i)
		lh, err := net.Listen("tcp", ip+":0")
		if err != nil {
			t.Fatal(err)
		}
		lt, err := net.Listen("tcp", ip+":0")
		if err != nil {
			t.Fatal(err)
		}
		go func() { _ = srv.Serve(lh) }()
		go func() {
			for {
				c, err := lt.Accept()
				if err != nil {
					return
				}
				_ = c.Close()
			}
		}()
		fmt.Printf("%s %d %d\n", ip, lh.Addr().(*net.TCPAddr).Port, lt.Addr().(*net.TCPAddr).Port)
	}
	fmt.Println("ready")
	_, _ = io.Copy(io.Discard, os.Stdin)
}

// benchPod is one pod's servers.
type benchPod struct {
	ip                string
	httpPort, tcpPort int
}

// startBenchServers starts TestBenchServers in a child process.
func startBenchServers(b *testing.B, n int) []benchPod {
	b.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestBenchServers$")
	cmd.Env = append(os.Environ(), serversEnv+"="+strconv.Itoa(n))
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		b.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		_ = stdin.Close()
		_ = cmd.Wait()
	})
	var pods []benchPod
	sc := bufio.NewScanner(stdout)
	for sc.Scan() && sc.Text() != "ready" {
		var p benchPod
		if _, err := fmt.Sscanf(sc.Text(), "%s %d %d", &p.ip, &p.httpPort, &p.tcpPort); err != nil {
			b.Fatalf("server helper said %q: %v", sc.Text(), err)
		}
		pods = append(pods, p)
	}
	if len(pods) != n {
		b.Fatalf("server helper started %d of %d pods (see its output above)", len(pods), n)
	}
	go func() { _, _ = io.Copy(io.Discard, stdout) }()
	return pods
}

// cpuTime is the process's user+system CPU time so far (getrusage).
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// totalRuns counts the completed runs of every worker.
func (m *Manager) totalRuns() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	n := 0
	for _, pp := range m.pods {
		for _, cp := range pp.containers {
			for _, w := range cp.workers {
				if w != nil {
					n += w.st.Runs
				}
			}
		}
	}
	return n
}

// BenchmarkManager_Steady models scenario "3 steady" of `make bench`: 100
// running pods, each with an HTTP liveness probe (GET /healthz) and a TCP
// readiness probe, both every second. The servers run in a child process
// (TestBenchServers) on 127.0.1.1–127.0.1.100, which stand in for pod IPs,
// so the CPU time measured (getrusage of this process) is the prober's:
// timers, goroutines, the handlers, the kernel's connect and close, and the
// garbage collector (at GOGC=25, minikubelet serve's default). Pods are
// added one after another over one second, as pods that started at
// different times, and settle for two seconds; each iteration is then one
// second of steady state (run with -benchtime 10x or more).
//
// Variants, measured in the same run (-count interleaves them):
//
//	before        the previous handlers (legacy_bench_test.go), each
//	              worker on its own phase: the code before this change,
//	              except that the worker runs each probe on a goroutine
//	              of its own (tryProbe), which the old worker did not
//	              (about a microsecond a probe; its memory numbers are
//	              not the old worker's)
//	own-phase     the current handlers, each worker on its own phase
//	slots-legacy  the previous handlers on the current slots
//	after         the current code: current handlers on 250 ms slots
//	slot-100ms    the current handlers on 100 ms slots
//	slot-1s       the current handlers on 1 s slots (every probe of a
//	              period in one batch)
//
// Metrics: cpu-µs/probe (CPU time per probe run), %core (CPU time over
// wall time), allocs/probe, B/probe, probes/s; at the end of the window
// heap-KiB and stack-KiB (runtime.MemStats), rss-MiB and threads
// (/proc/self/status; they only grow within a process, so run one variant
// per process to compare them).
//
//	go test ./probes -run '^$' -bench Steady -benchtime 10x -count 3
func BenchmarkManager_Steady(b *testing.B) {
	const pods = 100
	servers := startBenchServers(b, pods)
	defer debug.SetGCPercent(debug.SetGCPercent(25))
	variants := []struct {
		name   string
		slot   time.Duration
		legacy bool
	}{
		{name: "before", slot: 0, legacy: true},
		{name: "own-phase", slot: 0},
		{name: "slots-legacy", slot: scheduleSlot, legacy: true},
		{name: "after", slot: scheduleSlot},
		{name: "slot-100ms", slot: 100 * time.Millisecond},
		{name: "slot-1s", slot: time.Second},
	}
	for _, v := range variants {
		b.Run(v.name, func(b *testing.B) {
			m := New(Config{Rand: func() float64 { return 0 }})
			defer m.Close()
			go func() { // the agent drains updates; a full channel stalls workers
				for range m.Updates() {
				}
			}()
			m.slot = v.slot // (offset 0: Rand is 0)
			if v.legacy {
				m.prober = newLegacyProber()
			}
			benchSteady(b, m, servers)
		})
	}
}

// benchSteady starts the pods on m, lets them settle and measures b.N
// seconds.
func benchSteady(b *testing.B, m *Manager, servers []benchPod) {
	started := time.Now().Add(-time.Hour)
	uids := make([]types.UID, len(servers))
	for i, s := range servers {
		probe := func(h v1.ProbeHandler) *v1.Probe {
			return &v1.Probe{ProbeHandler: h, PeriodSeconds: 1, TimeoutSeconds: 1, SuccessThreshold: 1, FailureThreshold: 3}
		}
		pod := &v1.Pod{Spec: v1.PodSpec{Containers: []v1.Container{{
			Name: "app",
			LivenessProbe: probe(v1.ProbeHandler{HTTPGet: &v1.HTTPGetAction{
				Path: "/healthz", Port: intstr.FromInt32(int32(s.httpPort))}}),
			ReadinessProbe: probe(v1.ProbeHandler{TCPSocket: &v1.TCPSocketAction{
				Port: intstr.FromInt32(int32(s.tcpPort))}}),
		}}}}
		pod.Name, pod.Namespace = fmt.Sprintf("pod-%d", i), "bench"
		pod.UID = types.UID(pod.Name)
		uids[i] = pod.UID
		m.UpdatePod(pod, s.ip, []ContainerState{{Name: "app", ID: "c-" + pod.Name, Running: true, StartedAt: started}})
		time.Sleep(time.Second / time.Duration(len(servers)))
	}
	time.Sleep(2 * time.Second)
	for _, uid := range uids {
		if !m.Ready(uid, "app") {
			st := m.PodStatus(uid)
			b.Fatalf("pod %s not Ready after 3 s: %+v", uid, st)
		}
	}

	runtime.GC()
	var ms0, ms1 runtime.MemStats
	runtime.ReadMemStats(&ms0)
	runs0, cpu0, t0 := m.totalRuns(), cpuTime(b), time.Now()
	b.ResetTimer()
	for range b.N {
		time.Sleep(time.Second)
	}
	b.StopTimer()
	runs, cpu, wall := m.totalRuns()-runs0, cpuTime(b)-cpu0, time.Since(t0)
	runtime.ReadMemStats(&ms1)
	if runs == 0 {
		b.Fatal("no probe ran")
	}
	if errs := probeErrors(m); errs != "" {
		b.Fatalf("probes failed during the window: %s", errs)
	}
	b.ReportMetric(float64(cpu.Microseconds())/float64(runs), "cpu-µs/probe")
	b.ReportMetric(100*cpu.Seconds()/wall.Seconds(), "%core")
	b.ReportMetric(float64(ms1.Mallocs-ms0.Mallocs)/float64(runs), "allocs/probe")
	b.ReportMetric(float64(ms1.TotalAlloc-ms0.TotalAlloc)/float64(runs), "B/probe")
	b.ReportMetric(float64(runs)/wall.Seconds(), "probes/s")
	b.ReportMetric(float64(ms1.StackInuse)/1024, "stack-KiB")
	b.ReportMetric(float64(ms1.HeapInuse)/1024, "heap-KiB")
	b.ReportMetric(procStatus(b, "VmRSS")/1024, "rss-MiB")
	b.ReportMetric(procStatus(b, "Threads"), "threads")
	b.ReportMetric(0, "ns/op")
}

// procStatus reads a number from /proc/self/status (VmRSS in KiB,
// Threads).
func procStatus(b *testing.B, field string) float64 {
	data, err := os.ReadFile("/proc/self/status")
	if err != nil {
		b.Fatal(err)
	}
	for _, l := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(l, field+":"); ok {
			f := strings.Fields(v)
			n, err := strconv.ParseFloat(f[0], 64)
			if err != nil {
				b.Fatalf("/proc/self/status: %q: %v", l, err)
			}
			return n
		}
	}
	b.Fatalf("/proc/self/status has no %s", field)
	return 0
}

// probeErrors describes the workers whose last run failed or errored.
func probeErrors(m *Manager) string {
	m.mu.Lock()
	defer m.mu.Unlock()
	var bad []string
	for _, pp := range m.pods {
		for _, cp := range pp.containers {
			for _, w := range cp.workers {
				if w != nil && (w.st.Errors > 0 || w.st.Failures > 0) {
					bad = append(bad, fmt.Sprintf("%s %s: %d failures, %d errors, last %q %q",
						pp.key, w.kind, w.st.Failures, w.st.Errors, w.st.LastMessage, w.st.LastError))
				}
			}
		}
	}
	if len(bad) > 3 {
		bad = append(bad[:3], fmt.Sprintf("and %d more", len(bad)-3))
	}
	return strings.Join(bad, "; ")
}
