package e2e

// One daemon per node, its state in its own places, its control files out
// of pods' reach (issue #29 findings 5 and 6), each test performing the
// attack against a real daemon on a real containerd:
//   - a second `serve` on the same root dir fails at once, naming the pid
//     that holds it, and the first daemon keeps its socket;
//   - no tmpfs is mounted beside a --socket the user names, across a
//     kill -9 and a stop; the one an earlier version left there is
//     adopted (its Secrets served again) and unmounted;
//   - a local pod with a hostPath of the daemon's manifest directory (by
//     name, through a bind mount, or through a parent such as /etc) is
//     refused, naming spec.volumes[i].hostPath.path, and plants nothing.

import (
	"bufio"
	"context"
	"encoding/base64"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
)

// TestBoundarySingle_SecondServeOnRootDirRefused: a second daemon on the
// first one's root dir, with its own socket and run dir (so that only the
// root dir is shared), exits non-zero within seconds with a message that
// names the first daemon's pid and what to do; the first daemon's socket
// still answers after it.
func TestBoundarySingle_SecondServeOnRootDirRefused(t *testing.T) {
	d := newDaemon(t, nil)
	d.start(t)

	other, err := os.MkdirTemp("/tmp", "mk2-")
	require.NoError(t, err)
	t.Cleanup(func() {
		_ = syscall.Unmount(filepath.Join(other, "run", "secrets"), syscall.MNT_DETACH)
		_ = syscall.Unmount(filepath.Join(other, "secrets"), syscall.MNT_DETACH)
		_ = os.RemoveAll(other)
	})
	args := append(d.args(), "--socket", filepath.Join(other, "api.sock"), "--run-dir", filepath.Join(other, "run"), "--manifest-dir", "")
	ctx, cancel := context.WithTimeout(context.Background(), scaled(30*time.Second))
	defer cancel()
	start := time.Now()
	out, err := exec.CommandContext(ctx, suite.bin, args...).CombinedOutput()
	took := time.Since(start)
	require.NoError(t, ctx.Err(), "the second serve on the root dir %s ran instead of refusing:\n%s", d.root, tail(string(out), 4000))
	var ee *exec.ExitError
	require.ErrorAs(t, err, &ee, "the second serve must exit non-zero:\n%s", out)
	assert.Less(t, took, scaled(10*time.Second), "it fails fast")
	pid := strconv.Itoa(d.cmd.Process.Pid)
	assert.Contains(t, string(out), "another minikubelet serve (pid "+pid+") holds the root dir "+d.root, "the message names the holder")
	assert.Contains(t, string(out), "--root-dir", "the message says what to do")
	b, err := os.ReadFile(filepath.Join(d.root, "minikubelet.lock"))
	require.NoError(t, err)
	assert.Equal(t, pid, strings.TrimSpace(string(b)), "the lock file holds the daemon's pid")
	_, err = os.Lstat(filepath.Join(other, "api.sock"))
	assert.ErrorIs(t, err, os.ErrNotExist, "the refused daemon never listened")

	code, _, err := d.get("/healthz")
	require.NoError(t, err, "the first daemon's socket after the second exited")
	assert.Equal(t, 200, code)
}

// mountsUnder returns the mount points of this process's mount namespace
// (the daemon's: it is a child of the test) at or under dir.
func mountsUnder(t *testing.T, dir string) []string {
	t.Helper()
	f, err := os.Open("/proc/self/mountinfo")
	require.NoError(t, err)
	defer f.Close()
	var found []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 5 {
			continue
		}
		// Field 5 is the mount point, with spaces and the like octal-escaped.
		mp, err := strconv.Unquote(`"` + strings.ReplaceAll(fields[4], `"`, `\"`) + `"`)
		if err != nil {
			mp = fields[4]
		}
		if mp == dir || strings.HasPrefix(mp, dir+"/") {
			found = append(found, sc.Text())
		}
	}
	require.NoError(t, sc.Err())
	return found
}

// isTmpfs reports whether dir is on a tmpfs.
func isTmpfs(t *testing.T, dir string) bool {
	t.Helper()
	var st syscall.Statfs_t
	require.NoError(t, syscall.Statfs(dir, &st))
	return int64(st.Type) == 0x01021994 // TMPFS_MAGIC
}

// TestBoundarySingle_NoTmpfsBesideSocket: with --socket in a directory of
// its own, the daemon mounts nothing in that directory, while it runs,
// after a kill -9 and after a stop; the Secrets' tmpfs is in the run dir.
func TestBoundarySingle_NoTmpfsBesideSocket(t *testing.T) {
	d := newDaemon(t, nil)
	sockDir := filepath.Dir(d.sock)
	check := func(when string) {
		assert.Empty(t, mountsUnder(t, sockDir), "%s: mounted beside the socket %s", when, d.sock)
	}
	d.start(t)
	check("running")
	assert.True(t, isTmpfs(t, filepath.Join(d.runDir, "secrets")), "the Secrets' tmpfs is in the run dir")
	d.kill9(t)
	check("after kill -9")
	d.start(t)
	check("restarted")
	d.stop(t)
	check("after a stop")
}

