package agent

import (
	"bytes"
	"context"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/minikubelet/minikubelet/agent/node"
	"github.com/minikubelet/minikubelet/agent/podspec"
	"github.com/minikubelet/minikubelet/agent/source"
)

// syncWriter is a bytes.Buffer safe for a logger and a test.
type syncWriter struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (w *syncWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.Write(p)
}

func (w *syncWriter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.String()
}

func TestOwnsObject(t *testing.T) {
	serve := &Agent{cfg: Config{AgentID: node.ServeAgentID("/var/lib/minikubelet")}}
	run := &Agent{cfg: Config{AgentID: node.ForegroundAgentID(4242), Network: testNetwork(t), HostIPs: []string{"192.0.2.1"}}}
	labels := func(agent string) map[string]string {
		l := map[string]string{podspec.LabelManagedBy: podspec.ManagedByValue}
		if agent != "" {
			l[podspec.LabelAgent] = agent
		}
		return l
	}
	for _, tc := range []struct {
		name       string
		labels     map[string]string
		serve, run bool
	}{
		{"the daemon's", labels(node.ServeAgentID("/var/lib/minikubelet/")), true, false},
		{"the run's", labels(node.ForegroundAgentID(4242)), false, true},
		{"another run's", labels(node.ForegroundAgentID(7)), false, false},
		{"another daemon's", labels(node.ServeAgentID("/srv/mk")), false, false},
		{"older version: the daemon's", labels(""), true, false},
		{"not minikubelet's", map[string]string{podspec.LabelAgent: node.ForegroundAgentID(4242)}, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.serve, serve.ownsObject(tc.labels), "serve")
			assert.Equal(t, tc.run, run.ownsObject(tc.labels), "run")
			assert.Equal(t, tc.serve, serve.relistOwns(tc.labels), "relist and container GC agree")
		})
	}
}

// A daemon's orphan collection takes only its own pods (and those older
// versions left without an agent label); the pods of a foreground run on
// the same runtime keep running, the daemon says whose they are, and the
// run's relist sees only its own pods. Every sandbox and container
// carries its agent's label.
func TestCollectOrphans_LeavesForegroundRunPods(t *testing.T) {
	h := newHarness(t)
	run := New(Config{NodeName: "node-1", RootDir: h.agent.cfg.RootDir, PodLogDir: h.agent.cfg.PodLogDir, ResolvConf: "/nonexistent",
		Network: h.agent.cfg.Network, HostIPs: h.agent.cfg.HostIPs, AgentID: node.ForegroundAgentID(4242)}, Deps{Runtime: h.fake.Runtime, Images: h.fake.Images, Clock: h.clock})
	t.Cleanup(run.stopWorkers)

	ours, fg := clusterPod(t, "ours", "uid-ours"), clusterPod(t, "fg", "uid-fg")
	h.agent.SetPods([]*v1.Pod{ours})
	run.SetPods([]*v1.Pod{fg})
	for _, c := range []struct {
		a *Agent
		p *v1.Pod
	}{{h.agent, ours}, {run, fg}} {
		require.Eventually(t, func() bool {
			got, ok := c.a.GetPod(c.p.UID)
			return ok && got.Status.Phase == v1.PodRunning
		}, 10*time.Second, time.Millisecond, "%s runs", c.p.Name)
	}
	// A sandbox an older minikubelet made: no agent label.
	_, err := h.fake.Runtime.RunPodSandbox(context.Background(), &runtimeapi.PodSandboxConfig{
		Metadata: &runtimeapi.PodSandboxMetadata{Name: "legacy", Namespace: "default", Uid: "uid-legacy"},
		Labels: map[string]string{podspec.LabelManagedBy: podspec.ManagedByValue, podspec.LabelPodUID: "uid-legacy",
			podspec.LabelPodName: "legacy", podspec.LabelPodNamespace: "default"},
	}, "")
	require.NoError(t, err)

	ctx := context.Background()
	sbs, err := h.fake.Runtime.ListPodSandbox(ctx, nil)
	require.NoError(t, err)
	ctrs, err := h.fake.Runtime.ListContainers(ctx, nil)
	require.NoError(t, err)
	want := map[string]string{"uid-ours": h.agent.cfg.AgentID, "uid-fg": node.ForegroundAgentID(4242), "uid-legacy": ""}
	for _, sb := range sbs {
		assert.Equal(t, want[sb.Labels[podspec.LabelPodUID]], sb.Labels[podspec.LabelAgent], "sandbox of %s", sb.Labels[podspec.LabelPodUID])
	}
	for _, c := range ctrs {
		assert.Equal(t, want[c.Labels[podspec.LabelPodUID]], c.Labels[podspec.LabelAgent], "container of %s", c.Labels[podspec.LabelPodUID])
	}

	// The run's relist: its own pod only.
	r := newRelister(run)
	_, err = r.relist(ctx)
	require.NoError(t, err)
	assert.Equal(t, []types.UID{"uid-fg"}, mapKeysSorted(r.last))
	_, notices, err := run.EnsureNodeCgroups() // the run's start-up list
	require.NoError(t, err)
	assert.Equal(t, []string{
		"1 pod on this runtime belongs to another minikubelet (an older minikubelet daemon, no agent label): left alone",
		"1 pod on this runtime belongs to another minikubelet (minikubelet serve " + h.agent.cfg.AgentID + "): left alone",
	}, notices)

	// The daemon restarts with nothing wanted.
	h.agent.stopWorkers()
	logs := &syncWriter{}
	d2 := New(h.agent.cfg, Deps{Runtime: h.fake.Runtime, Images: h.fake.Images, Clock: h.clock,
		Logger: slog.New(slog.NewTextHandler(logs, nil))})
	t.Cleanup(d2.stopWorkers)
	require.NoError(t, d2.collectOrphans(ctx, map[types.UID]bool{}))
	podsLeft := func() map[string]bool {
		sbs, err := h.fake.Runtime.ListPodSandbox(ctx, nil)
		require.NoError(t, err)
		left := map[string]bool{}
		for _, sb := range sbs {
			left[sb.Labels[podspec.LabelPodUID]] = true
		}
		return left
	}
	require.Eventually(t, func() bool {
		left := podsLeft()
		return !left["uid-ours"] && !left["uid-legacy"]
	}, 10*time.Second, time.Millisecond, "the daemon's own and the older version's pods are collected")
	assert.True(t, podsLeft()["uid-fg"], "the foreground run's pod is left")
	got, ok := run.GetPod(fg.UID)
	require.True(t, ok)
	assert.Equal(t, v1.PodRunning, got.Status.Phase)
	assert.Contains(t, logs.String(), "1 pod on this runtime belongs to another minikubelet (foreground run, pid 4242): left alone")
}

