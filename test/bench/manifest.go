package main

// Over 600 lines: the manifest route's four scenarios for both agents share
// their helpers (write, observe, remove); split, each would carry a copy.

// Scenario 5, the manifest route (issue #27): minikubelet and the kubelet
// given the same pods the same way — a manifest file written into the
// agent's static pod directory (minikubelet's --manifest-dir, the
// kubelet's staticPodPath) — and observed the same way, by the bench
// polling the runtime: a pod is started when its container is seen
// CONTAINER_RUNNING in ListContainers, and deleted (its file removed) once
// its containers are stopped, its sandbox is not ready and its IP is
// released, and gone once the runtime lists none of its objects. Neither
// agent's API is asked anything.
//
// The kubelet kills every pod in the runtime it does not know of
// (HandlePodCleanups' orphaned runtime pods), the floor's and
// minikubelet's included: it runs only during its own block, after the
// floor's and minikubelet's pods are gone, and the floor's figures are
// from the first block. minikubelet touches only its own (labelled)
// objects and keeps running meanwhile.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/minikubelet/minikubelet/cni"
)

// manifestNS is the namespace of the manifest pods (both agents).
const manifestNS = "bench-manifest"

// Agents of the manifest scenarios (--agents).
const (
	agentMinikubelet = "minikubelet"
	agentKubelet     = "kubelet"
)

// manifestAgent is one agent as the manifest scenarios see it.
type manifestAgent struct {
	name string
	dir  string // its static pod directory
	pid  func() int
	log  string
}

// agentRun is what the manifest scenarios measured of one side.
type agentRun struct {
	started             []time.Duration // start reps: file written → running
	total, lat          []time.Duration // density rounds
	down, gone          []time.Duration // delete rounds (raw: gone for both)
	steadyTotal         time.Duration
	steadyLat           []time.Duration
	steady, steadyFloor *usage
	steadyIdle          *usage
	steadyRan           bool
}

// writeManifest writes the pod as name.json into dir, atomically (a
// dotfile renamed into place: neither agent reads dotfiles).
func writeManifest(dir, name string, kind podKind, image string, grace int64) error {
	p := podSpec(name, image, kind, grace)
	p.Namespace = manifestNS
	b, err := json.Marshal(p)
	if err != nil {
		return err
	}
	tmp := filepath.Join(dir, "."+name+".json")
	if err := os.WriteFile(tmp, b, 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, filepath.Join(dir, name+".json"))
}

// podOf maps a pod name in the runtime to the manifest's name: the kubelet
// names a static pod <name>-<node name>; minikubelet may too.
func podOf(criName string, want map[string]bool) (string, bool) {
	if want[criName] {
		return criName, true
	}
	for i := len(criName) - 1; i > 0; i-- {
		if criName[i] == '-' && want[criName[:i]] {
			return criName[:i], true
		}
	}
	return "", false
}

// waitRunning polls the runtime every --manifest-poll until each named pod
// has a running container; it returns each pod's time since t0 and the
// sandboxes of those containers.
func (b *bench) waitRunning(ctx context.Context, a manifestAgent, t0 time.Time, names []string) (map[string]time.Duration, map[string]bool, error) {
	want := map[string]bool{}
	for _, n := range names {
		want[n] = true
	}
	lat := map[string]time.Duration{}
	ids := map[string]bool{}
	wctx, cancel := context.WithTimeout(ctx, 5*time.Minute+time.Duration(len(names))*2*time.Second)
	defer cancel()
	filter := &runtimeapi.ContainerFilter{
		State:         &runtimeapi.ContainerStateValue{State: runtimeapi.ContainerState_CONTAINER_RUNNING},
		LabelSelector: map[string]string{labelPodNS: manifestNS},
	}
	for {
		cs, err := b.rt.ListContainers(wctx, filter)
		now := time.Since(t0)
		if err != nil {
			return nil, nil, fmt.Errorf("%s: %d of %d pods running: %w (log: %s)", a.name, len(lat), len(names), err, a.log)
		}
		for _, c := range cs {
			n, ok := podOf(c.Labels[labelPodName], want)
			if !ok {
				continue
			}
			if _, seen := lat[n]; !seen {
				lat[n] = now
			}
			ids[c.PodSandboxId] = true
		}
		if len(lat) == len(names) {
			return lat, ids, nil
		}
		select {
		case <-wctx.Done():
			return nil, nil, fmt.Errorf("%s: %d of %d pods running: %w (log: %s)", a.name, len(lat), len(names), wctx.Err(), a.log)
		case <-time.After(b.o.manifestPoll):
		}
	}
}

