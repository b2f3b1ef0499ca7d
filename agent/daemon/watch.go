package daemon

// This file feeds the local API's pod watch from the agent, without polling:
// status reports (the agent's Observer), pods appearing (a worker started, a
// pod rejected) and pods leaving (a teardown finished, a rejected pod no
// longer wanted) go to an api.PodWatchHub, which never blocks the pod
// workers (a watcher too slow is closed).
//
// What the watch does not stream: the Failed "manifest:" pods ListPods
// shows for manifest files the daemon could not use (they are not pods and
// have no worker); a list shows them.

import (
	v1 "k8s.io/api/core/v1"

	"github.com/minikubelet/minikubelet/agent"
	"github.com/minikubelet/minikubelet/agent/api"
	"github.com/minikubelet/minikubelet/agent/podevents"
)

// podWatchFeed adapts the agent's reports to a watch hub.
type podWatchFeed struct {
	hub *api.PodWatchHub
}

// newPodWatchFeed registers a feed of a new hub with the agent; it must
// be called before the agent runs.
func newPodWatchFeed(a *agent.Agent) *podWatchFeed {
	f := &podWatchFeed{hub: api.NewPodWatchHub(0, 0)}
	a.AddObserver(f)
	a.SetPodLifecycle(f)
	return f
}

func (f *podWatchFeed) PodEvent(*v1.Pod, podevents.Event) {}
func (f *podWatchFeed) PodStep(*v1.Pod, podevents.Step)   {}

// PodStatus implements Observer: the pod's new status is a MODIFIED (or
// the first news of an orphan the agent tears down: ADDED).
func (f *podWatchFeed) PodStatus(pod *v1.Pod) { f.hub.Update(pod) }

// PodAdded implements agent.PodLifecycle.
func (f *podWatchFeed) PodAdded(pod *v1.Pod) { f.hub.Update(pod) }

// PodGone implements agent.PodLifecycle.
func (f *podWatchFeed) PodGone(pod *v1.Pod) { f.hub.Delete(pod) }

// WatchPods implements api.Backend.
func (d *Daemon) WatchPods(opts api.PodWatchOptions) (api.PodWatch, error) {
	return d.watch.hub.Watch(opts)
}

// PodsResourceVersion implements api.Backend.
func (d *Daemon) PodsResourceVersion() string { return d.watch.hub.ResourceVersion() }
