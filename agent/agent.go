// Package agent is minikubelet's node brain: it takes the desired set of
// pods from its sources, observes the runtime through the CRI, and moves the
// runtime toward the pods, one goroutine per pod (house style rules 2–5).
//
// Data path (STYLE.md): source.go decodes → defaults.go/validate.go check →
// Agent.SetPods diffs the desired set against the pod workers →
// pod_workers.go hands the pod to its goroutine → sync_pod.go observes,
// plans (plan.go, pure) and executes (sandbox.go, container.go).
package agent

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"

	"github.com/minikubelet/minikubelet/agent/backoff"
	"github.com/minikubelet/minikubelet/agent/config"
	"github.com/minikubelet/minikubelet/agent/eviction"
	agentmetrics "github.com/minikubelet/minikubelet/agent/metrics"
	"github.com/minikubelet/minikubelet/agent/node"
	"github.com/minikubelet/minikubelet/agent/podcgroup"
	"github.com/minikubelet/minikubelet/agent/podevents"
	"github.com/minikubelet/minikubelet/agent/podspec"
	"github.com/minikubelet/minikubelet/agent/source"
	"github.com/minikubelet/minikubelet/agent/stopgate"
	"github.com/minikubelet/minikubelet/agent/termmsg"
	"github.com/minikubelet/minikubelet/agent/volume"
	"github.com/minikubelet/minikubelet/cgroups"
	"github.com/minikubelet/minikubelet/cni"
	"github.com/minikubelet/minikubelet/cri"
	"github.com/minikubelet/minikubelet/probes"
)

// Config holds the node settings the agent needs: agent/config's, an
// alias so that its users keep writing agent.Config.
type Config = config.Config

// checkTestConfig is nil except in this package's tests (main_test.go),
// which refuse a Config whose defaults would be this machine's own state
// (its directories, resolver, CNI files and addresses): a unit test must
// neither read nor change them (issue #17).
var checkTestConfig func(Config)

// Deps are the agent's collaborators; cmd/minikubelet builds the real ones,
// tests pass fakes.
type Deps struct {
	Runtime  cri.Runtime
	Images   cri.Images
	Clock    clock.WithTicker // nil = real clock
	Logger   *slog.Logger
	Observer podevents.Observer // nil = nobody watches
	// Cgroups manages the kubepods hierarchy and pod cgroups; nil leaves
	// pods in the runtime's default cgroup parent.
	Cgroups cgroups.Manager
	// Mounter mounts the tmpfs of secret and memory emptyDir volumes; nil
	// = the host's (tests above the engine pass a fake).
	Mounter volume.VolumeMounter
	// Tokens issues service account tokens (cluster mode); nil refuses
	// every pod that projects one (token.go).
	Tokens volume.TokenSource
	// TrustBundles reads the cluster's ClusterTrustBundles (cluster
	// mode); nil refuses every pod that projects one (agent/volume:
	// trustbundle.go).
	TrustBundles volume.ClusterTrustBundles
	// PodCertificates creates and reads PodCertificateRequests (cluster
	// mode); nil refuses every pod that projects a pod certificate
	// (agent/volume: podcert.go).
	PodCertificates volume.PodCertificateIssuer
	// Services lists the cluster's Services for the service link
	// variables (cluster mode); nil gives containers none (service_env.go).
	Services ServiceLister
	// NetworkReady reuses a recent NetworkReady=true for the pods' starts
	// (cni.ReadyCache); nil asks the runtime at every sandbox creation.
	NetworkReady *cni.ReadyCache
}