// manifestGoneWait bounds the wait for the runtime to list none of the
// deleted pods' objects once they are down (the kubelet removes a deleted
// pod's sandbox after its containers died; its garbage collection, a
// minute apart, is the fallback).
const manifestGoneWait = 3 * time.Minute

// startPeriod is the cadence of manifest-start's repetitions, the same
// for every agent: each starts startPeriod after the one before. In
// between, the pod is deleted and waited for until it is down and then,
// until the period ends, until it is gone: minikubelet removes a deleted
// pod at once (about a second), which the next start would otherwise
// overlap, while the kubelet leaves it to its garbage collection, a minute
// later. One cadence for both: the kubelet's start is not the same
// figure at every pace or moment (its median was 186 ms back to back in
// the full run of 2026-11-30, 226–256 ms in the runs of the session
// after, back to back or not), so the pace is fixed rather than left to
// each agent's speed.
const startPeriod = 2500 * time.Millisecond

// waitDown polls the runtime and host-local's store until the sandboxes
// in ids have no running container, none is ready and none holds an IP
// (down), and then, with goneWait > 0, until the runtime lists none of
// them nor their containers (gone; 0 when that took longer than goneWait
// after down).
func (b *bench) waitDown(ctx context.Context, t0 time.Time, ids map[string]bool, goneWait time.Duration) (down, gone time.Duration, err error) {
	sel := map[string]string{labelPodNS: manifestNS}
	for {
		sbs, err := b.rt.ListPodSandbox(ctx, &runtimeapi.PodSandboxFilter{LabelSelector: sel})
		if err != nil {
			return 0, 0, err
		}
		cs, err := b.rt.ListContainers(ctx, &runtimeapi.ContainerFilter{LabelSelector: sel})
		if err != nil {
			return 0, 0, err
		}
		res, err := cni.HostLocalReservations(b.net)
		if err != nil {
			return 0, 0, err
		}
		now := time.Since(t0)
		listed, ready, running, ips := 0, 0, 0, 0
		for _, sb := range sbs {
			if ids[sb.Id] {
				listed++
				if sb.State == runtimeapi.PodSandboxState_SANDBOX_READY {
					ready++
				}
			}
		}
		for _, c := range cs {
			if ids[c.PodSandboxId] {
				listed++
				if c.State == runtimeapi.ContainerState_CONTAINER_RUNNING {
					running++
				}
			}
		}
		for _, id := range res {
			if ids[id] {
				ips++
			}
		}
		if down == 0 && ready == 0 && running == 0 && ips == 0 {
			down = now
			if goneWait <= 0 {
				return down, 0, nil
			}
		}
		if down != 0 && listed == 0 {
			return down, now, nil
		}
		if down != 0 && now-down > goneWait {
			return down, 0, nil
		}
		select {
		case <-ctx.Done():
			return 0, 0, fmt.Errorf("still %d ready sandboxes, %d running containers, %d IP reservations, %d objects listed: %w", ready, running, ips, listed, ctx.Err())
		case <-time.After(b.o.criPoll):
		}
	}
}

// manifestStart writes one pod's manifest and waits until it runs.
func (b *bench) manifestStart(ctx context.Context, a manifestAgent, name string, kind podKind) (time.Duration, map[string]bool, error) {
	t0 := time.Now()
	if err := writeManifest(a.dir, name, kind, b.image, b.o.grace); err != nil {
		return 0, nil, err
	}
	lat, ids, err := b.waitRunning(ctx, a, t0, []string{name})
	if err != nil {
		return 0, nil, err
	}
	return lat[name], ids, nil
}

