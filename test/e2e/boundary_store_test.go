package e2e

// The node boundary of the agent's own state (issue #16, findings 6, 7, 8
// and 11), each test performing the attack against a real daemon on a
// real containerd:
//   - a hostPath that names the root dir through /proc/self/root, or the
//     socket dir through a symlink, is refused;
//   - a cluster pod cannot read a node-local Secret of the same
//     namespace/name and sees the API server's;
//   - a Secret created through the local API leaves nothing under the
//     root dir, and survives a kill -9 of the daemon (its tmpfs);
//   - a foreground `minikubelet run` keeps its pod while a `serve` starts
//     on the same runtime, and each names what the other owns.

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/minikubelet/minikubelet/test/controlplane"
)

// boundaryPod is a busybox pod for these tests.
func boundaryPod(name string) *v1.Pod {
	zero := int64(0)
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
		Spec: v1.PodSpec{
			TerminationGracePeriodSeconds: &zero,
			Containers: []v1.Container{{
				Name: "c", Image: suite.registry + "/minikubelet/busybox:1.36",
				Command: []string{"sh", "-c", "trap 'exit 0' TERM; sleep 3600 & wait"},
			}},
		},
	}
}

// randomValue is a secret value no file holds by chance.
func randomValue(t *testing.T) string {
	b := make([]byte, 16)
	_, err := rand.Read(b)
	require.NoError(t, err)
	return "bs-" + hex.EncodeToString(b)
}

// filesHolding walks dir on its own file system (mounts below it, such as
// the tmpfs of a pod's secret volume, are skipped: they are memory) and
// returns the files that contain value, as it is or base64-encoded (as
// the data of a Secret is in JSON and YAML).
func filesHolding(t *testing.T, dir string, value string) []string {
	t.Helper()
	var rootDev uint64
	var st syscall.Stat_t
	require.NoError(t, syscall.Stat(dir, &st))
	rootDev = uint64(st.Dev)
	var found []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil // gone meanwhile
		}
		var s syscall.Stat_t
		if syscall.Lstat(p, &s) != nil {
			return nil
		}
		if uint64(s.Dev) != rootDev {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		if !d.Type().IsRegular() {
			return nil
		}
		data, err := os.ReadFile(p)
		if err == nil && (bytes.Contains(data, []byte(value)) || bytes.Contains(data, []byte(base64.StdEncoding.EncodeToString([]byte(value))))) {
			found = append(found, p)
		}
		return nil
	})
	require.NoError(t, err)
	return found
}

// TestBoundaryStore_HostPathAliasesOfOwnStateRefused: hostPath volumes
// that reach the root dir through /proc/self/root, or the socket dir
// through a symlink (as /var/run → /run does), are refused with
// HostPathForbidden and never reach the runtime.
func TestBoundaryStore_HostPathAliasesOfOwnStateRefused(t *testing.T) {
	pods := []string{"e2e-bs-procroot", "e2e-bs-symlink", "e2e-bs-parent"}
	d := newDaemon(t, pods)
	d.start(t)
	links := t.TempDir()
	sockLink := filepath.Join(links, "run-alias")
	require.NoError(t, os.Symlink(filepath.Dir(d.sock), sockLink))

	for _, tc := range []struct{ pod, path string }{
		{"e2e-bs-procroot", "/proc/self/root" + d.root},
		{"e2e-bs-symlink", sockLink},
		{"e2e-bs-parent", filepath.Dir(d.root)}, // contains the root dir
	} {
		p := boundaryPod(tc.pod)
		p.Spec.Volumes = []v1.Volume{{Name: "state", VolumeSource: v1.VolumeSource{HostPath: &v1.HostPathVolumeSource{Path: tc.path}}}}
		p.Spec.Containers[0].VolumeMounts = []v1.VolumeMount{{Name: "state", MountPath: "/state"}}
		c, cancel := shortCtx()
		_, err := d.api().CreatePod(c, p)
		cancel()
		require.NoError(t, err, tc.pod)
		got := d.waitPod(t, tc.pod, "rejected", scaled(30*time.Second), func(p *v1.Pod) bool {
			return p != nil && p.Status.Phase == v1.PodFailed
		})
		assert.Equal(t, "HostPathForbidden", got.Status.Reason, "%s (%s): %s", tc.pod, tc.path, got.Status.Message)
		assert.Contains(t, got.Status.Message, "--pod-security=privileged")
		assert.Empty(t, podSandboxes(t, tc.pod), "%s: nothing reached the runtime", tc.pod)
	}
}