// Agent runs the node's pods.
type Agent struct {
	cfg      Config
	runtime  cri.Runtime
	images   cri.Images
	clock    clock.WithTicker
	logger   *slog.Logger
	observer podevents.Observer
	// lifecycle is told when pods appear and leave (nil: nobody).
	lifecycle podLifecycle
	// finalStatus keeps the final status of the local API's pods (nil:
	// no local API; final_status.go). The daemon sets it before it runs.
	finalStatus finalStatusStore

	// mu guards workers.
	mu sync.Mutex
	// workers holds one worker per known pod UID, until its teardown ends.
	workers map[types.UID]*podWorker
	// workerEnds counts the workers that left workers: the relist tells a
	// pod without one from a pod whose worker ended while it listed.
	workerEnds atomic.Uint64
	// wg counts running worker goroutines.
	wg sync.WaitGroup
	// rejected holds, guarded by mu, the pods admission refused, carrying
	// their final status, until they leave the desired set. No worker and no
	// runtime object exists for them.
	rejected map[types.UID]*v1.Pod
	// restartAfterTeardown holds pods that came back while their old
	// worker was still tearing them down; guarded by mu.
	restartAfterTeardown map[types.UID]*v1.Pod
	// stopping is set once the agent stops its workers; guarded by mu.
	stopping bool
	// deleting holds the UIDs of markDeleted's last list; guarded by mu.
	deleting map[types.UID]bool
	// orphanGate, when set (the daemon), is closed once orphans were
	// collected; PodDone waits for it for pods it does not know. Guarded
	// by mu.
	orphanGate chan struct{}

	// crashBackoff delays container restarts (CrashLoopBackOff).
	crashBackoff *backoff.Backoff
	// imageBackoff delays image pulls after failures (ImagePullBackOff).
	imageBackoff *backoff.Backoff
	// termMessages caches termination messages by container ID.
	termMessages termmsg.Cache
	// probes runs the startup, liveness and readiness probes.
	probes *probes.Manager
	// cgroups manages pod cgroups (nil: none).
	cgroups cgroups.Manager
	// burstableTier is the burstable tier's last written shares.
	burstableTier podcgroup.BurstableTier
	// stops counts the pods being stopped: removals wait (sync_teardown.go).
	stops stopgate.Gate
	// lastRelist is when a relist last succeeded; guarded by mu.
	lastRelist time.Time
	// eventsLive is set while the runtime streams container events to
	// every subscriber, and eventSeen when one came since the last relist
	// (events_stream.go, sync_loop.go).
	eventsLive, eventSeen atomic.Bool
	// readySandboxes counts ready sandboxes at the last relist; guarded
	// by mu.
	readySandboxes int
	metrics        *agentmetrics.Metrics // the Prometheus metrics, fed the running pods count
	// config holds the ConfigMaps and Secrets (SetConfigData); created on
	// first use by configData, guarded by configOnce.
	config     *source.ConfigStore
	configOnce sync.Once
	// mounter mounts the tmpfs of secret and memory emptyDir volumes; nil
	// is the host's (volumeMounter).
	mounter volume.VolumeMounter
	// started is when this agent was built: container starts left
	// unfinished before it are a dead process's (startInterrupted).
	started time.Time
	// tokens caches service account tokens; nil without Deps.Tokens.
	tokens *volume.TokenCache
	// trustBundles reads ClusterTrustBundles (Deps.TrustBundles); nil
	// standalone.
	trustBundles volume.ClusterTrustBundles
	// podCerts keeps the pods' certificates; nil without
	// Deps.PodCertificates.
	podCerts *volume.PodCertificates
	// services lists the cluster's Services (Deps.Services); nil standalone.
	services ServiceLister
	// readyCache is Deps.NetworkReady (nil: every start asks).
	readyCache *cni.ReadyCache
	// eviction is the eviction manager (agent/eviction, built by EnableEviction: eviction_engine.go).
	eviction *eviction.Manager
	// runtimeVer is the runtime's name and version, asked once (imagevolume.go).
	runtimeVer runtimeVersionCache
	// userNS is the ID range allocator and the runtime's user namespace support (userns.go).
	userNS userNSState
	// rro is whether the runtime mounts recursively read-only (rro.go).
	rro podspec.RecursiveReadOnlySupport
}

// New builds an agent. Nothing runs until Run.
func New(cfg Config, deps Deps) *Agent {
	if checkTestConfig != nil {
		checkTestConfig(cfg)
	}
	a := &Agent{
		cfg:      cfg.WithDefaults(),
		runtime:  deps.Runtime,
		images:   deps.Images,
		clock:    deps.Clock,
		logger:   deps.Logger,
		observer: deps.Observer,
		cgroups:  deps.Cgroups,
		mounter:  deps.Mounter,
		services: deps.Services,
		workers:  make(map[types.UID]*podWorker),
		rejected: make(map[types.UID]*v1.Pod),

		restartAfterTeardown: make(map[types.UID]*v1.Pod),
		trustBundles:         deps.TrustBundles,
		readyCache:           deps.NetworkReady,
	}
	// The kubelet's override: a container that ran 10 minutes starts over.
	a.crashBackoff = backoff.New(a.cfg.BackoffInitial, a.cfg.BackoffMax, 10*time.Minute)
	a.imageBackoff = backoff.New(a.cfg.BackoffInitial, a.cfg.BackoffMax, 0)
	a.probes = a.newProber()
	a.metrics = agentmetrics.New(a.countRunningPods)
	if a.clock == nil {
		a.clock = clock.RealClock{}
	}
	if a.logger == nil {
		a.logger = slog.New(slog.DiscardHandler)
	}
	if a.observer == nil {
		a.observer = podevents.Nop{}
	}
	a.started = a.clock.Now()
	a.tokens = volume.NewTokenCache(deps.Tokens, a.clock, a.logger)
	a.podCerts = volume.NewPodCertificates(deps.PodCertificates, a.clock, a.logger)
	return a
}