// manifestDelete removes the named manifests at once and waits until the
// pods are down and, with goneWait > 0, gone (waitDown). Without, the
// objects left are the agent's to remove while the bench goes on (the
// kubelet removes a deleted pod's stopped sandbox only in its container
// GC, a minute apart).
func (b *bench) manifestDelete(ctx context.Context, a manifestAgent, names []string, ids map[string]bool, goneWait time.Duration) (down, gone time.Duration, err error) {
	t0 := time.Now()
	for _, n := range names {
		if err := os.Remove(filepath.Join(a.dir, n+".json")); err != nil {
			return 0, 0, err
		}
	}
	return b.waitDown(ctx, t0, ids, goneWait)
}

// manifestMany writes the manifests of n pods at once and waits until all
// run.
func (b *bench) manifestMany(ctx context.Context, a manifestAgent, prefix string, n int, kind podKind) ([]string, []time.Duration, time.Duration, map[string]bool, error) {
	names := make([]string, n)
	for i := range n {
		names[i] = fmt.Sprintf("%s-%d", prefix, i)
	}
	t0 := time.Now()
	for _, name := range names {
		if err := writeManifest(a.dir, name, kind, b.image, b.o.grace); err != nil {
			return names, nil, 0, nil, err
		}
	}
	lat, ids, err := b.waitRunning(ctx, a, t0, names)
	if err != nil {
		return names, nil, 0, nil, err
	}
	out := make([]time.Duration, 0, n)
	for _, d := range lat {
		out = append(out, d)
	}
	return names, out, slices.Max(out), ids, nil
}

// clearManifests removes every manifest of the agent and waits (up to
// 2 minutes) for its pods to be down: the cleanup after a failure.
func (b *bench) clearManifests(ctx context.Context, a manifestAgent) {
	entries, _ := os.ReadDir(a.dir)
	for _, e := range entries {
		_ = os.Remove(filepath.Join(a.dir, e.Name()))
	}
	sbs, err := b.rt.ListPodSandbox(ctx, &runtimeapi.PodSandboxFilter{LabelSelector: map[string]string{labelPodNS: manifestNS}})
	if err != nil || len(sbs) == 0 {
		return
	}
	ids := map[string]bool{}
	for _, sb := range sbs {
		ids[sb.Id] = true
	}
	wctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	if _, _, err := b.waitDown(wctx, time.Now(), ids, 0); err != nil {
		progress("cleanup: %s's manifest pods: %v", a.name, err)
	}
}

