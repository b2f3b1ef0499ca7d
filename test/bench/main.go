// Over 600 lines: the benchmark's flags, setup and the daemon-route scenarios in
// order; the manifest route, the kubelet, the floor and the report are in
// files of their own.

// Command bench measures minikubelet against the floor: a raw CRI client
// making exactly the CRI calls the same pods need, measured in the same run,
// interleaved (raw, minikubelet, raw, minikubelet…), against the same
// private containerd, CNI network and image. hack/bench.sh (`make bench`)
// sets everything up and runs it; see docs/performance.md, whose results
// table --update-docs rewrites.
//
// Scenarios (--scenarios, comma-separated; default all):
//
//	start    one-container pod, image present, --reps times sequentially:
//	         submit → container started
//	ready    the same with a TCP readiness probe (initialDelaySeconds 0) on
//	         a server that listens at once: submit → Ready
//	density  --pods pods (no probe, as the floor's) submitted at once: time
//	         until all Running, pods/s, per-pod p50/p99; median of --rounds
//	         (the floor's round first in rounds 1, 3, …, last in rounds
//	         2, 4, …: floorFirst)
//	steady   the agent's RSS and CPU (from /proc) over --steady-duration with
//	         --pods running pods (HTTP liveness and TCP readiness probes every
//	         second; their start is reported too), and with 0 pods; then the CPU of a floor prober making
//	         the same probe connections with no agent (probefloor.go)
//	delete   --pods pods deleted at once with grace period 1 s: time until
//	         every CRI object and IP reservation is gone
//
// and scenario 5, the manifest route (manifest.go), on --manifest-pods
// pods, for each agent of --agents (minikubelet's --manifest-dir, and the
// kubelet of --kubelet standalone with staticPodPath, kubelet.go):
//
//	manifest-start    one pod's manifest written → its container running in
//	                  the runtime, --reps times
//	manifest-density  the pods' manifests written at once → all running
//	manifest-delete   the same pods' manifests removed → down, then gone
//	manifest-steady   the agent's RSS and CPU with 0 pods and with the pods,
//	                  two probes each; the floor prober beside it
//
// Scenario 6, run-launch (launch.go): `minikubelet run pod.yaml` in the
// foreground, from its launch until its container runs in the runtime,
// against the floor as a process (--rawrun, test/bench/rawrun), --reps
// interleaved pairs; each stopped by SIGTERM until its pod is gone.
//
// Scenario 7, scale (scale.go; not in the default set: --scale or
// --scenarios …,scale): the manifest route's density and steady state at
// each pod count of --scale (default 10,50,110,250), for the floor,
// minikubelet and the kubelet; its plot is written beside --md, and with
// --update-docs beside --perf-doc (docs/performance-scale.svg).
//
// minikubelet's times are what a user observes through the daemon's API:
// from just before the POST to the first event of the API's pod watch
// (GET pods?watch=true, opened before the POST) that shows the state. With
// --observe poll, to the first GET (or list) that shows it instead, polled
// every --poll (single pods) or --list-poll (100 pods): the poll interval
// then bounds the resolution, and the polling loads both sides.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/watch"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/minikubelet/minikubelet/agent/api"
	"github.com/minikubelet/minikubelet/cgroups"
	"github.com/minikubelet/minikubelet/cni"
	"github.com/minikubelet/minikubelet/cri"
)

// options are the command line.
type options struct {
	endpoint       string
	bin            string
	registry       string
	podCIDR        string
	bridge         string
	cniConfDir     string
	workDir        string
	scenarios      string
	reps           int
	pods           int
	rounds         int
	steadyDuration time.Duration
	settle         time.Duration
	observe        string
	poll           time.Duration
	listPoll       time.Duration
	criPoll        time.Duration
	grace          int64
	jsonOut        string
	mdOut          string
	commit         string
	historyDir     string
	perfDoc        string
	updateDoc      bool
	profileDir     string
	cgroupsPerQOS  bool
	timeout        time.Duration
	// The manifest route (scenario 5).
	kubelet      string
	agents       string
	manifestPods int
	manifestPoll time.Duration
	// rawrun is the floor's binary of the run-launch scenario.
	rawrun string
	// scale is --scale; scaleCounts its counts, in increasing order.
	scale       string
	scaleCounts []int
	// scaleRounds is --scale-rounds.
	scaleRounds int
}

