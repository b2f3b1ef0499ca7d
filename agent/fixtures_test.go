package agent

import (
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// basePod is the smallest valid pod, before defaults (the same fixture as
// agent/manifest's tests).
func basePod() *v1.Pod {
	return &v1.Pod{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec: v1.PodSpec{
			Containers: []v1.Container{{Name: "web", Image: "nginx:1.27"}},
		},
	}
}
