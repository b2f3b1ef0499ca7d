package stats

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"

	"github.com/minikubelet/minikubelet/cgroups"
)

// fakeHost serves fixed readings; cgroups are keyed by their cgroupfs path.
type fakeHost struct {
	node    Usage
	cgroups map[string]Usage
	fs      map[string]Filesystem
}

func (h *fakeHost) Cgroup(n cgroups.Name) (*Usage, error) {
	u, ok := h.cgroups[n.ToCgroupfs()]
	if !ok {
		return nil, fmt.Errorf("cgroup %s: %w", n, fs.ErrNotExist)
	}
	return &u, nil
}
func (h *fakeHost) Node() (*Usage, error)            { u := h.node; return &u, nil }
func (h *fakeHost) BootTime() (time.Time, error)     { return time.Unix(1000, 0), nil }
func (h *fakeHost) Processes() (int64, int64, error) { return 321, 4194304, nil }
func (h *fakeHost) Statfs(p string) (*Filesystem, error) {
	f, ok := h.fs[p]
	if !ok {
		return nil, fmt.Errorf("statfs %s: %w", p, fs.ErrNotExist)
	}
	return &f, nil
}
func (h *fakeHost) Interfaces() ([]statsapi.InterfaceStats, error) {
	return []statsapi.InterfaceStats{{Name: "ens3", RxBytes: ptr(uint64(10)), TxBytes: ptr(uint64(20))}, {Name: "eth0", RxBytes: ptr(uint64(1))}}, nil
}

// fakeRuntime answers the CRI stats calls; sandboxErr fails
// ListPodSandboxStats (a runtime without it).
type fakeRuntime struct {
	containers []*runtimeapi.ContainerStats
	sandboxes  []*runtimeapi.PodSandboxStats
	sandboxErr error
}

func (r *fakeRuntime) ListContainerStats(context.Context, *runtimeapi.ContainerStatsFilter) ([]*runtimeapi.ContainerStats, error) {
	return r.containers, nil
}
func (r *fakeRuntime) ListPodSandboxStats(context.Context, *runtimeapi.PodSandboxStatsFilter) ([]*runtimeapi.PodSandboxStats, error) {
	return r.sandboxes, r.sandboxErr
}
func (r *fakeRuntime) ImageFsInfo(context.Context) (*runtimeapi.ImageFsInfoResponse, error) {
	return &runtimeapi.ImageFsInfoResponse{ImageFilesystems: []*runtimeapi.FilesystemUsage{{
		FsId: &runtimeapi.FilesystemIdentifier{Mountpoint: "/var/lib/containerd"}, UsedBytes: &runtimeapi.UInt64Value{Value: 5000}, InodesUsed: &runtimeapi.UInt64Value{Value: 50},
	}}}, nil
}

type fakePods []*v1.Pod

func (p fakePods) ListPods(string) []*v1.Pod { return p }

var t0 = time.Unix(1_800_000_000, 0)

func burner() *v1.Pod {
	start := metav1.NewTime(t0.Add(-time.Minute))
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "burner", Namespace: "default", UID: types.UID("uid-1")},
		Status: v1.PodStatus{QOSClass: v1.PodQOSBurstable, StartTime: &start, ContainerStatuses: []v1.ContainerStatus{
			{Name: "spin", State: v1.ContainerState{Running: &v1.ContainerStateRunning{StartedAt: start}}},
		}},
	}
}

func containerStat(at time.Time, cpuNanos uint64) *runtimeapi.ContainerStats {
	return &runtimeapi.ContainerStats{
		Attributes: &runtimeapi.ContainerAttributes{Id: "c1", Labels: map[string]string{
			labelPodName: "burner", labelPodNamespace: "default", labelPodUID: "uid-1", labelContainerName: "spin"}},
		Cpu:           &runtimeapi.CpuUsage{Timestamp: at.UnixNano(), UsageCoreNanoSeconds: &runtimeapi.UInt64Value{Value: cpuNanos}},
		Memory:        &runtimeapi.MemoryUsage{Timestamp: at.UnixNano(), WorkingSetBytes: &runtimeapi.UInt64Value{Value: 3 << 20}, UsageBytes: &runtimeapi.UInt64Value{Value: 4 << 20}},
		WritableLayer: &runtimeapi.FilesystemUsage{Timestamp: at.UnixNano(), UsedBytes: &runtimeapi.UInt64Value{Value: 4096}, InodesUsed: &runtimeapi.UInt64Value{Value: 3}},
	}
}

