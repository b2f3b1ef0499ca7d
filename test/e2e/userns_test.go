package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// usernsManifest runs a busybox as root in a user namespace of the pod's
// own, with an emptyDir to write into.
const usernsManifest = `
apiVersion: v1
kind: Pod
metadata:
  name: e2e-userns
spec:
  hostUsers: false
  terminationGracePeriodSeconds: 1
  volumes:
  - {name: scratch, emptyDir: {}}
  containers:
  - name: app
    image: REGISTRY/minikubelet/busybox:1.36
    command: [sleep, "3600"]
    volumeMounts:
    - {name: scratch, mountPath: /scratch}
`

// runtimeSupportsUserns asks the suite's runtime what the agent asks it:
// whether its default runtime handler reports user namespace support (CRI
// Status runtime_handlers), and its version.
func runtimeSupportsUserns(t *testing.T) (bool, string) {
	t.Helper()
	st, err := suite.rt.Status(ctx(t), false)
	require.NoError(t, err, "CRI Status")
	v, err := suite.rt.Version(ctx(t), "v1")
	require.NoError(t, err, "CRI Version")
	for _, h := range st.GetRuntimeHandlers() {
		if h.GetName() == "" {
			t.Logf("runtime %s %s: default handler features %v", v.GetRuntimeName(), v.GetRuntimeVersion(), h.GetFeatures())
			return h.GetFeatures().GetUserNamespaces(), v.GetRuntimeVersion()
		}
	}
	t.Logf("runtime %s %s reports no runtime handlers", v.GetRuntimeName(), v.GetRuntimeVersion())
	return false, v.GetRuntimeVersion()
}

// uidMapRE is one line of /proc/<pid>/uid_map: inside, host, length.
var uidMapRE = regexp.MustCompile(`^\s*(\d+)\s+(\d+)\s+(\d+)\s*$`)

