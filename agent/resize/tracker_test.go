package resize

import (
	"bytes"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/minikubelet/minikubelet/agent/node"
)

// events records what a Tracker asks its pod to record, by reason.
type events []string

func (e *events) record(_, reason, _ string, _ ...any) { *e = append(*e, reason) }

// newTracker is a Tracker of pod initialised in a fresh directory (no
// checkpoint: the spec's allocation), and the events it records.
func newTracker(t *testing.T, pod *v1.Pod) (*Tracker, *events, string) {
	t.Helper()
	var ev events
	tr := &Tracker{}
	dir := t.TempDir()
	require.NoError(t, tr.Init(pod, dir, slog.New(slog.DiscardHandler), ev.record))
	return tr, &ev, dir
}

func TestTracker_Init(t *testing.T) {
	pod, _ := fixture()
	changed := cpuLimit(pod, "2", 2)
	dir := t.TempDir()
	require.NoError(t, SaveCheckpoint(dir, Checkpoint{Allocated: Of(pod), Actuated: Of(pod)}))
	var tr Tracker
	require.NoError(t, tr.Init(changed, dir, nil, nil))
	assert.Equal(t, "1", tr.View(changed).Spec.Containers[0].Resources.Limits.Cpu().String(), "the checkpoint's allocation, not the changed spec's")

	require.NoError(t, os.WriteFile(filepath.Join(dir, CheckpointFile), []byte("{"), 0o600))
	var torn Tracker
	require.Error(t, torn.Init(changed, dir, nil, nil), "a torn checkpoint is reported")
	assert.Same(t, changed, torn.View(changed), "and the spec's allocation taken")
}

func TestTracker_Handle(t *testing.T) {
	pod, _ := fixture()
	info := node.Info{Name: "node-1", Allocatable: v1.ResourceList{
		v1.ResourceCPU: resource.MustParse("2"), v1.ResourceMemory: resource.MustParse("1Gi"), v1.ResourcePods: resource.MustParse("110"),
	}}
	hog := &v1.Pod{}
	hog.UID = "hog"
	hog.Spec.Containers = []v1.Container{{Name: "h", Resources: v1.ResourceRequirements{Requests: rl("1", "")}}}
	withRequest := func(cpu string) *v1.Pod {
		p := pod.DeepCopy()
		p.Generation = 2
		p.Spec.Containers[0].Resources.Requests[v1.ResourceCPU] = resource.MustParse(cpu)
		p.Spec.Containers[0].Resources.Limits[v1.ResourceCPU] = resource.MustParse(cpu)
		return p
	}
	tests := map[string]struct {
		p            *v1.Pod
		others       []*v1.Pod
		wantAdmitted bool
		wantEvents   []string
		wantAsked    bool // others was built
		wantDeferred bool
		wantCPU      string // the view's app cpu request
	}{
		"no change: nothing asked":   {p: pod, wantCPU: "500m"},
		"fits: admitted":             {p: withRequest("800m"), others: []*v1.Pod{hog}, wantAdmitted: true, wantEvents: []string{EventStarted}, wantAsked: true, wantCPU: "800m"},
		"no room next to the others": {p: withRequest("1500m"), others: []*v1.Pod{hog}, wantEvents: []string{EventDeferred}, wantAsked: true, wantDeferred: true, wantCPU: "500m"},
		"beyond the node":            {p: withRequest("3"), wantEvents: []string{EventInfeasible}, wantAsked: true, wantCPU: "500m"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			tr, ev, dir := newTracker(t, pod)
			asked := false
			others := func() []*v1.Pod { asked = true; return tc.others }
			now := func() time.Time { return t1.Time }
			// The worker's spec is the old one; it takes the new one after
			// (podWorker.update).
			assert.Equal(t, tc.wantAdmitted, tr.Handle(tc.p, pod, info, others, now))
			tr.Refresh(tc.p)
			assert.Equal(t, tc.wantEvents, []string(*ev))
			assert.Equal(t, tc.wantAsked, asked)
			assert.Equal(t, tc.wantDeferred, tr.Deferred())
			assert.Equal(t, tc.wantCPU, tr.View(tc.p).Spec.Containers[0].Resources.Requests.Cpu().String())
			cp, ok, err := LoadCheckpoint(dir)
			require.NoError(t, err)
			assert.Equal(t, tc.wantAdmitted, ok, "an admitted resize is checkpointed")
			if ok {
				assert.True(t, cp.Allocated.Equal(Of(tc.p)))
			}
		})
	}
}

// The resize's life in a Tracker: admitted, planned, updated in place,
// finished; each container created is checkpointed as actuated.
func TestTracker_Actuation(t *testing.T) {
	pod, ids := fixture()
	running := func(n string) string { return ids[n] }
	tr, ev, dir := newTracker(t, pod)
	for i := range pod.Spec.InitContainers {
		tr.RecordActuated(&pod.Spec.InitContainers[i])
	}
	tr.RecordActuated(&pod.Spec.Containers[0])
	cp, ok, err := LoadCheckpoint(dir)
	require.NoError(t, err)
	require.True(t, ok, "the containers created are checkpointed")
	assert.True(t, cp.Actuated.Equal(Of(pod)))

	p := cpuLimit(pod, "2", 2)
	require.True(t, tr.Handle(p, p, node.Info{}, func() []*v1.Pod { return nil }, func() time.Time { return t1.Time }))
	view := tr.View(p)
	ra := tr.Plan(view, running)
	require.NoError(t, tr.CheckMemoryDecrease(view, ra, nil))
	steps := tr.Steps(view, ra, sumCgroup)
	require.NotEmpty(t, steps)
	tr.Finish(view, running, nil, t1.Time)
	assert.Len(t, tr.Conditions(v1.PodRunning), 1, "in progress until actuated")
	for _, s := range steps {
		if s.Container != "" {
			tr.SetActuated(s.Container, s.Resources)
		}
	}
	tr.Save()
	tr.Finish(view, running, nil, t1.Time)
	assert.Empty(t, tr.Conditions(v1.PodRunning))
	assert.Equal(t, []string{EventStarted, EventCompleted}, []string(*ev))
	cp, _, err = LoadCheckpoint(dir)
	require.NoError(t, err)
	assert.True(t, cp.Actuated.Equal(Of(p)), "the update is checkpointed")

	cs := v1.ContainerStatus{Name: "app"}
	tr.SetStatusResources("app", &cs)
	assert.Nil(t, cs.Resources, "a container without an instance reports no resources")
	cs.ContainerID = "containerd://c-app"
	cs.State.Running = &v1.ContainerStateRunning{}
	tr.SetStatusResources("app", &cs)
	require.NotNil(t, cs.Resources)
	assert.Equal(t, "2", cs.Resources.Limits.Cpu().String())
	assert.Equal(t, "500m", cs.AllocatedResources.Cpu().String())
}

func TestTracker_SaveFailureIsLogged(t *testing.T) {
	pod, _ := fixture()
	file := filepath.Join(t.TempDir(), "file")
	require.NoError(t, os.WriteFile(file, nil, 0o600))
	var buf bytes.Buffer
	var tr Tracker
	require.NoError(t, tr.Init(pod, filepath.Join(file, "pod"), slog.New(slog.NewTextHandler(&buf, nil)), nil))
	tr.Save()
	assert.Contains(t, buf.String(), "Saving the resources checkpoint failed")
}
