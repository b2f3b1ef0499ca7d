package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// configManifest holds a ConfigMap, a Secret and a pod using them as
// volumes and env, with a downwardAPI volume, a projected volume and a
// memory emptyDir.
const configManifest = `
apiVersion: v1
kind: ConfigMap
metadata:
  name: e2e-settings
data:
  mode: fast
  level: "3"
  app.properties: |
    color=blue
    size=L
---
apiVersion: v1
kind: Secret
metadata:
  name: e2e-creds
type: Opaque
data:
  password: czNjcmV0
stringData:
  user: admin
---
apiVersion: v1
kind: Pod
metadata:
  name: e2e-config
  labels: {app: e2e-config, tier: front}
  annotations: {note: hello}
spec:
  terminationGracePeriodSeconds: 2
  volumes:
  - name: cfg
    configMap:
      name: e2e-settings
      defaultMode: 0440
      items:
      - {key: app.properties, path: conf/app.properties}
      - {key: mode, path: mode, mode: 0600}
  - name: sec
    secret: {secretName: e2e-creds}
  - name: info
    downwardAPI:
      items:
      - {path: labels, fieldRef: {fieldPath: metadata.labels}}
      - {path: name, fieldRef: {fieldPath: metadata.name}}
      - {path: mem_limit, resourceFieldRef: {containerName: app, resource: limits.memory, divisor: 1Mi}}
  - name: all
    projected:
      sources:
      - configMap: {name: e2e-settings, items: [{key: level, path: level}]}
      - secret: {name: e2e-creds, items: [{key: user, path: user}]}
      - downwardAPI: {items: [{path: note, fieldRef: {fieldPath: "metadata.annotations['note']"}}]}
  - name: mem
    emptyDir: {medium: Memory, sizeLimit: 16Mi}
  containers:
  - name: app
    image: REGISTRY/minikubelet/busybox:1.36
    command: [sh, -c]
    args: ["echo 'got $(GREETING), $$(LITERAL) and $(UNSET)' > /tmp/args; exec sleep 3600"]
    resources:
      limits: {memory: 64Mi}
    envFrom:
    - configMapRef: {name: e2e-settings}
      prefix: CFG_
    env:
    - {name: USER_NAME, valueFrom: {secretKeyRef: {name: e2e-creds, key: user}}}
    - {name: PASSWORD, valueFrom: {secretKeyRef: {name: e2e-creds, key: password}}}
    - {name: MODE, valueFrom: {configMapKeyRef: {name: e2e-settings, key: mode}}}
    - {name: GREETING, value: "hello $(USER_NAME) in $(CFG_level)"}
    - {name: OPTIONAL, valueFrom: {configMapKeyRef: {name: e2e-none, key: x, optional: true}}}
    - {name: TIER, valueFrom: {fieldRef: {fieldPath: "metadata.labels['tier']"}}}
    - {name: MEM_MI, valueFrom: {resourceFieldRef: {resource: limits.memory, divisor: 1Mi}}}
    volumeMounts:
    - {name: cfg, mountPath: /etc/config}
    - {name: sec, mountPath: /etc/secret}
    - {name: info, mountPath: /etc/podinfo}
    - {name: all, mountPath: /etc/all}
    - {name: mem, mountPath: /cache}
`