// A pod with hostUsers: false. Where the runtime supports user namespaces
// (containerd 2.x with runc 1.2 or later): its container's root is not
// the host's (/proc/self/uid_map is not the identity map "0 0 4294967295"
// but 0 → a 65536-ID range of the host from 65536 up, and the container's
// process runs as that host ID), the mapping is kept in the pod's
// directory, and a file it creates as root in an emptyDir belongs to root
// on the host too: the runtime mounts the volume idmapped (containerd
// adds idmap to every bind mount of such a pod), so IDs are stored as the
// pod sees them and no chown is needed. Elsewhere (containerd 1.6; 2.x on
// runc 1.1, which cannot make idmapped mounts) the pod is failed before
// anything of it is created, with a reason naming the field and what to do.
func TestUserNamespace(t *testing.T) {
	t.Parallel()
	const pod = "e2e-userns"
	supported, version := runtimeSupportsUserns(t)
	// The suite's containerd 2.x runs the runc hack/install-runc2.sh built
	// (1.2 or later); 1.6 cannot. Anything else is a broken setup, not a
	// reason to test less.
	if strings.HasPrefix(strings.TrimPrefix(version, "v"), "1.") {
		require.False(t, supported, "containerd %s reports user namespace support", version)
	} else {
		require.True(t, supported, "containerd %s reports no user namespace support: does it run the runc of hack/install-runc2.sh (1.2 or later)? See its containerd.log and config.toml", version)
	}
	p := startRun(t, usernsManifest)
	if !supported {
		lines := p.waitFor(`default/`+pod+`\s+warning\s+.*UserNamespacesNotSupported: (.*)`, 2*time.Minute)
		assert.Equal(t, "spec.hostUsers: false needs user namespaces, and this node's runtime, containerd "+version+", does not support them (its CRI Status reports no user_namespaces feature for its default handler): leave spec.hostUsers out or set it to true, or run the pod on a node with containerd 2.0 or later, runc 1.2 or later and Linux 6.3 or later", strings.TrimSpace(lines[1]))
		p.waitFor(`default/`+pod+`\s+status\s+Failed`, time.Minute)
		assert.Empty(t, podSandboxes(t, pod), "nothing created")
		assert.Empty(t, podContainers(t, pod), "nothing created")
		p.interrupt()
		return
	}

	p.waitRunning(pod)
	ctrs := podContainers(t, pod)
	require.Len(t, ctrs, 1)
	id := ctrs[0].GetId()
	uid := ctrs[0].GetLabels()["io.kubernetes.pod.uid"]
	require.NotEmpty(t, uid)

	// Inside: root, mapped to a range of host IDs of the pod's own.
	out, stderr, err := suite.rt.ExecSync(ctx(t), id, []string{"cat", "/proc/self/uid_map", "/proc/self/gid_map"}, 30*time.Second)
	require.NoError(t, err, "%s", stderr)
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	require.Len(t, lines, 2, "one uid and one gid mapping: %q", out)
	assert.NotRegexp(t, `^\s*0\s+0\s+4294967295\s*$`, lines[0], "not the host's identity map")
	m := uidMapRE.FindStringSubmatch(lines[0])
	require.NotNil(t, m, "uid_map %q", lines[0])
	host, _ := strconv.ParseUint(m[2], 10, 32)
	assert.Equal(t, "0", m[1], "root in the pod is mapped")
	assert.Equal(t, "65536", m[3], "65536 IDs, the kubelet's idsPerPod")
	assert.GreaterOrEqual(t, host, uint64(65536), "never the host's IDs 0-65535")
	assert.Zero(t, host%65536, "ranges are aligned to 65536")
	assert.Equal(t, strings.Fields(lines[0]), strings.Fields(lines[1]), "groups are mapped as users")
	t.Logf("uid_map in the pod: %s", lines[0])

	// The mapping the agent recorded in the pod's directory.
	root := filepath.Join(suite.dir, "root")
	b, err := os.ReadFile(filepath.Join(root, "pods", uid, "userns"))
	require.NoError(t, err)
	var rec struct {
		UIDMappings []struct{ HostID, ContainerID, Length uint32 } `json:"uidMappings"`
	}
	require.NoError(t, json.Unmarshal(b, &rec), "%s", b)
	require.Len(t, rec.UIDMappings, 1)
	assert.Equal(t, uint32(host), rec.UIDMappings[0].HostID, "the pod runs with the recorded mapping: %s", b)

	// Outside: the container's process runs as that host ID.
	st, err := suite.rt.ContainerStatus(ctx(t), id, true)
	require.NoError(t, err)
	var info struct {
		Pid int `json:"pid"`
	}
	require.NoError(t, json.Unmarshal([]byte(st.GetInfo()["info"]), &info))
	require.NotZero(t, info.Pid)
	status, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(info.Pid), "status"))
	require.NoError(t, err)
	um := regexp.MustCompile(`(?m)^Uid:\s+(\d+)`).FindSubmatch(status)
	require.NotNil(t, um)
	assert.Equal(t, strconv.FormatUint(host, 10), string(um[1]), "the container's root is host ID %d", host)

	// A file root creates in the emptyDir: root's in the pod, and on the
	// host, through the idmapped mount, root's too (uid 0, not %d).
	out, stderr, err = suite.rt.ExecSync(ctx(t), id, []string{"sh", "-c", "touch /scratch/by-root && stat -c %u:%g /scratch/by-root"}, 30*time.Second)
	require.NoError(t, err, "%s", stderr)
	assert.Equal(t, "0:0", strings.TrimSpace(string(out)), "owner seen in the pod")
	var fi syscall.Stat_t
	file := filepath.Join(root, "pods", uid, "volumes", "kubernetes.io~empty-dir", "scratch", "by-root")
	require.NoError(t, syscall.Stat(file, &fi))
	t.Logf("owner on the host of %s: %d:%d", file, fi.Uid, fi.Gid)
	assert.Equal(t, uint32(0), fi.Uid, "idmapped volume: stored as the pod's root")
	assert.Equal(t, uint32(0), fi.Gid)
	p.interrupt()
	assert.Empty(t, podContainers(t, pod))
}
