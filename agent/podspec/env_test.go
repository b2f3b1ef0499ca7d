package podspec

import (
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
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

func TestFormatMap(t *testing.T) {
	assert.Equal(t, "a=\"1\"\nb=\"two \\\"words\\\"\"", FormatMap(map[string]string{"b": `two "words"`, "a": "1"}))
	assert.Equal(t, "", FormatMap(nil))
}

func TestResourceValue_Divisors(t *testing.T) {
	c := &v1.Container{Name: "c", Resources: v1.ResourceRequirements{
		Limits:   v1.ResourceList{v1.ResourceCPU: resource.MustParse("1250m"), v1.ResourceMemory: resource.MustParse("64Mi")},
		Requests: v1.ResourceList{v1.ResourceCPU: resource.MustParse("250m"), v1.ResourceMemory: resource.MustParse("1M")},
	}}
	for _, tc := range []struct {
		res, divisor, want string
	}{
		{"limits.cpu", "", "2"}, // rounded up
		{"limits.cpu", "1m", "1250"},
		{"requests.cpu", "1", "1"},
		{"limits.memory", "", "67108864"},
		{"limits.memory", "1Mi", "64"},
		{"limits.memory", "1Gi", "1"}, // rounded up
		{"requests.memory", "1k", "1000"},
	} {
		t.Run(tc.res+"/"+tc.divisor, func(t *testing.T) {
			ref := &v1.ResourceFieldSelector{Resource: tc.res}
			if tc.divisor != "" {
				ref.Divisor = resource.MustParse(tc.divisor)
			}
			got, err := resourceValue(c, ref, nil)
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
		})
	}
}

// envInputs are the inputs of TestEnv: one ConfigMap and one Secret in the
// pod's namespace, a node with two addresses and 2 CPUs allocatable.
func envInputs(svcEnv map[string]string) EnvInputs {
	notFound := errors.New("not found")
	return EnvInputs{
		PodIP:       "10.88.0.7",
		NodeName:    "node-1",
		HostIPs:     func() []string { return []string{"192.0.2.1", "2001:db8::1"} },
		Allocatable: v1.ResourceList{v1.ResourceCPU: resource.MustParse("2")},
		ServiceEnv:  svcEnv,
		ConfigMap: func(name string) (*v1.ConfigMap, error) {
			if name != "settings" {
				return nil, fmt.Errorf("configmap %q: %w", name, notFound)
			}
			return &v1.ConfigMap{Data: map[string]string{"MODE": "fast", "bad=key": "x", "1st": "y"}}, nil
		},
		Secret: func(name string) (*v1.Secret, error) {
			if name != "creds" {
				return nil, fmt.Errorf("secret %q: %w", name, notFound)
			}
			return &v1.Secret{Data: map[string][]byte{"password": []byte("s3cret")}}, nil
		},
		NotFound: notFound,
	}
}

// TestEnv builds environments from a pod and explicit inputs, as the
// kubelet's makeEnvironmentVariables: order, expansion, optional and
// missing references, node facts, service links.
func TestEnv(t *testing.T) {
	for _, tc := range []struct {
		name     string
		c        v1.Container
		svcEnv   map[string]string
		want     []string // KEY=value, in order
		warnings []string
		wantErr  string
	}{{
		name: "envFrom then env; a plain value sees what came before and the service links",
		c: v1.Container{
			EnvFrom: []v1.EnvFromSource{
				{ConfigMapRef: &v1.ConfigMapEnvSource{LocalObjectReference: v1.LocalObjectReference{Name: "settings"}}},
				{Prefix: "S_", SecretRef: &v1.SecretEnvSource{LocalObjectReference: v1.LocalObjectReference{Name: "creds"}}},
				{ConfigMapRef: &v1.ConfigMapEnvSource{LocalObjectReference: v1.LocalObjectReference{Name: "gone"}, Optional: ptr.To(true)}},
			},
			Env: []v1.EnvVar{
				{Name: "URL", Value: "$(MODE)://$(DB_SERVICE_HOST)/$(LATER)"},
				{Name: "MODE", Value: "slow"},
				{Name: "LATER", Value: "x"},
			},
		},
		svcEnv:   map[string]string{"DB_SERVICE_HOST": "10.0.0.5", "MODE": "svc"},
		want:     []string{"1st=y", "MODE=slow", "S_password=s3cret", "URL=fast://10.0.0.5/$(LATER)", "LATER=x", "DB_SERVICE_HOST=10.0.0.5"},
		warnings: []string{"Keys [bad=key] from the EnvFrom configMap shop/settings were skipped since they are considered invalid environment variable names."},
	}, {
		name: "fieldRef and resourceFieldRef read the pod and the node",
		c: v1.Container{Name: "app", Env: []v1.EnvVar{
			{Name: "IP", ValueFrom: &v1.EnvVarSource{FieldRef: &v1.ObjectFieldSelector{FieldPath: "status.podIP"}}},
			{Name: "HOSTS", ValueFrom: &v1.EnvVarSource{FieldRef: &v1.ObjectFieldSelector{FieldPath: "status.hostIPs"}}},
			{Name: "NODE", ValueFrom: &v1.EnvVarSource{FieldRef: &v1.ObjectFieldSelector{FieldPath: "spec.nodeName"}}},
			{Name: "SA", ValueFrom: &v1.EnvVarSource{FieldRef: &v1.ObjectFieldSelector{FieldPath: "spec.serviceAccountName"}}},
			{Name: "CPU", ValueFrom: &v1.EnvVarSource{ResourceFieldRef: &v1.ResourceFieldSelector{Resource: "limits.cpu"}}},
		}},
		want: []string{"IP=10.88.0.7", "HOSTS=192.0.2.1,2001:db8::1", "NODE=node-1", "SA=default", "CPU=2"},
	}, {
		name: "an optional key that is missing sets nothing",
		c: v1.Container{Env: []v1.EnvVar{{Name: "P", ValueFrom: &v1.EnvVarSource{SecretKeyRef: &v1.SecretKeySelector{
			LocalObjectReference: v1.LocalObjectReference{Name: "creds"}, Key: "nope", Optional: ptr.To(true)}}}}},
	}, {
		name: "a required key that is missing is the kubelet's error",
		c: v1.Container{Env: []v1.EnvVar{{Name: "P", ValueFrom: &v1.EnvVarSource{ConfigMapKeyRef: &v1.ConfigMapKeySelector{
			LocalObjectReference: v1.LocalObjectReference{Name: "settings"}, Key: "nope"}}}}},
		wantErr: "couldn't find key nope in ConfigMap shop/settings",
	}, {
		name:    "a required ConfigMap that is missing is the lookup's error",
		c:       v1.Container{EnvFrom: []v1.EnvFromSource{{ConfigMapRef: &v1.ConfigMapEnvSource{LocalObjectReference: v1.LocalObjectReference{Name: "gone"}}}}},
		wantErr: `configmap "gone": not found`,
	}} {
		t.Run(tc.name, func(t *testing.T) {
			pod := &v1.Pod{}
			pod.Name, pod.Namespace = "web", "shop"
			pod.Spec.Containers = []v1.Container{tc.c}
			kvs, m, warnings, err := Env(pod, &pod.Spec.Containers[0], envInputs(tc.svcEnv))
			if tc.wantErr != "" {
				require.EqualError(t, err, tc.wantErr)
				return
			}
			require.NoError(t, err)
			var got []string
			for _, kv := range kvs {
				got = append(got, kv.Key+"="+string(kv.Value))
				assert.Equal(t, m[kv.Key], string(kv.Value))
			}
			assert.Equal(t, tc.want, got)
			assert.Equal(t, tc.warnings, warnings)
		})
	}
}
