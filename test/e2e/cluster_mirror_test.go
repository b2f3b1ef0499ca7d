package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/minikubelet/minikubelet/test/controlplane"
)

// TestCluster_MirrorPodsAndConfigMapsFromTheAPIServer: a cluster-mode
// daemon with a static pod in its manifest directory and a cluster pod
// that mounts a ConfigMap:
//   - the static pod shows on the API server as the mirror pod
//     <name>-<node> (annotation kubernetes.io/config.mirror, owned by the
//     Node), with its status; deleted by an admin, it comes back; the
//     static pod's file removed, the mirror goes;
//   - the ConfigMap, read from the API server with the node's credentials,
//     is mounted into the cluster pod.
func TestCluster_MirrorPodsAndConfigMapsFromTheAPIServer(t *testing.T) {
	t.Parallel()
	const node = "mkl-cluster-mirror"
	cp := controlplane.Start(t, node)
	r := newPrivateRuntime(t)
	d := r.newDaemon(t, nil, "--node-name", node, "--kubeconfig", cp.NodeKubeconfig(t, node))
	d.deleteClusterPod = func(ctx context.Context, namespace, name string) error {
		zero := int64(0)
		return cp.Admin.CoreV1().Pods(namespace).Delete(ctx, name, metav1.DeleteOptions{GracePeriodSeconds: &zero})
	}
	static := filepath.Join(d.manifests, "static.yaml")
	require.NoError(t, os.WriteFile(static, []byte(fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata:
  name: static
spec:
  terminationGracePeriodSeconds: 0
  containers:
  - name: c
    image: %s/minikubelet/busybox:1.36
    command: ["sh", "-c", "trap 'exit 0' TERM; sleep 3600 & wait"]
`, suite.registry)), 0o644))
	d.start(t)
	cs := cp.Admin
	ctx, cancel := context.WithTimeout(context.Background(), scaled(4*time.Minute))
	defer cancel()
	mirrorName := "static-" + node

	var mirror *v1.Pod
	waitFor(t, "the static pod's mirror Running on the API server", scaled(90*time.Second), func() string {
		var err error
		if mirror, err = serverPod(t, cs, mirrorName); err != nil || mirror == nil {
			return fmt.Sprintf("get %s: %v", mirrorName, err)
		}
		if !isRunning(mirror) {
			return podSummary(mirror)
		}
		return ""
	})
	require.NotEmpty(t, mirror.Annotations["kubernetes.io/config.mirror"], "the mirror annotation")
	require.Equal(t, "file", mirror.Annotations["kubernetes.io/config.source"])
	require.Equal(t, node, mirror.Spec.NodeName)
	require.Len(t, mirror.OwnerReferences, 1)
	require.Equal(t, "Node", mirror.OwnerReferences[0].Kind)
	require.Equal(t, node, mirror.OwnerReferences[0].Name)
	local := d.waitPod(t, "static", "Running locally", scaled(10*time.Second), isRunning)
	require.Equal(t, local.Status.PodIP, mirror.Status.PodIP, "the mirror carries the static pod's status")

	// An admin deletes the mirror: the node creates it again; the static
	// pod itself is untouched.
	zero := int64(0)
	require.NoError(t, cs.CoreV1().Pods("default").Delete(ctx, mirrorName, metav1.DeleteOptions{GracePeriodSeconds: &zero}))
	waitFor(t, "the mirror created again", scaled(60*time.Second), func() string {
		p, err := serverPod(t, cs, mirrorName)
		if err != nil || p == nil {
			return fmt.Sprintf("get: %v", err)
		}
		if p.UID == mirror.UID {
			return "still the deleted one"
		}
		return ""
	})
	again := d.waitPod(t, "static", "still Running", scaled(10*time.Second), isRunning)
	require.Equal(t, local.UID, again.UID)
	require.Equal(t, containerStatus(local, "c").ContainerID, containerStatus(again, "c").ContainerID, "deleting the mirror must not restart the static pod")

	// A ConfigMap from the API server in a cluster pod.
	_, err := cs.CoreV1().ConfigMaps("default").Create(ctx, &v1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "app-config"}, Data: map[string]string{"greeting": "hello from the API server"},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	pod := clusterPod("cm-user", node, false)
	pod.Spec.Volumes = []v1.Volume{{Name: "cfg", VolumeSource: v1.VolumeSource{ConfigMap: &v1.ConfigMapVolumeSource{
		LocalObjectReference: v1.LocalObjectReference{Name: "app-config"}}}}}
	pod.Spec.Containers[0].VolumeMounts = []v1.VolumeMount{{Name: "cfg", MountPath: "/etc/app"}}
	_, err = cs.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{})
	require.NoError(t, err)
	d.waitPod(t, "cm-user", "Running with its ConfigMap", scaled(90*time.Second), isRunning)
	ectx, ecancel := shortCtx()
	res, err := d.api().Exec(ectx, "default", "cm-user", "c", []string{"cat", "/etc/app/greeting"}, scaled(10*time.Second))
	ecancel()
	require.NoError(t, err)
	require.Equal(t, 0, res.ExitCode, "%s", res.Stderr)
	require.Equal(t, "hello from the API server", string(res.Stdout))

	// The static pod's file removed: the pod stops and its mirror goes.
	require.NoError(t, os.Remove(static))
	d.waitPod(t, "static", "gone with its file", scaled(60*time.Second), func(p *v1.Pod) bool { return p == nil })
	waitFor(t, "the mirror deleted", scaled(60*time.Second), func() string {
		p, err := serverPod(t, cs, mirrorName)
		if err != nil {
			return err.Error()
		}
		if p != nil {
			return "still there: " + podSummary(p)
		}
		return ""
	})
}
