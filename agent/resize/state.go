package resize

import (
	"encoding/json"
	"fmt"
	"strings"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Resize event reasons (the kubelet's pkg/kubelet/events).
const (
	EventStarted    = "ResizeStarted"
	EventCompleted  = "ResizeCompleted"
	EventError      = "ResizeError"
	EventDeferred   = "ResizeDeferred"
	EventInfeasible = "ResizeInfeasible"
)

// Event is a pod event a state change asks for.
type Event struct {
	// Type is v1.EventTypeNormal or v1.EventTypeWarning.
	Type string
	// Reason is one of the Event* reasons.
	Reason string
	// Message is the event's text.
	Message string
}

// State is one pod's resize state. It has no lock: a Tracker holds it
// under its own.
//
//	Init ──► allocated = checkpoint's, or the spec's
//	Wants(desired)? ──Decide(verdict)── fit ──► allocated = desired, InProgress (ResizeStarted)
//	                                 └─ not ──► Pending: Deferred (retried) or Infeasible
//	Finish after a sync ── error ──► InProgress reason Error (ResizeError)
//	                    └─ nothing left to actuate ──► InProgress cleared (ResizeCompleted)
type State struct {
	// Allocated is what the node admitted (nil before Init).
	Allocated Resources
	// Actuated is what the running containers were created or updated
	// with.
	Actuated Resources
	// Pending and InProgress are the PodResizePending and
	// PodResizeInProgress conditions (nil: absent).
	Pending, InProgress *v1.PodCondition
	// view is the spec of Refresh with the allocated resources when they
	// differ (nil: the spec itself).
	view *v1.Pod
}

// Init sets a new pod's allocation: the checkpoint's when ok (the pod ran
// before a daemon restart), otherwise spec's.
func (s *State) Init(spec *v1.Pod, cp Checkpoint, ok bool) {
	if ok {
		s.Allocated, s.Actuated = cp.Allocated, cp.Actuated
	} else {
		s.Allocated = Of(spec)
	}
	if s.Actuated == nil {
		s.Actuated = Resources{}
	}
	s.Refresh(spec)
}

// Refresh recomputes the allocated view of spec, the newest desired pod.
func (s *State) Refresh(spec *v1.Pod) {
	s.view = nil
	if s.Allocated != nil {
		if p := WithResources(spec, s.Allocated); p != spec {
			s.view = p
		}
	}
}

// View is the pod to sync and to count at admission: spec, the one of the
// last Refresh, with the allocated resources.
func (s *State) View(spec *v1.Pod) *v1.Pod {
	if s.view != nil {
		return s.view
	}
	return spec
}

// Checkpoint is a copy of the state to save.
func (s *State) Checkpoint() Checkpoint {
	return Checkpoint{Allocated: s.Allocated.Clone(), Actuated: s.Actuated.Clone()}
}

// Wants reports whether desired, the resources of a new spec, is a resize
// to admit. When it equals the allocation (no resize, or one reverted
// before it was admitted), a pending resize is forgotten.
func (s *State) Wants(desired Resources) bool {
	if s.Allocated == nil {
		return false
	}
	if desired.Equal(s.Allocated) {
		s.Pending = nil
		return false
	}
	return true
}

// Decide applies the verdict on p, the spec whose resources are desired,
// as the kubelet's handlePodResourcesResize: admitted, desired becomes the
// allocation (the caller Refreshes the view and saves the checkpoint) and
// the resize is in progress; otherwise it is pending, its transition time
// kept while the reason stays. It returns the event to record, nil when
// the pending resize is the one already reported.
func (s *State) Decide(p *v1.Pod, desired Resources, v Verdict, now metav1.Time) *Event {
	if !v.Fit {
		prev := s.Pending
		s.Pending = &v1.PodCondition{Type: v1.PodResizePending, Status: v1.ConditionTrue, Reason: v.Reason, Message: v.Message,
			ObservedGeneration: p.Generation, LastTransitionTime: now, LastProbeTime: now}
		if prev != nil && prev.Reason == v.Reason {
			s.Pending.LastTransitionTime = prev.LastTransitionTime
		}
		if prev != nil && prev.Reason == v.Reason && prev.ObservedGeneration == p.Generation {
			return nil
		}
		reason := EventDeferred
		if v.Reason == v1.PodReasonInfeasible {
			reason = EventInfeasible
		}
		return &Event{Type: v1.EventTypeWarning, Reason: reason, Message: fmt.Sprintf("Pod resize %s: %s", v.Reason, Summary(p, v.Message))}
	}
	s.Allocated = desired
	s.Pending = nil
	// A new resize clears an earlier error and takes the new generation.
	s.InProgress = &v1.PodCondition{Type: v1.PodResizeInProgress, Status: v1.ConditionTrue,
		ObservedGeneration: p.Generation, LastTransitionTime: now, LastProbeTime: now}
	return &Event{Type: v1.EventTypeNormal, Reason: EventStarted, Message: "Pod resize started: " + Summary(p, "")}
}

// Deferred reports whether a resize waits for room on the node (retried
// when the pod set changes; an Infeasible one waits for a new spec).
func (s *State) Deferred() bool {
	return s.Pending != nil && s.Pending.Reason == v1.PodReasonDeferred
}

// Finish updates the PodResizeInProgress condition after a sync's resize
// step on pod (the allocated view): an error (ErrResize) sets reason Error;
// a resize fully actuated (Plan over running is empty) clears the
// condition. It returns the event to record, nil for none.
func (s *State) Finish(pod *v1.Pod, running func(name string) string, err error, now metav1.Time) *Event {
	cond := s.InProgress
	if err != nil {
		c := v1.PodCondition{Type: v1.PodResizeInProgress, Status: v1.ConditionTrue, Reason: v1.PodReasonError,
			Message: strings.TrimPrefix(err.Error(), ErrResize.Error()+": "), ObservedGeneration: pod.Generation, LastTransitionTime: now, LastProbeTime: now}
		if cond != nil {
			c.ObservedGeneration = cond.ObservedGeneration
			if cond.Reason == c.Reason {
				c.LastTransitionTime = cond.LastTransitionTime
			}
		}
		s.InProgress = &c
		if cond != nil && cond.Message == c.Message {
			return nil
		}
		return &Event{Type: v1.EventTypeWarning, Reason: EventError, Message: "Pod resize error: " + Summary(pod, c.Message)}
	}
	if cond == nil || !Plan(pod, s.Actuated, running).Empty() {
		return nil
	}
	s.InProgress = nil
	return &Event{Type: v1.EventTypeNormal, Reason: EventCompleted, Message: "Pod resize completed: " + Summary(pod, "")}
}

// RecordActuated notes that c's new instance was created with its
// (allocated) resources, and reports whether that is news to checkpoint:
// a daemon restarted later then knows what runs, even if the spec changed
// while it was down (the kubelet writes its actuated state at creation
// too).
func (s *State) RecordActuated(c *v1.Container) bool {
	if s.Actuated == nil {
		return false
	}
	r := Resizable(c.Resources)
	old, had := s.Actuated[c.Name]
	s.Actuated[c.Name] = r
	return !had || !SameRequirements(old, r)
}

// Conditions are the pod's resize conditions now (none for a pod in a
// terminal phase, as the kubelet's determinePodResizeStatus).
func (s *State) Conditions(phase v1.PodPhase) []v1.PodCondition {
	if phase == v1.PodSucceeded || phase == v1.PodFailed {
		return nil
	}
	var out []v1.PodCondition
	if c := s.Pending; c != nil {
		out = append(out, *c)
	}
	if c := s.InProgress; c != nil {
		out = append(out, *c)
	}
	return out
}

// StatusResources is what status.containerStatuses[*] reports of container
// name's resources: allocatedResources are the allocated requests;
// resources the actuated requests and limits of a running container (the
// CRI's values, as the kubelet reads them back), else the allocated ones.
// Both are nil for a container that is not resizable.
func (s *State) StatusResources(name string, running bool) (v1.ResourceList, *v1.ResourceRequirements) {
	alloc, ok := s.Allocated[name]
	if !ok {
		return nil, nil
	}
	r := alloc
	if act, ok := s.Actuated[name]; ok && running {
		r = act
	}
	out := Resizable(r)
	var requests v1.ResourceList
	if len(alloc.Requests) > 0 {
		requests = Resizable(alloc).Requests
	}
	return requests, &out
}

// Summary is an event's text: the containers' desired resources and the
// generation, as the kubelet's podResizeMessage (JSON), with errMsg when
// not empty.
func Summary(p *v1.Pod, errMsg string) string {
	type ctr struct {
		Name      string                  `json:"name"`
		Resources v1.ResourceRequirements `json:"resources"`
	}
	s := struct {
		Containers []ctr  `json:"containers"`
		Generation int64  `json:"generation"`
		Error      string `json:"error,omitempty"`
	}{Generation: p.Generation, Error: errMsg}
	EachContainer(&p.Spec, func(c *v1.Container, _ bool) {
		s.Containers = append(s.Containers, ctr{Name: c.Name, Resources: Resizable(c.Resources)})
	})
	b, _ := json.Marshal(s)
	return string(b)
}
