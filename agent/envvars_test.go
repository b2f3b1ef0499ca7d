package agent

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/minikubelet/minikubelet/agent/manifest"
	"github.com/minikubelet/minikubelet/agent/node"
	"github.com/minikubelet/minikubelet/agent/podspec"
)

// envTestAgent is an agent with config data and a node, for env tests.
func envTestAgent(t *testing.T) *Agent {
	t.Helper()
	a := New(Config{NodeName: "node-1", RootDir: t.TempDir(), PodLogDir: t.TempDir(), ResolvConf: "/nonexistent", Network: testNetwork(t), HostIPs: []string{"192.0.2.1"}, Node: node.Info{
		Allocatable: v1.ResourceList{v1.ResourceCPU: resource.MustParse("2"), v1.ResourceMemory: resource.MustParse("4Gi")},
	}}, Deps{})
	a.SetConfigData([]*v1.ConfigMap{{
		ObjectMeta: metaNS("shop", "settings"),
		// Keys with "=" cannot pass validation; SetConfigData takes them as
		// an API server's data could hold them before relaxed names.
		Data: map[string]string{"mode": "fast", "level": "3", "bad=key": "x", "1st-ok": "y"},
	}}, []*v1.Secret{{
		ObjectMeta: metaNS("shop", "creds"),
		Data:       map[string][]byte{"password": []byte("s3cret"), "user": []byte("admin")},
	}})
	return a
}

func envMap(t *testing.T, a *Agent, pod *v1.Pod) (map[string]string, []string, []string) {
	t.Helper()
	kvs, m, warnings, err := a.containerEnv(pod, &pod.Spec.Containers[0], "10.88.0.7")
	require.NoError(t, err)
	var order []string
	for _, kv := range kvs {
		order = append(order, kv.Key)
		assert.Equal(t, m[kv.Key], string(kv.Value))
	}
	return m, order, warnings
}

func TestContainerEnv_ValueFromAndEnvFrom(t *testing.T) {
	a := envTestAgent(t)
	pod := testPod(t, `
apiVersion: v1
kind: Pod
metadata:
  name: web
  namespace: shop
  uid: 11111111-2222-3333-4444-555555555555
  labels: {app: web, tier: "front"}
  annotations: {note: "hi"}
spec:
  serviceAccountName: robot
  containers:
  - name: app
    image: img
    command: [sh, -c, "echo $(GREETING) $(MODE) $$(MODE) $(NOPE)"]
    args: ["$(CFG_level)"]
    envFrom:
    - configMapRef: {name: settings}
      prefix: CFG_
    - secretRef: {name: creds}
    - configMapRef: {name: missing, optional: true}
    env:
    - {name: EARLY, value: "$(MODE)"}
    - {name: MODE, valueFrom: {configMapKeyRef: {name: settings, key: mode}}}
    - {name: GREETING, value: "hello $(user) in $(MODE) mode, $(LATER)"}
    - {name: LATER, value: "late"}
    - {name: PASS, valueFrom: {secretKeyRef: {name: creds, key: password}}}
    - {name: OPT_KEY, valueFrom: {configMapKeyRef: {name: settings, key: nope, optional: true}}}
    - {name: OPT_OBJ, valueFrom: {secretKeyRef: {name: nope, key: nope, optional: true}}}
    - {name: LABEL, valueFrom: {fieldRef: {fieldPath: "metadata.labels['tier']"}}}
    - {name: NOLABEL, valueFrom: {fieldRef: {fieldPath: "metadata.labels['none']"}}}
    - {name: NOTE, valueFrom: {fieldRef: {fieldPath: "metadata.annotations['note']"}}}
    - {name: SA, valueFrom: {fieldRef: {fieldPath: spec.serviceAccountName}}}
    - {name: PODIPS, valueFrom: {fieldRef: {fieldPath: status.podIPs}}}
    - {name: NODE, valueFrom: {fieldRef: {fieldPath: spec.nodeName}}}
    - {name: CPU_LIMIT, valueFrom: {resourceFieldRef: {resource: limits.cpu}}}
    - {name: CPU_REQ_M, valueFrom: {resourceFieldRef: {resource: requests.cpu, divisor: 1m}}}
    - {name: MEM_LIMIT_MI, valueFrom: {resourceFieldRef: {resource: limits.memory, divisor: 1Mi}}}
    - {name: SIDE_MEM, valueFrom: {resourceFieldRef: {containerName: side, resource: limits.memory, divisor: 1Gi}}}
    resources:
      requests: {cpu: 250m}
      limits: {memory: 100Mi}
  - name: side
    image: img
`)
	env, order, warnings := envMap(t, a, pod)
	assert.Equal(t, map[string]string{
		"CFG_mode": "fast", "CFG_level": "3", "CFG_1st-ok": "y", "password": "s3cret", "user": "admin",
		"EARLY":        "$(MODE)", // MODE is defined later
		"MODE":         "fast",
		"GREETING":     "hello admin in fast mode, $(LATER)",
		"LATER":        "late",
		"PASS":         "s3cret",
		"LABEL":        "front",
		"NOLABEL":      "",
		"NOTE":         "hi",
		"SA":           "robot",
		"PODIPS":       "10.88.0.7",
		"NODE":         "node-1",
		"CPU_LIMIT":    "2", // no limit: the node's allocatable
		"CPU_REQ_M":    "250",
		"MEM_LIMIT_MI": "100",
		"SIDE_MEM":     "4",
	}, env)
	// envFrom first (sorted keys of each source), then env in order.
	assert.Equal(t, []string{"CFG_1st-ok", "CFG_level", "CFG_mode", "password", "user", "EARLY", "MODE"}, order[:7])
	assert.Equal(t, []string{
		"Keys [CFG_bad=key] from the EnvFrom configMap shop/settings were skipped since they are considered invalid environment variable names.",
	}, warnings)
	c := &pod.Spec.Containers[0]
	assert.Equal(t, []string{"sh", "-c", "echo hello admin in fast mode, $(LATER) fast $(MODE) $(NOPE)"}, podspec.ExpandAll(c.Command, env))
	assert.Equal(t, []string{"3"}, podspec.ExpandAll(c.Args, env))
}

