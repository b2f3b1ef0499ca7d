package daemon

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/minikubelet/minikubelet/agent/api"
	"github.com/minikubelet/minikubelet/probes"
)

// logContainerID picks the instance `logs` reads as the kubelet's
// validateContainerLogStatus does. In a crash loop's back-off the newest
// instance is the dead one: lastState.terminated names it, and -p reads
// it (issue #28: minikubelet took the instance before the newest, and in
// back-off found none).
func TestLogContainerID(t *testing.T) {
	term := func(id string) *v1.ContainerStateTerminated {
		return &v1.ContainerStateTerminated{ExitCode: 1, Reason: "Error", ContainerID: id}
	}
	for name, tc := range map[string]struct {
		cs       v1.ContainerStatus
		previous bool
		wantID   string
		wantErr  string
		// noInstance: the status names no instance (LogPath then asks
		// the runtime, unless previous).
		noInstance bool
	}{
		"back-off, previous: the dead newest instance": {
			cs: v1.ContainerStatus{Name: "c", ContainerID: "containerd://b", RestartCount: 1,
				State:                v1.ContainerState{Waiting: &v1.ContainerStateWaiting{Reason: "CrashLoopBackOff"}},
				LastTerminationState: v1.ContainerState{Terminated: term("containerd://b")}},
			previous: true, wantID: "b"},
		"back-off, current: the dead newest instance too": {
			cs: v1.ContainerStatus{Name: "c", ContainerID: "containerd://b",
				State:                v1.ContainerState{Waiting: &v1.ContainerStateWaiting{Reason: "CrashLoopBackOff"}},
				LastTerminationState: v1.ContainerState{Terminated: term("containerd://b")}},
			wantID: "b"},
		"restarted and running, previous: the one before": {
			cs: v1.ContainerStatus{Name: "c", ContainerID: "containerd://b",
				State:                v1.ContainerState{Running: &v1.ContainerStateRunning{}},
				LastTerminationState: v1.ContainerState{Terminated: term("containerd://a")}},
			previous: true, wantID: "a"},
		"running": {
			cs:     v1.ContainerStatus{Name: "c", ContainerID: "containerd://a", State: v1.ContainerState{Running: &v1.ContainerStateRunning{}}},
			wantID: "a"},
		"exited, not restarted": {
			cs:     v1.ContainerStatus{Name: "c", ContainerID: "containerd://a", State: v1.ContainerState{Terminated: term("containerd://a")}},
			wantID: "a"},
		"first run, previous": {
			cs:       v1.ContainerStatus{Name: "c", ContainerID: "containerd://a", State: v1.ContainerState{Running: &v1.ContainerStateRunning{}}},
			previous: true, wantErr: `previous terminated container "c" in pod "crasher" not found`},
		"image pull back-off": {
			cs:      v1.ContainerStatus{Name: "c", State: v1.ContainerState{Waiting: &v1.ContainerStateWaiting{Reason: "ImagePullBackOff"}}},
			wantErr: `container "c" in pod "crasher" is waiting to start: trying and failing to pull image`},
		"creating": {
			cs:      v1.ContainerStatus{Name: "c", State: v1.ContainerState{Waiting: &v1.ContainerStateWaiting{Reason: "ContainerCreating"}}},
			wantErr: `container "c" in pod "crasher" is waiting to start: ContainerCreating`, noInstance: true},
		"no status": {
			cs:      v1.ContainerStatus{Name: "other"},
			wantErr: `container "c" in pod "crasher" is not available`, noInstance: true},
	} {
		t.Run(name, func(t *testing.T) {
			pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "crasher"}, Status: v1.PodStatus{ContainerStatuses: []v1.ContainerStatus{tc.cs}}}
			id, err := logContainerID(pod, "c", tc.previous)
			if tc.wantErr != "" {
				require.Error(t, err)
				assert.Equal(t, tc.wantErr, err.Error())
				var ni noLogInstanceError
				assert.Equal(t, tc.noInstance, errors.As(err, &ni))
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.wantID, id)
		})
	}
}

// probeState gives describe the last run's result, the output only of a
// run that failed or warned (a success's output, an HTTP probe's page, is
// in no kubelet event), cut to one line of api.MaxProbeMessage bytes, and
// the probe's failureThreshold (defaulted).
func TestProbeState(t *testing.T) {
	pod := &v1.Pod{Spec: v1.PodSpec{Containers: []v1.Container{{Name: "web",
		LivenessProbe:  &v1.Probe{FailureThreshold: 5},
		ReadinessProbe: &v1.Probe{}}}}}
	page := "<!DOCTYPE html>\n<html><head><title>Welcome to nginx!</title></head>" + strings.Repeat("<p>x</p>", 2000) + "</html>"

	got := probeState(pod, probes.ProbeStatus{ContainerName: "web", Kind: probes.Readiness, Result: probes.Success, LastResult: probes.Success,
		LastMessage: page, Runs: 3, Successes: 3})
	assert.Equal(t, api.ProbeState{Container: "web", Kind: "readiness", Result: "success", LastResult: "success", FailureThreshold: 3}, got)

	got = probeState(pod, probes.ProbeStatus{ContainerName: "web", Kind: probes.Liveness, Result: probes.Success, LastResult: probes.Failure,
		LastMessage: "dial tcp 10.88.0.5:80: connect: connection refused", Runs: 4, ConsecutiveFailures: 1})
	assert.Equal(t, "failure", got.LastResult)
	assert.Equal(t, "success", got.Result, "the verdict holds until 5 failures")
	assert.Equal(t, "dial tcp 10.88.0.5:80: connect: connection refused", got.LastMessage)
	assert.Equal(t, 1, got.Failures)
	assert.Equal(t, 5, got.FailureThreshold)

	got = probeState(pod, probes.ProbeStatus{ContainerName: "web", Kind: probes.Readiness, Result: probes.Failure, LastResult: probes.Failure,
		LastMessage: page, Runs: 1, ConsecutiveFailures: 1})
	assert.Len(t, got.LastMessage, api.MaxProbeMessage)
	assert.True(t, strings.HasSuffix(got.LastMessage, " ..."), got.LastMessage[len(got.LastMessage)-20:])
	assert.NotContains(t, got.LastMessage, "\n")

	got = probeState(pod, probes.ProbeStatus{ContainerName: "web", Kind: probes.Readiness, Result: probes.Failure})
	assert.Equal(t, "", got.LastResult, "no run yet")
}

// exec of a command the container does not have names the command and the
// runtime's reason, not "rpc error: code = Unknown desc = failed to exec in
// container: ... OCI runtime exec failed ..." (issue #28).
func TestExecStartError(t *testing.T) {
	runtimeErr := status.Error(codes.Unknown, `failed to exec in container: failed to start exec "3f2a": OCI runtime exec failed: exec failed: unable to start container process: exec: "foo": executable file not found in $PATH: unknown`)
	err := execStartError([]string{"foo", "-x"}, "c", "web", fmt.Errorf("exec sync: %w", runtimeErr))
	require.Error(t, err)
	assert.Equal(t, `command "foo" could not be run in container "c" of pod web: exec: "foo": executable file not found in $PATH (check the command's name and the container's PATH)`, err.Error())
	assert.True(t, apierrors.IsInternalError(err))
	assert.NotContains(t, err.Error(), "rpc error")

	assert.NoError(t, execStartError([]string{"ls"}, "c", "web", status.Error(codes.Unavailable, "connection refused")), "other errors are left as they are")
}
