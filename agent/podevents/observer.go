package podevents

import v1 "k8s.io/api/core/v1"

// Observer is told about every event, step and status change of every pod.
// Calls come from pod worker goroutines and must not block for long.
type Observer interface {
	PodEvent(pod *v1.Pod, ev Event)
	PodStep(pod *v1.Pod, s Step)
	// PodStatus receives a copy of the pod carrying its new status.
	PodStatus(pod *v1.Pod)
}

// Nop observes nothing. The engine checks for it to make no status copy
// for nobody.
type Nop struct{}

func (Nop) PodEvent(*v1.Pod, Event) {}
func (Nop) PodStep(*v1.Pod, Step)   {}
func (Nop) PodStatus(*v1.Pod)       {}

// Observers returns an Observer that tells each of obs, in order; nil
// entries and Nops are skipped. With none left it observes nothing (Nop,
// and the agent then makes no status copies for nobody).
func Observers(obs ...Observer) Observer {
	var m multiObserver
	for _, o := range obs {
		switch o := o.(type) {
		case nil, Nop:
		case multiObserver:
			m = append(m, o...)
		default:
			m = append(m, o)
		}
	}
	switch len(m) {
	case 0:
		return Nop{}
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