func newTestCollector(host *fakeHost, rt *fakeRuntime, pods ...*v1.Pod) *Collector {
	return New(Config{NodeName: "node-a", Pods: fakePods(pods), Runtime: rt, Host: host, RootDir: "/var/lib/minikubelet",
		LogUsage: func(p *v1.Pod, c string) (uint64, bool) { return 100, p.Name == "burner" && c == "spin" }})
}

func testHost() *fakeHost {
	return &fakeHost{
		node: Usage{Time: t0, CPUNanos: 50e9, MemoryUsage: 3 << 30, WorkingSet: 2 << 30, MemoryLimit: 8 << 30},
		cgroups: map[string]Usage{
			"/kubepods":                    {Time: t0, CPUNanos: 20e9, MemoryUsage: 600 << 20, WorkingSet: 500 << 20},
			"/kubepods/burstable/poduid-1": {Time: t0, CPUNanos: 10e9, MemoryUsage: 6 << 20, WorkingSet: 5 << 20, RSS: 4 << 20, MemoryLimit: 64 << 20},
		},
		fs: map[string]Filesystem{
			"/var/lib/minikubelet": {Capacity: 100 << 30, Available: 60 << 30, Used: 40 << 30, Inodes: 1000, InodesFree: 900},
			"/var/lib/containerd":  {Capacity: 100 << 30, Available: 60 << 30, Used: 40 << 30, Inodes: 1000, InodesFree: 900},
		},
	}
}

func TestSummary_FromCgroupsAndCRI(t *testing.T) {
	host := testHost()
	rt := &fakeRuntime{containers: []*runtimeapi.ContainerStats{containerStat(t0, 9e9)}, sandboxes: []*runtimeapi.PodSandboxStats{{
		Attributes: &runtimeapi.PodSandboxAttributes{Metadata: &runtimeapi.PodSandboxMetadata{Uid: "uid-1"}},
		Linux: &runtimeapi.LinuxPodSandboxStats{Network: &runtimeapi.NetworkUsage{Timestamp: t0.UnixNano(),
			DefaultInterface: &runtimeapi.NetworkInterfaceUsage{Name: "eth0", RxBytes: &runtimeapi.UInt64Value{Value: 777}, TxBytes: &runtimeapi.UInt64Value{Value: 888}}}},
	}}}
	c := newTestCollector(host, rt, burner(), &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "pending", Namespace: "default", UID: "uid-2"}})

	s, err := c.Summary(context.Background(), false)
	require.NoError(t, err)
	n := s.Node
	require.Equal(t, "node-a", n.NodeName)
	require.Equal(t, time.Unix(1000, 0), n.StartTime.Time)
	require.Equal(t, uint64(50e9), *n.CPU.UsageCoreNanoSeconds)
	require.Nil(t, n.CPU.UsageNanoCores, "no rate from a single sample")
	require.Equal(t, uint64(2<<30), *n.Memory.WorkingSetBytes)
	require.Equal(t, uint64(6<<30), *n.Memory.AvailableBytes, "limit minus working set")
	require.Len(t, n.SystemContainers, 1)
	require.Equal(t, "pods", n.SystemContainers[0].Name)
	require.Equal(t, uint64(500<<20), *n.SystemContainers[0].Memory.WorkingSetBytes)
	require.Equal(t, "eth0", n.Network.Name, "eth0 is the default interface")
	require.Len(t, n.Network.Interfaces, 2)
	require.Equal(t, uint64(60<<30), *n.Fs.AvailableBytes)
	require.Equal(t, uint64(100), *n.Fs.InodesUsed)
	require.Equal(t, uint64(5000), *n.Runtime.ImageFs.UsedBytes, "usage from ImageFsInfo")
	require.Equal(t, uint64(100<<30), *n.Runtime.ImageFs.CapacityBytes, "capacity from the mount")
	require.Equal(t, int64(321), *n.Rlimit.NumOfRunningProcesses)

	require.Len(t, s.Pods, 1, "the pending pod has neither a cgroup nor containers")
	p := s.Pods[0]
	require.Equal(t, statsapi.PodReference{Name: "burner", Namespace: "default", UID: "uid-1"}, p.PodRef)
	require.Equal(t, t0.Add(-time.Minute), p.StartTime.Time)
	require.Equal(t, uint64(10e9), *p.CPU.UsageCoreNanoSeconds, "pod CPU from its cgroup")
	require.Equal(t, uint64(5<<20), *p.Memory.WorkingSetBytes)
	require.Equal(t, uint64(59<<20), *p.Memory.AvailableBytes)
	require.Equal(t, uint64(777), *p.Network.RxBytes)
	require.Len(t, p.Containers, 1)
	ct := p.Containers[0]
	require.Equal(t, "spin", ct.Name)
	require.Equal(t, t0.Add(-time.Minute), ct.StartTime.Time)
	require.Equal(t, uint64(9e9), *ct.CPU.UsageCoreNanoSeconds)
	require.Equal(t, uint64(3<<20), *ct.Memory.WorkingSetBytes)
	require.Equal(t, uint64(4096), *ct.Rootfs.UsedBytes)
	require.Equal(t, uint64(60<<30), *ct.Rootfs.AvailableBytes, "rootfs capacity is the image filesystem's")
	require.Equal(t, uint64(100), *ct.Logs.UsedBytes)
	require.Equal(t, uint64(4196), *p.EphemeralStorage.UsedBytes, "rootfs + logs")

	// A second summary 2 s later: 2 core-seconds burnt by the container
	// and the pod, 4 by the node: the rates.
	t1 := t0.Add(2 * time.Second)
	host.node.Time, host.node.CPUNanos = t1, 58e9
	pc := host.cgroups["/kubepods/burstable/poduid-1"]
	pc.Time, pc.CPUNanos = t1, 12e9
	host.cgroups["/kubepods/burstable/poduid-1"] = pc
	rt.containers = []*runtimeapi.ContainerStats{containerStat(t1, 11e9)}
	s, err = c.Summary(context.Background(), false)
	require.NoError(t, err)
	require.Equal(t, uint64(4e9), *s.Node.CPU.UsageNanoCores)
	require.Equal(t, uint64(1e9), *s.Pods[0].CPU.UsageNanoCores)
	require.Equal(t, uint64(1e9), *s.Pods[0].Containers[0].CPU.UsageNanoCores)

	// 100 ms later the pod burnt 0.1 core-second (a full core over a CFS
	// period): too short a window for a rate; the last one stays, and so
	// does the base (the next rate is over the 2.1 s since t1).
	t2 := t1.Add(100 * time.Millisecond)
	pc.Time, pc.CPUNanos = t2, 12.1e9
	host.cgroups["/kubepods/burstable/poduid-1"] = pc
	s, err = c.Summary(context.Background(), false)
	require.NoError(t, err)
	require.Equal(t, uint64(1e9), *s.Pods[0].CPU.UsageNanoCores)
	t3 := t1.Add(2100 * time.Millisecond)
	pc.Time, pc.CPUNanos = t3, 12.21e9
	host.cgroups["/kubepods/burstable/poduid-1"] = pc
	s, err = c.Summary(context.Background(), false)
	require.NoError(t, err)
	require.Equal(t, uint64(100e6), *s.Pods[0].CPU.UsageNanoCores)
}

