package e2e

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// subPath and subPathExpr mount a directory inside a volume; the same
// volume mounted whole shows what was written through them.
func TestVolumes_SubPathAndSubPathExpr(t *testing.T) {
	t.Parallel()
	p := startRun(t, `
apiVersion: v1
kind: Pod
metadata:
  name: e2e-subpath
spec:
  terminationGracePeriodSeconds: 2
  volumes:
  - name: data
    emptyDir: {}
  containers:
  - name: app
    image: REGISTRY/minikubelet/busybox:1.36
    command: ["sh", "-c", "echo site > /site/index; echo log > /logs/out; exec sleep 3600"]
    env:
    - name: POD_NAME
      valueFrom: {fieldRef: {fieldPath: metadata.name}}
    volumeMounts:
    - {name: data, mountPath: /site, subPath: web/html}
    - {name: data, mountPath: /logs, subPathExpr: "logs/$(POD_NAME)", mountPropagation: HostToContainer}
    - {name: data, mountPath: /all}
`)
	p.waitRunning("e2e-subpath")
	id := containerID(t, "e2e-subpath", "app")
	var out string
	eventually(t, 10*time.Second, "the files written through the subPaths", func() bool {
		o, _, err := suite.rt.ExecSync(ctx(t), id, []string{"sh", "-c", "cat /all/web/html/index /all/logs/e2e-subpath/out"}, 5*time.Second)
		out = string(o)
		return err == nil
	})
	assert.Equal(t, "site\nlog\n", out)
	mounts := execIn(t, id, "cat", "/proc/self/mountinfo")
	for _, l := range strings.Split(mounts, "\n") {
		if strings.Contains(l, " /logs ") {
			assert.Contains(t, l, "master:", "HostToContainer propagation makes /logs a slave mount")
		}
	}
	p.interrupt()
}

// A subPath missing in an emptyDir with fsGroup is created with the mode of
// the volume's root, umask bypassed: on tmpfs (1777) with fsGroup's setgid,
// drwxrwsrwt, group fsGroup (the conformance spec "EmptyDir volumes when
// FSGroup is specified nonexistent volume subPath should have the correct
// mode and owner using FSGroup", which uses medium Memory).
func TestVolumes_SubPathModeWithFSGroup(t *testing.T) {
	t.Parallel()
	p := startRun(t, `
apiVersion: v1
kind: Pod
metadata:
  name: e2e-subpath-mode
spec:
  terminationGracePeriodSeconds: 2
  securityContext: {fsGroup: 123}
  volumes:
  - name: data
    emptyDir: {medium: Memory}
  containers:
  - name: app
    image: REGISTRY/minikubelet/busybox:1.36
    command: ["sleep", "3600"]
    volumeMounts:
    - {name: data, mountPath: /test-volume, subPath: test-sub}
`)
	p.waitRunning("e2e-subpath-mode")
	id := containerID(t, "e2e-subpath-mode", "app")
	assert.Equal(t, "drwxrwsrwt 0 123", strings.TrimSpace(execIn(t, id, "stat", "-c", "%A %u %g", "/test-volume")))
}
