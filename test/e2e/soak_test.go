package e2e

// Over 600 lines: one test: the soak's churn, its disruptions, the leftover
// checks, the figures and the plot belong to one run.

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/crane"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/minikubelet/minikubelet/agent/api"
	"github.com/minikubelet/minikubelet/test/plot"
	"github.com/minikubelet/minikubelet/test/testutil"
)

// The soak (issue #29): a month of a node's churn in an hour. Pods are
// created and deleted through the daemon's API, soakInFlight at a time,
// for MINIKUBELET_SOAK (a duration: `make soak` gives 60m, `make
// test-soak` 5m) or until MINIKUBELET_SOAK_PODS pods (default 10000) have
// gone through, whichever comes first. The mix: probed web pods with a
// ConfigMap and a Secret volume, plain pods, crash-looping pods (deleted
// after their first restart), OOMKilled pods (deleted after the kill) and
// pods whose image is pulled on every start from a registry of the test's
// own. Meanwhile:
//
//   - the daemon is killed with SIGKILL every 10 minutes (once, at 40 %,
//     in a run shorter than 20 minutes) and started again;
//   - containerd is killed and started again once, at 25 %;
//   - the registry is stopped for a minute (a fifth of a short run) at 60 %.
//
// Afterwards nothing may be left: no sandbox, container, IP reservation,
// pod cgroup, mount or pod directory; and the daemon's live heap,
// goroutines and open fds are within 10 % of what it had before (the last
// generation's figures against the first's, each after a GC; RSS is
// recorded beside them, see withinTenPercent). Every 5 s
// the test records RSS, goroutines, fds and pods done into
// $SOAK_OUT/soak.csv and draws $SOAK_OUT/soak.svg (hack/soak.sh copies
// them into docs/ with --update-docs).
//
// hack/e2e.sh leaves it out of the e2e suite (-skip): it runs alone, as
// make test's test-soak part, where no other test adds load.
const soakInFlight = 20

