package main

import (
	"bytes"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/minikubelet/minikubelet/agent/api"
)

var testNow = time.Date(2024, 5, 1, 12, 0, 0, 0, time.UTC)

func ago(d time.Duration) metav1.Time { return metav1.NewTime(testNow.Add(-d)) }

// basePod is a running two-container pod with one init container done.
func basePod() *v1.Pod {
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", CreationTimestamp: ago(3 * time.Hour)},
		Spec: v1.PodSpec{
			NodeName:       "node1",
			InitContainers: []v1.Container{{Name: "init", Image: "busybox"}},
			Containers:     []v1.Container{{Name: "app", Image: "nginx"}, {Name: "side", Image: "busybox"}},
		},
		Status: v1.PodStatus{
			Phase: v1.PodRunning,
			PodIP: "10.88.0.5",
			Conditions: []v1.PodCondition{
				{Type: v1.PodInitialized, Status: v1.ConditionTrue},
				{Type: v1.PodReady, Status: v1.ConditionTrue},
			},
			InitContainerStatuses: []v1.ContainerStatus{
				{Name: "init", State: v1.ContainerState{Terminated: &v1.ContainerStateTerminated{ExitCode: 0, Reason: "Completed"}}},
			},
			ContainerStatuses: []v1.ContainerStatus{
				{Name: "app", Ready: true, State: v1.ContainerState{Running: &v1.ContainerStateRunning{}}},
				{Name: "side", Ready: true, State: v1.ContainerState{Running: &v1.ContainerStateRunning{}}},
			},
		},
	}
}

