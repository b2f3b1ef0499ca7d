package main

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/minikubelet/minikubelet/agent/api"
)

func TestDescribePod(t *testing.T) {
	p := basePod()
	p.Labels = map[string]string{"tier": "front", "app": "web"}
	p.Status.HostIP = "192.168.1.10"
	p.Status.PodIPs = []v1.PodIP{{IP: "10.88.0.5"}}
	p.Status.QOSClass = v1.PodQOSBurstable
	start := ago(3 * time.Hour)
	p.Status.StartTime = &start
	p.Status.Conditions = []v1.PodCondition{
		{Type: v1.PodInitialized, Status: v1.ConditionTrue},
		{Type: v1.PodReady, Status: v1.ConditionFalse},
	}
	p.Spec.Containers[0].ReadinessProbe = &v1.Probe{
		ProbeHandler:   v1.ProbeHandler{HTTPGet: &v1.HTTPGetAction{Path: "/healthz", Port: intstr.FromInt32(8080)}},
		TimeoutSeconds: 1, PeriodSeconds: 10, SuccessThreshold: 1, FailureThreshold: 3,
	}
	p.Status.ContainerStatuses[0] = v1.ContainerStatus{
		Name: "app", ContainerID: "containerd://abc", ImageID: "docker.io/library/nginx@sha256:1", RestartCount: 2,
		State:                v1.ContainerState{Running: &v1.ContainerStateRunning{StartedAt: ago(time.Minute)}},
		LastTerminationState: v1.ContainerState{Terminated: &v1.ContainerStateTerminated{ExitCode: 137, Reason: "OOMKilled", StartedAt: ago(5 * time.Minute), FinishedAt: ago(2 * time.Minute)}},
	}
	details := &api.PodDetails{
		CgroupPath: "/kubepods/burstable/pod123",
		Source:     "api",
		Steps: []api.Step{
			{Name: "sandbox", Duration: 1234 * time.Millisecond, Detail: "10.88.0.5", At: testNow.Add(-3 * time.Hour)},
			{Name: "pull app", Duration: 2500 * time.Microsecond, Detail: "nginx (cached)"},
		},
		Probes: []api.ProbeState{{Container: "app", Kind: "readiness", Result: "Failure", LastMessage: "HTTP probe failed with statuscode: 503", Failures: 4}},
		Stuck:  &api.Stuck{Step: "readiness", Cause: "container app is not ready: HTTP probe failed with statuscode: 503", Hint: "check the app's /healthz"},
	}
	events := []v1.Event{
		{Type: "Warning", Reason: "Unhealthy", Message: "Readiness probe failed: 503", Count: 4, FirstTimestamp: ago(10 * time.Minute), LastTimestamp: ago(30 * time.Second), Source: v1.EventSource{Component: "minikubelet"}},
		{Type: "Normal", Reason: "Pulled", Message: "Container image \"nginx\" already present", FirstTimestamp: ago(3 * time.Hour), LastTimestamp: ago(3 * time.Hour), Count: 1, Source: v1.EventSource{Component: "minikubelet"}},
	}
	var buf bytes.Buffer
	require.NoError(t, describePod(&buf, p, details, events, testNow))
	out := buf.String()
	t.Log("\n" + out)
	for _, want := range []string{
		"Name:         web\n",
		"Namespace:    default\n",
		"Node:         node1/192.168.1.10\n",
		"Start Time:   Wed, 01 May 2024 09:00:00 +0000\n",
		"Labels:       app=web\n              tier=front\n",
		"Annotations:  <none>\n",
		"Status:       Running\n",
		"IP:           10.88.0.5\n",
		"QoS Class:  Burstable\n",
		"Cgroup:     /kubepods/burstable/pod123\n",
		"Source:     api\n",
		"Init Containers:\n  init:\n",
		"Containers:\n  app:\n    Container ID:   containerd://abc\n",
		"    State:          Running\n      Started:      Wed, 01 May 2024 11:59:00 +0000\n",
		"    Last State:     Terminated\n      Reason:       OOMKilled\n      Exit Code:    137\n",
		"    Ready:          False\n    Restart Count:  2\n",
		"    Readiness:      http-get http://:8080/healthz delay=0s timeout=1s period=10s #success=1 #failure=3\n",
		"      Last Result:  Failure: HTTP probe failed with statuscode: 503 (4 consecutive failures)\n",
		"Conditions:\n  Type          Status\n  Initialized   True\n  Ready         False\n",
		"Startup Trace:\n",
		"  sandbox   1.23s",
		"  pull app  2.5ms",
		"Stuck at:   readiness: container app is not ready: HTTP probe failed with statuscode: 503 (check the app's /healthz)\n",
		"Events:\n  Type     Reason     Age                From         Message\n",
		"  Normal   Pulled     3h                 minikubelet  Container image \"nginx\" already present\n",
		"  Warning  Unhealthy  30s (x4 over 10m)  minikubelet  Readiness probe failed: 503\n",
	} {
		assert.Contains(t, out, want)
	}
	// Events are oldest first.
	assert.Less(t, bytes.Index(buf.Bytes(), []byte("Pulled")), bytes.Index(buf.Bytes(), []byte("Unhealthy")))
}