// EnsureNetwork installs the node's CNI conflist into the runtime's conf dir
// and waits until the runtime reports NetworkReady. It returns notices worth
// showing the user (e.g. another conflist shadowing ours).
func (a *Agent) EnsureNetwork(ctx context.Context) (notices []string, err error) {
	_, notices, err = cni.Install(ctx, a.cfg.Network)
	if err != nil {
		return notices, fmt.Errorf("install pod network config: %w", err)
	}
	err = cni.WaitReady(ctx, a.cfg.Network, a.NetworkReady)
	return notices, err
}

// networkReady asks the runtime for its NetworkReady condition.
func (a *Agent) networkReady(ctx context.Context) (bool, string, string, error) {
	st, err := a.runtime.Status(ctx, false)
	if err != nil {
		return false, "", "", err
	}
	for _, c := range st.GetStatus().GetConditions() {
		if c.Type == "NetworkReady" {
			return c.Status, c.Reason, c.Message, nil
		}
	}
	return false, "NoNetworkCondition", "runtime reports no NetworkReady condition", nil
}

// SetPods replaces the desired set of pods (the whole set from the source):
// new pods get a worker, changed pods are handed to theirs, pods no longer
// present are torn down.
func (a *Agent) SetPods(pods []*v1.Pod) {
	a.mu.Lock()
	defer a.mu.Unlock()
	want := make(map[types.UID]*v1.Pod, len(pods))
	for _, p := range pods {
		want[p.UID] = p
	}
	for uid, w := range a.workers {
		if _, ok := want[uid]; !ok {
			w.terminate()
		}
	}
	// Pods being torn down still count until their worker ends, as in the
	// kubelet. The list is built for the first new pod only: most sets
	// (every deletion, every unchanged resend) admit nothing.
	var admitted []*v1.Pod
	// New pods are admitted in the source's order, each counting for the
	// next (the kubelet sorts them by creation time).
	for _, p := range pods {
		uid := p.UID
		if rp, ok := a.rejected[uid]; ok {
			// Rejection is terminal: the same pod (same UID) stays
			// rejected, never restarted after the teardown of what a
			// previous run left of it; an update in place (its labels)
			// shows.
			if !equality.Semantic.DeepEqual(rp.ObjectMeta, p.ObjectMeta) || !equality.Semantic.DeepEqual(rp.Spec, p.Spec) {
				np := p.DeepCopy()
				np.Status = rp.Status
				a.rejected[uid] = np
			}
			continue
		}
		if w, ok := a.workers[uid]; ok {
			if w.isTerminating() {
				// Back before its teardown finished: start it again once
				// the old worker is done (nothing is lost), admitted
				// first if that tore down what a previous run left.
				a.restartAfterTeardown[uid] = p
				continue
			}
			if w.specChanged(p) {
				a.handleResizeLocked(w, p, a.othersLocked(uid)) // resize.go
				w.update(p)
			}
			continue
		}
		if st, ok := a.storedFinalStatus(p); ok {
			// Finished before the daemon restarted: never run again.
			a.startFinishedWorkerLocked(p, st) // final_status.go
			continue
		}
		a.admitNewLocked(p, nil, &admitted)
	}
	for uid, rp := range a.rejected {
		if _, ok := want[uid]; !ok {
			delete(a.rejected, uid)
			if a.lifecycle != nil {
				a.lifecycle.podGone(rp)
			}
		}
	}
	for uid := range a.restartAfterTeardown {
		if _, ok := want[uid]; !ok {
			delete(a.restartAfterTeardown, uid)
		}
	}
	a.retryDeferredResizesLocked() // resize.go
}

