package podstatus

import (
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/minikubelet/minikubelet/agent/podspec"
)

// Initial is the status of a pod no sync has observed yet, accepted at
// startTime: Pending, every container waiting.
func Initial(pod *v1.Pod, startTime time.Time) v1.PodStatus {
	now := metav1.NewTime(startTime)
	st := v1.PodStatus{
		ObservedGeneration: pod.Generation,
		Phase:              v1.PodPending,
		QOSClass:           podspec.QOSClass(pod),
		StartTime:          &now,
	}
	reason := "ContainerCreating"
	if len(pod.Spec.InitContainers) > 0 {
		reason = "PodInitializing"
	}
	for _, c := range pod.Spec.InitContainers {
		st.InitContainerStatuses = append(st.InitContainerStatuses, v1.ContainerStatus{
			Name: c.Name, Image: c.Image,
			State: v1.ContainerState{Waiting: &v1.ContainerStateWaiting{Reason: "PodInitializing"}},
		})
	}
	for _, c := range pod.Spec.Containers {
		st.ContainerStatuses = append(st.ContainerStatuses, v1.ContainerStatus{
			Name: c.Name, Image: c.Image,
			State: v1.ContainerState{Waiting: &v1.ContainerStateWaiting{Reason: reason}},
		})
	}
	return st
}
