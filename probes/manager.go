package probes

import (
	"cmp"
	"context"
	"log/slog"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
)

// defaultUpdatesBuffer is the capacity of the Updates channel.
const defaultUpdatesBuffer = 64

// Config is what a Manager needs. Every field is optional.
type Config struct {
	// Execer runs exec probes (the agent passes its cri.Runtime). Without
	// it exec probes error and never change a result.
	Execer Execer
	// ClassifyExecError reads Execer errors; nil means
	// DefaultExecErrorClassifier. See ExecErrorClassifier for the agent's.
	ClassifyExecError ExecErrorClassifier
	// Clock drives schedules and timestamps; nil means the real clock.
	Clock clock.Clock
	// Logger is narrowed to component=probes; nil discards logs.
	Logger *slog.Logger
	// UserAgent of httpGet and grpc probes; "" means DefaultUserAgent.
	UserAgent string
	// OnEvent, if set, is called from worker goroutines for every probe
	// run that failed, warned or errored (the kubelet's Unhealthy and
	// ProbeWarning events), before thresholds are counted. It must not
	// block.
	OnEvent func(Event)
	// UpdatesBuffer is the capacity of the Updates channel; 0 means 64.
	UpdatesBuffer int
	// Rand returns a number in [0,1) for the start-up jitter and for the
	// offset of the agent's slot grid (see scheduleSlot); nil means
	// math/rand/v2.Float64. Tests pin it.
	Rand func() float64
}

// ContainerState is what the agent observed of one container of a pod.
type ContainerState struct {
	// Name is the container's name in the pod spec.
	Name string
	// ID is the runtime's container ID of the newest instance.
	ID string
	// Running is true while that instance runs.
	Running bool
	// StartedAt is when it started; initialDelaySeconds counts from here.
	StartedAt time.Time
}

// Update is a change of a cached probe result, sent on Manager.Updates.
type Update struct {
	PodUID        types.UID
	ContainerName string
	// ContainerID is the instance the result is about; an update whose ID
	// is not the container's current one is stale and can be ignored.
	ContainerID string
	Kind        Kind
	// Result is the new cached result: Success or Failure.
	Result Result
	// Message is the output of the run that completed the threshold (the
	// probe's output or failure text).
	Message string
	// TerminationGracePeriodSeconds is the probe's own grace period
	// (probe.terminationGracePeriodSeconds), nil if unset. The agent uses
	// it when a liveness or startup Failure makes it kill the container
	// (kubelet-facts §4.3).
	TerminationGracePeriodSeconds *int64
}

// Event is one probe run worth a pod event. Type is always "Warning".
type Event struct {
	PodUID        types.UID
	ContainerName string
	ContainerID   string
	Kind          Kind
	// Type is v1.EventTypeWarning.
	Type string
	// Reason is "Unhealthy" for a failed or errored run, "ProbeWarning"
	// for a Warning.
	Reason string
	// Message is "<Kind> probe failed: <output>", "<Kind> probe errored:
	// <error>" or "<Kind> probe warning: <output>".
	Message string
}

// Event reasons.
const (
	ReasonUnhealthy    = "Unhealthy"
	ReasonProbeWarning = "ProbeWarning"
)

// ProbeStatus is one worker's state for describe and status output (house
// style rule 18).
type ProbeStatus struct {
	PodUID        types.UID
	ContainerName string
	ContainerID   string
	Kind          Kind
	// Result is the cached result (Unknown, Success, Failure).
	Result Result
	// LastResult is what the last completed run returned (all four
	// values); Unknown before the first run.
	LastResult Result
	// LastMessage is the last run's output or failure text.
	LastMessage string
	// LastProbeTime is when the last run completed; zero before.
	LastProbeTime time.Time
	// LastSuccessTime is when a run last succeeded (or warned).
	LastSuccessTime time.Time
	// LastError is the last discarded run's error text.
	LastError string
	// Runs, Successes, Failures, Errors count completed runs by outcome
	// (Warning counts as a success, Unknown as a failure).
	Runs, Successes, Failures, Errors int
	// ConsecutiveFailures counts failed runs since the last success.
	ConsecutiveFailures int
	// OnHold is true once a liveness or startup Failure was published: the
	// worker has stopped and waits for a new container ID.
	OnHold bool
	// TerminationGracePeriodSeconds is the probe's own, nil if unset.
	TerminationGracePeriodSeconds *int64
}