func parseFlags(args []string) (options, error) {
	var o options
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	fs.StringVar(&o.endpoint, "runtime-endpoint", "", "CRI endpoint of the private containerd (required; hack/bench.sh starts one)")
	fs.StringVar(&o.bin, "minikubelet", "bin/minikubelet", "the minikubelet binary to benchmark")
	fs.StringVar(&o.registry, "registry", "127.0.0.1:5000", "local registry holding minikubelet/testserver:v1")
	fs.StringVar(&o.podCIDR, "pod-cidr", "10.89.250.0/24", "pod CIDR of the benchmark's network (a /24 of 10.89.0.0/16)")
	fs.StringVar(&o.bridge, "cni-bridge", "mklbench0", "bridge of the benchmark's network")
	fs.StringVar(&o.cniConfDir, "cni-conf-dir", "", "the private containerd's CNI conf dir (required)")
	fs.StringVar(&o.workDir, "work-dir", "", "scratch directory for the daemon's and the floor's state (required)")
	fs.StringVar(&o.scenarios, "scenarios", strings.Join(defaultScenarios, ","), "scenarios to run, comma-separated (scale, the curve, only when named or with --scale)")
	fs.IntVar(&o.reps, "reps", 20, "repetitions of the sequential scenarios (start, ready), per side")
	fs.IntVar(&o.pods, "pods", 100, "pods of the density, steady and delete scenarios")
	fs.IntVar(&o.rounds, "rounds", 3, "rounds of the density and delete scenarios (the steady scenario runs in the last)")
	fs.DurationVar(&o.steadyDuration, "steady-duration", 60*time.Second, "measurement window of the steady scenario")
	// 15 s: the daemon drops the pages a burst of pods mapped after ten
	// calm seconds (cmd/minikubelet/serve_procs.go); its steady state
	// starts after that. Every column gets the same wait.
	fs.DurationVar(&o.settle, "settle", 15*time.Second, "wait after the pods are Ready before the steady window opens")
	fs.StringVar(&o.observe, "observe", "watch", "how the minikubelet side sees pods change: watch (the API's pod watch) or poll (GetPod every --poll, ListPods every --list-poll)")
	fs.DurationVar(&o.poll, "poll", 2*time.Millisecond, "with --observe poll: GetPod poll interval for single pods (resolution of start and ready)")
	fs.DurationVar(&o.listPoll, "list-poll", 100*time.Millisecond, "with --observe poll: ListPods poll interval for many pods (resolution of density; each poll serializes every pod, so polling faster loads the daemon being measured)")
	fs.DurationVar(&o.criPoll, "cri-poll", 20*time.Millisecond, "CRI and host-local poll interval of the delete scenario (its resolution, on both sides)")
	fs.Int64Var(&o.grace, "grace", 1, "grace period of the delete scenario, seconds")
	fs.StringVar(&o.jsonOut, "json", "bench-results.json", "write the results as JSON here")
	fs.StringVar(&o.mdOut, "md", "bench-results.md", "write the results as a Markdown table here")
	fs.StringVar(&o.commit, "commit", "", "the minikubelet commit measured, recorded in the JSON")
	fs.StringVar(&o.historyDir, "history-dir", "docs/bench", "with --update-docs, also keep the JSON here as <date>-<commit>.json, for hack/bench-compare")
	fs.StringVar(&o.perfDoc, "perf-doc", "docs/performance.md", "the document whose results table --update-docs rewrites")
	fs.BoolVar(&o.updateDoc, "update-docs", false, "replace the --perf-doc section between <!-- BEGIN PERFORMANCE --> and <!-- END PERFORMANCE --> with the results")
	// The names of the days the table lived in the README, kept so that old
	// command lines still work; they set the same options.
	fs.StringVar(&o.perfDoc, "readme", "docs/performance.md", "old name of --perf-doc")
	fs.BoolVar(&o.updateDoc, "update-readme", false, "old name of --update-docs")
	fs.StringVar(&o.profileDir, "profile-dir", "", "also capture the daemon's CPU profiles (density, steady) and heap profile (steady) into this directory")
	fs.BoolVar(&o.cgroupsPerQOS, "cgroups-per-qos", true, "pods in the kubepods hierarchy (both sides), as the daemon's default")
	// A full run with the scale curve took 59 minutes (2026-12-01, early)
	// and ran into the hour the same day when the machine was slower,
	// losing every figure: twice that.
	fs.DurationVar(&o.timeout, "timeout", 2*time.Hour, "give up after this long (the whole run)")
	fs.StringVar(&o.kubelet, "kubelet", "", "the kubelet binary of the manifest scenarios' kubelet column (hack/bench.sh: hack/conformance/build.sh kubelet); empty: no kubelet column")
	fs.StringVar(&o.agents, "agents", agentMinikubelet+","+agentKubelet, "agents of the manifest scenarios, comma-separated: minikubelet, kubelet")
	fs.IntVar(&o.manifestPods, "manifest-pods", 110, "pods of the manifest density, delete and steady scenarios (the kubelet's default maxPods; above it the kubelet's maxPods is raised to match)")
	fs.DurationVar(&o.manifestPoll, "manifest-poll", 5*time.Millisecond, "how often the manifest scenarios list the runtime's running containers (their resolution, both agents)")
	fs.IntVar(&o.scaleRounds, "scale-rounds", 3, "density rounds of the scale curve at each count, the floor's and minikubelet's interleaved, ABBA (their median; the kubelet's column runs one)")
	fs.StringVar(&o.scale, "scale", "", "also run the scale curve (scenario scale) at these pod counts, comma-separated, e.g. "+defaultScale+" (the default when scale is named in --scenarios); about an hour with the kubelet on a 2-core VM, see docs/performance.md")
	fs.StringVar(&o.rawrun, "rawrun", "", "the floor of the run-launch scenario as a binary (test/bench/rawrun; hack/bench.sh builds it); empty: run-launch is skipped")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	var missing []string
	for name, v := range map[string]string{"--runtime-endpoint": o.endpoint, "--cni-conf-dir": o.cniConfDir, "--work-dir": o.workDir} {
		if v == "" {
			missing = append(missing, name)
		}
	}
	if len(missing) > 0 {
		slices.Sort(missing)
		return o, fmt.Errorf("missing %s: run the benchmark with `make bench` (hack/bench.sh), which starts a private containerd and passes them", strings.Join(missing, ", "))
	}
	for _, s := range strings.Split(o.scenarios, ",") {
		if !slices.Contains(allScenarios, s) {
			return o, fmt.Errorf("--scenarios: unknown scenario %q (want some of %s)", s, strings.Join(allScenarios, ","))
		}
	}
	if o.scale != "" && !slices.Contains(strings.Split(o.scenarios, ","), "scale") {
		o.scenarios += ",scale"
	}
	if slices.Contains(strings.Split(o.scenarios, ","), "scale") {
		spec := o.scale
		if spec == "" {
			spec = defaultScale
		}
		var err error
		if o.scaleCounts, err = parseScale(spec); err != nil {
			return o, err
		}
	}
	if o.observe != "watch" && o.observe != "poll" {
		return o, fmt.Errorf("--observe must be watch or poll, not %q", o.observe)
	}
	if o.reps < 1 || o.pods < 1 || o.rounds < 1 || o.manifestPods < 1 || o.scaleRounds < 1 {
		return o, errors.New("--reps, --pods, --manifest-pods, --rounds and --scale-rounds must be at least 1")
	}
	for _, a := range strings.Split(o.agents, ",") {
		if a != agentMinikubelet && a != agentKubelet {
			return o, fmt.Errorf("--agents: unknown agent %q (want minikubelet, kubelet or both)", a)
		}
	}
	if sc := strings.Split(o.scenarios, ","); !slices.ContainsFunc(sc, func(s string) bool {
		return s == "density" || s == "delete" || s == "manifest-density" || s == "manifest-delete"
	}) {
		o.rounds = 1 // the steady scenario alone
	}
	return o, nil
}

var allScenarios = append(slices.Clone(defaultScenarios), "scale")

