package main

// Scenario 6, run-launch (issue #27): the headline command, `minikubelet
// run pod.yaml` in the foreground, from its process launch until its
// container runs in the runtime, against the floor run as a process of its
// own (test/bench/rawrun: the same Version handshake and the floor's CRI
// calls for the same pod), --reps interleaved pairs, the image present.
// Both are observed the same way, as the manifest scenarios observe the
// agents: the bench lists the runtime's running containers every
// --manifest-poll. Each side is then stopped as a user stops it, SIGTERM,
// and waited for until its process exited and the runtime lists none of
// its pod's objects, so that nothing is left for the next repetition.
//
// Each process's stdout lines are timed as they arrive (both write them
// unbuffered): minikubelet run's "runtime" line and rawrun's "handshake"
// line end the CRI handshake, run's "network ready" line its node setup
// (cgroups, IP repair, pod network), after which its agent starts.

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// launchNS is the namespace of the run-launch pods (both sides).
const launchNS = "bench-run"

// launchStep names a stdout line of a launched process.
type launchStep string

const (
	stepHandshake launchStep = "handshake" // the CRI Version handshake done
	stepNode      launchStep = "node"      // minikubelet run: node ready, the agent starts
)

// parseLaunchStep finds the step in one stdout line of minikubelet run
// ("[  0.012s] node                 runtime        3ms      containerd …")
// or of rawrun ("handshake 2.1ms").
func parseLaunchStep(line string) (launchStep, bool) {
	if _, rest, ok := strings.Cut(line, "] "); ok && strings.HasPrefix(line, "[") {
		f := strings.Fields(rest)
		switch {
		case len(f) >= 2 && f[0] == "node" && f[1] == "runtime":
			return stepHandshake, true
		case len(f) >= 3 && f[0] == "node" && f[1] == "network" && f[2] == "ready":
			return stepNode, true
		}
		return "", false
	}
	if strings.HasPrefix(line, "handshake ") {
		return stepHandshake, true
	}
	return "", false
}

// launchTimes is what one launch measured.
type launchTimes struct {
	running time.Duration // launch → its container seen running
	steps   map[launchStep]time.Duration
	stopped time.Duration // signal → exited and its pod gone
	cpu     time.Duration // the process's user+system time, launch to exit
}

// launchRun collects one side's repetitions.
type launchRun struct {
	running, handshake, node, stopped, cpu []time.Duration
}

func (r *launchRun) add(t launchTimes) {
	r.running = append(r.running, t.running)
	r.stopped = append(r.stopped, t.stopped)
	r.cpu = append(r.cpu, t.cpu)
	if d, ok := t.steps[stepHandshake]; ok {
		r.handshake = append(r.handshake, d)
	}
	if d, ok := t.steps[stepNode]; ok {
		r.node = append(r.node, d)
	}
}

// launch starts argv, waits until the pod's container runs, sends SIGTERM
// and waits until the process exited and the runtime lists nothing of the
// pod. Its stderr (and unrecognised stdout) go to logPath.
func (b *bench) launch(ctx context.Context, argv []string, pod, logPath string) (launchTimes, error) {
	t := launchTimes{steps: map[launchStep]time.Duration{}}
	logf, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return t, err
	}
	defer logf.Close()
	fmt.Fprintf(logf, "=== %s\n", strings.Join(argv, " "))
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stderr = logf
	out, err := cmd.StdoutPipe()
	if err != nil {
		return t, err
	}
	// A process outliving a killed bench would keep its pod.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM}
	var mu sync.Mutex
	t0 := time.Now()
	if err := cmd.Start(); err != nil {
		return t, fmt.Errorf("start %s: %w", argv[0], err)
	}
	read := make(chan struct{})
	go func() {
		defer close(read)
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			now := time.Since(t0)
			line := sc.Text()
			if s, ok := parseLaunchStep(line); ok {
				mu.Lock()
				if _, seen := t.steps[s]; !seen {
					t.steps[s] = now
				}
				mu.Unlock()
			}
			fmt.Fprintln(logf, line)
		}
	}()
	exited := make(chan error, 1)
	go func() {
		<-read // Wait closes the pipe: read it to the end first
		exited <- cmd.Wait()
	}()
	running, werr := b.waitLaunched(ctx, t0, pod, exited)
	// Stop it whatever happened, and wait for the pod to be gone.
	ts := time.Now()
	_ = cmd.Process.Signal(syscall.SIGTERM)
	var exitErr error
	if werr == nil || !errors.Is(werr, errExitedEarly) {
		select {
		case exitErr = <-exited:
		case <-time.After(2 * time.Minute):
			_ = cmd.Process.Kill()
			exitErr = errors.Join(errors.New("did not exit within 2m of SIGTERM (killed)"), <-exited)
		}
	}
	gerr := b.waitLaunchGone(ctx, pod)
	t.stopped = time.Since(ts)
	if cmd.ProcessState != nil {
		t.cpu = cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
	}
	mu.Lock()
	defer mu.Unlock()
	t.running = running
	if werr != nil {
		return t, fmt.Errorf("%s: %w (log: %s, ending:\n%s)", filepath.Base(argv[0]), werr, logPath, logTail(logPath, 15))
	}
	if exitErr != nil {
		return t, fmt.Errorf("%s after SIGTERM: %w (log: %s, ending:\n%s)", filepath.Base(argv[0]), exitErr, logPath, logTail(logPath, 15))
	}
	if gerr != nil {
		return t, fmt.Errorf("%s's pod %s: %w", filepath.Base(argv[0]), pod, gerr)
	}
	return t, nil
}

