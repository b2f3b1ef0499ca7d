package resize

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

var (
	t0 = metav1.NewTime(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	t1 = metav1.NewTime(t0.Add(time.Minute))
)

// cpuLimit returns a copy of pod with app's cpu limit at cpu and the
// generation gen.
func cpuLimit(pod *v1.Pod, cpu string, gen int64) *v1.Pod {
	p := pod.DeepCopy()
	p.Generation = gen
	p.Spec.Containers[0].Resources.Limits[v1.ResourceCPU] = resource.MustParse(cpu)
	return p
}

func TestState_InitAndView(t *testing.T) {
	pod, _ := fixture()
	changed := cpuLimit(pod, "2", 2)
	tests := map[string]struct {
		spec         *v1.Pod
		cp           Checkpoint
		ok           bool
		wantCPULimit string
		wantSame     bool // View is the spec itself
	}{
		"no checkpoint: the spec's":         {spec: pod, wantCPULimit: "1", wantSame: true},
		"checkpoint as the spec":            {spec: pod, cp: Checkpoint{Allocated: Of(pod)}, ok: true, wantCPULimit: "1", wantSame: true},
		"the spec changed while down":       {spec: changed, cp: Checkpoint{Allocated: Of(pod)}, ok: true, wantCPULimit: "1"},
		"an untrusted checkpoint is unused": {spec: changed, cp: Checkpoint{Allocated: Of(pod)}, ok: false, wantCPULimit: "2", wantSame: true},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			before := tc.spec.Spec.Containers[0].Resources.Limits.Cpu().String()
			var s State
			s.Init(tc.spec, tc.cp, tc.ok)
			require.NotNil(t, s.Actuated, "actuated is recorded from here on")
			v := s.View(tc.spec)
			assert.Equal(t, tc.wantSame, v == tc.spec)
			assert.Equal(t, tc.wantCPULimit, v.Spec.Containers[0].Resources.Limits.Cpu().String())
			assert.Equal(t, before, tc.spec.Spec.Containers[0].Resources.Limits.Cpu().String(), "the spec is not changed")
			assert.Equal(t, tc.spec.Spec.Containers[0].Image, v.Spec.Containers[0].Image)
		})
	}
}

func TestWithResources_KeepsOtherResources(t *testing.T) {
	pod, _ := fixture()
	pod.Spec.Containers[0].Resources.Limits[v1.ResourceEphemeralStorage] = resource.MustParse("1Gi")
	res := Of(pod)
	res["app"] = v1.ResourceRequirements{Requests: rl("250m", ""), Limits: rl("", "512Mi")}
	got := WithResources(pod, res)
	require.NotSame(t, pod, got)
	c := got.Spec.Containers[0].Resources
	assert.Equal(t, v1.ResourceList{v1.ResourceCPU: resource.MustParse("250m")}, c.Requests, "memory request removed")
	assert.Equal(t, v1.ResourceList{v1.ResourceMemory: resource.MustParse("512Mi"), v1.ResourceEphemeralStorage: resource.MustParse("1Gi")}, c.Limits)
	assert.Equal(t, rl("500m", "128Mi"), pod.Spec.Containers[0].Resources.Requests, "the pod is not changed")
	assert.Same(t, pod, WithResources(pod, Of(pod)), "nothing differs: the pod itself")
}