func TestSoak(t *testing.T) {
	durText := os.Getenv("MINIKUBELET_SOAK")
	if durText == "" {
		// hack/e2e.sh leaves it out (-skip); run alone it must be asked for.
		testutil.SkipSuite(t, "soak: set MINIKUBELET_SOAK to a duration (make test-soak: 5m; make soak: 60m)")
		return
	}
	dur, err := time.ParseDuration(durText)
	require.NoError(t, err, "MINIKUBELET_SOAK")
	maxPods := 10000
	if s := os.Getenv("MINIKUBELET_SOAK_PODS"); s != "" {
		maxPods, err = strconv.Atoi(s)
		require.NoError(t, err, "MINIKUBELET_SOAK_PODS")
	}
	out := os.Getenv("SOAK_OUT")
	if out == "" {
		out = t.TempDir()
	}
	require.NoError(t, os.MkdirAll(out, 0o755))

	r := newPrivateRuntime(t)
	g := newTestRegistry(t)
	pullImage := g.addr + "/soak/busybox:1.36"
	require.NoError(t, crane.Copy(suite.registry+"/minikubelet/busybox:1.36", pullImage, crane.Insecure))
	hosts := filepath.Join(r.dir, "certs.d", g.addr)
	require.NoError(t, os.MkdirAll(hosts, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(hosts, "hosts.toml"), []byte(fmt.Sprintf(
		"server = \"http://%s\"\n\n[host.\"http://%s\"]\n  capabilities = [\"pull\", \"resolve\"]\n", g.addr, g.addr)), 0o644))

	d := r.newDaemon(t, nil, "--enable-profiling")
	d.start(t)
	c := d.api()
	_, err = c.CreateConfigMap(t.Context(), &v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "soak", Namespace: "default"}, Data: map[string]string{"greeting": "hello"}})
	require.NoError(t, err)
	_, err = c.CreateSecret(t.Context(), &v1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "soak", Namespace: "default"}, StringData: map[string]string{"token": "s3cret"}})
	require.NoError(t, err)

	s := &soak{t: t, d: d, client: d.api(), pullImage: pullImage, start: time.Now()}
	// Warm up with one pod of each kind, so that "before" is a daemon
	// that has run each kind once, as "after" has (the first run of a
	// code path allocates for good: the JSON and protobuf codecs' caches).
	for kind := range soakKinds {
		s.cycle(t.Context(), fmt.Sprintf("soak-warm-%d", kind), kind)
	}
	before := s.settledSample(t, nil)
	t.Logf("before: %s", before)
	s.saveHeapProfile(t, filepath.Join(out, "heap-before.pb.gz"))

	ctx, cancel := context.WithTimeout(t.Context(), dur)
	defer cancel()
	var wg sync.WaitGroup
	var next atomic.Int64
	for range soakInFlight {
		wg.Go(func() {
			for ctx.Err() == nil {
				i := int(next.Add(1)) - 1
				if i >= maxPods {
					return
				}
				s.cycle(context.WithoutCancel(ctx), fmt.Sprintf("soak-%d", i), i%len(soakKinds))
			}
		})
	}
	// Every pod through before the time is up (SOAK_PODS reached): the soak
	// ends there, so that its rate and its plot hold no idle tail, and the
	// chaos still to come is skipped (the 10,000 pods of make soak took 50
	// of the 60 minutes here; the daemon kill at 50 minutes came after).
	go func() {
		wg.Wait()
		cancel()
	}()
	sampleDone := make(chan struct{})
	go func() {
		defer close(sampleDone)
		tick := time.NewTicker(5 * time.Second)
		defer tick.Stop()
		n := 0
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
				smp, err := s.sample()
				if err != nil {
					continue // the daemon is being restarted
				}
				s.record(smp)
				if n++; n%12 == 0 {
					t.Logf("soak %s: %d pods done; %s", smp.at.Round(time.Second), smp.done, smp)
				}
			}
		}
	}()
	s.chaos(ctx, dur, r, g)
	wg.Wait()
	<-sampleDone
	elapsed := time.Since(s.start)
	t.Logf("soak: %d pods through in %s (%.1f pods/min), %d daemon kills, %d containerd restarts, registry stopped %s",
		s.done.Load(), elapsed.Round(time.Second), float64(s.done.Load())/elapsed.Minutes(), s.kills, s.containerdRestarts, s.registryDown.Round(time.Second))

	s.requireNothingLeft(t, r)
	after := s.settledSample(t, &before)
	t.Logf("after: %s", after)
	s.saveHeapProfile(t, filepath.Join(out, "heap-after.pb.gz"))
	s.record(after)
	require.NoError(t, s.writeOut(out, before, after))
	t.Logf("soak figures: %s/soak.csv, %s/soak.svg", out, out)
	s.mu.Lock()
	failures := slices.Clone(s.failures)
	s.mu.Unlock()
	require.Empty(t, failures, "pods that did not reach their state or were not removed")
	for _, m := range []struct {
		what                 string
		before, after, slack float64
	}{
		{"live heap (MiB)", before.heapMiB, after.heapMiB, soakSlack.heapMiB},
		{"goroutines", float64(before.goroutines), float64(after.goroutines), float64(soakSlack.goroutines)},
		{"open fds", float64(before.fds), float64(after.fds), float64(soakSlack.fds)},
	} {
		// The live heap is held only in the long soak (make soak): a
		// short run's figures are a few hundred pods' worth (see
		// docs/testing.md, "The soak", for what it plateaus at and why).
		// What is kept per pod ever seen is held at unit level, where it
		// is counted rather than weighed (TestDaemon_ChurnKeepsNothingPerPod).
		if m.slack == soakSlack.heapMiB && dur < 20*time.Minute {
			t.Logf("%s: before %.1f, after %.1f (held only in a soak of 20 minutes or more)", m.what, m.before, m.after)
			continue
		}
		require.LessOrEqual(t, m.after, limit(m.before, m.slack), "%s after the soak (%.1f) more than 10%% (or %.0f) above before (%.1f)", m.what, m.after, m.slack, m.before)
	}
	t.Logf("RSS before %.1f MiB, after %.1f MiB (%+.0f %%; reported, see withinTenPercent)", before.rssMiB, after.rssMiB, 100*(after.rssMiB/before.rssMiB-1))
}

// soakKinds are the pod kinds, taken in turn; each returns the pod and
// whether it has reached the state after which it is deleted.
var soakKinds = []func(s *soak, name string) (*v1.Pod, func(*v1.Pod) bool){
	soakWeb, soakPlain, soakWeb, soakCrash, soakWeb, soakOOM, soakPlain, soakPull, soakWeb, soakPlain,
}