// TestConfig_ConfigMapSecretDownwardAPI runs a manifest holding a ConfigMap
// and a Secret next to the pod: files, modes, the kubelet's ..data layout,
// env (valueFrom, envFrom with prefix, $(VAR) expansion in env and args),
// tmpfs for the secret and memory volumes, and the unmounts on teardown.
func TestConfig_ConfigMapSecretDownwardAPI(t *testing.T) {
	t.Parallel()
	p := startRun(t, configManifest)
	p.waitRunning("e2e-config")
	id := containerID(t, "e2e-config", "app")
	sbs := podSandboxes(t, "e2e-config")
	require.Len(t, sbs, 1)
	uid := sbs[0].Metadata.Uid

	// Files, through the kubelet's symlinks.
	assert.Equal(t, "color=blue\nsize=L\n", execIn(t, id, "cat", "/etc/config/conf/app.properties"))
	assert.Equal(t, "fast", execIn(t, id, "cat", "/etc/config/mode"))
	assert.Equal(t, "..data/mode", strings.TrimSpace(execIn(t, id, "readlink", "/etc/config/mode")))
	assert.Regexp(t, `^\.\.\d{4}_\d\d_\d\d_\d\d_\d\d_\d\d\.\d+$`, strings.TrimSpace(execIn(t, id, "readlink", "/etc/config/..data")))
	assert.Equal(t, "600", strings.TrimSpace(execIn(t, id, "stat", "-L", "-c", "%a", "/etc/config/mode")))
	assert.Equal(t, "440", strings.TrimSpace(execIn(t, id, "stat", "-L", "-c", "%a", "/etc/config/conf/app.properties")))
	assert.Equal(t, "s3cret", execIn(t, id, "cat", "/etc/secret/password"))
	assert.Equal(t, "admin", execIn(t, id, "cat", "/etc/secret/user"))
	assert.Equal(t, "app=\"e2e-config\"\ntier=\"front\"", execIn(t, id, "cat", "/etc/podinfo/labels"))
	assert.Equal(t, "e2e-config", execIn(t, id, "cat", "/etc/podinfo/name"))
	assert.Equal(t, "64", execIn(t, id, "cat", "/etc/podinfo/mem_limit"))
	assert.Equal(t, "3", execIn(t, id, "cat", "/etc/all/level"))
	assert.Equal(t, "admin", execIn(t, id, "cat", "/etc/all/user"))
	assert.Equal(t, "hello", execIn(t, id, "cat", "/etc/all/note"))

	// Data volumes are read-only.
	_, stderr, err := suite.rt.ExecSync(ctx(t), id, []string{"touch", "/etc/config/new"}, 30*time.Second)
	assert.Error(t, err)
	assert.Contains(t, string(stderr), "Read-only file system")

	// Env.
	env := map[string]string{}
	for _, l := range strings.Split(execIn(t, id, "env"), "\n") {
		if k, v, ok := strings.Cut(l, "="); ok {
			env[k] = v
		}
	}
	assert.Equal(t, "admin", env["USER_NAME"])
	assert.Equal(t, "s3cret", env["PASSWORD"])
	assert.Equal(t, "fast", env["MODE"])
	assert.Equal(t, "fast", env["CFG_mode"])
	assert.Equal(t, "3", env["CFG_level"])
	assert.Equal(t, "color=blue", strings.SplitN(env["CFG_app.properties"], "\n", 2)[0])
	assert.Equal(t, "hello admin in 3", env["GREETING"])
	assert.NotContains(t, env, "OPTIONAL")
	assert.Equal(t, "front", env["TIER"])
	assert.Equal(t, "64", env["MEM_MI"])

	// $(VAR) in args: expanded, $$ escaped, unknown kept.
	assert.Equal(t, "got hello admin in 3, $(LITERAL) and $(UNSET)\n", execIn(t, id, "cat", "/tmp/args"))

	// tmpfs: the secret volume and the memory emptyDir (16Mi, its
	// sizeLimit, below the 64Mi pod limit), in the container and on the host.
	mounts := execIn(t, id, "cat", "/proc/mounts")
	assert.Regexp(t, `(?m)^\S+ /etc/secret tmpfs ro[, ]`, mounts)
	assert.Regexp(t, `(?m)^\S+ /cache tmpfs \S*size=16384k`, mounts)
	assert.NotRegexp(t, `(?m)^\S+ /etc/config tmpfs`, mounts)
	podDir := filepath.Join(suite.dir, "root", "pods", uid)
	secretDir := filepath.Join(podDir, "volumes", "kubernetes.io~secret", "sec")
	memDir := filepath.Join(podDir, "volumes", "kubernetes.io~empty-dir", "mem")
	hostMounts := readHostMounts(t)
	assert.Contains(t, hostMounts, secretDir+" tmpfs")
	assert.Contains(t, hostMounts, memDir+" tmpfs")

	// ConfigMaps are mirrored under the root dir; Secrets never are (they
	// stay in memory and in the pod's tmpfs).
	_, err = os.Stat(filepath.Join(suite.dir, "root", "configdata", "configmaps", "default", "e2e-settings.json"))
	assert.NoError(t, err)
	_, err = os.Stat(filepath.Join(suite.dir, "root", "configdata", "secrets"))
	assert.ErrorIs(t, err, os.ErrNotExist)

	p.interrupt()
	hostMounts = readHostMounts(t)
	assert.NotContains(t, hostMounts, secretDir)
	assert.NotContains(t, hostMounts, memDir)
	_, err = os.Stat(podDir)
	assert.True(t, os.IsNotExist(err), "pod dir removed")
}

// A required ConfigMap that the manifest does not hold keeps the container
// waiting with the kubelet's words.
func TestConfig_MissingConfigMapWaits(t *testing.T) {
	t.Parallel()
	p := startRun(t, `
apiVersion: v1
kind: Pod
metadata:
  name: e2e-config-missing
spec:
  terminationGracePeriodSeconds: 2
  volumes:
  - {name: cfg, configMap: {name: e2e-absent}}
  containers:
  - name: app
    image: REGISTRY/minikubelet/busybox:1.36
    command: [sleep, "3600"]
    volumeMounts: [{name: cfg, mountPath: /etc/config}]
`)
	p.waitFor(`CreateContainerConfigError`, 2*time.Minute)
	p.waitFor(`configmap "e2e-absent" not found`, time.Minute)
	p.interrupt()
}

// readHostMounts returns the host's /proc/mounts.
func readHostMounts(t *testing.T) string {
	t.Helper()
	data, err := os.ReadFile("/proc/mounts")
	require.NoError(t, err)
	return string(data)
}