// scheduleSlot is the spacing of the grid every periodic run is moved up to
// (see worker): the runs due within the same quarter of a second share one
// wake-up of the agent. Each wake-up costs a fixed amount (timers, the
// scheduler, the runtime's sysmon polling while it is busy): in
// BenchmarkManager_Steady a probe cost about 100 µs of CPU on 250 ms slots
// against 120–140 µs on 100 ms slots. Slots of a second saved little more
// and ran every probe of a period together: 200 goroutine stacks and up to
// three times the threads alive at once, 1–1.5 MiB more memory. Probe
// periods are whole seconds, so a worker keeps its grid.
const scheduleSlot = 250 * time.Millisecond

// Manager runs the probes of every running container of every pod it is
// told about. Safe for concurrent use. Methods never block on probes:
// m.mu is only held to read or write maps and cached results.
type Manager struct {
	// prober runs the handlers; shared by all workers.
	prober runner
	// slot is scheduleSlot; 0 keeps every worker on its own phase (only
	// the steady-state benchmark's baseline does that).
	slot time.Duration
	// slotOffset, in [0, slot), shifts this agent's grid off the wall
	// clock's quarter seconds, so that agents on many nodes do not all
	// probe at the same instant (a service every node probes would see
	// them together). Picked once with Config.Rand.
	slotOffset time.Duration
	// clock drives timers and timestamps.
	clock clock.Clock
	// logger is narrowed to component=probes.
	logger *slog.Logger
	// onEvent is Config.OnEvent, maybe nil.
	onEvent func(Event)
	// rand gives the start-up jitter.
	rand func() float64
	// start is when the Manager was created: jitter applies to workers
	// started less than one period after it.
	start time.Time
	// updates carries result changes; buffered, never closed. Workers
	// block on a full channel until it drains or they are stopped.
	updates chan Update

	// mu guards pods, closed and every worker's state fields.
	mu sync.Mutex
	// pods holds the probe state of each pod passed to UpdatePod and not
	// removed since.
	pods map[types.UID]*podProbes
	// closed is set by Close; later UpdatePod calls start nothing.
	closed bool
	// wg counts the workers that have not exited and the scheduler
	// goroutine.
	wg sync.WaitGroup
	// sched wakes parked workers (schedule.go).
	sched scheduler

	// testHook, set by tests before any worker starts, sees worker
	// scheduling points.
	testHook func(hookEvent)
}

// podProbes is the probe state of one pod. Guarded by Manager.mu.
type podProbes struct {
	// uid and key ("namespace/name") identify the pod in logs and updates.
	uid types.UID
	key string
	// podIP is the target of network probes without a host; updated by
	// every UpdatePod.
	podIP string
	// terminating is set by StopLivenessAndStartup: no new liveness or
	// startup workers start for this pod.
	terminating bool
	// containers holds the running containers by name.
	containers map[string]*containerProbes
}

// containerProbes is one running container instance. Guarded by
// Manager.mu. A new container ID replaces it (and its workers) entirely,
// so no result survives a restart.
type containerProbes struct {
	// id is the runtime container ID.
	id string
	// startedAt is the instance's start time.
	startedAt time.Time
	// workers by Kind; nil when the container has no probe of that kind
	// (or, for liveness and startup, once the pod is terminating).
	workers [len(kinds)]*worker
}

// started reports whether the startup probe no longer gates the others:
// there is none (or it was stopped for termination), or it succeeded.
func (c *containerProbes) started() bool {
	w := c.workers[Startup]
	return w == nil || w.result == Success
}