// TestBoundaryStore_ClusterPodCannotReadNodeSecret: a cluster-mode daemon
// holds node-local Secrets "shared" and "local-only" (local API); the API
// server holds its own "shared". A cluster pod sees the API server's
// "shared" and nothing of "local-only" (an optional reference stays
// unset); a local pod sees the node's.
func TestBoundaryStore_ClusterPodCannotReadNodeSecret(t *testing.T) {
	const node = "mkl-boundary-store"
	cp := controlplane.Start(t, node)
	r := newPrivateRuntime(t)
	d := r.newDaemon(t, []string{"e2e-bs-cluster", "e2e-bs-local"}, "--node-name", node, "--kubeconfig", cp.NodeKubeconfig(t, node))
	d.deleteClusterPod = func(ctx context.Context, namespace, name string) error {
		zero := int64(0)
		return cp.Admin.CoreV1().Pods(namespace).Delete(ctx, name, metav1.DeleteOptions{GracePeriodSeconds: &zero})
	}
	d.start(t)
	ctx, cancel := context.WithTimeout(context.Background(), scaled(4*time.Minute))
	defer cancel()

	nodeShared, nodeOnly, clusterShared := randomValue(t), randomValue(t), randomValue(t)
	for name, v := range map[string]string{"shared": nodeShared, "local-only": nodeOnly} {
		_, err := d.api().CreateSecret(ctx, &v1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
			StringData: map[string]string{"password": v}})
		require.NoError(t, err)
	}
	_, err := cp.Admin.CoreV1().Secrets("default").Create(ctx, &v1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "shared"},
		StringData: map[string]string{"password": clusterShared}}, metav1.CreateOptions{})
	require.NoError(t, err)

	yes := true
	ref := func(env, name string) v1.EnvVar {
		return v1.EnvVar{Name: env, ValueFrom: &v1.EnvVarSource{SecretKeyRef: &v1.SecretKeySelector{
			LocalObjectReference: v1.LocalObjectReference{Name: name}, Key: "password", Optional: &yes}}}
	}
	withSecrets := func(p *v1.Pod) *v1.Pod {
		p.Spec.Containers[0].Env = []v1.EnvVar{ref("SHARED", "shared"), ref("LOCAL_ONLY", "local-only")}
		p.Spec.Volumes = []v1.Volume{{Name: "s", VolumeSource: v1.VolumeSource{Secret: &v1.SecretVolumeSource{SecretName: "shared"}}}}
		p.Spec.Containers[0].VolumeMounts = []v1.VolumeMount{{Name: "s", MountPath: "/etc/s"}}
		return p
	}
	pod := withSecrets(clusterPod("e2e-bs-cluster", node, false))
	_, err = cp.Admin.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = d.api().CreatePod(ctx, withSecrets(boundaryPod("e2e-bs-local")))
	require.NoError(t, err)

	read := func(pod string) string {
		d.waitPod(t, pod, "Running", scaled(90*time.Second), isRunning)
		ectx, ecancel := shortCtx()
		defer ecancel()
		res, err := d.api().Exec(ectx, "default", pod, "c", []string{"sh", "-c", `echo "$SHARED|$LOCAL_ONLY|$(cat /etc/s/password)"`}, scaled(10*time.Second))
		require.NoError(t, err)
		require.Equal(t, 0, res.ExitCode, "%s", res.Stderr)
		return strings.TrimSpace(string(res.Stdout))
	}
	assert.Equal(t, clusterShared+"||"+clusterShared, read("e2e-bs-cluster"), "the cluster pod sees the API server's Secret only")
	assert.Equal(t, nodeShared+"|"+nodeOnly+"|"+nodeShared, read("e2e-bs-local"), "a local pod sees the node's")

	// The cluster's Secret is in memory only: nothing under the root dir.
	assert.Empty(t, filesHolding(t, d.root, clusterShared))
}

// TestBoundaryStore_LocalAPISecretNeverUnderRootDir: a Secret created
// through the local API, used by a pod as env and volume, is in no file
// on the root dir's disk (only in the pod's tmpfs volume and the secret
// dir's tmpfs in the run dir); after kill -9 and a restart the daemon
// serves it again and the pod still reads it.
func TestBoundaryStore_LocalAPISecretNeverUnderRootDir(t *testing.T) {
	const pod = "e2e-bs-secret"
	d := newDaemon(t, []string{pod})
	d.start(t)
	value := randomValue(t)
	c, cancel := context.WithTimeout(context.Background(), scaled(2*time.Minute))
	defer cancel()
	_, err := d.api().CreateSecret(c, &v1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "creds", Namespace: "default"},
		StringData: map[string]string{"password": value}})
	require.NoError(t, err)
	p := boundaryPod(pod)
	p.Spec.Containers[0].Env = []v1.EnvVar{{Name: "PASSWORD", ValueFrom: &v1.EnvVarSource{SecretKeyRef: &v1.SecretKeySelector{
		LocalObjectReference: v1.LocalObjectReference{Name: "creds"}, Key: "password"}}}}
	p.Spec.Volumes = []v1.Volume{{Name: "s", VolumeSource: v1.VolumeSource{Secret: &v1.SecretVolumeSource{SecretName: "creds"}}}}
	p.Spec.Containers[0].VolumeMounts = []v1.VolumeMount{{Name: "s", MountPath: "/etc/s"}}
	_, err = d.api().CreatePod(c, p)
	require.NoError(t, err)
	check := func(when string) {
		d.waitPod(t, pod, "Running", scaled(90*time.Second), isRunning)
		r := d.cli(t, "exec", pod, "--", "sh", "-c", `echo "$PASSWORD $(cat /etc/s/password)"`)
		require.Equal(t, 0, r.code, "%s", r)
		assert.Equal(t, value+" "+value, strings.TrimSpace(r.stdout), when)
		assert.Empty(t, filesHolding(t, d.root, value), "%s: files under the root dir hold the secret", when)
	}
	check("created")
	secretDir := filepath.Join(d.runDir, "secrets")
	var st syscall.Statfs_t
	require.NoError(t, syscall.Statfs(secretDir, &st))
	assert.Equal(t, int64(0x01021994), int64(st.Type), "the secret dir %s is a tmpfs", secretDir) // TMPFS_MAGIC

	d.kill9(t)
	d.start(t)
	sec, err := d.api().GetSecret(c, "default", "creds")
	require.NoError(t, err, "the Secret survives a restart of the daemon")
	assert.Equal(t, value, string(sec.Data["password"]))
	check("after kill -9 and restart")
}