// manifestAgentRun runs the manifest scenarios on one agent; with raw set,
// the floor's matching figures are taken in the same block, interleaved
// with the agent's (start) or beside each round, before it in rounds 1, 3,
// … and after it in rounds 2, 4, … (density, delete; floorFirst).
func (b *bench) manifestAgentRun(ctx context.Context, a manifestAgent, res, raw *agentRun) error {
	tag := a.name
	progress("%s: warm-up, one manifest pod (not measured)", tag)
	warm := b.name("mwarm-" + tag)
	_, ids, err := b.manifestStart(ctx, a, warm, kindStart)
	if err == nil {
		_, _, err = b.manifestDelete(ctx, a, []string{warm}, ids, startPeriod)
	}
	if err != nil {
		return fmt.Errorf("%s warm-up: %w", tag, err)
	}
	if b.want("manifest-steady") && b.o.steadyDuration > 0 {
		progress("manifest steady: %s with 0 pods; settling %s, then a %s window", tag, b.o.settle, b.o.steadyDuration)
		// The agent's own start (the kubelet's cAdvisor, its first
		// housekeeping) is not its idle state.
		time.Sleep(b.o.settle)
		u, err := measure(ctx, a.pid(), b.o.steadyDuration)
		if err != nil {
			return fmt.Errorf("%s steady 0 pods: %w", tag, err)
		}
		res.steadyIdle = &u
	}
	if b.want("manifest-start") {
		for i := range b.o.reps {
			line := fmt.Sprintf("manifest start %d/%d:", i+1, b.o.reps)
			next := time.Now().Add(startPeriod)
			if raw != nil {
				t0 := time.Now()
				p, err := b.raw.Start(ctx, b.name("mstart-raw"))
				d := time.Since(t0)
				if rerr := b.raw.Remove(ctx, p); err == nil {
					err = rerr
				}
				if err != nil {
					return fmt.Errorf("manifest start raw #%d: %w", i+1, err)
				}
				raw.started = append(raw.started, d)
				line += fmt.Sprintf(" raw %s,", d.Round(100*time.Microsecond))
			}
			name := b.name("mstart-" + tag)
			d, ids, err := b.manifestStart(ctx, a, name, kindStart)
			if err != nil {
				return fmt.Errorf("manifest start %s #%d: %w", tag, i+1, err)
			}
			if _, _, err := b.manifestDelete(ctx, a, []string{name}, ids, 0); err != nil {
				return fmt.Errorf("manifest start %s #%d, deletion: %w", tag, i+1, err)
			}
			if wait := time.Until(next); wait > 0 {
				if _, _, err := b.waitDown(ctx, time.Now(), ids, wait); err != nil {
					return fmt.Errorf("manifest start %s #%d, removal: %w", tag, i+1, err)
				}
				time.Sleep(time.Until(next))
			}
			res.started = append(res.started, d)
			progress("%s %s %s", line, tag, d.Round(100*time.Microsecond))
		}
	}
	n := b.o.manifestPods
	if b.want("manifest-density") || b.want("manifest-delete") {
		for r := range b.o.rounds {
			rtag := fmt.Sprintf("round %d/%d", r+1, b.o.rounds)
			var floor func() error // none beside the kubelet's column
			if raw != nil {
				floor = func() error {
					total, lat, gone, err := b.rawRound(ctx, fmt.Sprintf("mdensity-raw-%d", r), n, "manifest "+rtag)
					if err != nil {
						return err
					}
					raw.total, raw.lat, raw.gone, raw.down = append(raw.total, total), append(raw.lat, lat...), append(raw.gone, gone), append(raw.down, gone)
					return nil
				}
			}
			agent := func() error {
				progress("manifest density %s: %d manifests at once into %s's directory", rtag, n, tag)
				names, lat, total, ids, err := b.manifestMany(ctx, a, fmt.Sprintf("mdensity-%s-%d", tag, r), n, kindStart)
				if err != nil {
					return fmt.Errorf("manifest density %s: %w", tag, err)
				}
				progress("manifest density %s: %s: %d pods running in %s (%.1f pods/s)", rtag, tag, n, total.Round(time.Millisecond), float64(n)/total.Seconds())
				// Every server answers before the deletion, as the floor's.
				if err := b.waitServers(ctx, ids); err != nil {
					return err
				}
				down, gone, err := b.manifestDelete(ctx, a, names, ids, manifestGoneWait)
				if err != nil {
					return fmt.Errorf("manifest delete %s: %w", tag, err)
				}
				progress("manifest delete %s: %s: down in %s, gone in %s", rtag, tag, down.Round(time.Millisecond), gone.Round(time.Millisecond))
				res.total, res.lat, res.down = append(res.total, total), append(res.lat, lat...), append(res.down, down)
				if gone > 0 {
					res.gone = append(res.gone, gone)
				}
				return nil
			}
			if err := inOrder(ctx, r, "manifest density "+rtag+": "+tag, floor, agent); err != nil { // ABBA (floorFirst)
				return err
			}
		}
	}
	if b.want("manifest-steady") {
		progress("manifest steady: %d pods with two probes each into %s's directory", n, tag)
		names, lat, total, ids, err := b.manifestMany(ctx, a, "msteady-"+tag, n, kindSteady)
		if err != nil {
			return fmt.Errorf("manifest steady %s: %w", tag, err)
		}
		res.steadyTotal, res.steadyLat = total, lat
		if err := b.waitServers(ctx, ids); err != nil {
			return err
		}
		progress("manifest steady: %s: %d pods running in %s; settling %s, then a %s window", tag, n, total.Round(time.Millisecond), b.o.settle, b.o.steadyDuration)
		time.Sleep(b.o.settle)
		u, err := measure(ctx, a.pid(), b.o.steadyDuration)
		if err != nil {
			return fmt.Errorf("manifest steady %s: %w", tag, err)
		}
		res.steady = &u
		progress("manifest steady: %s: RSS %.1f MiB (max %.1f), CPU %.2f %% of a core", tag, summarize(u.rss).Median, summarize(u.rss).Max, u.cpu)
		if raw != nil {
			ips, err := b.sandboxIPs(ctx, ids)
			if err != nil {
				return err
			}
			fu, err := probeFloor(ctx, ips, b.o.steadyDuration)
			if err != nil {
				return fmt.Errorf("manifest steady probe floor: %w", err)
			}
			raw.steadyFloor = &fu
			progress("manifest steady: probe floor of %d pods: CPU %.2f %% of a core", len(ips), fu.cpu)
		}
		if _, _, err := b.manifestDelete(ctx, a, names, ids, 0); err != nil {
			return fmt.Errorf("manifest steady %s, deletion: %w", tag, err)
		}
		res.steadyRan = true
	}
	return nil
}