// New returns a Manager. It starts nothing until UpdatePod.
func New(cfg Config) *Manager {
	if cfg.Clock == nil {
		cfg.Clock = clock.RealClock{}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.ClassifyExecError == nil {
		cfg.ClassifyExecError = DefaultExecErrorClassifier
	}
	if cfg.UserAgent == "" {
		cfg.UserAgent = DefaultUserAgent
	}
	if cfg.UpdatesBuffer <= 0 {
		cfg.UpdatesBuffer = defaultUpdatesBuffer
	}
	if cfg.Rand == nil {
		cfg.Rand = rand.Float64
	}
	m := &Manager{
		prober: &prober{
			exec:      cfg.Execer,
			classify:  cfg.ClassifyExecError,
			http:      NewHTTPProber(),
			userAgent: cfg.UserAgent,
		},
		slot:    scheduleSlot,
		clock:   cfg.Clock,
		logger:  cfg.Logger.With("component", "probes"),
		onEvent: cfg.OnEvent,
		rand:    cfg.Rand,
		start:   cfg.Clock.Now(),
		updates: make(chan Update, cfg.UpdatesBuffer),
		pods:    make(map[types.UID]*podProbes),
	}
	m.slotOffset = time.Duration(cfg.Rand() * float64(m.slot))
	return m
}

// Updates returns the channel of result changes. Only changes are sent
// (never the initial results). The agent must keep draining it: a worker
// waits while it is full.
func (m *Manager) Updates() <-chan Update { return m.updates }

// UpdatePod tells the manager what runs in a pod. Call it whenever the pod
// is observed (after starting containers, on every relist). podIP is the
// pod's primary IP, the target of httpGet/tcpSocket probes without a host
// and of grpc probes. containers lists the pod's observed containers; only
// app containers and native sidecars (init containers with restartPolicy
// Always) are probed.
//
// For each such container that is Running with an ID, workers run for its
// probes; a new ID stops the old instance's workers and starts fresh ones
// with initial results. A container listed as not running, or not listed at
// all, loses its workers and results. The probe specs are copied when a
// worker starts; pod is not retained.
func (m *Manager) UpdatePod(pod *v1.Pod, podIP string, containers []ContainerState) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return
	}
	pp := m.pods[pod.UID]
	if pp == nil {
		pp = &podProbes{
			uid:        pod.UID,
			key:        pod.Namespace + "/" + pod.Name,
			containers: make(map[string]*containerProbes),
		}
		m.pods[pod.UID] = pp
	}
	pp.podIP = podIP

	seen := make(map[string]bool, len(containers))
	for _, cs := range containers {
		spec := probedContainer(pod, cs.Name)
		if spec == nil || !cs.Running || cs.ID == "" {
			continue
		}
		seen[cs.Name] = true
		if cp := pp.containers[cs.Name]; cp != nil {
			if cp.id == cs.ID {
				continue
			}
			m.stopContainerLocked(cp)
		}
		pp.containers[cs.Name] = m.startContainerLocked(pp, spec, cs)
	}
	for name, cp := range pp.containers {
		if !seen[name] {
			m.stopContainerLocked(cp)
			delete(pp.containers, name)
		}
	}
}

// probedContainer returns the spec of the app container or native sidecar
// named name, or nil.
func probedContainer(pod *v1.Pod, name string) *v1.Container {
	for i := range pod.Spec.Containers {
		if pod.Spec.Containers[i].Name == name {
			return &pod.Spec.Containers[i]
		}
	}
	for i := range pod.Spec.InitContainers {
		c := &pod.Spec.InitContainers[i]
		if c.Name == name && c.RestartPolicy != nil && *c.RestartPolicy == v1.ContainerRestartPolicyAlways {
			return c
		}
	}
	return nil
}

// startContainerLocked records a new running instance and starts a worker
// per probe it has. m.mu must be held.
func (m *Manager) startContainerLocked(pp *podProbes, spec *v1.Container, cs ContainerState) *containerProbes {
	cp := &containerProbes{id: cs.ID, startedAt: cs.StartedAt}
	var c *v1.Container // copied once, shared read-only by the workers
	for _, k := range kinds {
		if probeOf(spec, k) == nil || (pp.terminating && k != Readiness) {
			continue
		}
		if c == nil {
			c = spec.DeepCopy()
		}
		w := newWorker(m, pp, cp, c, k)
		cp.workers[k] = w
		m.wg.Add(1)
		go w.run(wakeStart)
	}
	return cp
}

// stopContainerLocked stops every worker of cp. m.mu must be held.
func (m *Manager) stopContainerLocked(cp *containerProbes) {
	for k, w := range cp.workers {
		if w != nil {
			w.stopLocked()
			cp.workers[k] = nil
		}
	}
}

// RemovePod stops every worker of the pod (readiness included) and forgets
// its results. It does not wait for the workers to exit; an in-flight probe
// is cancelled through its context.
func (m *Manager) RemovePod(uid types.UID) {
	m.mu.Lock()
	defer m.mu.Unlock()
	pp := m.pods[uid]
	if pp == nil {
		return
	}
	for _, cp := range pp.containers {
		m.stopContainerLocked(cp)
	}
	delete(m.pods, uid)
}

// StopLivenessAndStartup stops the liveness and startup workers of the pod
// and starts none later, before the agent kills its containers for
// termination; readiness keeps running until RemovePod. Afterwards the
// startup probe no longer gates Started/Ready, as in the kubelet (no
// startup worker means started).
func (m *Manager) StopLivenessAndStartup(uid types.UID) {
	m.mu.Lock()
	defer m.mu.Unlock()
	pp := m.pods[uid]
	if pp == nil {
		return
	}
	pp.terminating = true
	for _, cp := range pp.containers {
		for _, k := range []Kind{Liveness, Startup} {
			if w := cp.workers[k]; w != nil {
				w.stopLocked()
				cp.workers[k] = nil
			}
		}
	}
}

