package manifesttest

import (
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// APIPod is a pod as the API decodes it from a request: no defaults, no
// TypeMeta.
func APIPod(namespace, name, env string) *v1.Pod {
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
		Spec: v1.PodSpec{Containers: []v1.Container{{
			Name:  "app",
			Image: "registry.example/app:1.0",
			Env:   []v1.EnvVar{{Name: "GREETING", Value: env}},
		}}},
	}
}
