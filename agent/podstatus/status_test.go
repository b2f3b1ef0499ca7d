package podstatus

import (
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func runningCS(name string) v1.ContainerStatus {
	t := true
	return v1.ContainerStatus{Name: name, ContainerID: "containerd://" + name, Started: &t, Ready: true,
		State: v1.ContainerState{Running: &v1.ContainerStateRunning{}}}
}

func exitedCS(name string, code int32) v1.ContainerStatus {
	f := false
	return v1.ContainerStatus{Name: name, ContainerID: "containerd://" + name, Started: &f, Ready: code == 0,
		State: v1.ContainerState{Terminated: &v1.ContainerStateTerminated{ExitCode: code}}}
}

func waitingCS(name, reason string) v1.ContainerStatus {
	return v1.ContainerStatus{Name: name, State: v1.ContainerState{Waiting: &v1.ContainerStateWaiting{Reason: reason}}}
}

func crashLoopCS(name string, lastExit int32) v1.ContainerStatus {
	cs := waitingCS(name, "CrashLoopBackOff")
	cs.ContainerID = "containerd://" + name
	cs.LastTerminationState = v1.ContainerState{Terminated: &v1.ContainerStateTerminated{ExitCode: lastExit}}
	return cs
}

func TestPodPhase(t *testing.T) {
	for name, tc := range map[string]struct {
		policy  v1.RestartPolicy
		sidecar bool
		init    []v1.ContainerStatus
		app     []v1.ContainerStatus
		want    v1.PodPhase
	}{
		"nothing created yet":                  {v1.RestartPolicyAlways, false, nil, []v1.ContainerStatus{waitingCS("a", "ContainerCreating")}, v1.PodPending},
		"init running":                         {v1.RestartPolicyAlways, false, []v1.ContainerStatus{runningCS("i")}, []v1.ContainerStatus{waitingCS("a", "PodInitializing")}, v1.PodPending},
		"init failed under Never":              {v1.RestartPolicyNever, false, []v1.ContainerStatus{exitedCS("i", 1)}, []v1.ContainerStatus{waitingCS("a", "PodInitializing")}, v1.PodFailed},
		"init failed under Always: retried":    {v1.RestartPolicyAlways, false, []v1.ContainerStatus{exitedCS("i", 1)}, []v1.ContainerStatus{waitingCS("a", "PodInitializing")}, v1.PodPending},
		"init in back-off under Never":         {v1.RestartPolicyNever, false, []v1.ContainerStatus{crashLoopCS("i", 2)}, []v1.ContainerStatus{waitingCS("a", "PodInitializing")}, v1.PodFailed},
		"all running":                          {v1.RestartPolicyAlways, false, []v1.ContainerStatus{exitedCS("i", 0)}, []v1.ContainerStatus{runningCS("a"), runningCS("b")}, v1.PodRunning},
		"one waiting for its image":            {v1.RestartPolicyAlways, false, nil, []v1.ContainerStatus{runningCS("a"), waitingCS("b", "ErrImagePull")}, v1.PodPending},
		"crash loop under Always is Running":   {v1.RestartPolicyAlways, false, nil, []v1.ContainerStatus{crashLoopCS("a", 1)}, v1.PodRunning},
		"all exited 0 under Never":             {v1.RestartPolicyNever, false, nil, []v1.ContainerStatus{exitedCS("a", 0), exitedCS("b", 0)}, v1.PodSucceeded},
		"one exited 1 under Never":             {v1.RestartPolicyNever, false, nil, []v1.ContainerStatus{exitedCS("a", 0), exitedCS("b", 1)}, v1.PodFailed},
		"all exited 0 under OnFailure":         {v1.RestartPolicyOnFailure, false, nil, []v1.ContainerStatus{exitedCS("a", 0)}, v1.PodSucceeded},
		"exited 1 under OnFailure: restarting": {v1.RestartPolicyOnFailure, false, nil, []v1.ContainerStatus{exitedCS("a", 1)}, v1.PodRunning},
		"exited 0 under Always: restarting":    {v1.RestartPolicyAlways, false, nil, []v1.ContainerStatus{exitedCS("a", 0)}, v1.PodRunning},
		"sidecar running, app not yet created": {v1.RestartPolicyAlways, true, []v1.ContainerStatus{runningCS("i")}, []v1.ContainerStatus{waitingCS("a", "PodInitializing")}, v1.PodPending},
		"sidecar not started yet":              {v1.RestartPolicyAlways, true, []v1.ContainerStatus{waitingCS("i", "PodInitializing")}, []v1.ContainerStatus{waitingCS("a", "PodInitializing")}, v1.PodPending},
		"app done, sidecar still running":      {v1.RestartPolicyNever, true, []v1.ContainerStatus{runningCS("i")}, []v1.ContainerStatus{exitedCS("a", 0)}, v1.PodSucceeded},
		"terminated sidecar is ignored":        {v1.RestartPolicyNever, true, []v1.ContainerStatus{exitedCS("i", 137)}, []v1.ContainerStatus{exitedCS("a", 0)}, v1.PodSucceeded},
	} {
		t.Run(name, func(t *testing.T) {
			pod := &v1.Pod{Spec: v1.PodSpec{RestartPolicy: tc.policy}}
			for _, cs := range tc.init {
				c := v1.Container{Name: cs.Name}
				if tc.sidecar {
					always := v1.ContainerRestartPolicyAlways
					c.RestartPolicy = &always
				}
				pod.Spec.InitContainers = append(pod.Spec.InitContainers, c)
			}
			for _, cs := range tc.app {
				pod.Spec.Containers = append(pod.Spec.Containers, v1.Container{Name: cs.Name})
			}
			st := &v1.PodStatus{InitContainerStatuses: tc.init, ContainerStatuses: tc.app}
			assert.Equal(t, tc.want, Phase(pod, st))
		})
	}
}

// A pod whose termination is complete never restarts: exited 0 under
// Always is Succeeded, a crash Failed, and a container that never started
// (deleted while pending) Failed.
func TestTerminalPhase(t *testing.T) {
	pod := &v1.Pod{Spec: v1.PodSpec{RestartPolicy: v1.RestartPolicyAlways, Containers: []v1.Container{{Name: "a"}, {Name: "b"}}}}
	for _, tc := range []struct {
		app  []v1.ContainerStatus
		want v1.PodPhase
	}{
		{[]v1.ContainerStatus{exitedCS("a", 0), exitedCS("b", 0)}, v1.PodSucceeded},
		{[]v1.ContainerStatus{exitedCS("a", 0), exitedCS("b", 137)}, v1.PodFailed},
		{[]v1.ContainerStatus{exitedCS("a", 0), waitingCS("b", "ContainerCreating")}, v1.PodFailed},
	} {
		assert.Equal(t, tc.want, TerminalPhase(pod, &v1.PodStatus{ContainerStatuses: tc.app}), "%v", tc.app)
	}
	assert.Equal(t, v1.RestartPolicyAlways, pod.Spec.RestartPolicy, "the pod is not changed")
}

func TestPodConditions(t *testing.T) {
	t0 := metav1.Unix(100, 0)
	t1 := metav1.Unix(200, 0)
	pod := &v1.Pod{Spec: v1.PodSpec{
		InitContainers: []v1.Container{{Name: "setup"}},
		Containers:     []v1.Container{{Name: "a"}, {Name: "b"}},
	}}
	sandboxReady := true // the pod's sandbox is ready
	cond := func(cs []v1.PodCondition, typ v1.PodConditionType) v1.PodCondition {
		for _, c := range cs {
			if c.Type == typ {
				return c
			}
		}
		t.Fatalf("no %s condition", typ)
		return v1.PodCondition{}
	}

	// Initializing: setup still runs.
	st := &v1.PodStatus{Phase: v1.PodPending,
		InitContainerStatuses: []v1.ContainerStatus{runningCS("setup")},
		ContainerStatuses:     []v1.ContainerStatus{waitingCS("a", "PodInitializing"), waitingCS("b", "PodInitializing")}}
	st.InitContainerStatuses[0].Ready = false
	cs := Conditions(pod, st, sandboxReady, nil, t0)
	assert.Equal(t, v1.ConditionTrue, cond(cs, v1.PodReadyToStartContainers).Status)
	init := cond(cs, v1.PodInitialized)
	assert.Equal(t, v1.ConditionFalse, init.Status)
	assert.Equal(t, "ContainersNotInitialized", init.Reason)
	assert.Equal(t, "containers with incomplete status: [setup]", init.Message)
	ready := cond(cs, v1.PodReady)
	assert.Equal(t, "ContainersNotReady", ready.Reason)
	assert.Equal(t, "containers with unready status: [a b]", ready.Message)

	// Running: everything true; transition times move only on change.
	st2 := &v1.PodStatus{Phase: v1.PodRunning,
		InitContainerStatuses: []v1.ContainerStatus{exitedCS("setup", 0)},
		ContainerStatuses:     []v1.ContainerStatus{runningCS("a"), runningCS("b")}}
	cs2 := Conditions(pod, st2, sandboxReady, cs, t1)
	for _, c := range cs2 {
		assert.Equal(t, v1.ConditionTrue, c.Status, c.Type)
	}
	assert.Equal(t, t0, cond(cs2, v1.PodReadyToStartContainers).LastTransitionTime, "unchanged condition keeps its time")
	assert.Equal(t, t1, cond(cs2, v1.PodReady).LastTransitionTime, "changed condition gets the new time")

	// Succeeded: not ready with PodCompleted.
	st3 := &v1.PodStatus{Phase: v1.PodSucceeded,
		InitContainerStatuses: []v1.ContainerStatus{exitedCS("setup", 0)},
		ContainerStatuses:     []v1.ContainerStatus{exitedCS("a", 0), exitedCS("b", 0)}}
	sandboxReady = false
	cs3 := Conditions(pod, st3, sandboxReady, cs2, t1)
	assert.Equal(t, "PodCompleted", cond(cs3, v1.ContainersReady).Reason)
	assert.Equal(t, v1.ConditionFalse, cond(cs3, v1.PodReadyToStartContainers).Status, "the sandbox is gone")

	// Each condition the kubelet owns carries the generation of the spec
	// synced (KEP 5067); a readiness gate's condition stays as it came.
	pod.Generation = 3
	pod.Spec.ReadinessGates = []v1.PodReadinessGate{{ConditionType: "example.com/gate"}}
	pod.Status.Conditions = []v1.PodCondition{{Type: "example.com/gate", Status: v1.ConditionTrue, ObservedGeneration: 2}}
	for _, c := range Conditions(pod, st3, sandboxReady, cs3, t1) {
		want := int64(3)
		if c.Type == "example.com/gate" {
			want = 2
		}
		assert.Equal(t, want, c.ObservedGeneration, c.Type)
	}
}

// TestPodConditions_ReadinessGates: with readiness gates, Ready is True only
// once containers are ready and every gate's condition is True, with the
// kubelet's reason and messages; the gates' conditions stay in the status
// (conformance: "Pods should support pod readiness gates").
func TestPodConditions_ReadinessGates(t *testing.T) {
	now := metav1.Unix(100, 0)
	sandboxReady := true // the pod's sandbox is ready
	running := &v1.PodStatus{Phase: v1.PodRunning, ContainerStatuses: []v1.ContainerStatus{runningCS("a")}}
	gate1, gate2 := v1.PodConditionType("k8s.io/test-condition1"), v1.PodConditionType("k8s.io/test-condition2")
	find := func(cs []v1.PodCondition, typ v1.PodConditionType) *v1.PodCondition {
		for i := range cs {
			if cs[i].Type == typ {
				return &cs[i]
			}
		}
		return nil
	}
	tests := []struct {
		name      string
		conds     []v1.PodCondition
		st        *v1.PodStatus
		wantReady v1.ConditionStatus
		reason    string
		message   string
	}{
		{name: "no gate condition yet", st: running, wantReady: v1.ConditionFalse, reason: "ReadinessGatesNotReady",
			message: `corresponding condition of pod readiness gate "k8s.io/test-condition1" does not exist., corresponding condition of pod readiness gate "k8s.io/test-condition2" does not exist.`},
		{name: "one gate True", st: running, conds: []v1.PodCondition{{Type: gate1, Status: v1.ConditionTrue}},
			wantReady: v1.ConditionFalse, reason: "ReadinessGatesNotReady",
			message: `corresponding condition of pod readiness gate "k8s.io/test-condition2" does not exist.`},
		{name: "both True", st: running, conds: []v1.PodCondition{{Type: gate1, Status: v1.ConditionTrue}, {Type: gate2, Status: v1.ConditionTrue}},
			wantReady: v1.ConditionTrue},
		{name: "one back to False", st: running, conds: []v1.PodCondition{{Type: gate1, Status: v1.ConditionFalse}, {Type: gate2, Status: v1.ConditionTrue}},
			wantReady: v1.ConditionFalse, reason: "ReadinessGatesNotReady",
			message: `the status of pod readiness gate "k8s.io/test-condition1" is not "True", but False`},
		{name: "containers not ready win", conds: []v1.PodCondition{{Type: gate1, Status: v1.ConditionTrue}, {Type: gate2, Status: v1.ConditionTrue}},
			st:        &v1.PodStatus{Phase: v1.PodPending, ContainerStatuses: []v1.ContainerStatus{waitingCS("a", "ContainerCreating")}},
			wantReady: v1.ConditionFalse, reason: "ContainersNotReady", message: "containers with unready status: [a]"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			pod := &v1.Pod{
				Spec: v1.PodSpec{
					Containers:     []v1.Container{{Name: "a"}},
					ReadinessGates: []v1.PodReadinessGate{{ConditionType: gate1}, {ConditionType: gate2}},
				},
				// A condition no gate names is not the agent's to keep.
				Status: v1.PodStatus{Conditions: append(slices.Clone(tc.conds), v1.PodCondition{Type: "other", Status: v1.ConditionTrue})},
			}
			cs := Conditions(pod, tc.st, sandboxReady, nil, now)
			ready := find(cs, v1.PodReady)
			require.NotNil(t, ready)
			assert.Equal(t, tc.wantReady, ready.Status)
			assert.Equal(t, tc.reason, ready.Reason)
			assert.Equal(t, tc.message, ready.Message)
			assert.Equal(t, tc.st.Phase == v1.PodRunning, find(cs, v1.ContainersReady).Status == v1.ConditionTrue, "ContainersReady ignores the gates")
			for _, c := range tc.conds {
				got := find(cs, c.Type)
				require.NotNil(t, got, c.Type)
				assert.Equal(t, c.Status, got.Status)
			}
			assert.Nil(t, find(cs, "other"))
		})
	}
}