// Close stops every worker and waits for them to exit. Later calls to
// UpdatePod do nothing.
func (m *Manager) Close() {
	m.mu.Lock()
	m.closed = true
	for uid, pp := range m.pods {
		for _, cp := range pp.containers {
			m.stopContainerLocked(cp)
		}
		delete(m.pods, uid)
	}
	m.mu.Unlock()
	m.wg.Wait()
}

// containerLocked returns the running instance of a container, or nil.
func (m *Manager) containerLocked(uid types.UID, container string) *containerProbes {
	pp := m.pods[uid]
	if pp == nil {
		return nil
	}
	return pp.containers[container]
}

// Result returns the cached result of a probe of a running container: ok
// is false when the container is not known running or has no worker of that
// kind.
func (m *Manager) Result(uid types.UID, container string, kind Kind) (Result, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	cp := m.containerLocked(uid, container)
	if cp == nil || cp.workers[kind] == nil {
		return Unknown, false
	}
	return cp.workers[kind].result, true
}

// Started is the container status's started flag: false unless the
// container was last reported running; then true if it has no startup
// probe or the startup probe succeeded.
func (m *Manager) Started(uid types.UID, container string) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	cp := m.containerLocked(uid, container)
	return cp != nil && cp.started()
}

// Ready is the container status's ready flag for an app container or
// native sidecar: started, and no readiness probe or its result is Success.
func (m *Manager) Ready(uid types.UID, container string) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	cp := m.containerLocked(uid, container)
	if cp == nil || !cp.started() {
		return false
	}
	w := cp.workers[Readiness]
	return w == nil || w.result == Success
}

// Trigger asks the worker of that probe to run now (if it is past its
// initial delay), outside its schedule. It does not wait; a pending trigger
// is not repeated.
func (m *Manager) Trigger(uid types.UID, container string, kind Kind) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if cp := m.containerLocked(uid, container); cp != nil && cp.workers[kind] != nil {
		m.triggerLocked(cp.workers[kind])
	}
}

// Status returns the state of one probe of a running container.
func (m *Manager) Status(uid types.UID, container string, kind Kind) (ProbeStatus, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	cp := m.containerLocked(uid, container)
	if cp == nil || cp.workers[kind] == nil {
		return ProbeStatus{}, false
	}
	return cp.workers[kind].statusLocked(), true
}

// PodStatus returns the state of every probe of the pod's running
// containers, ordered by container name and kind.
func (m *Manager) PodStatus(uid types.UID) []ProbeStatus {
	m.mu.Lock()
	defer m.mu.Unlock()
	pp := m.pods[uid]
	if pp == nil {
		return nil
	}
	var out []ProbeStatus
	for _, cp := range pp.containers {
		for _, w := range cp.workers {
			if w != nil {
				out = append(out, w.statusLocked())
			}
		}
	}
	slices.SortFunc(out, func(a, b ProbeStatus) int {
		return cmp.Or(strings.Compare(a.ContainerName, b.ContainerName), cmp.Compare(a.Kind, b.Kind))
	})
	return out
}

// align moves t up to the agent's next slot: the next instant that is a
// multiple of m.slot plus m.slotOffset, counted in wall-clock time from the
// zero time, so the same instants for every worker. It keeps t's monotonic
// reading: a step of the wall clock cannot make a worker spin.
func (m *Manager) align(t time.Time) time.Time {
	if m.slot <= 0 {
		return t
	}
	s := t.Add(-m.slotOffset)
	if r := s.Sub(s.Truncate(m.slot)); r > 0 {
		return t.Add(m.slot - r)
	}
	return t
}

// publish sends u unless ctx ends first.
func (m *Manager) publish(ctx context.Context, u Update) {
	select {
	case m.updates <- u:
	case <-ctx.Done():
	}
}

// hookEvent is what testHook sees.
type hookEvent struct {
	// container and kind name the worker.
	container string
	kind      Kind
	// what is "waiting" (parked, or about to run again at once) or
	// "exited".
	what string
}

// hook calls testHook if set.
func (m *Manager) hook(w *worker, what string) {
	if m.testHook != nil {
		m.testHook(hookEvent{container: w.container.Name, kind: w.kind, what: what})
	}
}
