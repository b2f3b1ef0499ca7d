package resize

import (
	"log/slog"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/minikubelet/minikubelet/agent/node"
)

// Tracker is one pod's State with its own lock and its checkpoint: the
// engine's pod worker holds one, and both the agent's loop (admission)
// and the worker's syncs (actuation) call it. The worker needs no lock of
// its own for it, except where the allocated view must follow the
// worker's spec (View, Refresh): it then takes its lock first and the
// Tracker's inside it, never the other way round, as a Tracker calls
// nothing outside this package while it holds its lock. Handle is the
// exception: it refreshes the view from the spec its caller read, without
// the worker's lock; the engine calls it under the agent's lock, and a
// spec that changes meanwhile (a new one from a source, a deletion) goes
// through update or setDeletion, which refresh the view again. The
// logger and the event recorder are fixed once Init returned (the worker
// is not shared before).
type Tracker struct {
	mu sync.Mutex
	s  State
	// saveMu orders the checkpoint's writes: the agent's loop and the
	// worker both save, and the newest snapshot must be the one left on
	// disk.
	saveMu sync.Mutex
	// dir is the pod's directory, logger the pod's, event its recorder
	// (Init sets them).
	dir    string
	logger *slog.Logger
	event  func(typ, reason, format string, args ...any)
}

// Init sets a new pod's allocation: the checkpoint's in dir, the pod's
// directory, when the pod ran before (a restarted daemon), otherwise
// spec's. logger logs the checkpoint's failed saves; event records the
// pod's resize events (the engine's worker's, called without the lock).
// The error says why a checkpoint that was read is not trusted, for the
// caller to log.
func (t *Tracker) Init(spec *v1.Pod, dir string, logger *slog.Logger, event func(typ, reason, format string, args ...any)) error {
	cp, ok, err := LoadCheckpoint(dir)
	t.mu.Lock()
	defer t.mu.Unlock()
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	t.dir, t.logger, t.event = dir, logger, event
	t.s.Init(spec, cp, ok)
	return err
}

// Save writes the checkpoint, logging a failure: the state in memory stays
// right, only a daemon restart could lose it. The snapshot and its write
// happen under one lock, so an earlier snapshot never overwrites a later
// one.
func (t *Tracker) Save() {
	t.saveMu.Lock()
	defer t.saveMu.Unlock()
	t.mu.Lock()
	cp, dir, logger := t.s.Checkpoint(), t.dir, t.logger
	t.mu.Unlock()
	if err := SaveCheckpoint(dir, cp); err != nil {
		logger.Warn("Saving the resources checkpoint failed", "err", err)
	}
}

// View is State.View: the pod to sync and to count at admission.
func (t *Tracker) View(spec *v1.Pod) *v1.Pod {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.s.View(spec)
}

// Refresh is State.Refresh, for spec, the newest desired pod.
func (t *Tracker) Refresh(spec *v1.Pod) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.s.Refresh(spec)
}

// Handle runs when the source hands over p, a changed spec: a change of
// resources is admitted (allocated) or left pending, as the kubelet's
// handlePodResourcesResize. Admission is against the node info next to
// the other admitted pods, which others builds when a resize is to be
// admitted (it reads other pods' state: not under the lock). An admitted
// resize refreshes the view of spec, the newest spec the worker holds, and
// is checkpointed. now is read once admission decided. It records the
// event the change asks for and reports whether a new allocation was
// admitted.
func (t *Tracker) Handle(p, spec *v1.Pod, info node.Info, others func() []*v1.Pod, now func() time.Time) bool {
	desired := Of(p)
	t.mu.Lock()
	wants := t.s.Wants(desired)
	t.mu.Unlock()
	if !wants {
		return false
	}
	v := Admit(info, p, others())
	t.mu.Lock()
	ev := t.s.Decide(p, desired, v, metav1.NewTime(now()))
	if v.Fit {
		t.s.Refresh(spec)
	}
	t.mu.Unlock()
	if v.Fit {
		t.Save()
	}
	t.record(ev)
	return v.Fit
}

// record records ev, if any.
func (t *Tracker) record(ev *Event) {
	if ev != nil && t.event != nil {
		t.event(ev.Type, ev.Reason, "%s", ev.Message)
	}
}

// Deferred is State.Deferred: a resize waits for room on the node.
func (t *Tracker) Deferred() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.s.Deferred()
}

// Plan is Plan over the actuated resources.
func (t *Tracker) Plan(pod *v1.Pod, running func(name string) string) Actions {
	t.mu.Lock()
	defer t.mu.Unlock()
	return Plan(pod, t.s.Actuated, running)
}

// CheckMemoryDecrease is CheckMemoryDecrease of ra's memory updates over
// the actuated resources.
func (t *Tracker) CheckMemoryDecrease(pod *v1.Pod, ra Actions, usage func(id string) (bytes uint64, ok bool)) error {
	return CheckMemoryDecrease(pod, t.actuated(), ra.Update[v1.ResourceMemory], usage)
}

// Steps is Steps over the actuated resources.
func (t *Tracker) Steps(pod *v1.Pod, ra Actions, podCgroup func(*v1.Pod) PodCgroup) []Step {
	return Steps(pod, t.actuated(), ra, podCgroup)
}

// actuated is a copy of what the running containers were created or
// updated with (the functions above run without the lock).
func (t *Tracker) actuated() Resources {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.s.Actuated.Clone()
}

// SetActuated records that container name was updated in place to r (a
// Step's Resources). The caller saves once its pass is over.
func (t *Tracker) SetActuated(name string, r v1.ResourceRequirements) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.s.Actuated[name] = *r.DeepCopy()
}

// Finish is State.Finish at now; it records the event that asks for.
func (t *Tracker) Finish(pod *v1.Pod, running func(name string) string, err error, now time.Time) {
	t.mu.Lock()
	ev := t.s.Finish(pod, running, err, metav1.NewTime(now))
	t.mu.Unlock()
	t.record(ev)
}

// RecordActuated is State.RecordActuated; what is news is checkpointed.
func (t *Tracker) RecordActuated(c *v1.Container) {
	t.mu.Lock()
	changed := t.s.RecordActuated(c)
	t.mu.Unlock()
	if changed {
		t.Save()
	}
}

// Conditions is State.Conditions.
func (t *Tracker) Conditions(phase v1.PodPhase) []v1.PodCondition {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.s.Conditions(phase)
}

// SetStatusResources fills the allocatedResources and resources of cs,
// container name's status (State.StatusResources), as the kubelet does for
// a container that exists (one with an ID).
func (t *Tracker) SetStatusResources(name string, cs *v1.ContainerStatus) {
	if cs.ContainerID == "" {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	cs.AllocatedResources, cs.Resources = t.s.StatusResources(name, cs.State.Running != nil)
}