// defaultScenarios are what a run without --scenarios measures: all but
// the scale curve, which takes about as long as all of them together.
var defaultScenarios = []string{"start", "ready", "run-launch", "density", "steady", "delete", "manifest-start", "manifest-density", "manifest-delete", "manifest-steady"}

func main() {
	if len(os.Args) > 1 && os.Args[1] == probeFloorCommand {
		if err := runProbeFloor(os.Args[2:]); err != nil {
			fmt.Fprintln(os.Stderr, "bench:", err)
			os.Exit(1)
		}
		return
	}
	o, err := parseFlags(os.Args[1:])
	if errors.Is(err, flag.ErrHelp) {
		os.Exit(0)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	ctx, cancel := context.WithTimeoutCause(ctx, o.timeout, errRunTimeout)
	defer cancel()
	if err := run(ctx, o); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		if errors.Is(err, context.DeadlineExceeded) && errors.Is(context.Cause(ctx), errRunTimeout) {
			fmt.Fprintf(os.Stderr, "bench: the run's --timeout of %s ran out, which ended the step above: give it more (--timeout=3h; with make bench, add it to BENCH_FLAGS), or run fewer scenarios (--scenarios)\n", o.timeout)
		}
		os.Exit(1)
	}
}

// errRunTimeout is the cause of the run's context when --timeout ran out.
var errRunTimeout = errors.New("the bench's --timeout ran out")

// progress prints one line of progress.
func progress(format string, args ...any) {
	fmt.Printf("[bench %s] %s\n", time.Now().Format("15:04:05"), fmt.Sprintf(format, args...))
}

// bench holds what every scenario uses.
type bench struct {
	o     options
	rt    *cri.Client
	raw   *rawClient
	d     *daemon
	net   cni.Config
	image string
	rep   *Report
	obs   observe
	// seq numbers pod names.
	seq int
	// work is the absolute --work-dir; nodeArgs the node flags the daemon
	// runs with (minikubelet run of run-launch gets the same).
	work     string
	nodeArgs []string
	// scalePts are the scale curve's points while it runs (scale.go), for
	// a run that ends early (writePartial); nil before and after.
	scalePts []*ScalePoint
}

func (b *bench) name(prefix string) string {
	b.seq++
	return fmt.Sprintf("%s-%d", prefix, b.seq)
}

func (b *bench) want(s string) bool { return slices.Contains(strings.Split(b.o.scenarios, ","), s) }

func run(ctx context.Context, o options) (err error) {
	began := time.Now()
	work, err := filepath.Abs(o.workDir)
	if err != nil {
		return err
	}
	// Generous per-call timeouts: a loaded machine must slow the floor
	// down, not fail it.
	rt, err := cri.Dial(ctx, o.endpoint, cri.Options{Timeout: 3 * time.Minute})
	if err != nil {
		return err
	}
	defer rt.Close()
	b := &bench{o: o, rt: rt, image: o.registry + "/minikubelet/testserver:v1",
		obs: observe{watch: o.observe == "watch", poll: o.poll, listPoll: o.listPoll}}
	b.rep = &Report{
		Machine: detectMachine(rt.RuntimeName() + " " + rt.RuntimeVersion()),
		Settings: map[string]string{
			"reps": strconv.Itoa(o.reps), "pods": strconv.Itoa(o.pods), "steady window": o.steadyDuration.String(), "settle": o.settle.String(), "density and delete rounds": strconv.Itoa(o.rounds) + " (the floor and minikubelet in ABBA order)",
			"CRI poll": o.criPoll.String(), "delete grace": fmt.Sprintf("%ds", o.grace), "manifest start period": startPeriod.String(),
		},
	}
	b.rep.Machine.Commit = o.commit
	if o.observe == "watch" {
		b.rep.Settings["minikubelet observed by"] = "the API's pod watch"
	} else {
		b.rep.Settings["minikubelet observed by"] = "polling"
		b.rep.Settings["GetPod poll"], b.rep.Settings["ListPods poll"] = o.poll.String(), o.listPoll.String()
	}
	if o.profileDir != "" {
		b.rep.Settings["daemon profiling"] = "on (--enable-profiling, heap sampling): memory is not comparable"
	}
	// The network both sides use: the daemon would install the same
	// conflist; installing it first lets the floor run before the daemon
	// starts and keeps the daemon from changing it.
	b.net = cni.Config{PodCIDR: o.podCIDR, Bridge: o.bridge, ConfDir: o.cniConfDir, DataDir: filepath.Join(work, "cni-ipam")}.WithDefaults()
	if _, _, err := cni.Install(ctx, b.net); err != nil {
		return err
	}
	wctx, wcancel := context.WithTimeout(ctx, time.Minute)
	err = cni.WaitReady(wctx, b.net, func(ctx context.Context) (bool, string, string, error) {
		st, err := rt.Status(ctx, false)
		if err != nil {
			return false, "", "", err
		}
		for _, c := range st.GetStatus().GetConditions() {
			if c.Type == "NetworkReady" {
				return c.Status, c.Reason, c.Message, nil
			}
		}
		return false, "NoNetworkCondition", "", nil
	})
	wcancel()
	if err != nil {
		return err
	}
	// The image is present for both sides: pulled once, before anything
	// is measured.
	progress("pulling %s into the private containerd (not measured)", b.image)
	if _, err := rt.PullImage(ctx, &runtimeapi.ImageSpec{Image: b.image}, nil, nil); err != nil {
		return fmt.Errorf("pull %s: %w (is the local registry up? hack/bench.sh starts it)", b.image, err)
	}
	var cg cgroups.Manager
	if o.cgroupsPerQOS {
		if cg, err = cgroups.New(cgroups.Config{}); err != nil {
			return err
		}
	}
	b.raw = &rawClient{RT: rt, Cgroups: cg, LogDir: filepath.Join(work, "raw-logs"), FileDir: filepath.Join(work, "raw-files"), Image: b.image, Args: testserverArgs}

	// The node flags, which `minikubelet run` (run-launch) takes too; the
	// daemon's own flags follow.
	nodeArgs := []string{
		"--runtime-endpoint", o.endpoint,
		"--node-name", "bench-node",
		"--pod-cidr", o.podCIDR,
		"--cni-conf-dir", o.cniConfDir,
		"--cni-bridge", o.bridge,
		"--cni-data-dir", b.net.DataDir,
		"--pod-masquerade=false",
		"--cgroups-per-qos=" + strconv.FormatBool(o.cgroupsPerQOS),
	}
	// Above the kubelet's 110 the daemon's pods capacity is raised to the
	// bench's largest count, as the kubelet's maxPods is (kubelet.go).
	if most := slices.Max(append([]int{o.manifestPods}, o.scaleCounts...)); most > 110 {
		nodeArgs = append(nodeArgs, "--max-pods", strconv.Itoa(most))
	}
	serveArgs := []string{
		// Disk thresholds the host's build caches do not reach, as the
		// e2e harness's (serveHostFlags): the bench measures the agent,
		// and a DiskPressure on a full CI disk would reject every pod.
		// The eviction checks still run (and are measured) each period.
		"--eviction-hard", "memory.available<100Mi,nodefs.available<1%,imagefs.available<1%,nodefs.inodesFree<1%",
		"--image-gc-high-threshold", "100", "--image-gc-low-threshold", "99",
	}
	b.work, b.nodeArgs = work, nodeArgs
	progress("starting %s serve (log %s)", o.bin, filepath.Join(work, "daemon", "minikubelet.log"))
	b.d, err = startDaemon(ctx, o.bin, filepath.Join(work, "daemon"), append(slices.Clone(nodeArgs), serveArgs...), o.profileDir != "")
	if err != nil {
		return err
	}
	defer b.d.stop()
	defer b.cleanup()
	// A run that ends early (its --timeout, a signal, a failed step) keeps
	// what it measured, before the cleanup, which can take minutes. One
	// that ran every scenario is whole even if writing it failed.
	finished := false
	defer func() {
		if err != nil && !finished {
			b.rep.Machine.Duration = time.Since(began).Seconds()
			b.writePartial(err)
		}
	}()

	if err := b.warmUp(ctx); err != nil {
		return fmt.Errorf("warm-up: %w", err)
	}
	if b.want("steady") {
		if err := b.steadyIdle(ctx); err != nil {
			return err
		}
	}
	if b.want("start") {
		if err := b.startScenario(ctx, false); err != nil {
			return err
		}
	}
	if b.want("ready") {
		if err := b.startScenario(ctx, true); err != nil {
			return err
		}
	}
	if b.want("run-launch") {
		if err := b.launchScenario(ctx); err != nil {
			return err
		}
	}
	if b.want("density") || b.want("delete") || b.want("steady") {
		if err := b.manyPods(ctx); err != nil {
			return err
		}
	}
	if b.want("manifest-start") || b.want("manifest-density") || b.want("manifest-delete") || b.want("manifest-steady") {
		if err := b.manifestScenarios(ctx, work); err != nil {
			return err
		}
	}
	if b.want("scale") {
		if err := b.scaleScenario(ctx, work); err != nil {
			return err
		}
	}
	b.rep.Machine.Duration = time.Since(began).Seconds()
	finished = true
	return b.write()
}

