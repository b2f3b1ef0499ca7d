package cluster

import (
	"encoding/json"
	"fmt"
	"math/rand"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
)

// pick returns a random subset of xs in random order.
func pick[T any](r *rand.Rand, xs []T) []T {
	var out []T
	for _, i := range r.Perm(len(xs)) {
		if r.Intn(3) > 0 {
			out = append(out, xs[i])
		}
	}
	return out
}

func oneOf[T any](r *rand.Rand, xs ...T) T { return xs[r.Intn(len(xs))] }

func randTime(r *rand.Rand) metav1.Time {
	return metav1.NewTime(time.Date(2026, 11, 25, 3, 0, r.Intn(3), 0, time.UTC))
}

func randContainerStatus(r *rand.Rand, name string) v1.ContainerStatus {
	cs := v1.ContainerStatus{
		Name: name, Image: oneOf(r, "img:1", "img:2"), ImageID: oneOf(r, "", "sha256:aa", "sha256:bb"),
		ContainerID: oneOf(r, "", "containerd://1", "containerd://2"), Ready: r.Intn(2) == 0,
		RestartCount: int32(r.Intn(3)),
	}
	if r.Intn(2) == 0 {
		cs.Started = new(r.Intn(2) == 0)
	}
	switch r.Intn(4) {
	case 0:
		cs.State.Waiting = &v1.ContainerStateWaiting{Reason: oneOf(r, "ContainerCreating", "CrashLoopBackOff"), Message: oneOf(r, "", "back-off 10s")}
	case 1:
		cs.State.Running = &v1.ContainerStateRunning{StartedAt: randTime(r)}
	case 2:
		cs.State.Terminated = &v1.ContainerStateTerminated{ExitCode: int32(r.Intn(3)), Reason: oneOf(r, "Completed", "Error"), StartedAt: randTime(r), FinishedAt: randTime(r), ContainerID: cs.ContainerID}
	}
	if r.Intn(2) == 0 {
		cs.LastTerminationState.Terminated = &v1.ContainerStateTerminated{ExitCode: 3, Reason: "Error", FinishedAt: randTime(r)}
	}
	return cs
}

func randPodStatus(r *rand.Rand) v1.PodStatus {
	st := v1.PodStatus{
		Phase:    oneOf(r, v1.PodPending, v1.PodRunning, v1.PodSucceeded, v1.PodFailed, ""),
		Reason:   oneOf(r, "", "UnsupportedPodSpec"),
		Message:  oneOf(r, "", "spec.containers[0].image: Required value"),
		QOSClass: oneOf(r, v1.PodQOSBestEffort, v1.PodQOSBurstable, ""),
	}
	for _, ty := range pick(r, []v1.PodConditionType{v1.PodReadyToStartContainers, v1.PodInitialized, v1.PodReady, v1.ContainersReady}) {
		st.Conditions = append(st.Conditions, v1.PodCondition{Type: ty, Status: oneOf(r, v1.ConditionTrue, v1.ConditionFalse),
			Reason: oneOf(r, "", "ContainersNotReady"), Message: oneOf(r, "", "containers with unready status: [a]"), LastTransitionTime: randTime(r)})
	}
	for _, ip := range pick(r, []string{"10.88.0.2", "fd00::2"}) {
		st.PodIPs = append(st.PodIPs, v1.PodIP{IP: ip})
	}
	if len(st.PodIPs) > 0 {
		st.PodIP = st.PodIPs[0].IP
	}
	for _, ip := range pick(r, []string{"192.168.1.5"}) {
		st.HostIPs = append(st.HostIPs, v1.HostIP{IP: ip})
		st.HostIP = ip
	}
	if r.Intn(2) == 0 {
		t := randTime(r)
		st.StartTime = &t
	}
	for _, n := range pick(r, []string{"a", "b", "c"}) {
		st.ContainerStatuses = append(st.ContainerStatuses, randContainerStatus(r, n))
	}
	for _, n := range pick(r, []string{"init"}) {
		st.InitContainerStatuses = append(st.InitContainerStatuses, randContainerStatus(r, n))
	}
	return st
}