// reject records a pod admission refused, with the kubelet's Warning event
// and Failed status; a.mu is held.
func (a *Agent) reject(p *v1.Pod, reason, msg string) {
	now := a.clock.Now()
	rp := p.DeepCopy()
	rp.Status = node.RejectedStatus(p, reason, msg, now)
	a.rejected[p.UID] = rp
	a.logger.Warn("Pod rejected", "pod", p.Namespace+"/"+p.Name, "podUID", string(p.UID), "reason", reason, "message", msg)
	a.observer.PodEvent(rp, podevents.Event{Type: v1.EventTypeWarning, Reason: reason, Message: podevents.TruncateMessage(msg, podevents.MaxMessageBytes), Count: 1, FirstTimestamp: now, LastTimestamp: now})
	a.observer.PodStatus(rp.DeepCopy())
}

// admitNewLocked runs a new pod through admission and starts its worker,
// after prev (the teardown of what a previous run left of it) when set, or
// rejects it. admitted are the pods it is counted against, built from the
// workers on first use. a.mu is held.
func (a *Agent) admitNewLocked(p *v1.Pod, prev *podWorker, admitted *[]*v1.Pod) {
	checks := []func(*v1.Pod) (string, string){node.AdmitOS, a.volumes().ProtectedHostPath, a.admitSecurity,
		a.admitServiceAccountTokens, a.admitClusterProjections, a.admitLate} // token.go; agent/eviction, then the devices (devices.go)
	for _, check := range checks {
		if reason, msg := check(p); reason != "" {
			a.reject(p, reason, msg)
			return
		}
	}
	if a.cfg.Node.Allocatable != nil {
		if *admitted == nil {
			*admitted = []*v1.Pod{}
			for _, w := range a.workers {
				*admitted = append(*admitted, w.admissionView())
			}
		}
		if ok, reason, msg := node.Admit(a.cfg.AdmissionNode(), p, *admitted); !ok {
			a.reject(p, reason, msg)
			return
		}
		*admitted = append(*admitted, p)
	}
	a.startWorkerAfterLocked(p, prev)
	// A resize that came while the daemon was down: the worker starts
	// from the checkpoint's allocation, and the new spec is admitted
	// as a resize (the kubelet's backfill of pending resizes).
	if a.handleResizeLocked(a.workers[p.UID], p, a.othersLocked(p.UID)) { // resize.go
		// Its first sync may have read the checkpoint's allocation
		// before the resize was admitted: sync again for it.
		a.workers[p.UID].trigger()
	}
}

// startWorkerAfterLocked starts the worker of a pod that prev, when set,
// tore down (the same pod, back: its containers' restart counts go on);
// a.mu is held.
func (a *Agent) startWorkerAfterLocked(p *v1.Pod, prev *podWorker) {
	w := newPodWorker(a, p)
	if prev != nil {
		w.restartBase = prev.nextRestartCounts()
	}
	a.workers[p.UID] = w
	if a.lifecycle != nil {
		a.lifecycle.podAdded(w.snapshot())
	}
	a.startWorkerGoroutineLocked(w)
}

// startWorkerGoroutineLocked runs a registered worker; a.mu is held.
func (a *Agent) startWorkerGoroutineLocked(w *podWorker) {
	uid := w.spec.UID
	a.wg.Add(1)
	go func() {
		defer a.wg.Done()
		w.run()
		a.mu.Lock()
		defer a.mu.Unlock()
		if a.workers[uid] == w {
			delete(a.workers, uid)
			a.workerEnds.Add(1)
		}
		if w.tornDown {
			if a.lifecycle != nil && !w.quiet {
				a.lifecycle.podGone(w.pod())
			}
			// Its probe series go with it (metrics.ForgetPod); done is
			// closed last, so that PodDone's waiters find all this done.
			a.metrics.ForgetPod(uid)
			close(w.done)
		}
		if next, ok := a.restartAfterTeardown[uid]; ok && !a.stopping {
			delete(a.restartAfterTeardown, uid)
			if w.orphan { // never admitted by this run: admission first
				var admitted []*v1.Pod
				a.admitNewLocked(next, w, &admitted)
			} else {
				a.startWorkerAfterLocked(next, w)
			}
		}
		if !a.stopping {
			// Its resources are free: deferred resizes may fit now.
			a.retryDeferredResizesLocked() // resize.go
		}
	}()
}

