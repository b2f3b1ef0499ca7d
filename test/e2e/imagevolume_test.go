package e2e

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// imageVolumeManifest mounts the testserver image (busybox's files plus
// /testserver) as an image volume, whole and by subPath, into a busybox
// container that checks what it sees: each check its own exit code.
const imageVolumeManifest = `
apiVersion: v1
kind: Pod
metadata:
  name: e2e-image-volume
spec:
  restartPolicy: Never
  terminationGracePeriodSeconds: 1
  volumes:
  - name: img
    image: {reference: REGISTRY/minikubelet/testserver:v1, pullPolicy: IfNotPresent}
  containers:
  - name: app
    image: REGISTRY/minikubelet/busybox:1.36
    command:
    - sh
    - -c
    - |
      grep -q '^root:x:0:0:' /img/etc/passwd || exit 10
      test -x /img/testserver || exit 11
      grep -q '^nobody:' /imgetc/group || exit 12
      test -e /imgetc/passwd || exit 13
      touch /img/written 2>/dev/null && exit 14
      exit 0
    volumeMounts:
    - {name: img, mountPath: /img, readOnly: false}
    - {name: img, mountPath: /imgetc, subPath: etc}
`

// runtimeMountsImageVolumes asks the suite's runtime for its version:
// containerd implements CRI Mount.image from 2.1 on. Unlike the other
// runtime differences (runtime_test.go), nothing in the CRI answers this
// but the version.
func runtimeMountsImageVolumes(t *testing.T) (bool, string) {
	t.Helper()
	resp, err := suite.rt.Version(ctx(t), "v1")
	require.NoError(t, err, "CRI Version")
	v := strings.TrimPrefix(resp.GetRuntimeVersion(), "v")
	parts := strings.SplitN(v, ".", 3)
	require.GreaterOrEqual(t, len(parts), 2, "runtime version %q", resp.GetRuntimeVersion())
	major, err := strconv.Atoi(parts[0])
	require.NoError(t, err)
	minor, err := strconv.Atoi(parts[1])
	require.NoError(t, err)
	return resp.GetRuntimeName() != "containerd" || major > 2 || (major == 2 && minor >= 1), resp.GetRuntimeVersion()
}

// An image volume: on containerd 2.1 and later the container reads the
// image's files through the volume, whole and by subPath, and cannot write
// them (readOnly: false notwithstanding); on containerd 1.6, which ignores
// CRI Mount.image, the pod is failed before anything of it is created,
// with a reason naming the field and what to do.
func TestImageVolume(t *testing.T) {
	t.Parallel()
	const pod = "e2e-image-volume"
	mounts, version := runtimeMountsImageVolumes(t)
	p := startRun(t, imageVolumeManifest)
	if mounts {
		p.waitFor(`default/`+pod+`\s+status\s+.*app:terminated\(Completed,exit=0\)`, 3*time.Minute)
		// The volume's image went through the image step, as a
		// container's does.
		assert.Regexp(t, `default/`+pod+`\s+image\s+.*/minikubelet/testserver:v1 (pulled|already present)`, p.output())
		p.interrupt()
		assert.Empty(t, podContainers(t, pod))
		return
	}
	lines := p.waitFor(`default/`+pod+`\s+warning\s+.*ImageVolumeNotSupported: (.*)`, 2*time.Minute)
	assert.Equal(t, "spec.volumes[0].image: this node's runtime, containerd "+version+", cannot mount image volumes (CRI Mount.image needs containerd 2.1 or later): upgrade the node's containerd to 2.1 or later, or run the pod on a node that has it", strings.TrimSpace(lines[1]))
	p.waitFor(`default/`+pod+`\s+status\s+Failed`, time.Minute)
	assert.Empty(t, podSandboxes(t, pod), "nothing created")
	assert.Empty(t, podContainers(t, pod), "nothing created")
	assert.NotContains(t, p.output(), "testserver:v1 pulled", "the volume's image is not pulled")
	p.interrupt()
}
