package podspec

import (
	"testing"

	"github.com/stretchr/testify/assert"
	v1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
)

// enableServiceLinks: unset or true links the pod's namespace; false keeps
// the master Service only.
func TestPodServiceEnv(t *testing.T) {
	services := []*v1.Service{
		svc("default", "kubernetes", "10.96.0.1", v1.ServicePort{Name: "https", Port: 443}),
		svc("shop", "db", "10.0.0.5", v1.ServicePort{Port: 5432}),
		svc("other", "cache", "10.0.0.6", v1.ServicePort{Port: 6379}),
	}
	for name, tc := range map[string]struct {
		links      *bool
		wantDB     bool
		wantMaster bool
	}{
		"unset": {nil, true, true},
		"true":  {ptr.To(true), true, true},
		"false": {ptr.To(false), false, true},
	} {
		t.Run(name, func(t *testing.T) {
			pod := &v1.Pod{Spec: v1.PodSpec{EnableServiceLinks: tc.links}}
			pod.Namespace = "shop"
			env := PodServiceEnv(pod, services)
			assert.Equal(t, tc.wantMaster, env["KUBERNETES_SERVICE_HOST"] == "10.96.0.1")
			_, db := env["DB_SERVICE_HOST"]
			assert.Equal(t, tc.wantDB, db)
			assert.NotContains(t, env, "CACHE_SERVICE_HOST", "another namespace's Service")
		})
	}
}