func TestPodRow(t *testing.T) {
	tests := map[string]struct {
		mutate       func(p *v1.Pod)
		wantReady    string
		wantStatus   string
		wantRestarts string
	}{
		"running": {wantReady: "2/2", wantStatus: "Running", wantRestarts: "0"},
		"init 0/2 running": {mutate: func(p *v1.Pod) {
			p.Spec.InitContainers = append(p.Spec.InitContainers, v1.Container{Name: "init2"})
			p.Status.Phase = v1.PodPending
			p.Status.Conditions = nil
			p.Status.InitContainerStatuses[0].State = v1.ContainerState{Running: &v1.ContainerStateRunning{}}
			p.Status.InitContainerStatuses = append(p.Status.InitContainerStatuses, v1.ContainerStatus{Name: "init2", State: v1.ContainerState{Waiting: &v1.ContainerStateWaiting{Reason: "PodInitializing"}}})
			for i := range p.Status.ContainerStatuses {
				p.Status.ContainerStatuses[i] = v1.ContainerStatus{Name: p.Status.ContainerStatuses[i].Name, State: v1.ContainerState{Waiting: &v1.ContainerStateWaiting{Reason: "PodInitializing"}}}
			}
		}, wantReady: "0/2", wantStatus: "Init:0/2", wantRestarts: "0"},
		"init 1/2 after the first completed": {mutate: func(p *v1.Pod) {
			p.Spec.InitContainers = append(p.Spec.InitContainers, v1.Container{Name: "init2"})
			p.Status.Phase = v1.PodPending
			p.Status.Conditions = nil
			p.Status.InitContainerStatuses = append(p.Status.InitContainerStatuses, v1.ContainerStatus{Name: "init2", State: v1.ContainerState{Running: &v1.ContainerStateRunning{}}})
		}, wantReady: "0/2", wantStatus: "Init:1/2", wantRestarts: "0"},
		"init crash loop": {mutate: func(p *v1.Pod) {
			p.Status.Phase = v1.PodPending
			p.Status.Conditions = nil
			p.Status.InitContainerStatuses[0] = v1.ContainerStatus{Name: "init", RestartCount: 4,
				State:                v1.ContainerState{Waiting: &v1.ContainerStateWaiting{Reason: "CrashLoopBackOff"}},
				LastTerminationState: v1.ContainerState{Terminated: &v1.ContainerStateTerminated{ExitCode: 1, FinishedAt: ago(2 * time.Minute)}}}
		}, wantReady: "0/2", wantStatus: "Init:CrashLoopBackOff", wantRestarts: "4 (2m ago)"},
		"init failed exit code": {mutate: func(p *v1.Pod) {
			p.Status.Phase = v1.PodFailed
			p.Status.Conditions = nil
			p.Status.InitContainerStatuses[0].State = v1.ContainerState{Terminated: &v1.ContainerStateTerminated{ExitCode: 2}}
		}, wantReady: "0/2", wantStatus: "Init:ExitCode:2", wantRestarts: "0"},
		"crash loop back-off": {mutate: func(p *v1.Pod) {
			p.Status.ContainerStatuses[0] = v1.ContainerStatus{Name: "app", RestartCount: 5,
				State:                v1.ContainerState{Waiting: &v1.ContainerStateWaiting{Reason: "CrashLoopBackOff", Message: "back-off 40s"}},
				LastTerminationState: v1.ContainerState{Terminated: &v1.ContainerStateTerminated{ExitCode: 1, Reason: "Error", FinishedAt: ago(30 * time.Second)}}}
		}, wantReady: "1/2", wantStatus: "CrashLoopBackOff", wantRestarts: "5 (30s ago)"},
		"image pull back-off": {mutate: func(p *v1.Pod) {
			p.Status.ContainerStatuses[1] = v1.ContainerStatus{Name: "side", State: v1.ContainerState{Waiting: &v1.ContainerStateWaiting{Reason: "ImagePullBackOff"}}}
		}, wantReady: "1/2", wantStatus: "ImagePullBackOff", wantRestarts: "0"},
		"completed": {mutate: func(p *v1.Pod) {
			p.Status.Phase = v1.PodSucceeded
			for i := range p.Status.ContainerStatuses {
				p.Status.ContainerStatuses[i].Ready = false
				p.Status.ContainerStatuses[i].State = v1.ContainerState{Terminated: &v1.ContainerStateTerminated{ExitCode: 0, Reason: "Completed"}}
			}
		}, wantReady: "0/2", wantStatus: "Completed", wantRestarts: "0"},
		"one completed, one running": {mutate: func(p *v1.Pod) {
			p.Status.ContainerStatuses[1].Ready = false
			p.Status.ContainerStatuses[1].State = v1.ContainerState{Terminated: &v1.ContainerStateTerminated{ExitCode: 0, Reason: "Completed"}}
		}, wantReady: "1/2", wantStatus: "Running", wantRestarts: "0"},
		"error": {mutate: func(p *v1.Pod) {
			p.Status.Phase = v1.PodFailed
			p.Status.ContainerStatuses[0].Ready = false
			p.Status.ContainerStatuses[0].State = v1.ContainerState{Terminated: &v1.ContainerStateTerminated{ExitCode: 1, Reason: "Error"}}
		}, wantReady: "1/2", wantStatus: "Error", wantRestarts: "0"},
		"oom killed": {mutate: func(p *v1.Pod) {
			p.Status.ContainerStatuses[0].Ready = false
			p.Status.ContainerStatuses[0].State = v1.ContainerState{Terminated: &v1.ContainerStateTerminated{ExitCode: 137, Reason: "OOMKilled"}}
		}, wantReady: "1/2", wantStatus: "OOMKilled", wantRestarts: "0"},
		"terminated by signal without reason": {mutate: func(p *v1.Pod) {
			p.Status.ContainerStatuses[0].Ready = false
			p.Status.ContainerStatuses[0].State = v1.ContainerState{Terminated: &v1.ContainerStateTerminated{ExitCode: 137, Signal: 9}}
		}, wantReady: "1/2", wantStatus: "Signal:9", wantRestarts: "0"},
		"not ready running": {mutate: func(p *v1.Pod) {
			p.Status.ContainerStatuses[0].Ready = false
		}, wantReady: "1/2", wantStatus: "Running", wantRestarts: "0"},
		"rejected by admission": {mutate: func(p *v1.Pod) {
			p.Spec.InitContainers = nil
			p.Status = v1.PodStatus{Phase: v1.PodFailed, Reason: "OutOfmemory", Message: "Pod was rejected: insufficient memory"}
		}, wantReady: "0/2", wantStatus: "OutOfmemory", wantRestarts: "0"},
		"pending without status": {mutate: func(p *v1.Pod) {
			p.Spec.InitContainers = nil
			p.Status = v1.PodStatus{}
		}, wantReady: "0/2", wantStatus: "Pending", wantRestarts: "0"},
		"container creating": {mutate: func(p *v1.Pod) {
			p.Status.Phase = v1.PodPending
			for i := range p.Status.ContainerStatuses {
				p.Status.ContainerStatuses[i].Ready = false
				p.Status.ContainerStatuses[i].State = v1.ContainerState{Waiting: &v1.ContainerStateWaiting{Reason: "ContainerCreating"}}
			}
		}, wantReady: "0/2", wantStatus: "ContainerCreating", wantRestarts: "0"},
		"terminating": {mutate: func(p *v1.Pod) {
			ts := ago(time.Second)
			p.DeletionTimestamp = &ts
		}, wantReady: "2/2", wantStatus: "Terminating", wantRestarts: "0"},
		"terminated pod being deleted keeps its status": {mutate: func(p *v1.Pod) {
			ts := ago(time.Second)
			p.DeletionTimestamp = &ts
			p.Status.Phase = v1.PodSucceeded
			for i := range p.Status.ContainerStatuses {
				p.Status.ContainerStatuses[i].Ready = false
				p.Status.ContainerStatuses[i].State = v1.ContainerState{Terminated: &v1.ContainerStateTerminated{Reason: "Completed"}}
			}
		}, wantReady: "0/2", wantStatus: "Completed", wantRestarts: "0"},
		"restarts sum over containers, latest restart": {mutate: func(p *v1.Pod) {
			p.Status.ContainerStatuses[0].RestartCount = 2
			p.Status.ContainerStatuses[0].LastTerminationState = v1.ContainerState{Terminated: &v1.ContainerStateTerminated{FinishedAt: ago(90 * time.Minute)}}
			p.Status.ContainerStatuses[1].RestartCount = 1
			p.Status.ContainerStatuses[1].LastTerminationState = v1.ContainerState{Terminated: &v1.ContainerStateTerminated{FinishedAt: ago(5 * time.Minute)}}
		}, wantReady: "2/2", wantStatus: "Running", wantRestarts: "3 (5m ago)"},
		"sidecar counts as a container": {mutate: func(p *v1.Pod) {
			always := v1.ContainerRestartPolicyAlways
			p.Spec.InitContainers[0].RestartPolicy = &always
			started := true
			p.Status.InitContainerStatuses[0] = v1.ContainerStatus{Name: "init", Ready: true, Started: &started, State: v1.ContainerState{Running: &v1.ContainerStateRunning{}}}
		}, wantReady: "3/3", wantStatus: "Running", wantRestarts: "0"},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			p := basePod()
			if tt.mutate != nil {
				tt.mutate(p)
			}
			got := api.PodRow(p, testNow)
			assert.Equal(t, tt.wantReady, got.Ready, "READY")
			assert.Equal(t, tt.wantStatus, got.Status, "STATUS")
			assert.Equal(t, tt.wantRestarts, got.Restarts, "RESTARTS")
		})
	}
}