// soakWeb: probed (HTTP liveness, TCP readiness), a ConfigMap and a
// Secret volume; done once Ready.
func soakWeb(_ *soak, name string) (*v1.Pod, func(*v1.Pod) bool) {
	p := probedPod(name)
	p.Spec.Containers = p.Spec.Containers[:1]
	p.Spec.Volumes = []v1.Volume{
		{Name: "cm", VolumeSource: v1.VolumeSource{ConfigMap: &v1.ConfigMapVolumeSource{LocalObjectReference: v1.LocalObjectReference{Name: "soak"}}}},
		{Name: "sec", VolumeSource: v1.VolumeSource{Secret: &v1.SecretVolumeSource{SecretName: "soak"}}},
	}
	p.Spec.Containers[0].VolumeMounts = []v1.VolumeMount{{Name: "cm", MountPath: "/etc/cm"}, {Name: "sec", MountPath: "/etc/sec"}}
	return p, isReady
}

// soakPlain: a busybox that sleeps; done once Running.
func soakPlain(_ *soak, name string) (*v1.Pod, func(*v1.Pod) bool) {
	return chaosPod(name), isRunning
}

// soakCrash exits 1 at once, restartPolicy Always: done after its first
// restart (in CrashLoopBackOff or running again).
func soakCrash(_ *soak, name string) (*v1.Pod, func(*v1.Pod) bool) {
	p := chaosPod(name)
	p.Spec.Containers[0].Command = []string{"sh", "-c", "echo crashing; exit 1"}
	return p, func(p *v1.Pod) bool {
		return p != nil && len(p.Status.ContainerStatuses) == 1 && p.Status.ContainerStatuses[0].RestartCount >= 1
	}
}

// soakOOM maps 64 MiB under a 24 MiB limit: done once OOMKilled.
func soakOOM(_ *soak, name string) (*v1.Pod, func(*v1.Pod) bool) {
	p := chaosPod(name)
	p.Spec.Containers[0].Image = suite.registry + "/polinux/stress:latest"
	p.Spec.Containers[0].Command = []string{"stress", "--vm", "1", "--vm-bytes", "64M", "--vm-hang", "0"}
	p.Spec.Containers[0].Resources = v1.ResourceRequirements{Limits: v1.ResourceList{v1.ResourceMemory: resource.MustParse("24Mi")}}
	return p, func(p *v1.Pod) bool {
		if p == nil || len(p.Status.ContainerStatuses) != 1 {
			return false
		}
		st := p.Status.ContainerStatuses[0]
		for _, term := range []*v1.ContainerStateTerminated{st.State.Terminated, st.LastTerminationState.Terminated} {
			if term != nil && term.Reason == "OOMKilled" {
				return true
			}
		}
		return false
	}
}

// soakPull pulls its image on every start (imagePullPolicy Always) from
// the test's registry, which the chaos stops for a while: done once
// Running.
func soakPull(s *soak, name string) (*v1.Pod, func(*v1.Pod) bool) {
	p := chaosPod(name)
	p.Spec.Containers[0].Image = s.pullImage
	p.Spec.Containers[0].ImagePullPolicy = v1.PullAlways
	return p, isRunning
}

// soak is one soak run's state.
type soak struct {
	t *testing.T
	d *daemon
	// client makes every pod call of the soak (the socket stays through
	// the daemon's restarts). One client, as a controller keeps one: a new
	// one per call left each call's connection open for the client's idle
	// timeout (30 s), about 1200 at 20 pods in flight, and the daemon's
	// heap after that peak kept spans it could not return (HeapInuse
	// 1.8 MiB above HeapAlloc before, 4.0 after).
	client    *api.Client
	pullImage string
	start     time.Time
	done      atomic.Int64 // pods created, done and removed

	// daemonMu is held for reading by every API call and for writing
	// while the daemon is killed and started again.
	daemonMu sync.RWMutex

	mu       sync.Mutex // guards what follows
	samples  []soakSample
	uids     []string
	failures []string

	// Written by chaos only, read after it returns.
	kills, containerdRestarts int
	registryDown              time.Duration
}