// TestBoundaryStore_ForegroundRunSurvivesServe: a foreground `run` and a
// daemon share the runtime. The run names the daemon's pod it leaves
// alone; the daemon, restarted (orphan collection runs), leaves the run's
// pod running, same container, and names it; the run then tears its own
// pod down.
func TestBoundaryStore_ForegroundRunSurvivesServe(t *testing.T) {
	const svc, fg = "e2e-bs-svc", "e2e-bs-fg"
	d := newDaemon(t, []string{svc})
	d.start(t)
	c, cancel := context.WithTimeout(context.Background(), scaled(3*time.Minute))
	defer cancel()
	_, err := d.api().CreatePod(c, boundaryPod(svc))
	require.NoError(t, err)
	d.waitPod(t, svc, "Running", scaled(90*time.Second), isRunning)

	run := startRun(t, fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata: {name: %s}
spec:
  terminationGracePeriodSeconds: 0
  containers:
  - name: c
    image: REGISTRY/minikubelet/busybox:1.36
    command: ["sh", "-c", "trap 'exit 0' TERM; sleep 3600 & wait"]
`, fg))
	run.waitRunning(fg)
	before := containerID(t, fg, "c")
	pid := run.cmd.Process.Pid

	// A new daemon generation collects orphans with the run's pod present.
	d.stop(t)
	d.start(t)
	d.waitPod(t, svc, "adopted, Running", scaled(60*time.Second), isRunning)
	want := regexp.MustCompile(fmt.Sprintf(`1 pod on this runtime belongs to another minikubelet \(foreground run, pid %d\): left alone`, pid))
	// Orphan collection has run once the daemon says what it left (or,
	// when it took the run's pod, once that is going).
	waitFor(t, "the daemon's orphan collection", scaled(60*time.Second), func() string {
		out, _ := d.out.snapshot()
		sbs := podSandboxes(t, fg)
		if want.MatchString(out) || len(sbs) != 1 || sbs[0].State != runtimeapi.PodSandboxState_SANDBOX_READY {
			return ""
		}
		return tail(out, 3000)
	})
	consistently(t, scaled(5*time.Second), func() error {
		sbs := podSandboxes(t, fg)
		if len(sbs) != 1 || sbs[0].State != runtimeapi.PodSandboxState_SANDBOX_READY {
			return fmt.Errorf("the run's sandbox: %v", sbs)
		}
		if id := containerID(t, fg, "c"); id != before {
			return fmt.Errorf("the run's container changed: %s → %s", before, id)
		}
		return nil
	})
	out, _ := d.out.snapshot()
	assert.Regexp(t, want, out, "the daemon names the run's pod it leaves alone")
	assert.Regexp(t, `1 pod on this runtime belongs to another minikubelet \(minikubelet serve serve-[0-9a-f]+\): left alone`, run.output(),
		"the run names the daemon's pod it leaves alone")
	for _, sb := range podSandboxes(t, fg) {
		assert.Equal(t, fmt.Sprintf("run-%d", pid), sb.Labels["io.minikubelet.agent"])
	}
	for _, sb := range podSandboxes(t, svc) {
		assert.Regexp(t, `^serve-[0-9a-f]+$`, sb.Labels["io.minikubelet.agent"])
	}
	c2, cancel2 := shortCtx()
	l, err := d.api().ListPods(c2, "")
	cancel2()
	require.NoError(t, err)
	for _, p := range l.Items {
		assert.NotEqual(t, fg, p.Name, "the run's pod is not the daemon's")
	}

	run.interrupt()
	waitFor(t, "the run removed its own pod", scaled(60*time.Second), func() string {
		if sbs := podSandboxes(t, fg); len(sbs) > 0 {
			return fmt.Sprintf("%d sandboxes left", len(sbs))
		}
		return ""
	})
	d.waitPod(t, svc, "still Running", scaled(10*time.Second), isRunning)
}
