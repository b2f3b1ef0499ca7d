package cluster

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	agentnode "github.com/minikubelet/minikubelet/agent/node"
)

// criStatus is a CRI Status answer with the two conditions.
func criStatus(runtimeReady, networkReady bool) *runtimeapi.StatusResponse {
	net := &runtimeapi.RuntimeCondition{Type: runtimeapi.NetworkReady, Status: networkReady}
	if !networkReady {
		net.Reason, net.Message = "NetworkPluginNotReady", "Network plugin returns error: cni plugin not initialized"
	}
	rt := &runtimeapi.RuntimeCondition{Type: runtimeapi.RuntimeReady, Status: runtimeReady}
	if !runtimeReady {
		rt.Reason, rt.Message = "ShimDown", "the shim is gone"
	}
	return &runtimeapi.StatusResponse{Status: &runtimeapi.RuntimeStatus{Conditions: []*runtimeapi.RuntimeCondition{rt, net}}}
}

// testNodeInfo is a 2-CPU, 4 GiB node with 256Mi reserved.
func testNodeInfo() agentnode.Info {
	return agentnode.Info{
		Name:   "node-a",
		Labels: map[string]string{v1.LabelHostname: "node-a", v1.LabelOSStable: "linux", v1.LabelArchStable: "amd64", "tier": "edge"},
		Capacity: v1.ResourceList{
			v1.ResourceCPU: resource.MustParse("2"), v1.ResourceMemory: resource.MustParse("4Gi"), v1.ResourcePods: resource.MustParse("110"),
		},
		Allocatable: v1.ResourceList{
			v1.ResourceCPU: resource.MustParse("2"), v1.ResourceMemory: resource.MustParse("3840Mi"), v1.ResourcePods: resource.MustParse("110"),
		},
	}
}

func TestRuntimeStateProblems(t *testing.T) {
	tests := []struct {
		name  string
		state runtimeState
		want  []string
	}{
		{name: "ready", state: runtimeStateFrom(criStatus(true, true), nil)},
		{name: "not yet probed", state: runtimeState{}, want: []string{messageRuntimeNotYetProbed}},
		{name: "runtime down", state: runtimeStateFrom(nil, errors.New("connection refused")),
			want: []string{"container runtime is down: connection refused"}},
		{name: "network not ready", state: runtimeStateFrom(criStatus(true, false), nil),
			want: []string{"container runtime network not ready: NetworkReady=false reason:NetworkPluginNotReady message:Network plugin returns error: cni plugin not initialized"}},
		{name: "both not ready", state: runtimeStateFrom(criStatus(false, false), nil), want: []string{
			"container runtime not ready: RuntimeReady=false reason:ShimDown message:the shim is gone",
			"container runtime network not ready: NetworkReady=false reason:NetworkPluginNotReady message:Network plugin returns error: cni plugin not initialized",
		}},
		{name: "no conditions at all", state: runtimeStateFrom(&runtimeapi.StatusResponse{}, nil), want: []string{
			"container runtime not ready: RuntimeReady=false reason:NoCondition message:the runtime reports no RuntimeReady condition",
			"container runtime network not ready: NetworkReady=false reason:NoCondition message:the runtime reports no NetworkReady condition",
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			require.Equal(t, tt.want, tt.state.problems())
		})
	}
}