func randNodeStatus(r *rand.Rand) v1.NodeStatus {
	st := v1.NodeStatus{
		Capacity:    v1.ResourceList{},
		Allocatable: v1.ResourceList{},
		NodeInfo: v1.NodeSystemInfo{KubeletVersion: oneOf(r, "v1.37.0", "v1.37.1"), ContainerRuntimeVersion: oneOf(r, "containerd://1.6.20", "containerd://2.2.1"),
			MachineID: "m", OperatingSystem: "linux", Architecture: "amd64"},
		DaemonEndpoints: v1.NodeDaemonEndpoints{KubeletEndpoint: v1.DaemonEndpoint{Port: int32(oneOf(r, 0, 10250))}},
	}
	for _, ty := range pick(r, []v1.NodeConditionType{v1.NodeReady, v1.NodeMemoryPressure, v1.NodeDiskPressure, v1.NodePIDPressure}) {
		st.Conditions = append(st.Conditions, v1.NodeCondition{Type: ty, Status: oneOf(r, v1.ConditionTrue, v1.ConditionFalse, v1.ConditionUnknown),
			Reason: oneOf(r, "KubeletReady", "KubeletNotReady"), Message: oneOf(r, "", "container runtime is down"),
			LastHeartbeatTime: randTime(r), LastTransitionTime: randTime(r)})
	}
	for _, a := range pick(r, []v1.NodeAddress{{Type: v1.NodeInternalIP, Address: "192.168.1.5"}, {Type: v1.NodeHostName, Address: oneOf(r, "n1", "n2")}}) {
		st.Addresses = append(st.Addresses, a)
	}
	for _, res := range pick(r, []v1.ResourceName{v1.ResourceCPU, v1.ResourceMemory, v1.ResourcePods}) {
		st.Capacity[res] = resource.MustParse(oneOf(r, "2", "110", "24Gi"))
		st.Allocatable[res] = resource.MustParse(oneOf(r, "2", "110", "23Gi"))
	}
	for _, img := range pick(r, []string{"a", "b", "c"}) {
		st.Images = append(st.Images, v1.ContainerImage{Names: []string{"reg/" + img + ":1"}, SizeBytes: int64(r.Intn(3))})
	}
	return st
}

// apply applies patch to server the way the API server does and returns
// the result as generic JSON (order of list elements kept).
func apply(t *testing.T, server, patch []byte, dataStruct any) any {
	t.Helper()
	out, err := strategicpatch.StrategicMergePatch(server, patch, dataStruct)
	require.NoError(t, err, "patch %s", patch)
	return decodeNoNulls(t, out)
}

// decodeNoNulls decodes JSON and drops object keys whose value is null,
// which decode as absent ones do (a zero metav1.Time encodes as null).
func decodeNoNulls(t *testing.T, b []byte) any {
	t.Helper()
	var v any
	require.NoError(t, json.Unmarshal(b, &v))
	var strip func(any) any
	strip = func(v any) any {
		switch x := v.(type) {
		case map[string]any:
			for k, e := range x {
				if e == nil {
					delete(x, k)
				} else {
					x[k] = strip(e)
				}
			}
		case []any:
			for i, e := range x {
				x[i] = strip(e)
			}
		}
		return v
	}
	return strip(v)
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	require.NoError(t, err)
	return b
}

// checkSameAsStrategicPatch compares twoWayMergePatch with client-go's
// CreateTwoWayMergePatch on old → want: applied to old itself and to each
// server-side version (old plus what other writers added), both patches
// must give the same object, and on old exactly want.
func checkSameAsStrategicPatch(t *testing.T, old, want any, servers []any, dataStruct any) {
	t.Helper()
	oldJSON, wantJSON := mustJSON(t, old), mustJSON(t, want)
	ours, err := twoWayMergePatch(oldJSON, wantJSON, dataStruct)
	require.NoError(t, err)
	theirs, err := strategicpatch.CreateTwoWayMergePatch(oldJSON, wantJSON, dataStruct)
	require.NoError(t, err)

	require.Equal(t, decodeNoNulls(t, wantJSON), apply(t, oldJSON, ours, dataStruct), "our patch %s on the old object", ours)
	for i, s := range servers {
		sJSON := mustJSON(t, s)
		require.Equal(t, apply(t, sJSON, theirs, dataStruct), apply(t, sJSON, ours, dataStruct),
			"server version %d: strategicpatch's %s vs ours %s", i, theirs, ours)
	}
}

