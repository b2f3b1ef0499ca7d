package streaming

import (
	"net/url"
	"testing"

	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

func TestParseOptions(t *testing.T) {
	q, _ := url.ParseQuery("command=sh&command=-c&command=id&input=1&output=1&error=1&tty=1")
	o, err := ParseOptions(q, true)
	require.NoError(t, err)
	require.Equal(t, Options{Stdin: true, Stdout: true, TTY: true, Command: []string{"sh", "-c", "id"}}, o, "no stderr with a TTY")
	// The API server's names (kubectl's query to the local API).
	q, _ = url.ParseQuery("command=ls&stdin=true&stdout=true&stderr=true")
	o, err = ParseOptions(q, true)
	require.NoError(t, err)
	require.Equal(t, Options{Stdin: true, Stdout: true, Stderr: true, Command: []string{"ls"}}, o)
	q, _ = url.ParseQuery("command=ls")
	_, err = ParseOptions(q, true)
	require.ErrorContains(t, err, "at least 1 of stdin, stdout, stderr")
	q, _ = url.ParseQuery("stdout=true")
	_, err = ParseOptions(q, true)
	require.ErrorContains(t, err, "at least one command")
	_, err = ParseOptions(q, false)
	require.NoError(t, err, "attach needs no command")
}

func TestContainerID(t *testing.T) {
	pod := &v1.Pod{Status: v1.PodStatus{
		ContainerStatuses: []v1.ContainerStatus{
			{Name: "run", ContainerID: "containerd://abc", State: v1.ContainerState{Running: &v1.ContainerStateRunning{}}},
			{Name: "done", ContainerID: "containerd://def", State: v1.ContainerState{Terminated: &v1.ContainerStateTerminated{}}},
		},
		EphemeralContainerStatuses: []v1.ContainerStatus{
			{Name: "debug", ContainerID: "containerd://eph", State: v1.ContainerState{Running: &v1.ContainerStateRunning{}}},
		},
	}}
	id, err := ContainerID(pod, "run")
	require.NoError(t, err)
	require.Equal(t, "abc", id)
	id, err = ContainerID(pod, "debug")
	require.NoError(t, err)
	require.Equal(t, "eph", id)
	_, err = ContainerID(pod, "done")
	require.True(t, apierrors.IsBadRequest(err), "%v", err)
	require.ErrorContains(t, err, "container done is not running")
	_, err = ContainerID(pod, "nope")
	require.True(t, apierrors.IsNotFound(err), "%v", err)
}
