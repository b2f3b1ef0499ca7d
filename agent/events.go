package agent

import (
	"fmt"
	"time"
	"unicode/utf8"

	v1 "k8s.io/api/core/v1"
)

// Event is a kubelet-style pod event (Pulling, Pulled, Created, Started,
// Killing, Failed, …). Repeats of the same event are folded into Count.
type Event struct {
	Type           string // v1.EventTypeNormal or v1.EventTypeWarning
	Reason         string
	Message        string
	Count          int
	FirstTimestamp time.Time
	LastTimestamp  time.Time
	// FieldPath names the container an event is about, as the kubelet's
	// involvedObject.fieldPath does (spec.containers{name},
	// spec.initContainers{name}, spec.ephemeralContainers{name}); "" for
	// the pod itself.
	FieldPath string
}

// containerFieldPath is the kubelet's fieldPath of container name in pod
// (its GenerateContainerRef); "" when the pod has no such container.
func containerFieldPath(pod *v1.Pod, name string) string {
	if pod == nil || name == "" {
		return ""
	}
	for _, c := range pod.Spec.Containers {
		if c.Name == name {
			return fmt.Sprintf("spec.containers{%s}", name)
		}
	}
	for _, c := range pod.Spec.InitContainers {
		if c.Name == name {
			return fmt.Sprintf("spec.initContainers{%s}", name)
		}
	}
	for _, c := range pod.Spec.EphemeralContainers {
		if c.Name == name {
			return fmt.Sprintf("spec.ephemeralContainers{%s}", name)
		}
	}
	return ""
}

// containerEvent records an event about one container of the worker's pod
// (container "" is the pod itself: podWorker.event).
func (w *podWorker) containerEvent(container, typ, reason, format string, args ...any) {
	msg := truncateMessage(fmt.Sprintf(format, args...), maxEventMessageBytes)
	w.mu.Lock()
	pod := w.spec
	fieldPath := containerFieldPath(pod, container)
	ev := w.events.add(typ, reason, msg, fieldPath, w.a.clock.Now())
	w.mu.Unlock()
	// Events are the user-facing channel (observer); the log keeps them
	// at Info so a foreground run does not print warnings twice.
	if container != "" {
		w.logger.Info("Pod event", "type", typ, "reason", reason, "message", msg, "container", container)
	} else {
		w.logger.Info("Pod event", "type", typ, "reason", reason, "message", msg)
	}
	w.a.observer.PodEvent(pod, ev)
}

// Step is one completed link of the startup chain of a pod (sandbox and
// network, image, create, start, running), with the time it took. The run
// command prints them; describe (issue #6) shows them as the startup trace.
type Step struct {
	Name     string
	Duration time.Duration
	Detail   string
	At       time.Time
}

// Startup chain step names.
const (
	stepSandbox = "sandbox"
	stepImage   = "image"
	stepCreated = "created"
	stepStarted = "started"
	stepRunning = "running"
	stepReady   = "ready"
	stepKilled  = "stopped"
	stepRemoved = "removed"
)

// Observer is told about every event, step and status change of every pod.
// Calls come from pod worker goroutines and must not block for long.
type Observer interface {
	PodEvent(pod *v1.Pod, ev Event)
	PodStep(pod *v1.Pod, s Step)
	// PodStatus receives a copy of the pod carrying its new status.
	PodStatus(pod *v1.Pod)
}

type nopObserver struct{}

func (nopObserver) PodEvent(*v1.Pod, Event) {}
func (nopObserver) PodStep(*v1.Pod, Step)   {}
func (nopObserver) PodStatus(*v1.Pod)       {}

// Observers returns an Observer that tells each of obs, in order; nil
// entries and nopObservers are skipped. With none left it observes nothing
// (and the agent then makes no status copies for nobody).
func Observers(obs ...Observer) Observer {
	var m multiObserver
	for _, o := range obs {
		switch o := o.(type) {
		case nil, nopObserver:
		case multiObserver:
			m = append(m, o...)
		default:
			m = append(m, o)
		}
	}
	switch len(m) {
	case 0:
		return nopObserver{}
	case 1:
		return m[0]
	}
	return m
}

// multiObserver tells every observer in turn.
type multiObserver []Observer

func (m multiObserver) PodEvent(pod *v1.Pod, ev Event) {
	for _, o := range m {
		o.PodEvent(pod, ev)
	}
}

func (m multiObserver) PodStep(pod *v1.Pod, s Step) {
	for _, o := range m {
		o.PodStep(pod, s)
	}
}

// PodStatus gives each observer the same copy: observers must not modify
// it (the Observer contract's copy is the agent's, not each observer's).
func (m multiObserver) PodStatus(pod *v1.Pod) {
	for _, o := range m {
		o.PodStatus(pod)
	}
}

// maxEventMessageBytes bounds every event's message: the API server's
// NoteLengthLimit (1024), which events.k8s.io/v1 enforces and the
// scheduler cuts its event messages to. The kubelet's own recorder relies
// on short messages (its FailedPostStartHook event says only
// "PostStartHook failed"); here a message may quote what a pod wrote (a
// hook's output), so every one is cut, and a pod's 64 events stay within
// 64 KiB.
const maxEventMessageBytes = 1024

// truncateMessage cuts s to at most limit bytes, on a UTF-8 character
// boundary, ending it with " ..." when it was cut (the scheduler's
// truncateMessage).
func truncateMessage(s string, limit int) string {
	if len(s) <= limit {
		return s
	}
	const suffix = " ..."
	return clipUTF8(s, limit-len(suffix)) + suffix
}

// clipUTF8 is the longest prefix of s of at most n bytes that does not
// end inside a multi-byte character.
func clipUTF8(s string, n int) string {
	if len(s) <= n {
		return s
	}
	if n <= 0 {
		return ""
	}
	// s[n] is the first byte left out: when it continues a character,
	// step back to that character's start, so none is cut in two (at most
	// UTFMax-1 bytes: bytes that start nothing are not characters to keep
	// whole).
	i := n
	for i > 0 && n-i < utf8.UTFMax-1 && !utf8.RuneStart(s[i]) {
		i--
	}
	if !utf8.RuneStart(s[i]) {
		i = n
	}
	return s[:i]
}

// maxEventsPerPod bounds a pod's event ring.
const maxEventsPerPod = 64

// eventRing keeps a pod's latest events, folding an event equal in type,
// reason, message and object (fieldPath) to the newest one into it.
type eventRing struct {
	events []Event
}

// add records an event at now and returns the stored (possibly folded) copy.
func (r *eventRing) add(typ, reason, msg, fieldPath string, now time.Time) Event {
	msg = truncateMessage(msg, maxEventMessageBytes)
	if n := len(r.events); n > 0 {
		last := &r.events[n-1]
		if last.Type == typ && last.Reason == reason && last.Message == msg && last.FieldPath == fieldPath {
			last.Count++
			last.LastTimestamp = now
			return *last
		}
	}
	ev := Event{Type: typ, Reason: reason, Message: msg, Count: 1, FirstTimestamp: now, LastTimestamp: now, FieldPath: fieldPath}
	if len(r.events) == maxEventsPerPod {
		copy(r.events, r.events[1:])
		r.events = r.events[:maxEventsPerPod-1]
	}
	r.events = append(r.events, ev)
	return ev
}

// list returns a copy of the events, oldest first.
func (r *eventRing) list() []Event {
	return append([]Event(nil), r.events...)
}