// markDeleted gives the worker of each pod its source is deleting the
// deletion mark and grace period its teardown uses. A pod first seen
// marked (deleted before its source delivered it) gets a worker that only
// tears down, as on the kubelet: it reports the terminal phase.
func (a *Agent) markDeleted(pods []*v1.Pod) {
	a.mu.Lock()
	defer a.mu.Unlock()
	prev := a.deleting
	a.deleting = make(map[types.UID]bool, len(pods))
	for _, p := range pods {
		a.deleting[p.UID] = true
		w := a.workers[p.UID]
		if _, rejected := a.rejected[p.UID]; w == nil && !rejected && !prev[p.UID] && !a.stopping {
			a.startWorkerAfterLocked(p, nil) // terminating from the start
			continue
		}
		// Marked already: only a shorter grace period counts (the kubelet's
		// rule); a StopContainer already running keeps its timeout.
		if w == nil || w.pod().DeletionTimestamp != nil && !shorterGrace(p.DeletionGracePeriodSeconds, w.pod().DeletionGracePeriodSeconds) {
			continue
		}
		w.setDeletion(p.DeletionGracePeriodSeconds, a.clock.Now(), false)
	}
}

// shorterGrace reports whether grace period next is shorter than cur (nil:
// the pod's own, which a set one never exceeds here).
func shorterGrace(next, cur *int64) bool {
	return next != nil && (cur == nil || *next < *cur)
}

// AddObserver adds o to the agent's observers (the daemon's API watch, the
// cluster's status writer). It must be called before Run.
func (a *Agent) AddObserver(o podevents.Observer) {
	a.observer = podevents.Observers(a.observer, o)
}

// Holds reports whether the agent has a worker for the pod: it runs it,
// or keeps its stopped containers (a finished pod), or tears it down.
func (a *Agent) Holds(uid types.UID) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	_, ok := a.workers[uid]
	return ok
}

// PodDone returns a channel closed when the pod's worker has finished its
// teardown (or nil when the pod is unknown).
func (a *Agent) PodDone(uid types.UID) <-chan struct{} {
	a.mu.Lock()
	defer a.mu.Unlock()
	if w, ok := a.workers[uid]; ok {
		return w.done
	}
	if _, ok := a.rejected[uid]; ok {
		// Nothing was created: nothing to wait for.
		done := make(chan struct{})
		close(done)
		return done
	}
	if gate := a.orphanGate; gate != nil {
		select {
		case <-gate:
		default:
			// The daemon has not collected orphans yet: a pod unknown now
			// may still be in the runtime (left by the previous run, about
			// to be torn down). Done once collection made sure of it.
			done := make(chan struct{})
			go func() {
				<-gate
				if ch := a.PodDone(uid); ch != nil {
					<-ch
				}
				close(done)
			}()
			return done
		}
	}
	return nil
}

// gateOrphans makes PodDone wait for the first orphan collection for pods
// it does not know (the daemon's start); the returned func opens the gate.
// Call before Run.
func (a *Agent) gateOrphans() (open func()) {
	gate := make(chan struct{})
	a.mu.Lock()
	a.orphanGate = gate
	a.mu.Unlock()
	var once sync.Once
	return func() { once.Do(func() { close(gate) }) }
}

// GetPod returns a copy of the pod with its current status.
func (a *Agent) GetPod(uid types.UID) (*v1.Pod, bool) {
	a.mu.Lock()
	w, ok := a.workers[uid]
	rp, rejected := a.rejected[uid]
	a.mu.Unlock()
	if rejected {
		return rp.DeepCopy(), true
	}
	if !ok {
		return nil, false
	}
	return w.snapshot(), true
}

// stopWait bounds how long stopping the agent waits for its workers to
// return, in wall-clock time: the process is about to exit.
const stopWait = time.Second

// stopWorkers ends every worker goroutine without touching the runtime any
// further. It does not wait for pods: every sync, teardown and kill is
// cancelled (a StopContainer waiting out a 500 s grace period too: the
// runtime has sent the stop signal, and the next start kills the pod again
// if it still runs, as the kubelet does after a restart). Workers get
// stopWait to return; one blocked in a call that ignores its context is
// left behind and logged.
func (a *Agent) stopWorkers() {
	a.mu.Lock()
	a.stopping = true
	for _, w := range a.workers {
		w.cancel()
	}
	a.mu.Unlock()
	done := make(chan struct{})
	go func() {
		a.wg.Wait()
		close(done)
	}()
	t := time.NewTimer(stopWait)
	defer t.Stop()
	select {
	case <-done:
	case <-t.C:
		a.mu.Lock()
		var busy []string
		for _, w := range a.workers {
			p := w.pod()
			busy = append(busy, p.Namespace+"/"+p.Name)
		}
		a.mu.Unlock()
		a.logger.Warn("Stopped without waiting for pod workers that did not return", "pods", busy, "waited", stopWait)
	}
}