func TestBuildStatus(t *testing.T) {
	t0 := time.Date(2026, 11, 24, 10, 0, 0, 0, time.UTC)
	t1 := t0.Add(10 * time.Second)
	addrs := []v1.NodeAddress{{Type: v1.NodeInternalIP, Address: "10.0.0.5"}, {Type: v1.NodeHostName, Address: "node-a"}}
	base := statusInputs{
		node:      testNodeInfo(),
		addresses: addrs,
		system:    v1.NodeSystemInfo{KernelVersion: "6.1", ContainerRuntimeVersion: "containerd://1.6.20"},
		runtime:   runtimeStateFrom(criStatus(true, true), nil),
	}
	cond := func(st v1.NodeStatus, typ v1.NodeConditionType) v1.NodeCondition {
		c := findCondition(st.Conditions, typ)
		require.NotNil(t, c, "condition %s", typ)
		return *c
	}

	t.Run("a new node", func(t *testing.T) {
		st := buildStatus(base, nil, t0)
		require.Equal(t, base.node.Capacity, st.Capacity)
		require.Equal(t, base.node.Allocatable, st.Allocatable)
		require.Equal(t, addrs, st.Addresses)
		require.Equal(t, base.system, st.NodeInfo)
		var types []v1.NodeConditionType
		for _, c := range st.Conditions {
			types = append(types, c.Type)
			require.Equal(t, t0, c.LastHeartbeatTime.Time)
			require.Equal(t, t0, c.LastTransitionTime.Time)
		}
		require.Equal(t, []v1.NodeConditionType{v1.NodeMemoryPressure, v1.NodeDiskPressure, v1.NodePIDPressure, v1.NodeReady}, types)
		require.Equal(t, v1.NodeCondition{Type: v1.NodeReady, Status: v1.ConditionTrue, Reason: reasonReady, Message: messageReady,
			LastHeartbeatTime: metav1.NewTime(t0), LastTransitionTime: metav1.NewTime(t0)}, cond(st, v1.NodeReady))
		require.Equal(t, reasonSufficientMemory, cond(st, v1.NodeMemoryPressure).Reason)
		require.Equal(t, v1.ConditionFalse, cond(st, v1.NodeDiskPressure).Status)
		require.Equal(t, reasonSufficientPID, cond(st, v1.NodePIDPressure).Reason)
	})

	t.Run("extended resources another writer advertised are kept, ours win", func(t *testing.T) {
		prev := buildStatus(base, nil, t0)
		prev.Capacity["scheduling.k8s.io/foo"] = resource.MustParse("5")
		prev.Capacity["example.com/gpu"] = resource.MustParse("3")
		prev.Allocatable["example.com/gpu"] = resource.MustParse("3")
		prev.Capacity["hugepages-2Mi"] = resource.MustParse("2Mi")
		in := base
		in.node.Capacity = base.node.Capacity.DeepCopy()
		in.node.Allocatable = base.node.Allocatable.DeepCopy()
		in.node.Capacity["example.com/gpu"] = resource.MustParse("2") // a device plugin's: ours
		in.node.Allocatable["example.com/gpu"] = resource.MustParse("1")
		st := buildStatus(in, &prev, t1)
		foo := st.Capacity["scheduling.k8s.io/foo"]
		require.Equal(t, "5", foo.String())
		foo = st.Allocatable["scheduling.k8s.io/foo"]
		require.Equal(t, "5", foo.String(), "allocatable follows capacity for a foreign resource")
		gpu, gpuA := st.Capacity["example.com/gpu"], st.Allocatable["example.com/gpu"]
		require.Equal(t, "2/1", gpu.String()+"/"+gpuA.String(), "the agent's own figures win")
		require.NotContains(t, st.Capacity, v1.ResourceName("hugepages-2Mi"), "not an extended resource: the agent's view")
		patch, err := statusPatch(&v1.Node{Status: prev}, st)
		require.NoError(t, err)
		require.NotContains(t, string(patch), `"scheduling.k8s.io/foo":null`, "the foreign resource is never deleted")
		require.Contains(t, string(patch), `"allocatable":{"example.com/gpu":"1","scheduling.k8s.io/foo":"5"}`)
	})

	t.Run("the kubelet port is advertised", func(t *testing.T) {
		require.Zero(t, buildStatus(base, nil, t0).DaemonEndpoints.KubeletEndpoint.Port, "no server, no port")
		in := base
		in.kubeletPort = 10250
		require.Equal(t, int32(10250), buildStatus(in, nil, t0).DaemonEndpoints.KubeletEndpoint.Port)
	})

	t.Run("an unchanged condition keeps its transition time", func(t *testing.T) {
		prev := buildStatus(base, nil, t0)
		st := buildStatus(base, &prev, t1)
		require.Equal(t, t0, cond(st, v1.NodeReady).LastTransitionTime.Time)
		require.Equal(t, t1, cond(st, v1.NodeReady).LastHeartbeatTime.Time)
		require.False(t, statusChanged(&prev, &st), "only heartbeats differ")
	})

	t.Run("network not ready turns Ready false with the runtime's reason", func(t *testing.T) {
		prev := buildStatus(base, nil, t0)
		in := base
		in.runtime = runtimeStateFrom(criStatus(true, false), nil)
		st := buildStatus(in, &prev, t1)
		ready := cond(st, v1.NodeReady)
		require.Equal(t, v1.ConditionFalse, ready.Status)
		require.Equal(t, reasonNotReady, ready.Reason)
		require.Contains(t, ready.Message, "NetworkReady=false reason:NetworkPluginNotReady")
		require.Equal(t, t1, ready.LastTransitionTime.Time)
		require.Equal(t, t0, cond(st, v1.NodeMemoryPressure).LastTransitionTime.Time)
		require.True(t, statusChanged(&prev, &st))
	})

	t.Run("pressure", func(t *testing.T) {
		in := base
		in.memoryPressure, in.diskPressure, in.pidPressure = true, true, true
		st := buildStatus(in, nil, t0)
		require.Equal(t, v1.NodeCondition{Type: v1.NodeMemoryPressure, Status: v1.ConditionTrue, Reason: reasonInsufficientMemory, Message: messageInsufficientMemory,
			LastHeartbeatTime: metav1.NewTime(t0), LastTransitionTime: metav1.NewTime(t0)}, cond(st, v1.NodeMemoryPressure))
		require.Equal(t, reasonDiskPressure, cond(st, v1.NodeDiskPressure).Reason)
		require.Equal(t, reasonInsufficientPID, cond(st, v1.NodePIDPressure).Reason)
		require.Equal(t, v1.ConditionTrue, cond(st, v1.NodeReady).Status, "pressure alone does not make a node unready")
	})

	t.Run("what others own is kept", func(t *testing.T) {
		cur := buildStatus(base, nil, t0)
		netCond := v1.NodeCondition{Type: v1.NodeNetworkUnavailable, Status: v1.ConditionFalse, Reason: "RouteCreated"}
		cur.Conditions = append(cur.Conditions, netCond)
		cur.Images = []v1.ContainerImage{{Names: []string{"pause"}, SizeBytes: 1}}
		cur.Capacity[v1.ResourceCPU] = resource.MustParse("64")
		st := buildStatus(base, &cur, t1)
		require.Equal(t, netCond, cond(st, v1.NodeNetworkUnavailable))
		require.Equal(t, cur.Images, st.Images)
		require.Equal(t, base.node.Capacity, st.Capacity, "capacity is the agent's")
		require.True(t, statusChanged(&cur, &st))
	})
}