// sandboxIPs returns the pod IPs of the sandboxes.
func (b *bench) sandboxIPs(ctx context.Context, ids map[string]bool) ([]string, error) {
	var ips []string
	for id := range ids {
		st, err := b.rt.PodSandboxStatus(ctx, id, false)
		if err != nil {
			return nil, err
		}
		if ip := st.GetStatus().GetNetwork().GetIp(); ip != "" {
			ips = append(ips, ip)
		}
	}
	return ips, nil
}

// waitServers waits until the pods' servers accept connections.
func (b *bench) waitServers(ctx context.Context, ids map[string]bool) error {
	ips, err := b.sandboxIPs(ctx, ids)
	if err != nil {
		return err
	}
	for _, ip := range ips {
		if err := waitTCP(ctx, ip, tcpPort); err != nil {
			return err
		}
	}
	return nil
}

// wantAgent reports whether --agents names the agent.
func (b *bench) wantAgent(a string) bool { return slices.Contains(strings.Split(b.o.agents, ","), a) }

// manifestScenarios runs scenario 5: the floor and minikubelet in one
// block, then the kubelet (started for its block, stopped after).
func (b *bench) manifestScenarios(ctx context.Context, work string) error {
	var raw, mkl, kub agentRun
	rawDone := false
	if b.wantAgent(agentMinikubelet) {
		a := manifestAgent{name: agentMinikubelet, dir: filepath.Join(work, "daemon", "manifests"), pid: b.d.pid, log: b.d.logPath}
		err := b.manifestAgentRun(ctx, a, &mkl, &raw)
		if err != nil {
			b.clearManifests(ctx, a)
			return err
		}
		rawDone = true
	}
	if b.wantAgent(agentKubelet) {
		if !rawDone {
			// The floor cannot run beside the kubelet (it would kill the
			// floor's pods): its block comes first.
			if err := b.rawManifest(ctx, &raw); err != nil {
				return err
			}
		}
		if b.o.kubelet == "" {
			progress("manifest scenarios: no --kubelet binary, no kubelet column (hack/bench.sh builds it with hack/conformance/build.sh kubelet)")
		} else {
			dir := filepath.Join(work, "kubelet")
			progress("starting the kubelet %s standalone (log %s)", b.o.kubelet, filepath.Join(dir, "kubelet.log"))
			k, err := startKubelet(ctx, b.o.kubelet, b.o.endpoint, dir, b.o.manifestPods)
			if err != nil {
				return err
			}
			a := manifestAgent{name: agentKubelet, dir: k.manifests, pid: k.pid, log: k.logPath}
			err = b.manifestAgentRun(ctx, a, &kub, nil)
			if err != nil {
				b.clearManifests(ctx, a)
			}
			k.stop()
			b.removeManifestPods(ctx)
			if err != nil {
				return err
			}
			b.rep.Settings["kubelet"] = kubeletVersion(b.o.kubelet) + ": " + kubeletSettings
		}
	}
	b.manifestRows(&raw, &mkl, &kub)
	return nil
}