func TestContainerEnv_Errors(t *testing.T) {
	a := envTestAgent(t)
	for _, tc := range []struct {
		name, env, want string
	}{
		{"missing configmap", `{name: X, valueFrom: {configMapKeyRef: {name: nope, key: k}}}`, `configmap "nope" not found`},
		{"missing configmap key", `{name: X, valueFrom: {configMapKeyRef: {name: settings, key: nope}}}`, `couldn't find key nope in ConfigMap shop/settings`},
		{"missing secret", `{name: X, valueFrom: {secretKeyRef: {name: nope, key: k}}}`, `secret "nope" not found`},
		{"missing secret key", `{name: X, valueFrom: {secretKeyRef: {name: creds, key: nope}}}`, `couldn't find key nope in Secret shop/creds`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pod := testPod(t, "apiVersion: v1\nkind: Pod\nmetadata: {name: web, namespace: shop}\nspec:\n  containers:\n  - name: app\n    image: img\n    env:\n    - "+tc.env+"\n")
			_, _, _, err := a.containerEnv(pod, &pod.Spec.Containers[0], "")
			require.Error(t, err)
			assert.Equal(t, tc.want, err.Error())
			_, err = a.generateContainerConfig(pod, &pod.Spec.Containers[0], podspec.ContainerTypeRegular, 0, "img", "", nil, nil)
			reason, msg := reasonAndMessage(err)
			assert.Equal(t, "CreateContainerConfigError", reason)
			assert.Equal(t, tc.want, msg)
		})
	}
	t.Run("missing envFrom configmap", func(t *testing.T) {
		pod := testPod(t, "apiVersion: v1\nkind: Pod\nmetadata: {name: web, namespace: shop}\nspec:\n  containers:\n  - name: app\n    image: img\n    envFrom:\n    - configMapRef: {name: nope}\n")
		_, _, _, err := a.containerEnv(pod, &pod.Spec.Containers[0], "")
		assert.EqualError(t, err, `configmap "nope" not found`)
	})
}

func TestValidateEnvSources(t *testing.T) {
	for _, tc := range []struct {
		name, container string
		want            []string
	}{
		{"whole labels in env", `env: [{name: X, valueFrom: {fieldRef: {fieldPath: metadata.labels}}}]`,
			[]string{`spec.containers[0].env[0].valueFrom.fieldRef.fieldPath: Unsupported value: "metadata.labels"`}},
		{"bad cpu divisor", `env: [{name: X, valueFrom: {resourceFieldRef: {resource: limits.cpu, divisor: 1Mi}}}]`,
			[]string{`spec.containers[0].env[0].valueFrom.resourceFieldRef.divisor: Invalid value: "1Mi": only divisor's values 1m, 1 are supported with the cpu resource`}},
		{"ephemeral storage", `env: [{name: X, valueFrom: {resourceFieldRef: {resource: limits.ephemeral-storage}}}]`,
			[]string{`spec.containers[0].env[0].valueFrom.resourceFieldRef.resource: Forbidden: not supported by minikubelet yet: limits.ephemeral-storage`}},
		{"bad key", `env: [{name: X, valueFrom: {configMapKeyRef: {name: c, key: "a b"}}}]`,
			[]string{`spec.containers[0].env[0].valueFrom.configMapKeyRef.key: Invalid value: "a b"`}},
		{"envFrom without source", `envFrom: [{prefix: P_}]`,
			[]string{"spec.containers[0].envFrom[0]: Invalid value: \"\": must specify one of: `configMapRef` or `secretRef`"}},
		{"envFrom without name", `envFrom: [{secretRef: {}}]`,
			[]string{`spec.containers[0].envFrom[0].secretRef.name: Required value`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := manifest.PrepareManifest([]byte("apiVersion: v1\nkind: Pod\nmetadata: {name: web}\nspec:\n  containers:\n  - name: app\n    image: img\n    "+tc.container+"\n"), "x.yaml", "node-1")
			require.Error(t, err)
			lines := strings.Split(err.Error(), "\n")
			require.Len(t, lines, len(tc.want), err.Error())
			for i, w := range tc.want {
				assert.Contains(t, lines[i], w)
			}
		})
	}
}