// write stores the report and prints the table.
func (b *bench) write() error {
	md := b.rep.markdown()
	fmt.Println()
	fmt.Println(md)
	if err := b.rep.writeJSON(b.o.jsonOut); err != nil {
		return err
	}
	if err := os.WriteFile(b.o.mdOut, []byte(md), 0o644); err != nil {
		return err
	}
	progress("wrote %s and %s", b.o.jsonOut, b.o.mdOut)
	if len(b.rep.Scale) > 0 {
		svg := scaleSVGPath(b.o.mdOut)
		if err := b.rep.writeScaleSVG(svg); err != nil {
			return err
		}
		progress("wrote the scale curve's plot %s", svg)
	}
	if b.o.updateDoc {
		// The scale curve alone (an hour) has a table and history of its own.
		scaleOnly := b.o.scenarios == "scale"
		if err := updatePerfDoc(b.o.perfDoc, md, scaleOnly); err != nil {
			return err
		}
		progress("updated the results table of %s", b.o.perfDoc)
		if len(b.rep.Scale) > 0 {
			svg := scaleSVGPath(b.o.perfDoc)
			if err := b.rep.writeScaleSVG(svg); err != nil {
				return err
			}
			progress("updated the scale curve's plot %s", svg)
		}
		if b.o.historyDir != "" {
			dir := b.o.historyDir
			if scaleOnly {
				dir = filepath.Join(dir, "scale") // bench-compare docs/bench/scale
			}
			path, err := b.rep.keep(dir)
			if err != nil {
				return err
			}
			progress("kept the figures in %s (compare two runs: go run ./hack/bench-compare OLD.json NEW.json)", path)
		}
	}
	return nil
}

// writePartial writes what a run that ended early (cause) measured, the
// finished scenarios' rows and the scale curve's points so far, to --json
// and --md (and the plot beside --md), never into the docs or the
// history: a partial table must not replace a whole one. Best effort: a
// failure is printed.
func (b *bench) writePartial(cause error) {
	b.takeScale()
	if len(b.rep.Rows) == 0 {
		progress("the run ended early and measured nothing to keep (%s and %s, if present, are an earlier run's)", b.o.jsonOut, b.o.mdOut)
		return
	}
	b.rep.Partial = cause.Error()
	md := b.rep.markdown()
	fmt.Println()
	fmt.Println(md)
	err := b.rep.writeJSON(b.o.jsonOut)
	if err == nil {
		err = os.WriteFile(b.o.mdOut, []byte(md), 0o644)
	}
	if err == nil && len(b.rep.Scale) > 0 {
		err = b.rep.writeScaleSVG(scaleSVGPath(b.o.mdOut))
	}
	if err != nil {
		progress("writing the partial results: %v", err)
		return
	}
	progress("the run ended early: what it measured is in %s and %s (partial; docs/ unchanged)", b.o.jsonOut, b.o.mdOut)
}

