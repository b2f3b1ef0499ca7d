package agent

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"

	"github.com/minikubelet/minikubelet/agent/podstatus"
	"github.com/minikubelet/minikubelet/cri"
	"github.com/minikubelet/minikubelet/probes"
)

// A pod being torn down keeps its readiness probe, and a failure while
// its preStop hook runs (its worker busy in terminatePod) turns it
// unready at once, as the kubelet's status manager does (conformance:
// "Probing container should mark readiness on pods to false while pod is
// in progress of terminating"). Without readinessWhileTerminating the pod
// stays Ready until its containers are gone.
func TestAgent_ReadinessWhileTerminating(t *testing.T) {
	h := newPromptHarness(t, nil)
	h.agent.probes = probes.New(probes.Config{
		Execer: h.fake.Runtime, ClassifyExecError: cri.ClassifyExecError, Clock: h.clock,
		Logger: h.agent.logger, OnEvent: h.agent.onProbeEvent, Rand: func() float64 { return 0 },
	})
	var failing atomic.Bool
	hookStarted := make(chan struct{})
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	var once atomic.Bool
	h.fake.SetExecHandler(func(_ string, cmd []string) ([]byte, []byte, error) {
		switch strings.Join(cmd, " ") {
		case "/bin/ready":
			if failing.Load() {
				return nil, nil, &cri.ExitError{ExitCode: 1}
			}
		case "/bin/drain":
			if once.CompareAndSwap(false, true) {
				close(hookStarted)
			}
			<-release
		}
		return nil, nil, nil
	})
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	go func() { _ = h.agent.Run(ctx) }()
	pod := testPod(t, `
apiVersion: v1
kind: Pod
metadata: {name: draining}
spec:
  terminationGracePeriodSeconds: 30
  containers:
  - name: app
    image: reg.local/busybox:1
    readinessProbe: {exec: {command: [/bin/ready]}, periodSeconds: 1, failureThreshold: 1}
    lifecycle: {preStop: {exec: {command: [/bin/drain]}}}
`)
	h.agent.SetPods([]*v1.Pod{pod})
	h.stepUntil(t, "Ready", 10*time.Second, func(p *v1.Pod) bool { return podstatus.ConditionTrue(p.Status.Conditions, v1.PodReady) })

	h.agent.SetPods(nil)
	select {
	case <-hookStarted:
	case <-time.After(10 * time.Second):
		t.Fatal("the preStop hook did not start")
	}
	failing.Store(true)
	got := h.stepUntil(t, "unready while terminating", 10*time.Second, func(p *v1.Pod) bool {
		return !podstatus.ConditionTrue(p.Status.Conditions, v1.PodReady)
	})
	require.LessOrEqual(t, got, 3*time.Second, "unready within a probe period or two of the failure")
	last := h.rec.statuses[len(h.rec.statuses)-1]
	require.False(t, last.Status.ContainerStatuses[0].Ready)
	require.NotNil(t, last.Status.ContainerStatuses[0].State.Running, "still running: its preStop hook holds it")
	require.False(t, podstatus.ConditionTrue(last.Status.Conditions, v1.ContainersReady))
}
