package agent

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

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

// TestServiceLinkEnv checks the variables against the kubelet's own
// examples (pkg/kubelet/envvars envvars_test.go and the docs' "Discovering
// services": a Service redis-primary at 10.0.0.11:6379 gives
// REDIS_PRIMARY_SERVICE_HOST=10.0.0.11, REDIS_PRIMARY_PORT=tcp://10.0.0.11:6379…).
func TestServiceLinkEnv(t *testing.T) {
	master := svc("default", "kubernetes", "10.96.0.1", v1.ServicePort{Name: "https", Port: 443, Protocol: v1.ProtocolTCP})
	masterVars := map[string]string{
		"KUBERNETES_SERVICE_HOST":       "10.96.0.1",
		"KUBERNETES_SERVICE_PORT":       "443",
		"KUBERNETES_SERVICE_PORT_HTTPS": "443",
		"KUBERNETES_PORT":               "tcp://10.96.0.1:443",
		"KUBERNETES_PORT_443_TCP":       "tcp://10.96.0.1:443",
		"KUBERNETES_PORT_443_TCP_PROTO": "tcp",
		"KUBERNETES_PORT_443_TCP_PORT":  "443",
		"KUBERNETES_PORT_443_TCP_ADDR":  "10.96.0.1",
	}
	with := func(base map[string]string, more map[string]string) map[string]string {
		out := map[string]string{}
		for k, v := range base {
			out[k] = v
		}
		for k, v := range more {
			out[k] = v
		}
		return out
	}
	tests := []struct {
		name     string
		services []*v1.Service
		ns       string
		links    bool
		want     map[string]string
	}{
		{
			name:     "the docs' example: one unnamed port, the protocol defaulted to TCP",
			services: []*v1.Service{master, svc("shop", "redis-primary", "10.0.0.11", v1.ServicePort{Port: 6379})},
			ns:       "shop", links: true,
			want: with(masterVars, map[string]string{
				"REDIS_PRIMARY_SERVICE_HOST":        "10.0.0.11",
				"REDIS_PRIMARY_SERVICE_PORT":        "6379",
				"REDIS_PRIMARY_PORT":                "tcp://10.0.0.11:6379",
				"REDIS_PRIMARY_PORT_6379_TCP":       "tcp://10.0.0.11:6379",
				"REDIS_PRIMARY_PORT_6379_TCP_PROTO": "tcp",
				"REDIS_PRIMARY_PORT_6379_TCP_PORT":  "6379",
				"REDIS_PRIMARY_PORT_6379_TCP_ADDR":  "10.0.0.11",
			}),
		},
		{
			name: "several named ports: each named one has its SERVICE_PORT_<NAME>, the first is also SERVICE_PORT and PORT",
			services: []*v1.Service{master, svc("shop", "super-ultra-long-name", "9.8.7.6",
				v1.ServicePort{Name: "u-d-p", Port: 8082, Protocol: v1.ProtocolUDP},
				v1.ServicePort{Name: "t-c-p", Port: 8083, Protocol: v1.ProtocolTCP},
				v1.ServicePort{Name: "sctp", Port: 8084, Protocol: v1.ProtocolSCTP})},
			ns: "shop", links: true,
			want: with(masterVars, map[string]string{
				"SUPER_ULTRA_LONG_NAME_SERVICE_HOST":         "9.8.7.6",
				"SUPER_ULTRA_LONG_NAME_SERVICE_PORT":         "8082",
				"SUPER_ULTRA_LONG_NAME_SERVICE_PORT_U_D_P":   "8082",
				"SUPER_ULTRA_LONG_NAME_SERVICE_PORT_T_C_P":   "8083",
				"SUPER_ULTRA_LONG_NAME_SERVICE_PORT_SCTP":    "8084",
				"SUPER_ULTRA_LONG_NAME_PORT":                 "udp://9.8.7.6:8082",
				"SUPER_ULTRA_LONG_NAME_PORT_8082_UDP":        "udp://9.8.7.6:8082",
				"SUPER_ULTRA_LONG_NAME_PORT_8082_UDP_PROTO":  "udp",
				"SUPER_ULTRA_LONG_NAME_PORT_8082_UDP_PORT":   "8082",
				"SUPER_ULTRA_LONG_NAME_PORT_8082_UDP_ADDR":   "9.8.7.6",
				"SUPER_ULTRA_LONG_NAME_PORT_8083_TCP":        "tcp://9.8.7.6:8083",
				"SUPER_ULTRA_LONG_NAME_PORT_8083_TCP_PROTO":  "tcp",
				"SUPER_ULTRA_LONG_NAME_PORT_8083_TCP_PORT":   "8083",
				"SUPER_ULTRA_LONG_NAME_PORT_8083_TCP_ADDR":   "9.8.7.6",
				"SUPER_ULTRA_LONG_NAME_PORT_8084_SCTP":       "sctp://9.8.7.6:8084",
				"SUPER_ULTRA_LONG_NAME_PORT_8084_SCTP_PROTO": "sctp",
				"SUPER_ULTRA_LONG_NAME_PORT_8084_SCTP_PORT":  "8084",
				"SUPER_ULTRA_LONG_NAME_PORT_8084_SCTP_ADDR":  "9.8.7.6",
			}),
		},
		{
			name: "headless (None) and address-less Services are skipped",
			services: []*v1.Service{master,
				svc("shop", "headless", v1.ClusterIPNone, v1.ServicePort{Port: 80}),
				svc("shop", "no-ip", "", v1.ServicePort{Port: 80})},
			ns: "shop", links: true,
			want: masterVars,
		},
		{
			name:     "other namespaces' Services are not linked",
			services: []*v1.Service{master, svc("other", "db", "10.0.0.5", v1.ServicePort{Port: 5432})},
			ns:       "shop", links: true,
			want: masterVars,
		},
		{
			name:     "enableServiceLinks false: only the master service",
			services: []*v1.Service{master, svc("shop", "db", "10.0.0.5", v1.ServicePort{Port: 5432})},
			ns:       "shop", links: false,
			want: masterVars,
		},
		{
			name:     "enableServiceLinks false in the default namespace: still the master service",
			services: []*v1.Service{svc("default", "db", "10.0.0.5", v1.ServicePort{Port: 5432}), master},
			ns:       "default", links: false,
			want: masterVars,
		},
		{
			name: "a Service of the pod's namespace named kubernetes replaces the master, in either order",
			services: []*v1.Service{svc("shop", "kubernetes", "10.0.0.9", v1.ServicePort{Port: 8080}), master,
				svc("shop", "kubernetes", "10.0.0.9", v1.ServicePort{Port: 8080})},
			ns: "shop", links: true,
			want: map[string]string{
				"KUBERNETES_SERVICE_HOST":        "10.0.0.9",
				"KUBERNETES_SERVICE_PORT":        "8080",
				"KUBERNETES_PORT":                "tcp://10.0.0.9:8080",
				"KUBERNETES_PORT_8080_TCP":       "tcp://10.0.0.9:8080",
				"KUBERNETES_PORT_8080_TCP_PROTO": "tcp",
				"KUBERNETES_PORT_8080_TCP_PORT":  "8080",
				"KUBERNETES_PORT_8080_TCP_ADDR":  "10.0.0.9",
			},
		},
		{
			name:     "IPv6 cluster IPs are bracketed in URLs",
			services: []*v1.Service{svc("shop", "v6", "fd00::10", v1.ServicePort{Port: 80})},
			ns:       "shop", links: true,
			want: map[string]string{
				"V6_SERVICE_HOST":      "fd00::10",
				"V6_SERVICE_PORT":      "80",
				"V6_PORT":              "tcp://[fd00::10]:80",
				"V6_PORT_80_TCP":       "tcp://[fd00::10]:80",
				"V6_PORT_80_TCP_PROTO": "tcp",
				"V6_PORT_80_TCP_PORT":  "80",
				"V6_PORT_80_TCP_ADDR":  "fd00::10",
			},
		},
		{
			name: "no Services at all (a cluster without the master service yet)",
			ns:   "shop", links: true,
			want: map[string]string{},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, serviceLinkEnv(tt.services, tt.ns, tt.links))
		})
	}
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
		assert.Equal(t, []string{"sh", "-c", "echo 10.0.0.5"}, expandAll(pod.Spec.Containers[0].Command, m),
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