func TestTwoWayMergePatch_PodStatusSameAsStrategicPatch(t *testing.T) {
	r := rand.New(rand.NewSource(1))
	for i := range 2000 {
		old, want := randPodStatus(r), randPodStatus(r)
		if i%5 == 0 {
			want = *old.DeepCopy() // small changes, as from one status to the next
			if len(want.Conditions) > 0 {
				want.Conditions[0].Status = v1.ConditionTrue
			}
			want.Message = ""
		}
		// Other writers' conditions: the scheduler's first, a readiness
		// gate's at the end.
		withOthers := old.DeepCopy()
		withOthers.Conditions = append([]v1.PodCondition{{Type: v1.PodScheduled, Status: v1.ConditionTrue}}, withOthers.Conditions...)
		withOthers.Conditions = append(withOthers.Conditions, v1.PodCondition{Type: "example.com/gate", Status: v1.ConditionFalse})
		withIP := old.DeepCopy()
		withIP.PodIPs = append(withIP.PodIPs, v1.PodIP{IP: "10.99.0.9"})
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			checkSameAsStrategicPatch(t, v1.Pod{Status: old}, v1.Pod{Status: want},
				[]any{v1.Pod{Status: old}, v1.Pod{Status: *withOthers}, v1.Pod{Status: *withIP}, v1.Pod{}}, v1.Pod{})
		})
	}
}

func TestTwoWayMergePatch_NodeStatusSameAsStrategicPatch(t *testing.T) {
	r := rand.New(rand.NewSource(2))
	for i := range 1000 {
		old, want := randNodeStatus(r), randNodeStatus(r)
		// node-problem-detector's condition and a cloud provider's address.
		withOthers := old.DeepCopy()
		withOthers.Conditions = append(withOthers.Conditions, v1.NodeCondition{Type: "KernelDeadlock", Status: v1.ConditionFalse})
		withOthers.Addresses = append([]v1.NodeAddress{{Type: v1.NodeExternalIP, Address: "203.0.113.5"}}, withOthers.Addresses...)
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			checkSameAsStrategicPatch(t, v1.Node{Status: old}, v1.Node{Status: want},
				[]any{v1.Node{Status: old}, v1.Node{Status: *withOthers}}, v1.Node{})
		})
	}
}

// The patch of an unchanged status is empty, as strategicpatch's.
func TestTwoWayMergePatch_Unchanged(t *testing.T) {
	st := randPodStatus(rand.New(rand.NewSource(3)))
	b := mustJSON(t, v1.Pod{Status: st})
	p, err := twoWayMergePatch(b, b, v1.Pod{})
	require.NoError(t, err)
	require.JSONEq(t, `{}`, string(p))
}

// Lists that cannot be merged by key are refused rather than patched
// wrongly.
func TestTwoWayMergePatch_Refuses(t *testing.T) {
	_, err := twoWayMergePatch([]byte(`{"status":{"conditions":[{"type":"A"}]}}`), []byte(`{"status":{"conditions":[{"status":"True"}]}}`), v1.Pod{})
	require.ErrorContains(t, err, `status.conditions: an element has no merge key "type"`)
	_, err = twoWayMergePatch([]byte(`{"status":{"resourceClaimStatuses":[]}}`), []byte(`{"status":{"resourceClaimStatuses":[{"name":"x"}]}}`), v1.Pod{})
	require.ErrorContains(t, err, `status.resourceClaimStatuses: patch strategy "merge,retainKeys"`)
}