func TestAge(t *testing.T) {
	tests := []struct {
		d    time.Duration
		want string
	}{
		{5 * time.Second, "5s"},
		{90 * time.Second, "90s"},
		{3 * time.Minute, "3m"},
		{3*time.Minute + 20*time.Second, "3m20s"},
		{2 * time.Hour, "120m"},
		{5 * time.Hour, "5h"},
		{30 * time.Hour, "30h"},
		{4 * 24 * time.Hour, "4d"},
		{-5 * time.Second, "<invalid>"},
	}
	for _, tt := range tests {
		t.Run(tt.want, func(t *testing.T) {
			assert.Equal(t, tt.want, age(ago(tt.d), testNow))
		})
	}
	assert.Equal(t, "<unknown>", age(metav1.Time{}, testNow))
}

func TestPrintPodTable(t *testing.T) {
	a := basePod()
	b := basePod()
	b.Name, b.Namespace, b.CreationTimestamp = "a-much-longer-pod-name", "kube-system", ago(45*time.Second)
	b.Status.PodIP = ""
	b.Status.ContainerStatuses[0].RestartCount = 1
	pods := []v1.Pod{*a, *b}

	tests := []struct {
		name         string
		wide, showNS bool
		want         string
	}{
		{name: "default", want: "" +
			"NAME                     READY   STATUS    RESTARTS   AGE\n" +
			"web                      2/2     Running   0          3h\n" +
			"a-much-longer-pod-name   2/2     Running   1          45s\n"},
		{name: "wide", wide: true, want: "" +
			"NAME                     READY   STATUS    RESTARTS   AGE   IP          NODE\n" +
			"web                      2/2     Running   0          3h    10.88.0.5   node1\n" +
			"a-much-longer-pod-name   2/2     Running   1          45s   <none>      node1\n"},
		{name: "all namespaces", showNS: true, want: "" +
			"NAMESPACE     NAME                     READY   STATUS    RESTARTS   AGE\n" +
			"default       web                      2/2     Running   0          3h\n" +
			"kube-system   a-much-longer-pod-name   2/2     Running   1          45s\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var buf bytes.Buffer
			require.NoError(t, printPodTable(&buf, pods, tt.wide, tt.showNS, testNow))
			assert.Equal(t, tt.want, buf.String())
		})
	}
}