func TestSummary_OnlyCPUAndMemory(t *testing.T) {
	rt := &fakeRuntime{containers: []*runtimeapi.ContainerStats{containerStat(t0, 9e9)}, sandboxErr: errors.New("unimplemented")}
	s, err := newTestCollector(testHost(), rt, burner()).Summary(context.Background(), true)
	require.NoError(t, err)
	require.NotNil(t, s.Node.CPU)
	require.NotNil(t, s.Node.Memory)
	require.Nil(t, s.Node.Fs)
	require.Nil(t, s.Node.Network)
	require.Nil(t, s.Node.Runtime)
	require.Nil(t, s.Node.Rlimit)
	p := s.Pods[0]
	require.NotNil(t, p.CPU)
	require.Nil(t, p.Network)
	require.Nil(t, p.EphemeralStorage)
	require.Nil(t, p.Containers[0].Rootfs)
	require.Nil(t, p.Containers[0].Logs)
	require.NotNil(t, p.Containers[0].Memory)

	// The JSON is the Summary API's field names.
	b, err := json.Marshal(s)
	require.NoError(t, err)
	require.Contains(t, string(b), `"podRef":{"name":"burner","namespace":"default","uid":"uid-1"}`)
	require.Contains(t, string(b), `"usageCoreNanoSeconds":10000000000`)
	require.Contains(t, string(b), `"workingSetBytes":3145728`)
}

func TestSummary_NoSandboxStatsNoPodCgroup(t *testing.T) {
	// A runtime without ListPodSandboxStats and a pod whose cgroup is
	// gone: the container's stats remain, network and pod CPU are left out.
	host := testHost()
	delete(host.cgroups, "/kubepods/burstable/poduid-1")
	rt := &fakeRuntime{containers: []*runtimeapi.ContainerStats{containerStat(t0, 9e9)}, sandboxErr: errors.New("unimplemented")}
	s, err := newTestCollector(host, rt, burner()).Summary(context.Background(), false)
	require.NoError(t, err)
	require.Len(t, s.Pods, 1)
	require.Nil(t, s.Pods[0].CPU)
	require.Nil(t, s.Pods[0].Network)
	require.Len(t, s.Pods[0].Containers, 1)
}