// soakSample is the daemon's footprint at one moment.
type soakSample struct {
	at                 time.Duration // since the soak started
	rssMiB, anon, file float64
	// heapMiB is the live heap after a GC (HeapAlloc), inuseMiB the
	// heap's spans in use then (HeapInuse: the live heap and the free
	// space of spans that hold any of it); settledSample only.
	heapMiB, inuseMiB float64
	goroutines, fds   int
	done              int64
	pid               int
}

func (s soakSample) String() string {
	heap := ""
	if s.heapMiB > 0 {
		heap = fmt.Sprintf(", live heap %.1f MiB (HeapInuse %.1f)", s.heapMiB, s.inuseMiB)
	}
	return fmt.Sprintf("RSS %.1f MiB (anon %.1f, file %.1f)%s, %d goroutines, %d fds", s.rssMiB, s.anon, s.file, heap, s.goroutines, s.fds)
}

// call runs an API call, retried (while the daemon is being restarted or
// containerd is away) until it succeeds or 3 minutes pass.
func (s *soak) call(ctx context.Context, what string, f func(ctx context.Context) error) error {
	deadline := time.Now().Add(3 * time.Minute)
	for {
		s.daemonMu.RLock()
		c, cancel := context.WithTimeout(ctx, 30*time.Second)
		err := f(c)
		cancel()
		s.daemonMu.RUnlock()
		if err == nil || apierrors.IsNotFound(err) || apierrors.IsAlreadyExists(err) || apierrors.IsInvalid(err) {
			return err
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s: %w", what, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func (s *soak) fail(format string, args ...any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.failures) < 50 {
		s.failures = append(s.failures, fmt.Sprintf(format, args...))
	}
}

// cycle creates one pod, waits (up to 6 minutes: a pull back-off after
// the registry's outage takes a while) until it is done, deletes it and
// waits until the daemon has removed it.
func (s *soak) cycle(ctx context.Context, name string, kind int) {
	pod, done := soakKinds[kind](s, name)
	var created *v1.Pod
	err := s.call(ctx, "create "+name, func(c context.Context) (err error) {
		created, err = s.client.CreatePod(c, pod)
		return err
	})
	if apierrors.IsAlreadyExists(err) { // a retry after the daemon died answering
		err = s.call(ctx, "get "+name, func(c context.Context) (err error) {
			created, err = s.client.GetPod(c, "default", name)
			return err
		})
	}
	if err != nil {
		s.fail("%s: %v", name, err)
		return
	}
	s.mu.Lock()
	s.uids = append(s.uids, string(created.UID))
	s.mu.Unlock()
	deadline := time.Now().Add(6 * time.Minute)
	var last *v1.Pod
	for {
		var p *v1.Pod
		err := s.call(ctx, "get "+name, func(c context.Context) (err error) {
			p, err = s.client.GetPod(c, "default", name)
			return err
		})
		if err == nil {
			last = p
			if done(p) {
				break
			}
		}
		if time.Now().After(deadline) {
			s.fail("%s: not done after 6m: %s", name, podSummary(last))
			break
		}
		time.Sleep(500 * time.Millisecond)
	}
	zero := int64(0)
	if err := s.call(ctx, "delete "+name, func(c context.Context) error {
		_, err := s.client.DeletePod(c, "default", name, &zero)
		return err
	}); err != nil && !apierrors.IsNotFound(err) {
		s.fail("%s: %v", name, err)
		return
	}
	deadline = time.Now().Add(3 * time.Minute)
	for {
		err := s.call(ctx, "get "+name, func(c context.Context) error {
			_, err := s.client.GetPod(c, "default", name)
			return err
		})
		if apierrors.IsNotFound(err) {
			s.done.Add(1)
			return
		}
		if time.Now().After(deadline) {
			s.fail("%s: still there 3m after its deletion (%v)", name, err)
			return
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// chaos kills the daemon, restarts containerd and stops the registry on
// the schedule in TestSoak's comment; it returns when ctx is done.
func (s *soak) chaos(ctx context.Context, dur time.Duration, r *privateRuntime, g *testRegistry) {
	type event struct {
		at   time.Duration
		what string
	}
	var events []event
	if dur >= 20*time.Minute {
		for at := 10 * time.Minute; at < dur; at += 10 * time.Minute {
			events = append(events, event{at, "kill daemon"})
		}
	} else {
		events = append(events, event{dur * 4 / 10, "kill daemon"})
	}
	events = append(events, event{dur / 4, "restart containerd"}, event{dur * 6 / 10, "stop registry"})
	slices.SortFunc(events, func(a, b event) int { return int(a.at - b.at) })
	outage := min(time.Minute, dur/5)
	t := s.t
	for _, e := range events {
		select {
		case <-ctx.Done():
			return
		case <-time.After(time.Until(s.start.Add(e.at))):
		}
		t.Logf("soak %s: %s (%d pods done)", time.Since(s.start).Round(time.Second), e.what, s.done.Load())
		switch e.what {
		case "kill daemon":
			s.daemonMu.Lock()
			s.d.kill9(t)
			s.d.start(t)
			s.kills++
			s.daemonMu.Unlock()
		case "restart containerd":
			r.kill9(t)
			r.start(t)
			r.waitCRI(t, 2*time.Minute)
			s.containerdRestarts++
		case "stop registry":
			g.stop(t)
			down := time.Now()
			select {
			case <-ctx.Done():
			case <-time.After(outage):
			}
			g.start(t)
			s.registryDown = time.Since(down)
		}
	}
	<-ctx.Done()
}

var goroutineTotal = regexp.MustCompile(`goroutine profile: total (\d+)`)

// sample reads the daemon's footprint: RSS from /proc, goroutines from
// its profile endpoint, fds from /proc/PID/fd.
func (s *soak) sample() (soakSample, error) {
	s.daemonMu.RLock()
	defer s.daemonMu.RUnlock()
	pid := s.d.cmd.Process.Pid
	smp := soakSample{at: time.Since(s.start), done: s.done.Load(), pid: pid}
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return smp, err
	}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 2 {
			continue
		}
		kib, _ := strconv.ParseFloat(fields[1], 64)
		switch fields[0] {
		case "VmRSS:":
			smp.rssMiB = kib / 1024
		case "RssAnon:":
			smp.anon = kib / 1024
		case "RssFile:":
			smp.file = kib / 1024
		}
	}
	f.Close()
	fds, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		return smp, err
	}
	smp.fds = len(fds)
	code, body, err := s.d.get("/debug/pprof/goroutine?debug=1")
	if err != nil || code != 200 {
		return smp, fmt.Errorf("goroutine profile: %d %v", code, err)
	}
	m := goroutineTotal.FindStringSubmatch(body)
	if m == nil {
		return smp, errors.New("goroutine profile: no total")
	}
	smp.goroutines, _ = strconv.Atoi(m[1])
	return smp, nil
}

var (
	heapInuse = regexp.MustCompile(`(?m)^# HeapInuse = (\d+)$`)
	heapAlloc = regexp.MustCompile(`(?m)^# HeapAlloc = (\d+)$`)
)

// settledSample is a sample after a GC in the daemon (its heap profile
// endpoint runs one with gc=1, and reports the live heap), once the
// footprint has settled (up to 2 minutes): without want, until two
// samples 5 s apart have the same goroutines and fds; with want, until it
// is within 10 % of want (goroutines of the last deletions wind down).
func (s *soak) settledSample(t *testing.T, want *soakSample) soakSample {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	var prev *soakSample
	for {
		time.Sleep(5 * time.Second)
		code, body, err := s.d.get("/debug/pprof/heap?debug=1&gc=1")
		require.NoError(t, err)
		require.Equal(t, 200, code, body)
		alloc, inuse := heapAlloc.FindStringSubmatch(body), heapInuse.FindStringSubmatch(body)
		require.True(t, alloc != nil && inuse != nil, "no HeapAlloc or HeapInuse in the heap profile")
		smp, err := s.sample()
		require.NoError(t, err)
		a, _ := strconv.ParseFloat(alloc[1], 64)
		i, _ := strconv.ParseFloat(inuse[1], 64)
		smp.heapMiB, smp.inuseMiB = a/(1<<20), i/(1<<20)
		switch {
		case time.Now().After(deadline):
			return smp
		case want == nil && prev != nil && smp.goroutines == prev.goroutines && smp.fds == prev.fds:
			return smp // steady: the same figures 5 s apart
		case want != nil && withinTenPercent(smp, *want):
			return smp
		}
		prev = &smp
	}
}

// saveHeapProfile writes the daemon's heap profile, after a GC, to path:
// `go tool pprof -sample_index=inuse_space -base heap-before.pb.gz
// heap-after.pb.gz` names what the live heap grew by. (A daemon killed
// meanwhile has sampled its heap only since it started again.)
func (s *soak) saveHeapProfile(t *testing.T, path string) {
	t.Helper()
	code, body, err := s.d.get("/debug/pprof/heap?gc=1")
	require.NoError(t, err)
	require.Equal(t, 200, code, body)
	require.NoError(t, os.WriteFile(path, []byte(body), 0o644))
}

// withinTenPercent: the live heap, goroutines and fds of got are at most
// 10 % above want's. RSS is reported, not held to this: Go's allocator
// keeps freed pages until its scavenger returns them (minutes later, and
// up to the heap goal, twice the live heap), so RSS after a churn says
// more about the allocator's slack than about what the daemon keeps; the
// live heap after a GC is what a leak would grow.
//
// Each figure may also exceed 10 % by a small absolute amount (soakSlack):
// 10 % of an idle daemon's 19 goroutines or 14 fds is less than the two of
// one kept-alive connection of the test's own API client. The live heap
// may grow by 2 MiB: the local API's watch history (api.PodWatchHistory,
// 256 events of about 4 KiB, a whole pod each), which the warm-up's 10
// pods fill only a fifth of, and a GC cycle's noise; a leak grows with the
// pods and passes any such constant (but the last daemon of make soak has
// seen only the pods since the last kill, up to 10 minutes' worth).
func withinTenPercent(got, want soakSample) bool {
	return got.heapMiB <= limit(want.heapMiB, soakSlack.heapMiB) &&
		float64(got.goroutines) <= limit(float64(want.goroutines), float64(soakSlack.goroutines)) &&
		float64(got.fds) <= limit(float64(want.fds), float64(soakSlack.fds))
}

// soakSlack is the absolute allowance above 10 % (withinTenPercent).
var soakSlack = soakSample{heapMiB: 2, goroutines: 4, fds: 4}

// limit is before plus 10 %, or plus slack when that is more.
func limit(before, slack float64) float64 { return max(before*1.1, before+slack) }

func (s *soak) record(smp soakSample) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.samples = append(s.samples, smp)
}

