package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"

	"github.com/minikubelet/minikubelet/agent"
	"github.com/minikubelet/minikubelet/agent/daemon"
	"github.com/minikubelet/minikubelet/agent/manifest"
	"github.com/minikubelet/minikubelet/agent/manifest/manifesttest"
	"github.com/minikubelet/minikubelet/agent/source"
	"github.com/minikubelet/minikubelet/agent/stats"
	"github.com/minikubelet/minikubelet/cgroups"
	"github.com/minikubelet/minikubelet/cni"
	"github.com/minikubelet/minikubelet/cri/critest"
)

// A node runs three pods: one of the local API (the node's own, which the
// cluster never sees), a static pod of the manifest directory, and a pod
// of the cluster. The kubelet server's /stats/summary, which any cluster
// caller with nodes/stats reads, lists the cluster's pod and the static
// pod under its mirror pod's name (<name>-<node>, as the API server and
// metrics-server know it), never the local pod; the node's totals still
// count everything. Before, the summary read the daemon's full list: the
// local pod's name, namespace, UID and usage were there, and the static
// pod appeared under a name the API server does not have.
func TestClusterSummary_ListsOnlyThePodsTheClusterSees(t *testing.T) {
	const node = "node-1"
	fake := critest.New()
	network := cni.Config{ConfDir: t.TempDir(), BinDirs: []string{t.TempDir()}, DataDir: t.TempDir(), CacheDir: t.TempDir()}
	a := agent.New(agent.Config{NodeName: node, RootDir: t.TempDir(), PodLogDir: t.TempDir(), ResolvConf: "/nonexistent", Network: network,
		HostIPs: []string{"192.0.2.1"}}, agent.Deps{Runtime: fake.Runtime, Images: fake.Images})
	store, err := source.NewPodStore(t.TempDir(), node)
	require.NoError(t, err)
	manifests := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(manifests, "etcd.yaml"),
		[]byte("apiVersion: v1\nkind: Pod\nmetadata:\n  name: etcd\n  namespace: kube-system\nspec:\n  containers:\n  - name: etcd\n    image: busybox\n"), 0o600))
	dir := source.NewDirSource(manifests, node, nil, nil)
	cluster := clusterPodForTest(t, node, "db", "uid-db")
	d := daemon.New(a, store, dir, daemon.Config{Sources: []daemon.Source{oneSet{source.SourceUpdate{Source: "cluster", Pods: []*v1.Pod{cluster}}}}})

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- d.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	local, err := d.CreatePod(ctx, manifesttest.APIPod("default", "web", "local"))
	require.NoError(t, err)

	// Every pod has its container created in the runtime.
	var static *v1.Pod
	require.Eventually(t, func() bool {
		static, err = d.GetPod("kube-system", "etcd")
		return err == nil && len(runtimeContainers(fake)) == 3
	}, 10*time.Second, 20*time.Millisecond, "three containers in the runtime: %v", runtimeContainers(fake))

	// The runtime's stats of those containers; each writes a log of its
	// own size.
	rt := &statsRuntime{}
	logs := t.TempDir()
	fake.Runtime.Lock()
	for id, c := range fake.Runtime.Containers {
		labels := c.GetLabels()
		rt.containers = append(rt.containers, &runtimeapi.ContainerStats{
			Attributes: &runtimeapi.ContainerAttributes{Id: id, Metadata: c.GetMetadata(), Labels: labels},
			Cpu:        &runtimeapi.CpuUsage{Timestamp: time.Now().UnixNano(), UsageCoreNanoSeconds: &runtimeapi.UInt64Value{Value: 1000}},
			Memory:     &runtimeapi.MemoryUsage{Timestamp: time.Now().UnixNano(), WorkingSetBytes: &runtimeapi.UInt64Value{Value: 2000}},
		})
		c.LogPath = filepath.Join(logs, id+".log")
		require.NoError(t, os.WriteFile(c.LogPath, make([]byte, len(labels["io.kubernetes.pod.name"])), 0o600))
	}
	fake.Runtime.Unlock()
	host := &statsHost{node: stats.Usage{Time: time.Now(), CPUNanos: 9e9, MemoryUsage: 9e8, WorkingSet: 8e8}}

	sum, err := clusterSummary(d.ClusterView(node), rt, host, t.TempDir(), node, nil).Summary(ctx, false)
	require.NoError(t, err)

	got := map[string]statsapi.PodStats{}
	var refs []statsapi.PodReference
	for _, ps := range sum.Pods {
		got[ps.PodRef.Namespace+"/"+ps.PodRef.Name] = ps
		refs = append(refs, ps.PodRef)
		assert.NotEqual(t, string(local.UID), ps.PodRef.UID, "the local API's pod is in the cluster's summary as %s/%s", ps.PodRef.Namespace, ps.PodRef.Name)
	}
	require.Len(t, got, 2, "the cluster's pod and the static pod only: %+v", refs)
	assert.NotContains(t, got, "default/web", "the local API's pod")
	assert.NotContains(t, got, "kube-system/etcd", "the static pod under its own name: the API server has no such pod")

	db := got["default/db"]
	assert.Equal(t, "uid-db", db.PodRef.UID)
	mirror, ok := got["kube-system/etcd-"+node]
	require.True(t, ok, "the static pod under its mirror's name: %v", got)
	// The kubelet's: the static pod's UID, which the mirror carries as
	// kubernetes.io/config.hash.
	assert.Equal(t, string(static.UID), mirror.PodRef.UID)
	require.Len(t, mirror.Containers, 1)
	c := mirror.Containers[0]
	assert.Equal(t, "etcd", c.Name)
	require.NotNil(t, c.Logs, "the static pod's log is found under its mirror's name")
	assert.Equal(t, uint64(len("etcd")), *c.Logs.UsedBytes)
	require.NotNil(t, db.Containers[0].Logs)
	assert.Equal(t, uint64(len("db")), *db.Containers[0].Logs.UsedBytes)

	// The node's own totals are the whole machine's, the node's own pod
	// included.
	assert.Equal(t, node, sum.Node.NodeName)
	assert.Equal(t, uint64(9e9), *sum.Node.CPU.UsageCoreNanoSeconds)
	assert.Equal(t, uint64(8e8), *sum.Node.Memory.WorkingSetBytes)
	require.Len(t, sum.Node.SystemContainers, 1)
	assert.Equal(t, statsapi.SystemContainerPods, sum.Node.SystemContainers[0].Name)
	assert.Equal(t, uint64(7e9), *sum.Node.SystemContainers[0].CPU.UsageCoreNanoSeconds, "the kubepods cgroup: every pod")

	// The daemon's own view, which the local API serves, has all three.
	var all []string
	for _, p := range d.ListPods("") {
		all = append(all, p.Namespace+"/"+p.Name)
	}
	assert.ElementsMatch(t, []string{"default/db", "default/web", "kube-system/etcd"}, all)
}