// errExitedEarly: the launched process ended before its pod ran.
var errExitedEarly = errors.New("exited before its pod's container ran")

// launchSelector selects the run-launch pods' objects in the runtime.
func launchSelector() map[string]string { return map[string]string{labelPodNS: launchNS} }

// waitLaunched polls the runtime every --manifest-poll until the pod has a
// running container, and returns the time since t0.
func (b *bench) waitLaunched(ctx context.Context, t0 time.Time, pod string, exited chan error) (time.Duration, error) {
	wctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	defer cancel()
	filter := &runtimeapi.ContainerFilter{
		State:         &runtimeapi.ContainerStateValue{State: runtimeapi.ContainerState_CONTAINER_RUNNING},
		LabelSelector: launchSelector(),
	}
	want := map[string]bool{pod: true}
	for {
		cs, err := b.rt.ListContainers(wctx, filter)
		now := time.Since(t0)
		if err != nil {
			return 0, err
		}
		for _, c := range cs {
			if _, ok := podOf(c.Labels[labelPodName], want); ok {
				return now, nil
			}
		}
		select {
		case err := <-exited:
			exited <- err // for the caller
			return 0, fmt.Errorf("%w: %v", errExitedEarly, err)
		case <-wctx.Done():
			return 0, fmt.Errorf("its pod's container not running: %w", wctx.Err())
		case <-time.After(b.o.manifestPoll):
		}
	}
}

// waitLaunchGone polls the runtime until it lists no sandbox or container
// of the pod (a minute at most).
func (b *bench) waitLaunchGone(ctx context.Context, pod string) error {
	wctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	want := map[string]bool{pod: true}
	for {
		sbs, err := b.rt.ListPodSandbox(wctx, &runtimeapi.PodSandboxFilter{LabelSelector: launchSelector()})
		if err != nil {
			return err
		}
		cs, err := b.rt.ListContainers(wctx, &runtimeapi.ContainerFilter{LabelSelector: launchSelector()})
		if err != nil {
			return err
		}
		left := 0
		for _, sb := range sbs {
			if _, ok := podOf(sb.GetMetadata().GetName(), want); ok {
				left++
			}
		}
		for _, c := range cs {
			if _, ok := podOf(c.Labels[labelPodName], want); ok {
				left++
			}
		}
		if left == 0 {
			return nil
		}
		select {
		case <-wctx.Done():
			return fmt.Errorf("the runtime still lists %d of its objects: %w", left, wctx.Err())
		case <-time.After(b.o.criPoll):
		}
	}
}

// rawrunArgv is the floor's command line for one pod.
func (b *bench) rawrunArgv(pod string) []string {
	dir := filepath.Join(b.work, "launch")
	return []string{b.o.rawrun,
		"--runtime-endpoint", b.o.endpoint,
		"--image", b.image,
		"--name", pod,
		"--namespace", launchNS,
		"--log-dir", filepath.Join(dir, "raw-logs"),
		"--file-dir", filepath.Join(dir, "raw-files"),
		fmt.Sprintf("--cgroups-per-qos=%t", b.o.cgroupsPerQOS),
		"--args", strings.Join(testserverArgs, " "),
	}
}