// cleanup removes whatever a failed scenario left (best effort).
func (b *bench) cleanup() {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if l, err := b.d.c.ListPods(ctx, benchNS); err == nil && len(l.Items) > 0 {
		var names []string
		for _, p := range l.Items {
			names = append(names, p.Name)
		}
		progress("cleanup: deleting %d pods through the API", len(names))
		if err := mklDelete(ctx, b.d.c, names, 1, b.obs); err != nil {
			progress("cleanup: %v", err)
		}
	}
	sbs, _ := b.rt.ListPodSandbox(ctx, &runtimeapi.PodSandboxFilter{LabelSelector: map[string]string{labelBench: "raw"}})
	var pods []*rawPod
	for _, sb := range sbs {
		pods = append(pods, &rawPod{Name: sb.Metadata.GetName(), UID: sb.Metadata.GetUid(), Namespace: sb.Metadata.GetNamespace(), SandboxID: sb.Id,
			Cgroup: cgroups.PodName(cgroups.KubepodsBestEffort, sb.Metadata.GetUid())})
	}
	if len(pods) > 0 {
		progress("cleanup: removing %d raw pods", len(pods))
		if err := b.raw.RemoveAll(ctx, pods); err != nil {
			progress("cleanup: %v", err)
		}
	}
	b.removeManifestPods(ctx)
}

// warmUp runs one pod on each side, unmeasured: the first sandbox brings
// up the bridge and loads the pause image.
func (b *bench) warmUp(ctx context.Context) error {
	progress("warm-up: one pod on each side (not measured)")
	p, err := b.raw.Start(ctx, b.name("warm-raw"))
	if err == nil {
		err = waitTCP(ctx, p.IP, tcpPort)
	}
	if rerr := b.raw.Remove(ctx, p); err == nil {
		err = rerr
	}
	if err != nil {
		return err
	}
	name := b.name("warm-mkl")
	if _, err := mklStart(ctx, b.d.c, podSpec(name, b.image, kindReady, 1), true, b.obs); err != nil {
		return err
	}
	return mklDelete(ctx, b.d.c, []string{name}, 1, b.obs)
}

// startScenario is scenario 1: reps sequential starts per side, ABAB.
func (b *bench) startScenario(ctx context.Context, ready bool) error {
	scen, kind := "start", kindStart
	if ready {
		scen, kind = "ready", kindReady
	}
	var rawStarted, rawReady, mklStarted, mklReady, mklDelta []time.Duration
	var rawPhases, mklPhases []phases
	var cpu cpuUse
	for i := range b.o.reps {
		// Raw.
		t0 := time.Now()
		p, err := b.raw.Start(ctx, b.name(scen+"-raw"))
		started := time.Since(t0)
		if err == nil && ready {
			err = waitTCP(ctx, p.IP, tcpPort)
			rawReady = append(rawReady, time.Since(t0))
		}
		rawStarted = append(rawStarted, started)
		if p != nil {
			rawPhases = append(rawPhases, p.Phases)
		}
		if rerr := b.raw.Remove(ctx, p); err == nil {
			err = rerr
		}
		if err != nil {
			return fmt.Errorf("%s raw #%d: %w", scen, i+1, err)
		}
		// minikubelet.
		name := b.name(scen + "-mkl")
		cpu0 := b.cpuNow()
		t, err := mklStart(ctx, b.d.c, podSpec(name, b.image, kind, 1), ready, b.obs)
		if err != nil {
			return fmt.Errorf("%s minikubelet #%d: %w", scen, i+1, err)
		}
		mklStarted = append(mklStarted, t.started)
		mklPhases = append(mklPhases, t.phases)
		if ready {
			mklReady = append(mklReady, t.ready)
			mklDelta = append(mklDelta, t.ready-t.started)
		}
		if err := mklDelete(ctx, b.d.c, []string{name}, 1, b.obs); err != nil {
			return err
		}
		cpu.add(cpu0, b.cpuNow())
		line := fmt.Sprintf("%s %d/%d: started raw %s, minikubelet %s", scen, i+1, b.o.reps, started.Round(time.Microsecond*100), t.started.Round(time.Microsecond*100))
		if ready {
			line += fmt.Sprintf("; ready raw %s, minikubelet %s", rawReady[i].Round(time.Microsecond*100), t.ready.Round(time.Microsecond*100))
		}
		progress("%s", line)
	}
	if !ready {
		r := newRow("1 start", "submit → container started", "ms", summarize(ms(rawStarted)), summarize(ms(mklStarted)))
		b.rep.Rows = append(b.rep.Rows, r.target("≤ 1.05 × raw", r.Ratio <= 1.05))
		b.rep.Rows = append(b.rep.Rows, phaseRows("1 start", rawPhases, mklPhases)...)
		b.rep.Rows = append(b.rep.Rows, cpu.rows("1 start", b.o.reps)...)
		return nil
	}
	b.rep.Rows = append(b.rep.Rows,
		newRow("1 ready", "submit → container started", "ms", summarize(ms(rawStarted)), summarize(ms(mklStarted))),
		newRow("1 ready", "submit → Ready (raw: TCP connect)", "ms", summarize(ms(rawReady)), summarize(ms(mklReady))))
	d := summarize(ms(mklDelta))
	r := newRow("1 ready", "Ready − started, per pod", "ms", nil, d)
	b.rep.Rows = append(b.rep.Rows, r.target("≤ 50 ms", d.Median <= 50))
	b.rep.Rows = append(b.rep.Rows, cpu.rows("1 ready", b.o.reps)...)
	return nil
}

// cpuNow reads the CPU time used so far by the daemon and by this process
// (the API client observing it); zero when /proc cannot tell.
func (b *bench) cpuNow() [2]float64 {
	d, _ := procCPU(b.d.pid())
	s, _ := procCPU(os.Getpid())
	return [2]float64{d, s}
}

// cpuUse sums the CPU time of the minikubelet iterations of a scenario.
type cpuUse struct{ daemon, client float64 }

func (c *cpuUse) add(before, after [2]float64) {
	c.daemon += after[0] - before[0]
	c.client += after[1] - before[1]
}

// rows reports the CPU per pod (submit, start, observe, delete): the
// daemon's, and this process's as the API client (/proc counts in 10 ms
// ticks: the sum over the reps is what is precise).
func (c cpuUse) rows(scenario string, reps int) []Row {
	per := func(s float64) *Stat { return single(s * 1000 / float64(reps)) }
	return []Row{
		newRow(scenario, "daemon CPU per pod (submit, start, observe, delete)", "ms", nil, per(c.daemon)),
		newRow(scenario, "API client CPU per pod (the bench observing)", "ms", nil, per(c.client)),
	}
}