func TestState_WantsAndDecide(t *testing.T) {
	pod, _ := fixture()
	deferred := Verdict{Reason: v1.PodReasonDeferred, Message: "Node didn't have enough resource: cpu"}
	infeasible := Verdict{Reason: v1.PodReasonInfeasible, Message: "Node didn't have enough capacity: cpu"}
	tests := map[string]struct {
		pending     *v1.PodCondition // before
		gen         int64
		verdict     Verdict
		wantEvent   string // reason; "": none
		wantPending *v1.PodCondition
	}{
		"admitted": {gen: 2, verdict: Verdict{Fit: true}, wantEvent: EventStarted},
		"admitted clears a pending one": {gen: 3, verdict: Verdict{Fit: true}, wantEvent: EventStarted,
			pending: &v1.PodCondition{Type: v1.PodResizePending, Reason: v1.PodReasonDeferred, ObservedGeneration: 2}},
		"deferred": {gen: 2, verdict: deferred, wantEvent: EventDeferred,
			wantPending: &v1.PodCondition{Type: v1.PodResizePending, Status: v1.ConditionTrue, Reason: v1.PodReasonDeferred, Message: deferred.Message, ObservedGeneration: 2, LastTransitionTime: t1, LastProbeTime: t1}},
		"infeasible": {gen: 2, verdict: infeasible, wantEvent: EventInfeasible,
			wantPending: &v1.PodCondition{Type: v1.PodResizePending, Status: v1.ConditionTrue, Reason: v1.PodReasonInfeasible, Message: infeasible.Message, ObservedGeneration: 2, LastTransitionTime: t1, LastProbeTime: t1}},
		"still deferred, same generation: no new event, transition kept": {gen: 2, verdict: deferred,
			pending:     &v1.PodCondition{Type: v1.PodResizePending, Reason: v1.PodReasonDeferred, ObservedGeneration: 2, LastTransitionTime: t0},
			wantPending: &v1.PodCondition{Type: v1.PodResizePending, Status: v1.ConditionTrue, Reason: v1.PodReasonDeferred, Message: deferred.Message, ObservedGeneration: 2, LastTransitionTime: t0, LastProbeTime: t1}},
		"still deferred, new generation: an event, transition kept": {gen: 3, verdict: deferred, wantEvent: EventDeferred,
			pending:     &v1.PodCondition{Type: v1.PodResizePending, Reason: v1.PodReasonDeferred, ObservedGeneration: 2, LastTransitionTime: t0},
			wantPending: &v1.PodCondition{Type: v1.PodResizePending, Status: v1.ConditionTrue, Reason: v1.PodReasonDeferred, Message: deferred.Message, ObservedGeneration: 3, LastTransitionTime: t0, LastProbeTime: t1}},
		"deferred becomes infeasible: a new transition": {gen: 3, verdict: infeasible, wantEvent: EventInfeasible,
			pending:     &v1.PodCondition{Type: v1.PodResizePending, Reason: v1.PodReasonDeferred, ObservedGeneration: 2, LastTransitionTime: t0},
			wantPending: &v1.PodCondition{Type: v1.PodResizePending, Status: v1.ConditionTrue, Reason: v1.PodReasonInfeasible, Message: infeasible.Message, ObservedGeneration: 3, LastTransitionTime: t1, LastProbeTime: t1}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			var s State
			s.Init(pod, Checkpoint{}, false)
			s.Pending = tc.pending
			p := cpuLimit(pod, "2", tc.gen)
			desired := Of(p)
			require.True(t, s.Wants(desired))
			ev := s.Decide(p, desired, tc.verdict, t1)
			if tc.wantEvent == "" {
				assert.Nil(t, ev)
			} else {
				require.NotNil(t, ev)
				assert.Equal(t, tc.wantEvent, ev.Reason)
			}
			assert.Equal(t, tc.wantPending, s.Pending)
			assert.Equal(t, tc.wantPending != nil && tc.verdict.Reason == v1.PodReasonDeferred, s.Deferred())
			if tc.verdict.Fit {
				assert.True(t, s.Allocated.Equal(desired), "the allocation is the new spec's")
				assert.Equal(t, &v1.PodCondition{Type: v1.PodResizeInProgress, Status: v1.ConditionTrue, ObservedGeneration: tc.gen, LastTransitionTime: t1, LastProbeTime: t1}, s.InProgress)
				assert.Equal(t, v1.EventTypeNormal, ev.Type)
				assert.Equal(t, "Pod resize started: "+Summary(p, ""), ev.Message)
			} else {
				assert.True(t, s.Allocated.Equal(Of(pod)), "the allocation stays")
				assert.Nil(t, s.InProgress)
				if ev != nil {
					assert.Equal(t, v1.EventTypeWarning, ev.Type)
					assert.Equal(t, fmt.Sprintf("Pod resize %s: %s", tc.verdict.Reason, Summary(p, tc.verdict.Message)), ev.Message)
				}
			}
		})
	}
}

func TestState_Wants(t *testing.T) {
	pod, _ := fixture()
	var s State
	assert.False(t, s.Wants(Of(cpuLimit(pod, "2", 2))), "before Init: nothing to resize")
	s.Init(pod, Checkpoint{}, false)
	s.Pending = &v1.PodCondition{Type: v1.PodResizePending, Reason: v1.PodReasonDeferred}
	assert.True(t, s.Wants(Of(cpuLimit(pod, "2", 2))))
	assert.NotNil(t, s.Pending, "still pending")
	assert.False(t, s.Wants(Of(cpuLimit(pod, "1000m", 3))), "back to the allocation (spelled otherwise)")
	assert.Nil(t, s.Pending, "a resize reverted before it was admitted is forgotten")
}