// rawManifest is the floor's part of the manifest scenarios when
// minikubelet's block, which interleaves it, does not run (--agents
// kubelet): the same starts and rounds, and the probe floor on as many
// floor pods (the same server, so the same probes).
func (b *bench) rawManifest(ctx context.Context, raw *agentRun) error {
	if b.want("manifest-start") {
		for i := range b.o.reps {
			t0 := time.Now()
			p, err := b.raw.Start(ctx, b.name("mstart-raw"))
			d := time.Since(t0)
			if rerr := b.raw.Remove(ctx, p); err == nil {
				err = rerr
			}
			if err != nil {
				return fmt.Errorf("manifest start raw #%d: %w", i+1, err)
			}
			raw.started = append(raw.started, d)
			progress("manifest start %d/%d: raw %s", i+1, b.o.reps, d.Round(100*time.Microsecond))
		}
	}
	n := b.o.manifestPods
	if b.want("manifest-density") || b.want("manifest-delete") {
		for r := range b.o.rounds {
			total, lat, gone, err := b.rawRound(ctx, fmt.Sprintf("mdensity-raw-%d", r), n, fmt.Sprintf("manifest round %d/%d", r+1, b.o.rounds))
			if err != nil {
				return err
			}
			raw.total, raw.lat, raw.gone, raw.down = append(raw.total, total), append(raw.lat, lat...), append(raw.gone, gone), append(raw.down, gone)
		}
	}
	if b.want("manifest-steady") {
		pods := make([]*rawPod, n)
		errs := make([]error, n)
		var wg sync.WaitGroup
		for i := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				pods[i], errs[i] = b.raw.Start(ctx, fmt.Sprintf("msteady-raw-%d", i))
			}()
		}
		wg.Wait()
		err := errors.Join(errs...)
		var ips []string
		for _, p := range nonNil(pods) {
			if err == nil {
				err = waitTCP(ctx, p.IP, tcpPort)
			}
			ips = append(ips, p.IP)
		}
		if err == nil {
			var fu usage
			if fu, err = probeFloor(ctx, ips, b.o.steadyDuration); err == nil {
				raw.steadyFloor = &fu
				progress("manifest steady: probe floor of %d floor pods: CPU %.2f %% of a core", len(ips), fu.cpu)
			}
		}
		if rerr := b.raw.RemoveAll(ctx, nonNil(pods)); err == nil {
			err = rerr
		}
		if err != nil {
			return fmt.Errorf("manifest steady raw: %w", err)
		}
	}
	return nil
}

// removeManifestPods stops and removes whatever manifest pod an agent
// left in the runtime (after the kubelet stopped, or a failure).
func (b *bench) removeManifestPods(ctx context.Context) {
	sbs, err := b.rt.ListPodSandbox(ctx, &runtimeapi.PodSandboxFilter{LabelSelector: map[string]string{labelPodNS: manifestNS}})
	if err != nil || len(sbs) == 0 {
		return
	}
	progress("cleanup: removing %d manifest pods the agents left", len(sbs))
	for _, sb := range sbs {
		_ = b.rt.StopPodSandbox(ctx, sb.Id)
		_ = b.rt.RemovePodSandbox(ctx, sb.Id)
	}
}

// kubeletVersion is the binary's --version ("Kubernetes v1.37.2").
func kubeletVersion(bin string) string {
	out, err := exec.Command(bin, "--version").Output()
	if err != nil {
		return "kubelet"
	}
	return strings.TrimSpace(string(out))
}

