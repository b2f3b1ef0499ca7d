package podspec

import (
	"testing"

	"github.com/stretchr/testify/assert"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestExpandVars holds the kubelet's expansion cases (third_party/forked/
// golang/expansion expand_test.go), with the same variables.
func TestExpandVars(t *testing.T) {
	vars := map[string]string{
		"VAR_A":     "A",
		"VAR_B":     "B",
		"VAR_C":     "C",
		"VAR_REF":   "$(VAR_A)",
		"VAR_EMPTY": "",
	}
	lookup := func(n string) (string, bool) {
		v, ok := vars[n]
		return v, ok
	}
	for _, tc := range []struct {
		name, input, want string
	}{
		{"whole string", "$(VAR_A)", "A"},
		{"repeat", "$(VAR_A)-$(VAR_A)", "A-A"},
		{"beginning", "$(VAR_A)-1", "A-1"},
		{"middle", "___$(VAR_B)___", "___B___"},
		{"end", "___$(VAR_C)", "___C"},
		{"compound", "$(VAR_A)_$(VAR_B)_$(VAR_C)", "A_B_C"},
		{"escape & expansion", "$$(VAR_B)_$(VAR_A)", "$(VAR_B)_A"},
		{"compound escape", "$$(VAR_A)_$$(VAR_B)", "$(VAR_A)_$(VAR_B)"},
		{"mixed in escapes", "f000-$$VAR_A", "f000-$VAR_A"},
		{"backslash escape ignored", "foo\\$(VAR_C)bar", "foo\\Cbar"},
		{"backslash escape ignored 2", "foo\\\\$(VAR_C)bar", "foo\\\\Cbar"},
		{"lots of backslashes", "foo\\\\\\\\$(VAR_A)bar", "foo\\\\\\\\Abar"},
		{"nested var references", "$(VAR_A$(VAR_B))", "$(VAR_A$(VAR_B))"},
		{"nested var references second type", "$(VAR_A$(VAR_B)", "$(VAR_A$(VAR_B)"},
		{"value is a reference", "$(VAR_REF)", "$(VAR_A)"},
		{"value is a reference x 2", "%%$(VAR_REF)--$(VAR_REF)%%", "%%$(VAR_A)--$(VAR_A)%%"},
		{"empty var", "foo$(VAR_EMPTY)bar", "foobar"},
		{"unterminated expression", "foo$(VAR_Awhoops!", "foo$(VAR_Awhoops!"},
		{"expression without operator", "f00__(VAR_A)__", "f00__(VAR_A)__"},
		{"shell special vars pass through", "$?_boo_$!", "$?_boo_$!"},
		{"bare operators are ignored", "$VAR_A", "$VAR_A"},
		{"undefined vars are passed through", "$(VAR_DNE)", "$(VAR_DNE)"},
		{"multiple (even) operators, var undefined", "$$$$$$(BIG_MONEY)", "$$$(BIG_MONEY)"},
		{"multiple (even) operators, var defined", "$$$$$$(VAR_A)", "$$$(VAR_A)"},
		{"multiple (odd) operators, var undefined", "$$$$$$$(GOOD_ODDS)", "$$$$(GOOD_ODDS)"},
		{"multiple (odd) operators, var defined", "$$$$$$$(VAR_A)", "$$$A"},
		{"missing open expression", "$VAR_A)", "$VAR_A)"},
		{"shell syntax ignored", "${VAR_A}", "${VAR_A}"},
		{"trailing incomplete expression not consumed", "$(VAR_B)_______$(A", "B_______$(A"},
		{"trailing incomplete expression, no content, is not consumed", "$(VAR_C)_______$(", "C_______$("},
		{"operator at end of input string is preserved", "$(VAR_A)foobarzab$", "Afoobarzab$"},
		{"shell escaped incomplete expr", "foo-\\$(VAR_A", "foo-\\$(VAR_A"},
		{"lots of $( in middle", "--$($($($($--", "--$($($($($--"},
		{"lots of $( in beginning", "$($($($($--foo$(", "$($($($($--foo$("},
		{"lots of $( at end", "foo0--$($($($(", "foo0--$($($($("},
		{"escaped operators in variable names are not escaped", "$(foo$$var)", "$(foo$$var)"},
		{"newline not expanded", "\n", "\n"},
		{"empty expression", "$()", "$()"},
		{"double escape at end", "foo$$", "foo$"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, ExpandVars(tc.input, lookup))
		})
	}
}

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
			assert.Equal(t, tt.want, ServiceLinkEnv(tt.services, tt.ns, tt.links))
		})
	}
}
