package agent

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/minikubelet/minikubelet/agent/manifest"
	"github.com/minikubelet/minikubelet/agent/source"
)

// metaNS is ObjectMeta with a namespace and a name.
func metaNS(ns, name string) metav1.ObjectMeta { return metav1.ObjectMeta{Namespace: ns, Name: name} }

func TestPrepareObjects(t *testing.T) {
	data := `
apiVersion: v1
kind: ConfigMap
metadata: {name: settings}
data: {mode: fast}
binaryData: {blob: AAEC}
---
apiVersion: v1
kind: Secret
metadata: {name: creds, namespace: shop}
data: {password: czNjcmV0}
stringData: {user: admin, password: override}
---
apiVersion: v1
kind: List
items:
- apiVersion: v1
  kind: Pod
  metadata: {name: web}
  spec:
    containers: [{name: app, image: img}]
- apiVersion: v1
  kind: ConfigMap
  metadata: {name: other}
`
	pods, cms, secrets, err := manifest.PrepareObjects([]byte(data), "x.yaml", "node-1")
	require.NoError(t, err)
	require.Len(t, pods, 1)
	assert.Equal(t, "default", pods[0].Namespace)
	require.Len(t, cms, 2)
	assert.Equal(t, "default", cms[0].Namespace)
	assert.Equal(t, []byte{0, 1, 2}, cms[0].BinaryData["blob"])
	require.Len(t, secrets, 1)
	assert.Equal(t, v1.SecretTypeOpaque, secrets[0].Type)
	assert.Equal(t, map[string][]byte{"password": []byte("override"), "user": []byte("admin")}, secrets[0].Data)
	assert.Nil(t, secrets[0].StringData)

	// Pods-only callers still refuse them.
	_, err = manifest.PrepareManifest([]byte(data), "x.yaml", "node-1")
	require.Error(t, err)
	assert.Contains(t, err.Error(), `x.yaml: document 1: kind: Unsupported value: "ConfigMap": not accepted by this source yet`)
	assert.Contains(t, err.Error(), `x.yaml: document 3: items[1].kind: Unsupported value: "ConfigMap"`)

	// DecodeObjects: no defaults.
	_, cms, secrets, err = manifest.DecodeObjects([]byte(data), "x.yaml")
	require.NoError(t, err)
	assert.Equal(t, "", cms[0].Namespace)
	assert.Equal(t, "override", secrets[0].StringData["password"])

	// Only config objects is fine.
	pods, cms, _, err = manifest.PrepareObjects([]byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n"), "x.yaml", "node-1")
	require.NoError(t, err)
	assert.Empty(t, pods)
	assert.Len(t, cms, 1)
}

func TestPrepareObjects_Invalid(t *testing.T) {
	for _, tc := range []struct {
		name, data string
		want       []string
	}{
		{"unknown field", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\ndatta: {}\n",
			[]string{"x.yaml: datta: unknown field"}},
		{"bad name and key", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: A_b}\ndata: {\"a b\": x, ..c: \"y\"}\n",
			[]string{
				`x.yaml: metadata.name: Invalid value: "A_b": a lowercase RFC 1123 subdomain`,
				`x.yaml: data[..c]: Invalid value: "..c": must not start with '..'`,
				`x.yaml: data[a b]: Invalid value: "a b": a valid config key must consist of alphanumeric characters, '-', '_' or '.'`,
			}},
		{"missing name", "apiVersion: v1\nkind: Secret\nmetadata: {}\n",
			[]string{"x.yaml: metadata.name: Required value: name or generateName is required"}},
		{"data and binaryData overlap", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\ndata: {k: x}\nbinaryData: {k: AA==}\n",
			[]string{`x.yaml: binaryData[k]: Invalid value: "k": duplicate of key present in data`}},
		{"dockerconfigjson without key", "apiVersion: v1\nkind: Secret\nmetadata: {name: a}\ntype: kubernetes.io/dockerconfigjson\n",
			[]string{"x.yaml: data[.dockerconfigjson]: Required value"}},
		{"tls", "apiVersion: v1\nkind: Secret\nmetadata: {name: a}\ntype: kubernetes.io/tls\nstringData: {tls.crt: x}\n",
			[]string{"x.yaml: data[tls.key]: Required value"}},
		{"duplicate", "apiVersion: v1\nkind: Secret\nmetadata: {name: a}\n---\napiVersion: v1\nkind: Secret\nmetadata: {name: a, namespace: default}\n",
			[]string{`x.yaml: document 2: metadata.name: Duplicate value: "default/a"`}},
		{"api server metadata", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a, resourceVersion: \"5\"}\n",
			[]string{"x.yaml: metadata.resourceVersion: Forbidden"}},
		{"wrong apiVersion", "apiVersion: v2\nkind: ConfigMap\nmetadata: {name: a}\n",
			[]string{`x.yaml: kind: Unsupported value: "ConfigMap": v2 ConfigMap is not supported`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, _, _, err := manifest.PrepareObjects([]byte(tc.data), "x.yaml", "node-1")
			require.Error(t, err)
			lines := strings.Split(err.Error(), "\n")
			require.Len(t, lines, len(tc.want), err.Error())
			for i, w := range tc.want {
				assert.True(t, strings.HasPrefix(lines[i], w), "line %d: %q does not start with %q", i, lines[i], w)
			}
		})
	}
}

// ConfigMaps are mirrored under the root dir; Secrets never are, and the
// Secrets an older version mirrored there are removed at first use.
func TestSetConfigData_SecretsStayOffTheRootDir(t *testing.T) {
	root := t.TempDir()
	legacy := filepath.Join(root, "configdata", "secrets", "shop", "old.json")
	require.NoError(t, os.MkdirAll(filepath.Dir(legacy), 0o700))
	require.NoError(t, os.WriteFile(legacy, []byte(`{"data":{"k":"c2VjcmV0"}}`), 0o600))
	a := New(Config{RootDir: root, PodLogDir: t.TempDir(), ResolvConf: "/nonexistent", Network: testNetwork(t), HostIPs: []string{"192.0.2.1"}}, Deps{})
	a.SetConfigData([]*v1.ConfigMap{{ObjectMeta: metaNS("default", "c")}}, []*v1.Secret{{ObjectMeta: metaNS("shop", "s"), Data: map[string][]byte{"k": []byte("s3cr3t-value")}}})
	_, err := os.Stat(filepath.Join(root, "configdata", "configmaps", "default", "c.json"))
	require.NoError(t, err)
	assert.NoDirExists(t, filepath.Join(root, "configdata", "secrets"), "the older version's mirror is gone")
	assertNoFileContains(t, root, "s3cr3t-value")

	pod := &v1.Pod{ObjectMeta: metaNS("shop", "web")}
	got, err := a.configData().Secret(pod, "s")
	require.NoError(t, err)
	assert.Equal(t, "s3cr3t-value", string(got.Data["k"]))

	// The whole set is replaced: what is gone is removed.
	a.SetConfigData(nil, nil)
	_, err = os.Stat(filepath.Join(root, "configdata", "configmaps", "default", "c.json"))
	assert.True(t, os.IsNotExist(err))
	_, err = a.configData().Secret(pod, "s")
	assert.EqualError(t, err, `secret "s" not found`)
}

// assertNoFileContains fails when a file under dir holds needle.
func assertNoFileContains(t *testing.T, dir, needle string) {
	t.Helper()
	require.NoError(t, filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		assert.NotContains(t, string(data), needle, "%s holds the secret", p)
		return nil
	}))
}

