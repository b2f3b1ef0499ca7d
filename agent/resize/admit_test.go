package resize

import (
	"testing"

	"github.com/stretchr/testify/assert"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/minikubelet/minikubelet/agent/node"
)

func TestAdmit(t *testing.T) {
	info := node.Info{Name: "node-1", Allocatable: v1.ResourceList{
		v1.ResourceCPU: resource.MustParse("2"), v1.ResourceMemory: resource.MustParse("1Gi"), v1.ResourcePods: resource.MustParse("110"),
	}}
	other := &v1.Pod{}
	other.UID = "other"
	other.Spec.Containers = []v1.Container{{Name: "o", Resources: v1.ResourceRequirements{Requests: rl("1", "512Mi")}}}
	tests := map[string]struct {
		cpu, mem   string
		info       *node.Info // nil: info
		wantFit    bool
		wantReason string
		wantMsg    string
	}{
		"cpu up, fits":   {cpu: "800m", mem: "128Mi", wantFit: true},
		"cpu down":       {cpu: "100m", mem: "128Mi", wantFit: true},
		"memory up":      {cpu: "500m", mem: "256Mi", wantFit: true},
		"memory down":    {cpu: "500m", mem: "64Mi", wantFit: true},
		"cpu up, others": {cpu: "1500m", mem: "128Mi", wantReason: v1.PodReasonDeferred, wantMsg: "Node didn't have enough resource: cpu, requested: 1600, used: 1000, capacity: 2000"},
		"memory up, others": {cpu: "500m", mem: "600Mi", wantReason: v1.PodReasonDeferred,
			wantMsg: "Node didn't have enough resource: memory, requested: 696254464, used: 536870912, capacity: 1073741824"},
		"cpu beyond the node": {cpu: "3", mem: "128Mi", wantReason: v1.PodReasonInfeasible,
			wantMsg: "Node didn't have enough capacity: cpu, requested: 3100, capacity: 2000"},
		"memory beyond the node": {cpu: "500m", mem: "2Gi", wantReason: v1.PodReasonInfeasible,
			wantMsg: "Node didn't have enough capacity: memory, requested: 2214592512, capacity: 1073741824"},
		"no allocatable: everything fits": {cpu: "30", mem: "20Gi", info: &node.Info{Name: "node-1"}, wantFit: true},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			pod, _ := fixture()
			pod.Spec.Containers[0].Resources.Requests = rl(tc.cpu, tc.mem)
			pod.Spec.Containers[0].Resources.Limits = nil
			in := info
			if tc.info != nil {
				in = *tc.info
			}
			v := Admit(in, pod, []*v1.Pod{other})
			assert.Equal(t, tc.wantFit, v.Fit)
			assert.Equal(t, tc.wantReason, v.Reason)
			assert.Equal(t, tc.wantMsg, v.Message)
		})
	}
}
