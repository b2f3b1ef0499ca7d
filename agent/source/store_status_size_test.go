package source

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/minikubelet/minikubelet/agent/manifest/manifesttest"
)

// TestPodStore_FinalStatusHostileMessagesStillRead: the termination
// messages are the pod's bytes (4 KiB a container, read from a file the
// container writes); a pod of many containers whose messages JSON escapes
// six-fold ('<' is \u003c) made a final status file larger than the store
// reads back, so a restarted daemon ignored it and ran the finished pod
// again. The stored status must always be one the store reads back, still
// terminal, its messages trimmed.
func TestPodStore_FinalStatusHostileMessagesStillRead(t *testing.T) {
	s, dir := newTestStore(t)
	pod, err := s.Add(manifesttest.APIPod("", "job", "hello"))
	require.NoError(t, err)
	drain(t, s)

	msg := strings.Repeat("<", 4096) // the most a container's message has
	st := v1.PodStatus{Phase: v1.PodSucceeded, Message: msg}
	for i := range 100 { // the most containers a list has
		term := &v1.ContainerStateTerminated{ExitCode: 0, Reason: "Completed", Message: msg, FinishedAt: metav1.Unix(1700000000, 0)}
		cs := v1.ContainerStatus{Name: fmt.Sprintf("c%d", i), State: v1.ContainerState{Terminated: term},
			LastTerminationState: v1.ContainerState{Terminated: term.DeepCopy()}}
		st.InitContainerStatuses = append(st.InitContainerStatuses, *cs.DeepCopy())
		st.ContainerStatuses = append(st.ContainerStatuses, cs)
		st.EphemeralContainerStatuses = append(st.EphemeralContainerStatuses, *cs.DeepCopy())
	}
	require.NoError(t, s.SaveFinalStatus(pod, st))

	s2, err := NewPodStore(dir, "node-1")
	require.NoError(t, err)
	assert.Empty(t, s2.FinalStatusErrors(), "the status the store wrote is one it reads back")
	got, ok := s2.FinalStatus(pod.UID)
	require.True(t, ok, "a restarted daemon keeps the finished pod finished")
	assert.Equal(t, v1.PodSucceeded, got.Phase)
	require.Len(t, got.ContainerStatuses, 100)
	assert.Equal(t, int32(0), got.ContainerStatuses[99].State.Terminated.ExitCode)
	assert.Equal(t, "Completed", got.ContainerStatuses[99].State.Terminated.Reason)
	assert.Equal(t, msg[:trimmedMessageBytes], got.ContainerStatuses[99].State.Terminated.Message, "the message's tail is kept")
	assert.Equal(t, msg, got.Message, "the pod's own message is the agent's: kept")
	mem, ok := s.FinalStatus(pod.UID)
	require.True(t, ok)
	assert.Equal(t, got, mem, "the running daemon holds what a restarted one reads back")

	// A status that fits keeps its messages whole.
	st = v1.PodStatus{Phase: v1.PodFailed, ContainerStatuses: []v1.ContainerStatus{{Name: "c",
		State: v1.ContainerState{Terminated: &v1.ContainerStateTerminated{ExitCode: 1, Reason: "Error", Message: msg}}}}}
	require.NoError(t, s.SaveFinalStatus(pod, st))
	s3, err := NewPodStore(dir, "node-1")
	require.NoError(t, err)
	got, ok = s3.FinalStatus(pod.UID)
	require.True(t, ok)
	assert.Equal(t, st, got)
}
