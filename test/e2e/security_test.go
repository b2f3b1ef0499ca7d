package e2e

import (
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// End-to-end tests of security contexts (issue #7): what the container's
// processes see in `id` and /proc/1/status under real containerd and runc.

// procStatus returns the fields of /proc/1/status in a container.
func procStatus(t *testing.T, id string) map[string]string {
	t.Helper()
	fields := map[string]string{}
	for _, line := range strings.Split(execIn(t, id, "cat", "/proc/1/status"), "\n") {
		if k, v, ok := strings.Cut(line, ":"); ok {
			fields[k] = strings.TrimSpace(v)
		}
	}
	return fields
}

// hasCap reports whether the hexadecimal capability mask has bit n.
func hasCap(t *testing.T, mask string, bit uint) bool {
	t.Helper()
	v, err := strconv.ParseUint(mask, 16, 64)
	require.NoError(t, err, mask)
	return v&(1<<bit) != 0
}

// Capability numbers (linux/capability.h).
const (
	capNetAdmin = 12
	capSysTime  = 25
)

// The docs' security-context.yaml shape: the user and groups `id` shows,
// the emptyDir given to the fsGroup with setgid, files created in it
// inheriting the group, and no_new_privs from allowPrivilegeEscalation false.
func TestSecurity_UserGroupsAndFSGroup(t *testing.T) {
	t.Parallel()
	p := startRun(t, `
apiVersion: v1
kind: Pod
metadata:
  name: e2e-sec-ids
spec:
  terminationGracePeriodSeconds: 2
  securityContext:
    runAsUser: 1000
    runAsGroup: 3000
    fsGroup: 2000
  volumes:
  - name: sec-ctx-vol
    emptyDir: {}
  containers:
  - name: sec-ctx-demo
    image: REGISTRY/minikubelet/busybox:1.36
    command: ["sh", "-c", "sleep 1h"]
    volumeMounts:
    - name: sec-ctx-vol
      mountPath: /data/demo
    securityContext:
      allowPrivilegeEscalation: false
`)
	p.waitRunning("e2e-sec-ids")
	id := containerID(t, "e2e-sec-ids", "sec-ctx-demo")

	out := strings.TrimSpace(execIn(t, id, "id"))
	m := regexp.MustCompile(`^uid=1000\S* gid=3000\S* groups=(\S+)$`).FindStringSubmatch(out)
	require.NotNil(t, m, "id: %q", out)
	var groups []string
	for _, g := range strings.Split(m[1], ",") {
		groups = append(groups, strings.SplitN(g, "(", 2)[0])
	}
	assert.Contains(t, groups, "2000", "fsGroup is a supplemental group: %q", out)

	assert.Equal(t, "2000 drwxrwsrwx", strings.TrimSpace(execIn(t, id, "stat", "-c", "%g %A", "/data/demo")))
	execIn(t, id, "sh", "-c", "echo hello > /data/demo/testfile")
	assert.Equal(t, "1000 2000", strings.TrimSpace(execIn(t, id, "stat", "-c", "%u %g", "/data/demo/testfile")))

	st := procStatus(t, id)
	assert.Equal(t, "1", st["NoNewPrivs"])
	assert.Equal(t, "0", st["Seccomp"], "no seccomp profile: Unconfined, as the kubelet without --seccomp-default")
	p.interrupt()
}

// Capabilities add and drop, seccomp RuntimeDefault from the pod with a
// container overriding it, a read-only root filesystem, a safe sysctl.
func TestSecurity_CapabilitiesSeccompReadOnlyRoot(t *testing.T) {
	t.Parallel()
	p := startRunWith(t, `
apiVersion: v1
kind: Pod
metadata:
  name: e2e-sec-caps
spec:
  terminationGracePeriodSeconds: 2
  securityContext:
    seccompProfile:
      type: RuntimeDefault
    sysctls:
    - name: net.ipv4.ip_unprivileged_port_start
      value: "80"
  containers:
  - name: caps
    image: REGISTRY/minikubelet/busybox:1.36
    command: ["sleep", "3600"]
    securityContext:
      capabilities:
        add: ["NET_ADMIN", "SYS_TIME"]
  - name: dropped
    image: REGISTRY/minikubelet/busybox:1.36
    command: ["sleep", "3600"]
    securityContext:
      capabilities:
        drop: ["ALL"]
      seccompProfile:
        type: Unconfined
  - name: readonly
    image: REGISTRY/minikubelet/busybox:1.36
    command: ["sleep", "3600"]
    securityContext:
      readOnlyRootFilesystem: true
`, privilegedLevel) // NET_ADMIN, SYS_TIME and Unconfined are beyond baseline
	p.waitRunning("e2e-sec-caps")

	caps := procStatus(t, containerID(t, "e2e-sec-caps", "caps"))
	assert.True(t, hasCap(t, caps["CapEff"], capNetAdmin), "NET_ADMIN in CapEff %s", caps["CapEff"])
	assert.True(t, hasCap(t, caps["CapEff"], capSysTime), "SYS_TIME in CapEff %s", caps["CapEff"])
	assert.Equal(t, "2", caps["Seccomp"], "RuntimeDefault is filter mode")
	assert.Equal(t, "0", caps["NoNewPrivs"], "allowPrivilegeEscalation unset leaves no_new_privs off")

	dropped := procStatus(t, containerID(t, "e2e-sec-caps", "dropped"))
	assert.Equal(t, "0000000000000000", dropped["CapEff"])
	assert.Equal(t, "0", dropped["Seccomp"], "the container's Unconfined overrides the pod's RuntimeDefault")

	ro := containerID(t, "e2e-sec-caps", "readonly")
	roSt := procStatus(t, ro)
	assert.False(t, hasCap(t, roSt["CapEff"], capNetAdmin), "the runtime's default set has no NET_ADMIN")
	_, stderr, err := suite.rt.ExecSync(ctx(t), ro, []string{"touch", "/written"}, 30*time.Second)
	require.Error(t, err, "writing / must fail")
	assert.Contains(t, string(stderr), "Read-only file system")
	assert.Equal(t, "80", strings.TrimSpace(execIn(t, ro, "cat", "/proc/sys/net/ipv4/ip_unprivileged_port_start")), "the pod's sysctl")
	// procMount Default: the kubelet's masked paths.
	assert.Empty(t, strings.TrimSpace(execIn(t, ro, "cat", "/proc/timer_list")))
	p.interrupt()
}

// runAsNonRoot with an image that runs as root never creates the container:
// CreateContainerConfigError with the kubelet's message.
func TestSecurity_RunAsNonRootWithRootImage(t *testing.T) {
	t.Parallel()
	p := startRun(t, `
apiVersion: v1
kind: Pod
metadata:
  name: e2e-sec-nonroot
spec:
  terminationGracePeriodSeconds: 2
  securityContext:
    runAsNonRoot: true
  containers:
  - name: app
    image: REGISTRY/minikubelet/busybox:1.36
    command: ["sleep", "3600"]
`)
	m := p.waitFor(`e2e-sec-nonroot\s+status\s+Pending .*app:waiting\(CreateContainerConfigError: ([^\n]*)\)`, 2*time.Minute)
	assert.Regexp(t, `^container has runAsNonRoot and image will run as root \(pod: "e2e-sec-nonroot_default\([0-9a-f-]+\)", container: app\)$`, m[1])
	assert.Empty(t, podContainers(t, "e2e-sec-nonroot"))
	p.interrupt()
}

// shareProcessNamespace: the containers see each other and the sandbox's
// pause process as PID 1.
func TestSecurity_ShareProcessNamespace(t *testing.T) {
	t.Parallel()
	p := startRun(t, `
apiVersion: v1
kind: Pod
metadata:
  name: e2e-sec-sharepid
spec:
  terminationGracePeriodSeconds: 2
  shareProcessNamespace: true
  containers:
  - name: one
    image: REGISTRY/minikubelet/busybox:1.36
    command: ["sleep", "3601"]
  - name: two
    image: REGISTRY/minikubelet/busybox:1.36
    command: ["sleep", "3602"]
`)
	p.waitRunning("e2e-sec-sharepid")
	id := containerID(t, "e2e-sec-sharepid", "two")
	cmdline := strings.ReplaceAll(execIn(t, id, "cat", "/proc/1/cmdline"), "\x00", " ")
	assert.Contains(t, cmdline, "/pause")
	ps := execIn(t, id, "ps", "-o", "args")
	assert.Contains(t, ps, "sleep 3601", "the other container's process is visible")
	p.interrupt()
}

// An unsafe sysctl is rejected at admission (SysctlForbidden) unless the
// agent allows it with --allowed-unsafe-sysctls. (At the default level,
// baseline, the node's Pod Security check refuses it first.)
func TestSecurity_UnsafeSysctlRejected(t *testing.T) {
	t.Parallel()
	p := startRunWith(t, `
apiVersion: v1
kind: Pod
metadata:
  name: e2e-sec-sysctl
spec:
  terminationGracePeriodSeconds: 2
  securityContext:
    sysctls:
    - name: net.core.somaxconn
      value: "1024"
  containers:
  - name: app
    image: REGISTRY/minikubelet/busybox:1.36
    command: ["sleep", "3600"]
`, privilegedLevel) // the kubelet's own check, behind the node's level
	m := p.waitFor(`e2e-sec-sysctl\s+status\s+Failed[^\n]*reason=(\S+) \(([^\n]*)\)`, time.Minute)
	assert.Equal(t, "SysctlForbidden", m[1])
	assert.Contains(t, m[2], `forbidden sysctl: "net.core.somaxconn" not allowlisted`)
	// run gives up on its own: nothing of the pod was created.
	select {
	case <-p.done:
	case <-time.After(time.Minute):
		t.Fatal("run did not exit after the rejection")
	}
	require.Error(t, p.err)
	errOut, _ := p.stderr.snapshot()
	assert.Contains(t, errOut, "rejected by node admission")
	assert.Empty(t, podSandboxes(t, "e2e-sec-sysctl"))
}