// clusterPodForTest is a pod as the cluster source hands it over:
// defaulted and validated, bound to node, marked config.source cluster.
func clusterPodForTest(t *testing.T, node, name, uid string) *v1.Pod {
	t.Helper()
	pods, err := manifest.PrepareManifest([]byte("apiVersion: v1\nkind: Pod\nmetadata:\n  name: "+name+"\n  namespace: default\nspec:\n  nodeName: "+node+
		"\n  containers:\n  - name: "+name+"\n    image: busybox\n"), "cluster:default/"+name, node)
	require.NoError(t, err)
	p := pods[0]
	p.UID = types.UID(uid)
	p.Annotations = map[string]string{source.AnnotationConfigSource: "cluster"}
	return p
}

// oneSet is a pod source that sends one set and keeps it.
type oneSet struct{ u source.SourceUpdate }

func (s oneSet) Run(ctx context.Context, out chan<- source.SourceUpdate) {
	select {
	case out <- s.u:
	case <-ctx.Done():
	}
}

// runtimeContainers are the fake runtime's container names.
func runtimeContainers(f *critest.Fake) []string {
	f.Runtime.Lock()
	defer f.Runtime.Unlock()
	var out []string
	for _, c := range f.Runtime.Containers {
		out = append(out, c.GetMetadata().GetName())
	}
	return out
}

// statsRuntime answers the CRI stats calls with fixed container stats; no
// sandbox stats or image filesystem (a runtime without them).
type statsRuntime struct{ containers []*runtimeapi.ContainerStats }

func (r *statsRuntime) ListContainerStats(context.Context, *runtimeapi.ContainerStatsFilter) ([]*runtimeapi.ContainerStats, error) {
	return r.containers, nil
}
func (r *statsRuntime) ListPodSandboxStats(context.Context, *runtimeapi.PodSandboxStatsFilter) ([]*runtimeapi.PodSandboxStats, error) {
	return nil, errors.New("unimplemented")
}
func (r *statsRuntime) ImageFsInfo(context.Context) (*runtimeapi.ImageFsInfoResponse, error) {
	return nil, errors.New("unimplemented")
}

var _ stats.Runtime = (*statsRuntime)(nil)

// statsHost is a node whose kubepods cgroup used 7 s of CPU and every pod
// cgroup 1 s; it has no filesystems, interfaces or process counts.
type statsHost struct{ node stats.Usage }

func (h *statsHost) Cgroup(n cgroups.Name) (*stats.Usage, error) {
	u := stats.Usage{Time: h.node.Time, CPUNanos: 1e9, MemoryUsage: 1e6, WorkingSet: 1e6}
	if n.ToCgroupfs() == cgroups.Kubepods.ToCgroupfs() {
		u.CPUNanos = 7e9
	}
	return &u, nil
}
func (h *statsHost) Node() (*stats.Usage, error) { u := h.node; return &u, nil }
func (*statsHost) BootTime() (time.Time, error)  { return time.Unix(1000, 0), nil }
func (*statsHost) Statfs(p string) (*stats.Filesystem, error) {
	return nil, fmt.Errorf("statfs %s: %w", p, fs.ErrNotExist)
}
func (*statsHost) Interfaces() ([]statsapi.InterfaceStats, error) { return nil, nil }
func (*statsHost) Processes() (int64, int64, error)               { return 0, 0, errors.New("none") }

var _ stats.Host = (*statsHost)(nil)