// runArgv is `minikubelet run` of one pod: the daemon's node flags, a
// root and log directory of its own, and a socket nobody serves (given
// --runtime-endpoint, run stays in the foreground anyway).
func (b *bench) runArgv(pod string) ([]string, error) {
	dir := filepath.Join(b.work, "launch")
	p := podSpec(pod, b.image, kindStart, b.o.grace)
	p.Namespace = launchNS
	file := filepath.Join(dir, pod+".json")
	if err := writeJSON(file, p); err != nil {
		return nil, err
	}
	argv := append([]string{b.o.bin, "run", "--foreground"}, b.nodeArgs...)
	argv = append(argv,
		"--root-dir", filepath.Join(dir, "root"),
		"--pod-log-dir", filepath.Join(dir, "pod-logs"),
		"--socket", filepath.Join(dir, "none.sock"),
		file)
	return argv, nil
}

// launchScenario is scenario 6.
func (b *bench) launchScenario(ctx context.Context) error {
	if b.o.rawrun == "" {
		progress("run-launch: no --rawrun binary (hack/bench.sh builds test/bench/rawrun): skipped")
		return nil
	}
	dir := filepath.Join(b.work, "launch")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	logPath := filepath.Join(dir, "launch.log")
	one := func(side string, rep int, argv func(string) ([]string, error)) (launchTimes, error) {
		pod := b.name("run-" + side)
		a, err := argv(pod)
		if err != nil {
			return launchTimes{}, err
		}
		t, err := b.launch(ctx, a, pod, logPath)
		if err != nil {
			return t, fmt.Errorf("run-launch %s #%d: %w", side, rep, err)
		}
		return t, nil
	}
	raw := func(pod string) ([]string, error) { return b.rawrunArgv(pod), nil }
	progress("run-launch: warm-up, one launch of each (not measured; log %s)", logPath)
	if _, err := one("raw", 0, raw); err != nil {
		return err
	}
	if _, err := one("mkl", 0, b.runArgv); err != nil {
		return err
	}
	var r, m launchRun
	for i := range b.o.reps {
		rt, err := one("raw", i+1, raw)
		if err != nil {
			return err
		}
		mt, err := one("mkl", i+1, b.runArgv)
		if err != nil {
			return err
		}
		r.add(rt)
		m.add(mt)
		progress("run-launch %d/%d: launch → running: rawrun %s, minikubelet run %s (handshake %s, %s; node ready %s); stopped and gone %s, %s",
			i+1, b.o.reps, rt.running.Round(100*time.Microsecond), mt.running.Round(100*time.Microsecond),
			rt.steps[stepHandshake].Round(100*time.Microsecond), mt.steps[stepHandshake].Round(100*time.Microsecond),
			mt.steps[stepNode].Round(100*time.Microsecond), rt.stopped.Round(time.Millisecond), mt.stopped.Round(time.Millisecond))
	}
	b.rep.Rows = append(b.rep.Rows, launchRows(&r, &m)...)
	return nil
}

// launchRows reports scenario 6.
func launchRows(raw, mkl *launchRun) []Row {
	sc := "6 run launch"
	row := func(metric string, r, m []time.Duration) Row {
		return newRow(sc, metric, "ms", summarize(ms(r)), summarize(ms(m)))
	}
	total := row("`minikubelet run pod.yaml` launch → container running (raw: rawrun, the floor as a process)", raw.running, mkl.running)
	return []Row{
		total.target("≤ 1.10 × raw", total.Ratio > 0 && total.Ratio <= 1.10),
		row("… launch → CRI handshake done (Version)", raw.handshake, mkl.handshake),
		row("… launch → node ready, the agent starts (cgroups, IP repair, pod network; minikubelet only)", nil, mkl.node),
		row("SIGTERM → process exited, the runtime lists none of the pod's objects", raw.stopped, mkl.stopped),
		row("process CPU, launch → exit (user + system)", raw.cpu, mkl.cpu),
	}
}

// writeJSON writes v as JSON into file.
func writeJSON(file string, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return os.WriteFile(file, b, 0o644)
}

// logTail is the last n lines of the file at path (hack/bench.sh removes
// the work dir, and the log with it, when the bench ends).
func logTail(path string, n int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	return lastLines(string(b), n)
}

// lastLines is the last n lines of s.
func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}