// requireNothingLeft waits (up to 2 minutes) until the daemon lists no
// pod and the runtime, the IP store, the cgroups, the mount table and the
// root dir hold nothing of the soak's pods.
func (s *soak) requireNothingLeft(t *testing.T, r *privateRuntime) {
	t.Helper()
	s.mu.Lock()
	uids := slices.Clone(s.uids)
	s.mu.Unlock()
	waitFor(t, "nothing of the soak left", 2*time.Minute, func() string {
		var left []string
		if l, err := s.d.api().ListPods(t.Context(), ""); err != nil {
			return err.Error()
		} else if len(l.Items) > 0 {
			left = append(left, fmt.Sprintf("%d pods listed", len(l.Items)))
		}
		v, err := observeRuntime(r)
		if err != nil {
			return err.Error()
		}
		if n := len(v.ready) + len(v.notReady) + len(v.running) + len(v.other); n > 0 {
			left = append(left, "runtime objects:\n"+v.String())
		}
		if res := r.reservations(t); len(res) > 0 {
			left = append(left, fmt.Sprintf("IP reservations %v", res))
		}
		for _, uid := range uids {
			if cg := podCgroups(uid); len(cg) > 0 {
				left = append(left, fmt.Sprintf("cgroups %v", cg))
				break
			}
		}
		if m := mountsUnder(t, s.d.root); len(m) > 0 {
			left = append(left, fmt.Sprintf("mounts %v", m))
		}
		if es, err := os.ReadDir(filepath.Join(s.d.root, "pods")); err == nil && len(es) > 0 {
			left = append(left, fmt.Sprintf("%d pod dirs under %s/pods: %s", len(es), s.d.root, podDirsLeft(filepath.Join(s.d.root, "pods"), es)))
		}
		return strings.Join(left, "; ")
	})
}