// manyPods runs scenarios 2–4 on --pods pods: --rounds rounds of raw
// density and raw delete beside minikubelet density and minikubelet delete
// (the floor first in rounds 1, 3, …, last in rounds 2, 4, …: floorFirst), with pods
// that have no probe, as the floor's (a probed pod costs its node more
// than the CRI calls the floor makes: 100 probed pods came up 5–15 % slower
// than the floor); then the steady state on --pods pods with probes,
// started and deleted untimed against the floor (their start is reported
// apart). One round of 100 pods varies by more than a tenth from run to
// run on a 2-core machine, the floor's as much as minikubelet's; the rows
// report the median over the rounds and the ratio of the medians.
func (b *bench) manyPods(ctx context.Context) error {
	var m manyResult
	if b.want("density") || b.want("delete") {
		for r := range b.o.rounds {
			if err := b.manyPodsRound(ctx, r, &m); err != nil {
				return err
			}
		}
	}
	if len(m.rawTotal) > 0 {
		b.manyPodsRows(&m)
	}
	if b.want("steady") {
		return b.steadyPods(ctx)
	}
	return nil
}

// manyPodsRows reports the density and delete rounds.
func (b *bench) manyPodsRows(m *manyResult) {
	n := b.o.pods
	secs := func(ds []time.Duration) []float64 {
		out := make([]float64, len(ds))
		for i, d := range ds {
			out[i] = d.Seconds()
		}
		return out
	}
	tput := func(ds []time.Duration) []float64 {
		out := make([]float64, len(ds))
		for i, d := range ds {
			out[i] = float64(n) / d.Seconds()
		}
		return out
	}
	rounds := fmt.Sprintf("median of %d rounds", b.o.rounds)
	if b.want("density") {
		tp := newRow("2 density", fmt.Sprintf("throughput, %d pods at once (%s)", n, rounds), "pods/s", summarize(tput(m.rawTotal)), summarize(tput(m.mklTotal)))
		b.rep.Rows = append(b.rep.Rows,
			newRow("2 density", fmt.Sprintf("all %d Running (%s)", n, rounds), "s", summarize(secs(m.rawTotal)), summarize(secs(m.mklTotal))),
			tp.target("≥ 0.9 × raw", tp.Ratio >= 0.9),
			newRow("2 density", "per pod: submit → Running (all rounds)", "ms", summarize(ms(m.rawLat)), summarize(ms(m.mklLat))))
	}
	if b.want("delete") {
		limit := float64(b.o.grace + 1)
		r := newRow("4 delete", fmt.Sprintf("%d pods, grace %d s: CRI objects and IPs gone (%s)", n, b.o.grace, rounds), "s", summarize(secs(m.rawGone)), summarize(secs(m.mklGone)))
		b.rep.Rows = append(b.rep.Rows,
			r.target(fmt.Sprintf("≤ grace + 1 s (%g s)", limit), r.Minikubelet.Median <= limit),
			newRow("4 delete", "… and the API lists none", "s", nil, summarize(secs(m.apiGone))))
	}
}

// manyResult collects manyPods' rounds.
type manyResult struct {
	rawTotal, mklTotal        []time.Duration
	rawLat, mklLat            []time.Duration
	rawGone, mklGone, apiGone []time.Duration
}

// manyPodsRound is round r of manyPods' density and deletion.
func (b *bench) manyPodsRound(ctx context.Context, r int, m *manyResult) error {
	n := b.o.pods
	tag := fmt.Sprintf("round %d/%d", r+1, b.o.rounds)
	var rawTotal, rawGone time.Duration
	var rawLat []time.Duration
	floor := func() (err error) {
		rawTotal, rawLat, rawGone, err = b.rawRound(ctx, fmt.Sprintf("density-raw-%d", r), n, tag)
		return err
	}
	var mklTotal, mklGone, apiGone time.Duration
	var mklLat []time.Duration
	agent := func() (err error) {
		// minikubelet: n pods submitted at once.
		progress("density %s: %d pods submitted at once to minikubelet", tag, n)
		names := make([]string, n)
		for i := range n {
			names[i] = fmt.Sprintf("density-mkl-%d-%d", r, i)
		}
		var prof chan error
		if b.o.profileDir != "" && r == b.o.rounds-1 {
			prof = b.profile(ctx, "cpu-density.pprof", 20*time.Second)
		}
		mklLat, mklTotal, err = b.mklDensity(ctx, names, kindStart)
		if prof != nil {
			if perr := <-prof; perr != nil {
				progress("profile: %v", perr)
			}
		}
		if err != nil {
			return fmt.Errorf("density minikubelet: %w", err)
		}
		progress("density %s: minikubelet %d pods Running in %s (%.1f pods/s)", tag, n, mklTotal.Round(time.Millisecond), float64(n)/mklTotal.Seconds())

		// minikubelet: deletion.
		progress("delete %s: %d minikubelet pods at once, grace %d s", tag, n, b.o.grace)
		if mklGone, apiGone, err = b.mklDeleteAll(ctx, names); err != nil {
			return err
		}
		progress("delete %s: minikubelet pods gone from CRI and IPAM in %s, from the API in %s", tag, mklGone.Round(time.Millisecond), apiGone.Round(time.Millisecond))
		return nil
	}
	if err := inOrder(ctx, r, "density "+tag+": minikubelet", floor, agent); err != nil {
		return err
	}

	m.rawTotal, m.mklTotal = append(m.rawTotal, rawTotal), append(m.mklTotal, mklTotal)
	m.rawLat, m.mklLat = append(m.rawLat, rawLat...), append(m.mklLat, mklLat...)
	m.rawGone, m.mklGone, m.apiGone = append(m.rawGone, rawGone), append(m.mklGone, mklGone), append(m.apiGone, apiGone)
	return nil
}

// floorFirst reports whether round r (counted from 0: r = 0 is round 1)
// runs the floor's side before the agent's. The rounds alternate, floor
// first in rounds 1, 3, … and the agent first in rounds 2, 4, … (ABBA;
// with an odd count of rounds the floor goes first once more), so that
// neither side always runs later in a run whose pace drifts: in the full
// bench of 2026-12-01 the floor's three 110-pod rounds, always run first,
// went 8.15, 7.76 and 6.77 pods/s. Each side also follows
// the other's deletion in some rounds and its own in others (an agent's
// teardown, its cgroups and directories, goes on after the runtime lists
// none of the pods).
func floorFirst(r int) bool { return r%2 == 0 }