// TestBoundarySingle_OldSecretTmpfsBesideSocketAdopted: an earlier
// version left its Secrets' tmpfs beside the socket, with a Secret in it.
// The daemon serves that Secret again from its run dir, and the tmpfs
// beside the socket is unmounted and gone.
func TestBoundarySingle_OldSecretTmpfsBesideSocketAdopted(t *testing.T) {
	d := newDaemon(t, nil)
	old := filepath.Join(filepath.Dir(d.sock), "secrets")
	require.NoError(t, os.Mkdir(old, 0o700))
	require.NoError(t, syscall.Mount("tmpfs", old, "tmpfs", syscall.MS_NOSUID|syscall.MS_NODEV|syscall.MS_NOEXEC, "mode=0700,size=1m"))
	t.Cleanup(func() { _ = syscall.Unmount(old, syscall.MNT_DETACH) })
	value := randomValue(t)
	require.NoError(t, os.WriteFile(filepath.Join(old, "default_legacy.yaml"), fmt.Appendf(nil,
		"apiVersion: v1\nkind: Secret\nmetadata: {name: legacy, namespace: default}\ndata: {password: %s}\n",
		base64.StdEncoding.EncodeToString([]byte(value))), 0o600))

	d.start(t)
	c, cancel := shortCtx()
	defer cancel()
	sec, err := d.api().GetSecret(c, "default", "legacy")
	require.NoError(t, err, "the Secret of the old tmpfs is served")
	assert.Equal(t, value, string(sec.Data["password"]))
	assert.Empty(t, mountsUnder(t, filepath.Dir(d.sock)), "the old tmpfs beside the socket is unmounted")
	_, err = os.Lstat(old)
	assert.ErrorIs(t, err, os.ErrNotExist, "the old secret dir is removed")
	assert.FileExists(t, filepath.Join(d.runDir, "secrets", "default_legacy.yaml"))
}

// TestBoundarySingle_ManifestDirHostPathRefused: local pods that would
// write a static pod manifest into the daemon's manifest directory
// (which would run in the node's scope and read node-local Secrets) are
// refused at admission, naming spec.volumes[i].hostPath.path: the
// directory by its name, through a bind mount of it, and /etc, which
// holds the admin kubeconfig's directory (/etc/minikubelet). Nothing
// reaches the runtime and nothing is planted. The daemon runs with
// today's defaults, which admit hostPath volumes.
func TestBoundarySingle_ManifestDirHostPathRefused(t *testing.T) {
	pods := []string{"e2e-bsg-manifests", "e2e-bsg-bind", "e2e-bsg-etc", "e2e-bsg-planted-" + e2eNode}
	d := newDaemon(t, pods)
	bind := t.TempDir()
	require.NoError(t, syscall.Mount(d.manifests, bind, "", syscall.MS_BIND, ""))
	t.Cleanup(func() { _ = syscall.Unmount(bind, syscall.MNT_DETACH) })
	d.start(t)

	planted := `apiVersion: v1
kind: Pod
metadata: {name: e2e-bsg-planted}
spec:
  containers: [{name: c, image: ` + suite.registry + `/minikubelet/busybox:1.36, command: [sleep, "3600"]}]
`
	for _, tc := range []struct{ pod, path, what string }{
		{"e2e-bsg-manifests", d.manifests, d.manifests},
		{"e2e-bsg-bind", bind, d.manifests},
		{"e2e-bsg-etc", "/etc", "/etc/minikubelet"},
	} {
		p := boundaryPod(tc.pod)
		p.Spec.Volumes = []v1.Volume{
			{Name: "scratch", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}},
			{Name: "node", VolumeSource: v1.VolumeSource{HostPath: &v1.HostPathVolumeSource{Path: tc.path}}},
		}
		p.Spec.Containers[0].VolumeMounts = []v1.VolumeMount{{Name: "node", MountPath: "/node"}}
		p.Spec.Containers[0].Command = []string{"sh", "-c", "cat > /node/planted.yaml <<'EOF'\n" + planted + "EOF\nsleep 3600"}
		c, cancel := shortCtx()
		_, err := d.api().CreatePod(c, p)
		cancel()
		require.NoError(t, err, tc.pod)
		got := d.waitPod(t, tc.pod, "rejected", scaled(30*time.Second), func(p *v1.Pod) bool {
			return p != nil && p.Status.Phase == v1.PodFailed
		})
		assert.Equal(t, "HostPathForbidden", got.Status.Reason, "%s (%s): %s", tc.pod, tc.path, got.Status.Message)
		assert.Contains(t, got.Status.Message, "spec.volumes[1].hostPath.path: ", tc.pod)
		assert.Contains(t, got.Status.Message, tc.what, tc.pod)
		assert.Contains(t, got.Status.Message, "--pod-security=privileged", tc.pod)
		assert.Empty(t, podSandboxes(t, tc.pod), "%s: nothing reached the runtime", tc.pod)
	}
	consistently(t, scaled(3*time.Second), func() error {
		if _, err := os.Lstat(filepath.Join(d.manifests, "planted.yaml")); err == nil {
			return fmt.Errorf("a pod planted a static pod manifest in %s", d.manifests)
		}
		if sbs := podSandboxes(t, "e2e-bsg-planted-"+e2eNode); len(sbs) > 0 {
			return fmt.Errorf("the planted static pod runs: %v", sbs)
		}
		return nil
	})
}
