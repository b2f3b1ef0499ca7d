package agent

import (
	"fmt"

	"github.com/minikubelet/minikubelet/agent/podevents"
)

// containerEvent records an event about one container of the worker's pod
// (container "" is the pod itself: podWorker.event) in the pod's ring
// (agent/podevents) and tells the observer.
func (w *podWorker) containerEvent(container, typ, reason, format string, args ...any) {
	msg := podevents.TruncateMessage(fmt.Sprintf(format, args...), podevents.MaxMessageBytes)
	w.mu.Lock()
	pod := w.spec
	fieldPath := podevents.ContainerFieldPath(pod, container)
	ev := w.events.Add(typ, reason, msg, fieldPath, w.a.clock.Now())
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