// quietWait is waitQuiet (quiet.go); the unit tests replace it.
var quietWait = waitQuiet

// inOrder runs round r's two sides in ABBA order (floorFirst): floor (nil
// when the column has none; rawRound waits for a quiet machine itself) and
// agent, on a quiet machine (quietWait, naming the agent's side what).
func inOrder(ctx context.Context, r int, what string, floor, agent func() error) error {
	if floor == nil {
		floor = func() error { return nil }
	}
	quietAgent := func() error {
		if err := quietWait(ctx, what); err != nil {
			return err
		}
		return agent()
	}
	sides := [2]func() error{floor, quietAgent}
	if !floorFirst(r) {
		sides[0], sides[1] = sides[1], sides[0]
	}
	for _, side := range sides {
		if err := side(); err != nil {
			return err
		}
	}
	return nil
}

// rawRound is one round of the floor on n pods: n concurrent starts (each
// pod's server answering before the deletion, as an agent's pods are
// Ready), then all deleted at once. It returns the time until all started,
// each pod's start, and the time until every CRI object and IP is gone.
func (b *bench) rawRound(ctx context.Context, prefix string, n int, tag string) (time.Duration, []time.Duration, time.Duration, error) {
	// Raw: n concurrent starts, on a quiet machine (quiet.go).
	if err := waitQuiet(ctx, "density "+tag+": raw"); err != nil {
		return 0, nil, 0, err
	}
	progress("density %s: %d raw pods at once", tag, n)
	rawPods := make([]*rawPod, n)
	rawLat := make([]time.Duration, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	t0 := time.Now()
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rawPods[i], errs[i] = b.raw.Start(ctx, fmt.Sprintf("%s-%d", prefix, i))
			rawLat[i] = time.Since(t0)
		}()
	}
	wg.Wait()
	rawTotal := time.Since(t0)
	if err := errors.Join(errs...); err != nil {
		_ = b.raw.RemoveAll(ctx, nonNil(rawPods))
		return 0, nil, 0, fmt.Errorf("density raw: %w", err)
	}
	progress("density %s: raw %d pods started in %s (%.1f pods/s)", tag, n, rawTotal.Round(time.Millisecond), float64(n)/rawTotal.Seconds())
	// Every raw server must answer before the deletion, as the
	// minikubelet pods are Ready before theirs.
	for _, p := range rawPods {
		if err := waitTCP(ctx, p.IP, tcpPort); err != nil {
			return 0, nil, 0, err
		}
	}

	// Raw: deletion.
	progress("delete %s: %d raw pods at once, grace %d s", tag, n, b.o.grace)
	ids := map[string]bool{}
	for _, p := range rawPods {
		ids[p.SandboxID] = true
	}
	t0 = time.Now()
	for i, p := range rawPods {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = b.raw.Stop(ctx, p, b.o.grace)
		}()
	}
	rawGone, err := b.waitGone(ctx, t0, ids)
	wg.Wait()
	if err == nil {
		err = errors.Join(errs...)
	}
	for _, p := range rawPods {
		err = errors.Join(err, b.raw.Release(p))
	}
	if err != nil {
		return 0, nil, 0, fmt.Errorf("delete raw: %w", err)
	}
	progress("delete %s: raw pods gone from CRI and IPAM in %s", tag, rawGone.Round(time.Millisecond))

	return rawTotal, rawLat, rawGone, nil
}

// mklDeleteAll deletes the named pods at once through the API and returns
// the time until their CRI objects and IPs are gone, and until the API
// lists none.
func (b *bench) mklDeleteAll(ctx context.Context, names []string) (gone, apiGone time.Duration, err error) {
	sbs, err := b.rt.ListPodSandbox(ctx, &runtimeapi.PodSandboxFilter{LabelSelector: map[string]string{labelPodNS: benchNS}})
	if err != nil {
		return 0, 0, err
	}
	ids := map[string]bool{}
	for _, sb := range sbs {
		ids[sb.Id] = true
	}
	errs := make([]error, len(names))
	var wg sync.WaitGroup
	t0 := time.Now()
	for i, name := range names {
		wg.Add(1)
		go func() {
			defer wg.Done()
			g := b.o.grace
			_, errs[i] = b.d.c.DeletePod(ctx, benchNS, name, &g)
		}()
	}
	gone, err = b.waitGone(ctx, t0, ids)
	wg.Wait()
	if err == nil {
		err = errors.Join(errs...)
	}
	if err != nil {
		return 0, 0, fmt.Errorf("delete minikubelet: %w", err)
	}
	if err := mklDelete(ctx, b.d.c, nil, b.o.grace, b.obs); err != nil {
		return 0, 0, err
	}
	return gone, time.Since(t0), nil
}

// steadyPods starts --pods pods with probes through minikubelet, measures
// the steady state and deletes them. Their start is reported beside the
// density rows, without a floor (the floor does not probe).
func (b *bench) steadyPods(ctx context.Context) error {
	n := b.o.pods
	names := make([]string, n)
	for i := range n {
		names[i] = fmt.Sprintf("steady-%d", i)
	}
	progress("steady: %d pods with probes submitted at once to minikubelet", n)
	lat, total, err := b.mklDensity(ctx, names, kindSteady)
	if err != nil {
		return fmt.Errorf("steady pods: %w", err)
	}
	progress("steady: %d pods Running in %s (%.1f pods/s)", n, total.Round(time.Millisecond), float64(n)/total.Seconds())
	b.rep.Rows = append(b.rep.Rows,
		newRow("2 density", fmt.Sprintf("all %d Running, pods with two probes each (steady's pods, 1 round; the floor does not probe)", n), "s", nil, single(total.Seconds())),
		newRow("2 density", "… per pod: submit → Running", "ms", nil, summarize(ms(lat))))
	if err := b.steadyLoaded(ctx, names); err != nil {
		return err
	}
	progress("steady: deleting the %d pods", n)
	if _, _, err := b.mklDeleteAll(ctx, names); err != nil {
		return err
	}
	return nil
}

func nonNil(ps []*rawPod) []*rawPod {
	var out []*rawPod
	for _, p := range ps {
		if p != nil {
			out = append(out, p)
		}
	}
	return out
}