func TestPressureTracker(t *testing.T) {
	t0 := time.Date(2026, 11, 24, 10, 0, 0, 0, time.UTC)
	plenty := readings{
		memAvailable: 1 << 30, memKnown: true,
		fs:       fsStats{availBytes: 50, totalBytes: 100, freeInodes: 50, totalInodes: 100},
		fsKnown:  true,
		pidsUsed: 100, pidMax: 32768, pidKnown: true,
	}
	tests := []struct {
		name              string
		mutate            func(*readings)
		wantMem, wantDisk bool
		wantPID           bool
	}{
		{name: "plenty", mutate: func(*readings) {}},
		{name: "memory below 100Mi", mutate: func(r *readings) { r.memAvailable = 99 << 20 }, wantMem: true},
		{name: "memory at 100Mi", mutate: func(r *readings) { r.memAvailable = 100 << 20 }},
		{name: "disk below 10%", mutate: func(r *readings) { r.fs.availBytes = 9 }, wantDisk: true},
		{name: "inodes below 5%", mutate: func(r *readings) { r.fs.freeInodes = 4 }, wantDisk: true},
		{name: "pids below 5% left", mutate: func(r *readings) { r.pidsUsed = 32000 }, wantPID: true},
		{name: "unknown readings are no pressure", mutate: func(r *readings) { *r = readings{} }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var p pressureTracker
			r := plenty
			tt.mutate(&r)
			mem, disk, pid := p.observe(r, t0)
			require.Equal(t, []bool{tt.wantMem, tt.wantDisk, tt.wantPID}, []bool{mem, disk, pid})
			if !tt.wantMem && !tt.wantDisk && !tt.wantPID {
				return
			}
			// Back to plenty: the condition holds for the transition
			// period after the last crossing, then clears.
			mem, disk, pid = p.observe(plenty, t0.Add(pressureTransitionPeriod-time.Second))
			require.Equal(t, []bool{tt.wantMem, tt.wantDisk, tt.wantPID}, []bool{mem, disk, pid})
			mem, disk, pid = p.observe(plenty, t0.Add(pressureTransitionPeriod))
			require.Equal(t, []bool{false, false, false}, []bool{mem, disk, pid})
		})
	}

	t.Run("an unknown reading keeps the last observation", func(t *testing.T) {
		var p pressureTracker
		low := plenty
		low.memAvailable = 1
		mem, _, _ := p.observe(low, t0)
		require.True(t, mem)
		mem, _, _ = p.observe(readings{}, t0.Add(time.Minute))
		require.True(t, mem)
	})
}

// status.runtimeHandlers: the runtime's handlers and their features from
// its CRI Status, as the kubelet publishes them (e2e_node's recursive
// read-only specs read handler ""); a failed call keeps the Node's.
func TestBuildStatus_RuntimeHandlers(t *testing.T) {
	now := time.Date(2026, 11, 30, 1, 0, 0, 0, time.UTC)
	resp := criStatus(true, true)
	resp.RuntimeHandlers = []*runtimeapi.RuntimeHandler{
		{Name: "", Features: &runtimeapi.RuntimeHandlerFeatures{RecursiveReadOnlyMounts: true, UserNamespaces: true}},
		{Name: "runc", Features: &runtimeapi.RuntimeHandlerFeatures{RecursiveReadOnlyMounts: true}},
	}
	in := statusInputs{node: testNodeInfo(), runtime: runtimeStateFrom(resp, nil)}
	st := buildStatus(in, nil, now)
	yes, no := true, false
	require.Equal(t, []v1.NodeRuntimeHandler{
		{Name: "", Features: &v1.NodeRuntimeHandlerFeatures{RecursiveReadOnlyMounts: &yes, UserNamespaces: &yes}},
		{Name: "runc", Features: &v1.NodeRuntimeHandlerFeatures{RecursiveReadOnlyMounts: &yes, UserNamespaces: &no}},
	}, st.RuntimeHandlers)

	in.runtime = runtimeStateFrom(nil, errors.New("connection refused"))
	require.Equal(t, st.RuntimeHandlers, buildStatus(in, &st, now).RuntimeHandlers, "kept while the runtime does not answer")
}
