package podevents

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

// ContainerFieldPath is the kubelet's fieldPath of container name in pod
// (its GenerateContainerRef); "" when the pod has no such container.
func ContainerFieldPath(pod *v1.Pod, name string) string {
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

// MaxMessageBytes bounds every event's message: the API server's
// NoteLengthLimit (1024), which events.k8s.io/v1 enforces and the
// scheduler cuts its event messages to. The kubelet's own recorder relies
// on short messages (its FailedPostStartHook event says only
// "PostStartHook failed"); here a message may quote what a pod wrote (a
// hook's output), so every one is cut, and a pod's 64 events stay within
// 64 KiB.
const MaxMessageBytes = 1024

// TruncateMessage cuts s to at most limit bytes, on a UTF-8 character
// boundary, ending it with " ..." when it was cut (the scheduler's
// truncateMessage).
func TruncateMessage(s string, limit int) string {
	if len(s) <= limit {
		return s
	}
	const suffix = " ..."
	return ClipUTF8(s, limit-len(suffix)) + suffix
}

// ClipUTF8 is the longest prefix of s of at most n bytes that does not
// end inside a multi-byte character.
func ClipUTF8(s string, n int) string {
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

// Ring keeps a pod's latest events, folding an event equal in type,
// reason, message and object (fieldPath) to the newest one into it. Its
// zero value is empty; it is not safe for concurrent use (the engine
// holds its pod worker's lock).
type Ring struct {
	events []Event
}

// Add records an event at now and returns the stored (possibly folded) copy.
func (r *Ring) Add(typ, reason, msg, fieldPath string, now time.Time) Event {
	msg = TruncateMessage(msg, MaxMessageBytes)
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

// List returns a copy of the events, oldest first.
func (r *Ring) List() []Event {
	return append([]Event(nil), r.events...)
}

// Rejected is the one event of a pod admission rejected: its status's
// reason and message, at its start time.
func Rejected(rejected *v1.Pod) Event {
	return Event{Type: v1.EventTypeWarning, Reason: rejected.Status.Reason, Message: TruncateMessage(rejected.Status.Message, MaxMessageBytes), Count: 1,
		FirstTimestamp: rejected.Status.StartTime.Time, LastTimestamp: rejected.Status.StartTime.Time}
}
