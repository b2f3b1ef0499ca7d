package agent

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/minikubelet/minikubelet/agent/podspec"
	"github.com/minikubelet/minikubelet/agent/source"
)

// fakeServices is a ServiceLister over a fixed list.
type fakeServices struct {
	services []*v1.Service
	synced   bool
}

var _ ServiceLister = (*fakeServices)(nil)

func (f *fakeServices) ListServices() []*v1.Service { return f.services }
func (f *fakeServices) HasSynced() bool             { return f.synced }

// svc builds a Service with a cluster IP and ports.
func svc(ns, name, ip string, ports ...v1.ServicePort) *v1.Service {
	return &v1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: v1.ServiceSpec{ClusterIP: ip, Ports: ports}}
}

// TestContainerEnv_ServiceLinks checks where the service links go in a
// container's environment: after the container's own variables, usable in
// $(VAR) references, overridden by an explicit variable of the same name,
// and absent on a standalone node.
func TestContainerEnv_ServiceLinks(t *testing.T) {
	services := &fakeServices{synced: true, services: []*v1.Service{
		svc("default", "kubernetes", "10.96.0.1", v1.ServicePort{Name: "https", Port: 443}),
		svc("shop", "db", "10.0.0.5", v1.ServicePort{Port: 5432}),
	}}
	pod := testPod(t, `
apiVersion: v1
kind: Pod
metadata: {name: web, namespace: shop, annotations: {kubernetes.io/config.source: cluster}}
spec:
  containers:
  - name: c
    image: busybox
    command: [sh, -c, "echo $(DB_SERVICE_HOST)"]
    env:
    - {name: DB_URL, value: "postgres://$(DB_SERVICE_HOST):$(DB_SERVICE_PORT)/x"}
    - {name: DB_SERVICE_PORT, value: "6000"}
    - {name: AFTER, value: "$(DB_SERVICE_PORT)"}
`)

	t.Run("cluster mode", func(t *testing.T) {
		a := envTestAgent(t)
		a.services = services
		m, order, _ := envMap(t, a, pod)
		assert.Equal(t, "postgres://10.0.0.5:5432/x", m["DB_URL"], "a value sees the service links")
		assert.Equal(t, "6000", m["DB_SERVICE_PORT"], "an explicit variable wins")
		assert.Equal(t, "6000", m["AFTER"], "a later reference sees the explicit value")
		assert.Equal(t, "10.96.0.1", m["KUBERNETES_SERVICE_HOST"])
		assert.Equal(t, "443", m["KUBERNETES_SERVICE_PORT"])
		assert.Equal(t, "tcp://10.96.0.1:443", m["KUBERNETES_PORT_443_TCP"])
		assert.Equal(t, "10.0.0.5", m["DB_SERVICE_HOST"])
		require.GreaterOrEqual(t, len(order), 4)
		assert.Equal(t, []string{"DB_URL", "DB_SERVICE_PORT", "AFTER"}, order[:3], "the container's own variables come first")
		assert.Equal(t, 1, countOf(order, "DB_SERVICE_PORT"), "no duplicate of an overridden link")
		assert.True(t, isSortedStrings(order[3:]), "the links follow, sorted: %v", order[3:])
		assert.Equal(t, []string{"sh", "-c", "echo 10.0.0.5"}, podspec.ExpandAll(pod.Spec.Containers[0].Command, m),
			"command and args see the links")
	})

	t.Run("enableServiceLinks false keeps the KUBERNETES_ variables", func(t *testing.T) {
		a := envTestAgent(t)
		a.services = services
		p := pod.DeepCopy()
		p.Spec.EnableServiceLinks = ptr.To(false)
		m, _, _ := envMap(t, a, p)
		assert.Equal(t, "10.96.0.1", m["KUBERNETES_SERVICE_HOST"])
		assert.NotContains(t, m, "DB_SERVICE_HOST")
		assert.Equal(t, "postgres://$(DB_SERVICE_HOST):$(DB_SERVICE_PORT)/x", m["DB_URL"], "unknown references stay as written")
	})

	t.Run("standalone: no service variables", func(t *testing.T) {
		a := envTestAgent(t)
		m, _, _ := envMap(t, a, pod)
		for k := range m {
			assert.NotContains(t, k, "KUBERNETES_")
			assert.NotContains(t, k, "_SERVICE_HOST")
		}
	})

	t.Run("a cluster pod waits for the first list; a static pod does not", func(t *testing.T) {
		a := envTestAgent(t)
		a.services = &fakeServices{services: services.services}
		_, _, _, err := a.containerEnv(pod, &pod.Spec.Containers[0], "")
		require.ErrorIs(t, err, errServicesNotSynced)
		require.EqualError(t, err, "services have not yet been read at least once, cannot construct envvars")

		static := pod.DeepCopy()
		static.Annotations[source.AnnotationConfigSource] = source.SourceFile
		m, _, _ := envMap(t, a, static)
		assert.Equal(t, "10.96.0.1", m["KUBERNETES_SERVICE_HOST"], "a static pod takes what was read")
	})
}

func countOf(list []string, s string) int {
	n := 0
	for _, x := range list {
		if x == s {
			n++
		}
	}
	return n
}

func isSortedStrings(list []string) bool {
	for i := 1; i < len(list); i++ {
		if list[i-1] > list[i] {
			return false
		}
	}
	return true
}