func TestState_Finish(t *testing.T) {
	pod, ids := fixture()
	running := func(n string) string { return ids[n] }
	inProgress := &v1.PodCondition{Type: v1.PodResizeInProgress, Status: v1.ConditionTrue, ObservedGeneration: 2, LastTransitionTime: t0, LastProbeTime: t0}
	errCond := func(msg string, transition metav1.Time) *v1.PodCondition {
		return &v1.PodCondition{Type: v1.PodResizeInProgress, Status: v1.ConditionTrue, Reason: v1.PodReasonError, Message: msg,
			ObservedGeneration: 2, LastTransitionTime: transition, LastProbeTime: t1}
	}
	failed := fmt.Errorf("%w: update resources of container %q: %v", ErrResize, "app", errors.New("boom"))
	tests := map[string]struct {
		cond      *v1.PodCondition
		actuated  string // app's actuated cpu limit (the allocation: "2")
		err       error
		wantCond  *v1.PodCondition
		wantEvent string
	}{
		"all actuated: completed":          {cond: inProgress, actuated: "2", wantEvent: EventCompleted},
		"not yet actuated: still going":    {cond: inProgress, actuated: "1", wantCond: inProgress},
		"no resize: nothing":               {actuated: "2"},
		"an error":                         {cond: inProgress, actuated: "1", err: failed, wantCond: errCond(`update resources of container "app": boom`, t1), wantEvent: EventError},
		"the same error again: no event":   {cond: errCond(`update resources of container "app": boom`, t0), actuated: "1", err: failed, wantCond: errCond(`update resources of container "app": boom`, t0)},
		"another error: an event":          {cond: errCond("other", t0), actuated: "1", err: failed, wantCond: errCond(`update resources of container "app": boom`, t0), wantEvent: EventError},
		"an error then success: completed": {cond: errCond("other", t0), actuated: "2", wantEvent: EventCompleted},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			p := cpuLimit(pod, "2", 3)
			var s State
			s.Init(p, Checkpoint{}, false)
			s.Actuated["app"] = Resizable(cpuLimit(pod, tc.actuated, 0).Spec.Containers[0].Resources)
			s.InProgress = tc.cond
			ev := s.Finish(p, running, tc.err, t1)
			assert.Equal(t, tc.wantCond, s.InProgress)
			if tc.wantEvent == "" {
				assert.Nil(t, ev)
				return
			}
			require.NotNil(t, ev)
			assert.Equal(t, tc.wantEvent, ev.Reason)
			if tc.err != nil {
				assert.Equal(t, v1.EventTypeWarning, ev.Type)
				assert.Equal(t, "Pod resize error: "+Summary(p, tc.wantCond.Message), ev.Message)
			} else {
				assert.Equal(t, v1.EventTypeNormal, ev.Type)
				assert.Equal(t, "Pod resize completed: "+Summary(p, ""), ev.Message)
			}
		})
	}
}

func TestState_RecordActuated(t *testing.T) {
	pod, _ := fixture()
	var s State
	assert.False(t, s.RecordActuated(&pod.Spec.Containers[0]), "before Init: nothing recorded")
	s.Init(pod, Checkpoint{Allocated: Of(pod)}, true) // actuated: none recorded
	assert.True(t, s.RecordActuated(&pod.Spec.Containers[0]), "news: checkpoint it")
	assert.False(t, s.RecordActuated(&pod.Spec.Containers[0]), "the same again")
	c := cpuLimit(pod, "2", 2).Spec.Containers[0]
	assert.True(t, s.RecordActuated(&c))
	got := s.Actuated["app"].Limits[v1.ResourceCPU]
	assert.Equal(t, "2", got.String())
}

func TestState_ConditionsAndStatusResources(t *testing.T) {
	pod, _ := fixture()
	var s State
	s.Init(pod, Checkpoint{}, false)
	s.Pending = &v1.PodCondition{Type: v1.PodResizePending}
	s.InProgress = &v1.PodCondition{Type: v1.PodResizeInProgress}
	assert.Equal(t, []v1.PodCondition{{Type: v1.PodResizePending}, {Type: v1.PodResizeInProgress}}, s.Conditions(v1.PodRunning))
	assert.Nil(t, s.Conditions(v1.PodSucceeded), "none in a terminal phase")
	assert.Nil(t, s.Conditions(v1.PodFailed))

	s.Actuated["app"] = v1.ResourceRequirements{Requests: rl("500m", "128Mi"), Limits: rl("3", "256Mi")}
	tests := map[string]struct {
		name        string
		running     bool
		wantAlloc   v1.ResourceList
		wantCPULim  string
		wantNothing bool
	}{
		"running: actuated limits, allocated requests": {name: "app", running: true, wantAlloc: rl("500m", "128Mi"), wantCPULim: "3"},
		"not running: the allocation":                  {name: "app", wantAlloc: rl("500m", "128Mi"), wantCPULim: "1"},
		"no actuated record: the allocation":           {name: "side", running: true, wantAlloc: rl("100m", "64Mi"), wantCPULim: "200m"},
		"not resizable: nothing":                       {name: "init", running: true, wantNothing: true},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			alloc, res := s.StatusResources(tc.name, tc.running)
			if tc.wantNothing {
				assert.Nil(t, alloc)
				assert.Nil(t, res)
				return
			}
			assert.Equal(t, tc.wantAlloc, alloc)
			require.NotNil(t, res)
			assert.Equal(t, tc.wantCPULim, res.Limits.Cpu().String())
		})
	}
}

func TestSummary(t *testing.T) {
	pod, _ := fixture()
	pod.Generation = 4
	assert.JSONEq(t, `{"containers":[
		{"name":"side","resources":{"requests":{"cpu":"100m","memory":"64Mi"},"limits":{"cpu":"200m","memory":"64Mi"}}},
		{"name":"app","resources":{"requests":{"cpu":"500m","memory":"128Mi"},"limits":{"cpu":"1","memory":"256Mi"}}}],
		"generation":4,"error":"no room"}`, Summary(pod, "no room"))
	assert.NotContains(t, Summary(pod, ""), "error")
}