// mapKeysSorted returns the keys of m in order.
func mapKeysSorted[V any](m map[types.UID]V) []types.UID {
	var out []types.UID
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// A `run` of the same file after a killed one adopts its pod by UID; the
// objects keep the killed run's agent label. The new run's relist must see
// them, or a crash in the adopted pod reaches its worker only at the
// periodic resync (a minute, on a runtime without container events: the
// e2e TestLifecycle_AgentRestartAdoptsPods waited 57 s of its 60 on
// containerd 1.6). Log rotation takes them too.
func TestRelister_SeesAdoptedPods(t *testing.T) {
	h := newHarness(t)
	newRun := func(pid int) *Agent {
		a := New(Config{NodeName: "node-1", RootDir: h.agent.cfg.RootDir, PodLogDir: h.agent.cfg.PodLogDir, ResolvConf: "/nonexistent",
			Network: h.agent.cfg.Network, HostIPs: h.agent.cfg.HostIPs, AgentID: node.ForegroundAgentID(pid)}, Deps{Runtime: h.fake.Runtime, Images: h.fake.Images, Clock: h.clock})
		t.Cleanup(a.stopWorkers)
		return a
	}
	running := func(a *Agent, uid types.UID) {
		t.Helper()
		require.Eventually(t, func() bool {
			got, ok := a.GetPod(uid)
			return ok && got.Status.Phase == v1.PodRunning
		}, 10*time.Second, time.Millisecond)
	}
	pod := clusterPod(t, "fg", "uid-fg")
	first := newRun(4242)
	first.SetPods([]*v1.Pod{pod})
	running(first, pod.UID)
	first.stopWorkers() // kill -9: the pod keeps running

	second := newRun(4343)
	second.SetPods([]*v1.Pod{pod})
	running(second, pod.UID)
	ctx := context.Background()
	ctrs, err := h.fake.Runtime.ListContainers(ctx, nil)
	require.NoError(t, err)
	require.Len(t, ctrs, 1, "adopted, not recreated")
	require.Equal(t, node.ForegroundAgentID(4242), ctrs[0].Labels[podspec.LabelAgent])

	// The relister compares again next time when the worker is busy (it
	// may still be finishing the sync that published Running).
	r := newRelister(second)
	require.Eventually(t, func() bool {
		_, err := r.relist(ctx)
		return err == nil && r.last["uid-fg"] != ""
	}, 10*time.Second, time.Millisecond, "the adopted pod is the run's: its objects are in its relist")
	require.NoError(t, h.fake.ExitContainer(ctrs[0].Id, 1))
	require.Eventually(t, func() bool {
		changed, err := r.relist(ctx)
		return err == nil && slices.Contains(changed, pod.UID)
	}, 10*time.Second, time.Millisecond, "the crash of the adopted container is reported")
	assert.True(t, second.relistOwns(ctrs[0].Labels), "log rotation and container GC take it too")
	assert.False(t, newRun(7).relistOwns(ctrs[0].Labels), "an agent that neither made nor runs the pod does not")
}

// clusterPod is a pod of the cluster's source (agent/daemon's test helper
// of the same name).
func clusterPod(t *testing.T, name, uid string) *v1.Pod {
	t.Helper()
	p := testPod(t, "apiVersion: v1\nkind: Pod\nmetadata:\n  name: "+name+"\nspec:\n  containers:\n  - name: c\n    image: busybox\n")
	p.UID = types.UID(uid)
	p.Annotations = map[string]string{source.AnnotationConfigSource: sourceCluster}
	return p
}