// A pod sees the ConfigMaps and Secrets of its own source's scope only: a
// cluster pod the cluster's, a local pod (manifest file or directory,
// local API, foreground run) the node's, whatever the other scope holds
// under the same namespace/name; in env, envFrom, volumes, projected
// volumes and pull secrets alike (they all look up through configScope).
func TestConfigStore_ScopesBySource(t *testing.T) {
	a := New(Config{RootDir: t.TempDir(), PodLogDir: t.TempDir(), ResolvConf: "/nonexistent", Network: testNetwork(t), HostIPs: []string{"192.0.2.1"}}, Deps{})
	secret := func(v string) *v1.Secret {
		return &v1.Secret{ObjectMeta: metaNS("shop", "creds"), Data: map[string][]byte{"password": []byte(v)}}
	}
	cm := func(v string) *v1.ConfigMap {
		return &v1.ConfigMap{ObjectMeta: metaNS("shop", "settings"), Data: map[string]string{"from": v}}
	}
	a.setConfigScopes(map[string]configSet{
		configScopeNode: {ConfigMaps: []*v1.ConfigMap{cm("node")}, Secrets: []*v1.Secret{secret("node")}},
		sourceCluster:   {ConfigMaps: []*v1.ConfigMap{cm("cluster")}},
	})
	pod := func(src string) *v1.Pod {
		p := &v1.Pod{ObjectMeta: metaNS("shop", "web")}
		if src != "" {
			p.Annotations = map[string]string{source.AnnotationConfigSource: src}
		}
		return p
	}
	for _, tc := range []struct {
		source, wantCM, wantSecret string
	}{
		{"", "node", "node"},
		{source.SourceFile, "node", "node"},
		{source.SourceAPI, "node", "node"},
		{sourceCluster, "cluster", ""},
	} {
		t.Run("source="+tc.source, func(t *testing.T) {
			p := pod(tc.source)
			got, err := a.configData().ConfigMap(p, "settings")
			require.NoError(t, err)
			assert.Equal(t, tc.wantCM, got.Data["from"])
			sec, err := a.configData().Secret(p, "creds")
			if tc.wantSecret == "" {
				assert.ErrorIs(t, err, errConfigNotFound, "the node's Secret is not the cluster pod's")
				ref := v1.LocalObjectReference{Name: "creds"}
				c := &v1.Container{Name: "app"}
				c.Env = []v1.EnvVar{{Name: "P", ValueFrom: &v1.EnvVarSource{SecretKeyRef: &v1.SecretKeySelector{LocalObjectReference: ref, Key: "password"}}}}
				_, _, _, err = a.containerEnv(p, c, "")
				assert.ErrorIs(t, err, errConfigNotFound, "env")
				c.Env = nil
				c.EnvFrom = []v1.EnvFromSource{{SecretRef: &v1.SecretEnvSource{LocalObjectReference: ref}}}
				_, _, _, err = a.containerEnv(p, c, "")
				assert.ErrorIs(t, err, errConfigNotFound, "envFrom")
				_, err = a.volumes().VolumePayload(p, &v1.Volume{Name: "s", VolumeSource: v1.VolumeSource{Secret: &v1.SecretVolumeSource{SecretName: "creds"}}})
				assert.ErrorIs(t, err, errConfigNotFound, "secret volume")
				_, err = a.volumes().VolumePayload(p, &v1.Volume{Name: "p", VolumeSource: v1.VolumeSource{Projected: &v1.ProjectedVolumeSource{Sources: []v1.VolumeProjection{{Secret: &v1.SecretProjection{LocalObjectReference: ref}}}}}})
				assert.ErrorIs(t, err, errConfigNotFound, "projected volume")
				p.Spec.ImagePullSecrets = []v1.LocalObjectReference{ref}
				_, missing, _ := a.imageManager().Keyring(p)
				assert.Equal(t, []string{"creds"}, missing, "pull secrets")
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.wantSecret, string(sec.Data["password"]))
		})
	}
}
