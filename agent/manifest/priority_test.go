package manifest

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
)

// Priority admission of a pod without an API server: built-in classes
// resolve; another class needs spec.priority; a built-in class with
// another value is refused with the API server's message.
func TestPriority(t *testing.T) {
	for _, tc := range []struct {
		name         string
		class        string
		priority     *int32
		wantPriority *int32
		wantErr      string
	}{
		{name: "no class, no priority", wantPriority: nil},
		{name: "system-node-critical resolves", class: "system-node-critical", wantPriority: ptr.To[int32](2000001000)},
		{name: "system-cluster-critical resolves", class: "system-cluster-critical", wantPriority: ptr.To[int32](2000000000)},
		{name: "built-in class with its own value", class: "system-cluster-critical", priority: ptr.To[int32](2000000000), wantPriority: ptr.To[int32](2000000000)},
		{name: "built-in class with another value", class: "system-node-critical", priority: ptr.To[int32](5),
			wantErr: "spec.priority: Forbidden: the integer value of priority (5) must not be provided in pod spec; priority admission controller computed 2000001000 from the given PriorityClass name"},
		{name: "another class without priority", class: "high-priority",
			wantErr: `spec.priorityClassName: Invalid value: "high-priority": no PriorityClass "high-priority" on this node`},
		{name: "another class with priority (a cluster pod)", class: "high-priority", priority: ptr.To[int32](1000), wantPriority: ptr.To[int32](1000)},
		{name: "priority alone", priority: ptr.To[int32](2000000000),
			wantErr: "spec.priority: Forbidden: the integer value of priority (2000000000) must not be provided in pod spec; priority admission controller computed 0"},
		{name: "priority 0 alone", priority: ptr.To[int32](0), wantPriority: ptr.To[int32](0)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pod := &v1.Pod{Spec: v1.PodSpec{PriorityClassName: tc.class, Priority: tc.priority,
				Containers: []v1.Container{{Name: "c", Image: "reg/img:1"}}}}
			pod.Name = "p"
			SetPodDefaults(pod, "test", "node")
			errs := ValidatePod(pod)
			if tc.wantErr != "" {
				require.NotEmpty(t, errs)
				assert.Contains(t, errs.ToAggregate().Error(), tc.wantErr)
				return
			}
			require.Empty(t, errs)
			assert.Equal(t, tc.wantPriority, pod.Spec.Priority)
		})
	}
}
