package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
)

// TestKubectl_PodUpdate drives the API server's pod update rule (issue
// #28 item 6) with the real kubectl against the daemon's TCP API, on a pod
// created by `minikubelet run`: kubectl label and annotate, a first
// kubectl apply, a merge patch and activeDeadlineSeconds change the pod in
// place (same UID, IP and container instances, no restart); kubectl
// replace (PUT) of a changed command is refused naming the field, and a
// stale resourceVersion is a 409; kubectl set image and a JSON patch
// restart only the container whose image changed, in the same sandbox;
// kubectl replace --force deletes and creates the pod (a new UID).
func TestKubectl_PodUpdate(t *testing.T) {
	const pod = "e2e-kubectl-update"
	kubectl := kubectlBin(t)
	addr := "127.0.0.1:" + freeTCPPort(t)
	dir := t.TempDir()
	kubeconfig := filepath.Join(dir, "admin.kubeconfig")
	d := newDaemon(t, []string{pod}, "--api-address", addr, "--admin-kubeconfig", kubeconfig)
	d.start(t)
	waitTLS(t, addr)
	k := func(t *testing.T, stdin string, args ...string) (string, error) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, kubectl, append([]string{"--kubeconfig", kubeconfig}, args...)...)
		cmd.Stdin = strings.NewReader(stdin)
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		err := cmd.Run()
		t.Logf("kubectl %s:\n%s", strings.Join(args, " "), out.String())
		return out.String(), err
	}

	image := suite.registry + "/minikubelet/busybox:1.36"
	pinned := image + "@" + imageDigest(t, "minikubelet/busybox", "1.36")
	podYAML := func(command string) string {
		return `apiVersion: v1
kind: Pod
metadata:
  name: ` + pod + `
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: a
    image: ` + image + `
    command: ["sh", "-c", "` + command + `"]
  - name: b
    image: ` + image + `
    command: ["sh", "-c", "trap 'exit 0' TERM; while true; do sleep 1; done"]
`
	}
	const loop = "trap 'exit 0' TERM; while true; do sleep 1; done"
	manifest := filepath.Join(dir, "pod.yaml")
	require.NoError(t, os.WriteFile(manifest, []byte(podYAML(loop)), 0o644))
	res := d.cli(t, "run", manifest)
	require.Equal(t, 0, res.code, "%s", res)
	first := d.waitPod(t, pod, "Running", 2*time.Minute, isRunning)
	require.NotEmpty(t, first.Status.PodIP)

	ids := func(p *v1.Pod) map[string]string {
		out := map[string]string{}
		for _, cs := range p.Status.ContainerStatuses {
			out[cs.Name] = cs.ContainerID
		}
		return out
	}
	restarts := func(p *v1.Pod) map[string]int32 {
		out := map[string]int32{}
		for _, cs := range p.Status.ContainerStatuses {
			out[cs.Name] = cs.RestartCount
		}
		return out
	}
	// untouched checks that the pod is the same pod, its containers the
	// same instances, a while after an in-place change.
	untouched := func(t *testing.T) *v1.Pod {
		t.Helper()
		time.Sleep(3 * time.Second) // a restart, had there been one, shows by now
		p := d.waitPod(t, pod, "Running", time.Minute, isRunning)
		assert.Equal(t, first.UID, p.UID, "the same pod")
		assert.Equal(t, first.Status.PodIP, p.Status.PodIP, "the same sandbox (its IP)")
		assert.Equal(t, ids(first), ids(p), "the same container instances")
		assert.Equal(t, map[string]int32{"a": 0, "b": 0}, restarts(p))
		return p
	}

	t.Run("LabelAnnotateApplyInPlace", func(t *testing.T) {
		out, err := k(t, "", "label", "pod", pod, "x=y")
		require.NoError(t, err)
		assert.Contains(t, out, "pod/"+pod+" labeled")
		assert.NotContains(t, out, "replaced")
		p := untouched(t)
		assert.Equal(t, "y", p.Labels["x"])

		out, err = k(t, "", "annotate", "pod", pod, "note=hello")
		require.NoError(t, err)
		assert.Contains(t, out, "pod/"+pod+" annotated")
		p = untouched(t)
		assert.Equal(t, "hello", p.Annotations["note"])

		// The first apply of a pod created by run: kubectl adds its
		// last-applied annotation (and warns that it was missing).
		out, err = k(t, "", "apply", "-f", manifest)
		require.NoError(t, err)
		assert.Contains(t, out, "pod/"+pod+" configured")
		assert.NotContains(t, out, "replaced")
		p = untouched(t)
		assert.Contains(t, p.Annotations, "kubectl.kubernetes.io/last-applied-configuration")
		assert.Equal(t, "y", p.Labels["x"], "apply leaves the label it never set")
		out, err = k(t, "", "apply", "-f", manifest)
		require.NoError(t, err)
		assert.Contains(t, out, "pod/"+pod+" unchanged")

		out, err = k(t, "", "patch", "pod", pod, "--type=merge", "-p", `{"metadata":{"labels":{"m":"1"}},"spec":{"activeDeadlineSeconds":3600}}`)
		require.NoError(t, err)
		assert.Contains(t, out, "pod/"+pod+" patched")
		p = untouched(t)
		assert.Equal(t, "1", p.Labels["m"])
		require.NotNil(t, p.Spec.ActiveDeadlineSeconds)
		assert.EqualValues(t, 3600, *p.Spec.ActiveDeadlineSeconds)
		out, err = k(t, "", "patch", "pod", pod, "--type=merge", "-p", `{"spec":{"activeDeadlineSeconds":7200}}`)
		require.Error(t, err)
		assert.Contains(t, out, `The Pod "`+pod+`" is invalid: spec.activeDeadlineSeconds: Invalid value: 7200: must be less than or equal to previous value`)
	})

	t.Run("ReplaceChangingTheCommandIsRefused", func(t *testing.T) {
		changed := filepath.Join(dir, "pod-command.yaml")
		require.NoError(t, os.WriteFile(changed, []byte(podYAML("trap 'exit 0' TERM; echo other; while true; do sleep 1; done")), 0o644))
		out, err := k(t, "", "replace", "-f", changed)
		require.Error(t, err)
		// The file lacks the activeDeadlineSeconds an earlier subtest set:
		// the API server lists that error too (the message then has one
		// line per error).
		assert.Contains(t, out, `The Pod "`+pod+`" is invalid: `)
		assert.Contains(t, out, "spec: Forbidden: pod updates may not change fields other than "+
			"`spec.containers[*].image`,`spec.initContainers[*].image`,`spec.activeDeadlineSeconds`,`spec.tolerations` (only additions to existing tolerations)")
		assert.Contains(t, out, "spec.containers[0].command", "names the field")
		untouched(t)

		// kubectl edit's way: the object read back with its
		// resourceVersion, changed, put back; then the same stale object
		// again (409, as from the API server).
		cur, err := k(t, "", "get", "pod", pod, "-o", "json")
		require.NoError(t, err)
		var obj map[string]any
		require.NoError(t, json.Unmarshal([]byte(cur), &obj))
		require.NotEmpty(t, obj["metadata"].(map[string]any)["resourceVersion"], "GET carries a resourceVersion")
		obj["metadata"].(map[string]any)["labels"].(map[string]any)["edited"] = "yes"
		edited, err := json.Marshal(obj)
		require.NoError(t, err)
		out, err = k(t, string(edited), "replace", "-f", "-")
		require.NoError(t, err)
		assert.Contains(t, out, "pod/"+pod+" replaced")
		p := untouched(t)
		assert.Equal(t, "yes", p.Labels["edited"])
		out, err = k(t, string(edited), "replace", "-f", "-")
		require.Error(t, err)
		assert.Contains(t, out, "the object has been modified; please apply your changes to the latest version and try again")
	})

	t.Run("SetImageRestartsOnlyThatContainer", func(t *testing.T) {
		before := d.waitPod(t, pod, "Running", time.Minute, isRunning)
		out, err := k(t, "", "set", "image", "pod/"+pod, "b="+pinned)
		require.NoError(t, err)
		assert.Contains(t, out, "pod/"+pod+" image updated")
		p := d.waitPod(t, pod, "b restarted with the new image", 2*time.Minute, func(p *v1.Pod) bool {
			return isRunning(p) && restarts(p)["b"] == 1 && ids(p)["b"] != ids(before)["b"]
		})
		assert.Equal(t, first.UID, p.UID, "the same pod")
		assert.Equal(t, first.Status.PodIP, p.Status.PodIP, "the same sandbox (its IP)")
		assert.Equal(t, ids(before)["a"], ids(p)["a"], "a is the same instance")
		assert.EqualValues(t, 0, restarts(p)["a"])
		assert.Equal(t, pinned, p.Spec.Containers[1].Image)
		out, err = k(t, "", "describe", "pod", pod)
		require.NoError(t, err)
		assert.Regexp(t, `(?m)Killing\s+.*Container b definition changed`, out)

		// A JSON patch (RFC 6902) on a's image: only a restarts.
		out, err = k(t, "", "patch", "pod", pod, "--type=json", "-p",
			`[{"op":"test","path":"/spec/containers/0/name","value":"a"},{"op":"replace","path":"/spec/containers/0/image","value":"`+pinned+`"}]`)
		require.NoError(t, err)
		assert.Contains(t, out, "pod/"+pod+" patched")
		p2 := d.waitPod(t, pod, "a restarted with the new image", 2*time.Minute, func(q *v1.Pod) bool {
			return isRunning(q) && restarts(q)["a"] == 1 && ids(q)["a"] != ids(p)["a"]
		})
		assert.Equal(t, first.UID, p2.UID)
		assert.Equal(t, first.Status.PodIP, p2.Status.PodIP)
		assert.Equal(t, ids(p)["b"], ids(p2)["b"], "b is the same instance")
		assert.EqualValues(t, 1, restarts(p2)["b"])
		out, err = k(t, "", "patch", "pod", pod, "--type=json", "-p", `[{"op":"test","path":"/spec/containers/0/name","value":"nope"}]`)
		require.Error(t, err)
		assert.Contains(t, out, "test failed")
	})

	t.Run("ReplaceForceMakesANewPod", func(t *testing.T) {
		changed := filepath.Join(dir, "pod-command.yaml")
		out, err := k(t, "", "replace", "--force", "--timeout", "90s", "-f", changed)
		require.NoError(t, err)
		assert.Contains(t, out, "pod/"+pod+" replaced")
		p := d.waitPod(t, pod, "a new pod running", 2*time.Minute, func(p *v1.Pod) bool { return isRunning(p) && p.UID != first.UID })
		assert.Contains(t, p.Spec.Containers[0].Command[2], "echo other")
	})
}