// waitGone polls the runtime (pods of the bench namespace) and host-local's
// store (reservations of the sandboxes in ids) until both are empty, and
// returns the time since t0.
func (b *bench) waitGone(ctx context.Context, t0 time.Time, ids map[string]bool) (time.Duration, error) {
	sel := map[string]string{labelPodNS: benchNS}
	for {
		sbs, err := b.rt.ListPodSandbox(ctx, &runtimeapi.PodSandboxFilter{LabelSelector: sel})
		if err != nil {
			return 0, err
		}
		var ctrs []*runtimeapi.Container
		if len(sbs) == 0 {
			if ctrs, err = b.rt.ListContainers(ctx, &runtimeapi.ContainerFilter{LabelSelector: sel}); err != nil {
				return 0, err
			}
		}
		ips := 0
		if len(sbs) == 0 && len(ctrs) == 0 {
			res, err := cni.HostLocalReservations(b.net)
			if err != nil {
				return 0, err
			}
			for _, id := range res {
				if ids[id] {
					ips++
				}
			}
			if ips == 0 {
				return time.Since(t0), nil
			}
		}
		select {
		case <-ctx.Done():
			return 0, fmt.Errorf("still %d sandboxes, %d containers, %d IP reservations: %w", len(sbs), len(ctrs), ips, ctx.Err())
		case <-time.After(b.o.criPoll):
		}
	}
}

// mklDensity submits the pods at once and follows them until all run;
// per-pod times are from the common start to the first watch event (or
// list, with --observe poll) showing the pod Running.
func (b *bench) mklDensity(ctx context.Context, names []string, kind podKind) ([]time.Duration, time.Duration, error) {
	n := len(names)
	var w watch.Interface
	if b.obs.watch {
		var err error
		if w, err = b.d.c.WatchPods(ctx, benchNS, api.WatchOptions{}); err != nil {
			return nil, 0, fmt.Errorf("watch pods: %w", err)
		}
		defer w.Stop()
	}
	errs := make([]error, n)
	var wg sync.WaitGroup
	t0 := time.Now()
	for i, name := range names {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, errs[i] = b.d.c.CreatePod(ctx, podSpec(name, b.image, kind, b.o.grace))
		}()
	}
	lat := map[string]time.Duration{}
	// seen records a pod's state observed at now; an error for a pod that
	// will not run.
	seen := func(p *v1.Pod, now time.Duration) error {
		if _, ok := lat[p.Name]; !ok && p.Status.Phase == v1.PodRunning {
			lat[p.Name] = now
		}
		if r := failedReason(p); r != "" {
			return fmt.Errorf("pod %s: %s", p.Name, r)
		}
		return nil
	}
	var err error
	if w != nil {
		err = b.followDensity(ctx, w, t0, n, lat, seen)
	} else {
		err = b.pollDensity(ctx, t0, n, lat, seen)
	}
	wg.Wait()
	if err == nil {
		err = errors.Join(errs...)
	}
	if err != nil {
		return nil, 0, err
	}
	out := make([]time.Duration, 0, n)
	for _, d := range lat {
		out = append(out, d)
	}
	return out, slices.Max(out), nil
}

// followDensity reads the watch until n pods were seen Running.
func (b *bench) followDensity(ctx context.Context, w watch.Interface, t0 time.Time, n int, lat map[string]time.Duration, seen func(*v1.Pod, time.Duration) error) error {
	for ev := range w.ResultChan() {
		now := time.Since(t0)
		p, err := podOfEvent(ev)
		if err != nil {
			return err
		}
		if err := seen(p, now); err != nil {
			return err
		}
		if len(lat) == n {
			return nil
		}
	}
	if ctx.Err() != nil {
		return fmt.Errorf("%d of %d pods Running: %w", len(lat), n, ctx.Err())
	}
	return fmt.Errorf("%d of %d pods Running: the daemon ended the watch", len(lat), n)
}

// pollDensity lists the pods every --list-poll until n were seen Running.
func (b *bench) pollDensity(ctx context.Context, t0 time.Time, n int, lat map[string]time.Duration, seen func(*v1.Pod, time.Duration) error) error {
	for {
		l, err := b.d.c.ListPods(ctx, benchNS)
		now := time.Since(t0)
		if err != nil {
			return err
		}
		for i := range l.Items {
			if err := seen(&l.Items[i], now); err != nil {
				return err
			}
		}
		if len(lat) == n {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%d of %d pods Running: %w", len(lat), n, ctx.Err())
		case <-time.After(b.o.listPoll):
		}
	}
}

// profile captures a CPU profile of the daemon in the background.
func (b *bench) profile(ctx context.Context, file string, d time.Duration) chan error {
	done := make(chan error, 1)
	if err := os.MkdirAll(b.o.profileDir, 0o755); err != nil {
		done <- err
		return done
	}
	go func() {
		done <- b.d.getDebug(ctx, fmt.Sprintf("/debug/pprof/profile?seconds=%d", int(d.Seconds())), filepath.Join(b.o.profileDir, file))
	}()
	return done
}

// phaseRows are the breakdown of the starts, one row per phase.
func phaseRows(scenario string, raw, mkl []phases) []Row {
	pick := []struct {
		name string
		get  func(phases) time.Duration
	}{
		{"… before RunPodSandbox (API, store, observe; raw: cgroup, dirs)", func(p phases) time.Duration { return p.Pre }},
		{"… RunPodSandbox + PodSandboxStatus", func(p phases) time.Duration { return p.Sandbox }},
		{"… sandbox → CreateContainer (image, config, files)", func(p phases) time.Duration { return p.Prep }},
		{"… CreateContainer", func(p phases) time.Duration { return p.Create }},
		{"… StartContainer", func(p phases) time.Duration { return p.Start }},
		{"… StartContainer returned → seen through the API", func(p phases) time.Duration { return p.Observe }},
	}
	var rows []Row
	for _, f := range pick {
		var r, m []time.Duration
		for _, p := range raw {
			r = append(r, f.get(p))
		}
		for _, p := range mkl {
			if p != (phases{}) {
				m = append(m, f.get(p))
			}
		}
		rows = append(rows, newRow(scenario, f.name, "ms", summarize(ms(r)), summarize(ms(m))))
	}
	return rows
}
