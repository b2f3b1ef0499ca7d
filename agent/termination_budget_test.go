package agent

import (
	"strings"
	"testing"
	"unicode/utf8"

	v1 "k8s.io/api/core/v1"

	"github.com/minikubelet/minikubelet/agent/termmsg"
)

// TestLimitTerminationMessages: a pod of six containers that each wrote
// 4 KiB of termination message publishes at most 12 KiB of them (2 KiB
// each, the head kept, cut at a character boundary), in states, last
// states and ephemeral containers alike, as the kubelet's status manager;
// a pod whose messages fit keeps them whole, and the caller's status is
// never changed.
func TestLimitTerminationMessages(t *testing.T) {
	spec := &v1.PodSpec{}
	for _, n := range []string{"a", "b", "c", "d", "e"} {
		spec.Containers = append(spec.Containers, v1.Container{Name: n})
	}
	spec.InitContainers = []v1.Container{{Name: "init"}}
	// "é" is two bytes: 2048 falls inside one after an odd prefix.
	msg := "x" + strings.Repeat("é", 2047) + "tail"
	term := func() *v1.ContainerStateTerminated { return &v1.ContainerStateTerminated{ExitCode: 1, Message: msg} }
	var st v1.PodStatus
	for _, c := range spec.Containers {
		st.ContainerStatuses = append(st.ContainerStatuses, v1.ContainerStatus{Name: c.Name,
			State: v1.ContainerState{Terminated: term()}, LastTerminationState: v1.ContainerState{Terminated: term()}})
	}
	st.InitContainerStatuses = []v1.ContainerStatus{{Name: "init", State: v1.ContainerState{Terminated: term()}}}
	st.EphemeralContainerStatuses = []v1.ContainerStatus{{Name: "debug", State: v1.ContainerState{Terminated: term()}}}

	got := termmsg.Limit(spec, st)
	total := 0
	for _, list := range [][]v1.ContainerStatus{got.InitContainerStatuses, got.ContainerStatuses, got.EphemeralContainerStatuses} {
		for _, cs := range list {
			for _, tm := range []*v1.ContainerStateTerminated{cs.State.Terminated, cs.LastTerminationState.Terminated} {
				if tm == nil {
					continue
				}
				if len(tm.Message) > 2048 || len(tm.Message) < 2046 || !strings.HasPrefix(msg, tm.Message) || !utf8.ValidString(tm.Message) {
					t.Fatalf("%s: message of %d bytes (valid UTF-8 %v), want the head of the message, at most 2048 bytes", cs.Name, len(tm.Message), utf8.ValidString(tm.Message))
				}
				if cs.Name != "debug" {
					total += len(tm.Message)
				}
			}
		}
	}
	if total > termmsg.MaxPodMessageBytes*2 { // states and last states
		t.Fatalf("%d bytes of messages", total)
	}
	if st.ContainerStatuses[0].State.Terminated.Message != msg {
		t.Fatal("the caller's status was changed")
	}
	// The worker keeps and publishes the cut status.
	w := newPodWorker(testAgent(t, ""), &v1.Pod{Spec: *spec})
	w.setStatus(st)
	if n := len(w.snapshot().Status.ContainerStatuses[0].State.Terminated.Message); n > 2048 {
		t.Fatalf("the worker's status keeps a %d-byte message", n)
	}

	// Two containers: 6 KiB each, more than a container's 4 KiB: unchanged.
	two := &v1.PodSpec{Containers: spec.Containers[:2]}
	small := v1.PodStatus{ContainerStatuses: []v1.ContainerStatus{{Name: "a", State: v1.ContainerState{Terminated: &v1.ContainerStateTerminated{Message: strings.Repeat("m", 4096)}}}}}
	if got := termmsg.Limit(two, small); len(got.ContainerStatuses[0].State.Terminated.Message) != 4096 {
		t.Fatalf("a 4 KiB message of a two-container pod cut to %d bytes", len(got.ContainerStatuses[0].State.Terminated.Message))
	}
}