func TestDescribePod_Minimal(t *testing.T) {
	p := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "x", Namespace: "default"},
		Spec:       v1.PodSpec{Containers: []v1.Container{{Name: "c", Image: "busybox"}}},
		Status:     v1.PodStatus{Phase: v1.PodFailed, Reason: "NodeAffinity", Message: "Pod was rejected: node didn't match"},
	}
	var buf bytes.Buffer
	require.NoError(t, describePod(&buf, p, nil, nil, testNow))
	out := buf.String()
	assert.Contains(t, out, "Status:       Failed\nReason:       NodeAffinity\nMessage:      Pod was rejected: node didn't match\n")
	assert.Contains(t, out, "    State:     Waiting\n      Reason:  PodInitializing\n")
	assert.Contains(t, out, "Events:        <none>\n")
	assert.NotContains(t, out, "0001", "unknown times are left out")
	assert.NotContains(t, out, "Stuck at")
}

// A probe's Last Result is what its last run returned, with the output of
// a run that failed or warned, one line, cut (issue #28: a failed
// liveness run was labelled "success: dial tcp …: connection refused", the
// probe's verdict before the threshold, and a readiness success printed a
// whole nginx page).
func TestDescribePod_ProbeLastResult(t *testing.T) {
	at := time.Date(2024, 5, 1, 13, 15, 40, 0, time.UTC)
	for name, tc := range map[string]struct {
		ps          api.ProbeState
		want        string
		wantMissing string
		maxLen      int
	}{
		"failed liveness run below the threshold": {
			ps: api.ProbeState{Kind: "liveness", Result: "success", LastResult: "failure", LastMessage: "dial tcp 10.88.0.5:80: connect: connection refused",
				Failures: 1, FailureThreshold: 3, LastProbeTime: at},
			want:        "failure: dial tcp 10.88.0.5:80: connect: connection refused (1 consecutive failure, failureThreshold 3); the probe still counts as success at 13:15:40",
			wantMissing: "success: dial",
		},
		"readiness success: no page": {
			ps:          api.ProbeState{Kind: "readiness", Result: "success", LastResult: "success", LastMessage: "<!DOCTYPE html>\n<html>\n<head>\n<title>Welcome to nginx!</title>", LastProbeTime: at},
			want:        "success at 13:15:40",
			wantMissing: "nginx",
		},
		"long multi-line failure output is one cut line": {
			ps:     api.ProbeState{Kind: "readiness", Result: "failure", LastResult: "failure", LastMessage: strings.Repeat("error line\n", 500), Failures: 6, FailureThreshold: 3},
			want:   "failure: error line error line",
			maxLen: api.MaxProbeMessage + 200,
		},
	} {
		t.Run(name, func(t *testing.T) {
			line := probeResultLine(tc.ps)
			t.Log(line)
			assert.Contains(t, line, tc.want)
			if tc.wantMissing != "" {
				assert.NotContains(t, line, tc.wantMissing)
			}
			assert.NotContains(t, line, "\n")
			if tc.maxLen > 0 {
				assert.LessOrEqual(t, len(line), tc.maxLen)
				assert.Contains(t, line, " ... (6 consecutive failures, failureThreshold 3)")
			}
		})
	}
}
