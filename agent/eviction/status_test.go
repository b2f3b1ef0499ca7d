package eviction

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// An evicted pod's status: Failed/Evicted with the message; a pressure
// eviction adds the DisruptionTarget condition (or replaces an older
// one), a local storage limit eviction adds none; other conditions stay.
func TestEvictedStatus(t *testing.T) {
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	ready := v1.PodCondition{Type: v1.PodReady, Status: v1.ConditionTrue}
	disrupted := v1.PodCondition{Type: v1.DisruptionTarget, Status: v1.ConditionTrue, Reason: v1.PodReasonTerminationByKubelet,
		Message: "low on memory", LastTransitionTime: metav1.NewTime(at)}
	for _, tc := range []struct {
		name       string
		conds      []v1.PodCondition
		disruption bool
		want       []v1.PodCondition
	}{
		{"local storage limit: no condition", []v1.PodCondition{ready}, false, []v1.PodCondition{ready}},
		{"pressure: DisruptionTarget added", []v1.PodCondition{ready}, true, []v1.PodCondition{ready, disrupted}},
		{"pressure: an older DisruptionTarget replaced", []v1.PodCondition{
			{Type: v1.DisruptionTarget, Status: v1.ConditionFalse, Reason: "Old"}, ready,
		}, true, []v1.PodCondition{disrupted, ready}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := v1.PodStatus{Phase: v1.PodRunning, Conditions: tc.conds}
			got := EvictedStatus(in, "low on memory", at, tc.disruption)
			assert.Equal(t, v1.PodFailed, got.Phase)
			assert.Equal(t, Reason, got.Reason)
			assert.Equal(t, "low on memory", got.Message)
			assert.Equal(t, tc.want, got.Conditions)
			assert.Equal(t, v1.PodRunning, in.Phase, "the input is not changed")
		})
	}
}