// podDirsLeft names up to 3 leftover pod directories and what each holds
// (paths relative to it, at most 20), so that a failure says which step
// left it: a volume, a hosts file, a termination message, a marker.
func podDirsLeft(root string, es []os.DirEntry) string {
	var out []string
	for _, e := range es[:min(len(es), 3)] {
		var files []string
		_ = filepath.WalkDir(filepath.Join(root, e.Name()), func(p string, d os.DirEntry, err error) error {
			if err == nil && len(files) < 20 {
				rel, _ := filepath.Rel(filepath.Join(root, e.Name()), p)
				files = append(files, rel)
			}
			return nil
		})
		out = append(out, fmt.Sprintf("%s %v", e.Name(), files))
	}
	return strings.Join(out, ", ")
}

// writeOut writes soak.csv and soak.svg into dir.
func (s *soak) writeOut(dir string, before, after soakSample) error {
	s.mu.Lock()
	samples := slices.Clone(s.samples)
	s.mu.Unlock()
	var csv strings.Builder
	csv.WriteString("minutes,rss_mib,rss_anon_mib,rss_file_mib,goroutines,fds,pods_done,daemon_pid\n")
	var rss, gor, fds, rate []plot.Point
	var prev *soakSample
	for i, smp := range samples {
		m := smp.at.Minutes()
		fmt.Fprintf(&csv, "%.3f,%.2f,%.2f,%.2f,%d,%d,%d,%d\n", m, smp.rssMiB, smp.anon, smp.file, smp.goroutines, smp.fds, smp.done, smp.pid)
		rss = append(rss, plot.Point{X: m, Y: smp.rssMiB})
		gor = append(gor, plot.Point{X: m, Y: float64(smp.goroutines)})
		fds = append(fds, plot.Point{X: m, Y: float64(smp.fds)})
		// pods/min over the last minute's samples.
		if prev == nil || smp.at-prev.at >= time.Minute || i == len(samples)-1 {
			if prev != nil && smp.at > prev.at {
				rate = append(rate, plot.Point{X: m, Y: float64(smp.done-prev.done) / (smp.at - prev.at).Minutes()})
			}
			prev = &samples[i]
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "soak.csv"), []byte(csv.String()), 0o644); err != nil {
		return err
	}
	elapsed := time.Duration(0)
	if len(samples) > 0 {
		elapsed = samples[len(samples)-1].at
	}
	chart := plot.Chart{
		Title: fmt.Sprintf("minikubelet soak: %d pods in %s, %d in flight (%d daemon kills, %d containerd restart, registry down %s)",
			s.done.Load(), elapsed.Round(time.Minute), soakInFlight, s.kills, s.containerdRestarts, s.registryDown.Round(time.Second)),
		XLabel: "minutes",
		Panels: []plot.Panel{
			{Title: fmt.Sprintf("daemon RSS, MiB (before %.1f, after %.1f; live heap %.1f, %.1f)", before.rssMiB, after.rssMiB, before.heapMiB, after.heapMiB), YZero: true, Series: []plot.Series{{Name: "RSS", Points: rss}}},
			{Title: fmt.Sprintf("goroutines (before %d, after %d)", before.goroutines, after.goroutines), YZero: true, Series: []plot.Series{{Name: "goroutines", Points: gor}}},
			{Title: fmt.Sprintf("open fds (before %d, after %d)", before.fds, after.fds), YZero: true, Series: []plot.Series{{Name: "fds", Points: fds}}},
			{Title: "pods through per minute", YZero: true, Series: []plot.Series{{Name: "pods/min", Points: rate}}},
		},
	}
	f, err := os.Create(filepath.Join(dir, "soak.svg"))
	if err != nil {
		return err
	}
	if err := chart.WriteSVG(f); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	summary := fmt.Sprintf("pods %d\nminutes %.1f\npods_per_min %.1f\ndaemon_kills %d\ncontainerd_restarts %d\nregistry_down_s %.0f\nbefore %s\nafter %s\n",
		s.done.Load(), elapsed.Minutes(), float64(s.done.Load())/math.Max(elapsed.Minutes(), 1e-9), s.kills, s.containerdRestarts, s.registryDown.Seconds(), before, after)
	return os.WriteFile(filepath.Join(dir, "soak.txt"), []byte(summary), 0o644)
}