// manifestRows reports scenario 5.
func (b *bench) manifestRows(raw, mkl, kub *agentRun) {
	n := b.o.manifestPods
	sc := "5 manifest"
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
	row := func(metric, unit string, r, m, k *Stat) Row {
		return newRow(sc, metric, unit, r, m).withKubelet(k)
	}
	// The target of issue #27 on every scenario: at least as good as the
	// kubelet (less time, memory or CPU; more pods/s).
	atMost := func(r Row) Row {
		if r.KubeletRatio == 0 {
			return r
		}
		return r.target("≤ kubelet", r.KubeletRatio <= 1)
	}
	var rows []Row
	if b.want("manifest-start") {
		rows = append(rows, atMost(row("manifest written → container running (raw: StartContainer returned)", "ms",
			summarize(ms(raw.started)), summarize(ms(mkl.started)), summarize(ms(kub.started)))))
	}
	rounds := fmt.Sprintf("median of %d rounds", b.o.rounds)
	if b.want("manifest-density") {
		tp := row(fmt.Sprintf("throughput, %d pods at once (%s)", n, rounds), "pods/s", summarize(tput(raw.total)), summarize(tput(mkl.total)), summarize(tput(kub.total)))
		if tp.KubeletRatio != 0 {
			tp = tp.target("≥ kubelet", tp.KubeletRatio >= 1)
		}
		rows = append(rows,
			row(fmt.Sprintf("all %d running (%s)", n, rounds), "s", summarize(secs(raw.total)), summarize(secs(mkl.total)), summarize(secs(kub.total))),
			tp,
			row("per pod: manifest written → running (all rounds)", "ms", summarize(ms(raw.lat)), summarize(ms(mkl.lat)), summarize(ms(kub.lat))))
	}
	if b.want("manifest-delete") {
		rows = append(rows,
			atMost(row(fmt.Sprintf("%d manifests removed, grace %d s: stopped, not ready, IPs released (%s; raw: gone)", n, b.o.grace, rounds), "s",
				summarize(secs(raw.down)), summarize(secs(mkl.down)), summarize(secs(kub.down)))),
			row("… and the runtime lists none of their objects", "s", summarize(secs(raw.gone)), summarize(secs(mkl.gone)), summarize(secs(kub.gone))))
	}
	if b.want("manifest-steady") {
		one := func(ran bool, d time.Duration) *Stat {
			if !ran {
				return nil
			}
			return single(d.Seconds())
		}
		rows = append(rows,
			row(fmt.Sprintf("all %d pods with two probes each running (1 round)", n), "s", nil, one(mkl.steadyRan, mkl.steadyTotal), one(kub.steadyRan, kub.steadyTotal)))
		for _, w := range []struct {
			pods int
			pick func(*agentRun) *usage
		}{{0, func(r *agentRun) *usage { return r.steadyIdle }}, {n, func(r *agentRun) *usage { return r.steady }}} {
			get := func(r *agentRun, f func(usage) *Stat) *Stat {
				if u := w.pick(r); u != nil {
					return f(*u)
				}
				return nil
			}
			var floor *Stat
			if w.pods > 0 && raw.steadyFloor != nil {
				floor = single(raw.steadyFloor.cpu)
			}
			probes := ""
			if w.pods > 0 {
				probes = " × 2 probes"
			}
			rows = append(rows,
				atMost(row(fmt.Sprintf("agent RSS, %d pods%s (1 s samples)", w.pods, probes), "MiB", nil,
					get(mkl, func(u usage) *Stat { return summarize(u.rss) }), get(kub, func(u usage) *Stat { return summarize(u.rss) }))),
				row(fmt.Sprintf("agent RssAnon, %d pods%s", w.pods, probes), "MiB", nil,
					get(mkl, func(u usage) *Stat { return summarize(u.anon) }), get(kub, func(u usage) *Stat { return summarize(u.anon) })),
				row(fmt.Sprintf("agent RssFile, %d pods%s", w.pods, probes), "MiB", nil,
					get(mkl, func(u usage) *Stat { return summarize(u.file) }), get(kub, func(u usage) *Stat { return summarize(u.file) })),
				atMost(row(fmt.Sprintf("agent CPU, %d pods%s (mean over %s; raw: the probe floor)", w.pods, probes, b.o.steadyDuration), "% of a core", floor,
					get(mkl, func(u usage) *Stat { return single(u.cpu) }), get(kub, func(u usage) *Stat { return single(u.cpu) }))))
		}
	}
	b.rep.Rows = append(b.rep.Rows, rows...)
	b.rep.Settings["manifest pods"] = fmt.Sprint(n)
	b.rep.Settings["manifest agents"] = b.o.agents
	b.rep.Settings["manifest poll"] = b.o.manifestPoll.String()
}
