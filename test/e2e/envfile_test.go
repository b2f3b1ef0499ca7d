package e2e

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

// An init container writes an env file into an emptyDir; the app
// container takes its variables from it (env[].valueFrom.fileKeyRef, the
// kubelet's EnvFiles): a key found, an optional key missing (not set), and
// a value spanning lines, in the kubelet's single-quoted syntax.
func TestRun_EnvFileKeyRef(t *testing.T) {
	t.Parallel()
	p := startRun(t, `
apiVersion: v1
kind: Pod
metadata:
  name: e2e-envfile
spec:
  terminationGracePeriodSeconds: 2
  volumes:
  - name: config
    emptyDir: {}
  initContainers:
  - name: setup-envfile
    image: REGISTRY/minikubelet/busybox:1.36
    command: ["sh", "-c", "printf \"FOO='bar'\\nMULTI='one\\ntwo'\\n\" > /data/config.env"]
    volumeMounts: [{name: config, mountPath: /data}]
  containers:
  - name: app
    image: REGISTRY/minikubelet/busybox:1.36
    command: ["sh", "-c", "echo \"FOO=$FOO\"; exec sleep 3600"]
    env:
    - {name: FOO, valueFrom: {fileKeyRef: {volumeName: config, path: config.env, key: FOO}}}
    - {name: MULTI, valueFrom: {fileKeyRef: {volumeName: config, path: config.env, key: MULTI}}}
    - {name: MISSING, valueFrom: {fileKeyRef: {volumeName: config, path: config.env, key: MISSING, optional: true}}}
`)
	p.waitRunning("e2e-envfile")
	id := containerID(t, "e2e-envfile", "app")
	assert.Equal(t, "bar\n", execIn(t, id, "sh", "-c", `echo "$FOO"`))
	assert.Equal(t, "one\ntwo\n", execIn(t, id, "sh", "-c", `echo "$MULTI"`))
	assert.Equal(t, "unset\n", execIn(t, id, "sh", "-c", `echo "${MISSING-unset}"`))
	assert.True(t, strings.Contains(execIn(t, id, "env"), "FOO=bar"))
	p.interrupt()
}
