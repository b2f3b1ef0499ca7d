package e2e

import (
	"context"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/remotecommand"

	"github.com/minikubelet/minikubelet/test/controlplane"
)

// TestCluster_NodePodNotReachableThroughAClusterPodOfItsName: a pod the
// node runs for itself (submitted through the local API, with a value in
// its environment the cluster must not see) and a cluster user who
// creates a pod of the same namespace and name bound to the node. The node
// keeps running its own pod (the local pod wins the clash); kubectl exec
// and kubectl logs of that name through the API server must not reach it.
// Before, the kubelet server resolved the name to the node's pod and the
// exec printed its secret. A cluster pod beside it is reached (the path
// works).
func TestCluster_NodePodNotReachableThroughAClusterPodOfItsName(t *testing.T) {
	t.Parallel()
	const node = "mkl-cluster-boundary"
	cp := controlplane.Start(t, node)
	r := newPrivateRuntime(t)
	port := freePort(t)
	d := r.newDaemon(t, []string{"nodeonly"}, "--node-name", node, "--kubeconfig", cp.NodeKubeconfig(t, node),
		"--port", strconv.Itoa(port), "--client-ca-file", filepath.Join(cp.Dir, "pki", "ca.crt"))
	d.deleteClusterPod = func(ctx context.Context, namespace, name string) error {
		zero := int64(0)
		return cp.Admin.CoreV1().Pods(namespace).Delete(ctx, name, metav1.DeleteOptions{GracePeriodSeconds: &zero})
	}
	d.start(t)
	cs := cp.Admin
	cfg, err := cp.RestConfig(cp.AdminKubeconfig)
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), scaled(5*time.Minute))
	defer cancel()
	zero := int64(0)
	busybox := func(name, script string, env ...v1.EnvVar) *v1.Pod {
		return &v1.Pod{
			TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
			Spec: v1.PodSpec{TerminationGracePeriodSeconds: &zero, Containers: []v1.Container{{
				Name: "app", Image: suite.registry + "/minikubelet/busybox:1.36", Command: []string{"sh", "-c", script}, Env: env}}},
		}
	}

	lctx, lcancel := shortCtx()
	_, err = d.api().CreatePod(lctx, busybox("nodeonly", "echo node-only-log-line; exec sleep 3600", v1.EnvVar{Name: "MARK", Value: "node-only-secret"}))
	lcancel()
	require.NoError(t, err)
	d.waitPod(t, "nodeonly", "running", scaled(90*time.Second), isRunning)

	for _, name := range []string{"nodeonly", "clusterpod"} {
		p := busybox(name, "echo cluster-log-line; exec sleep 3600")
		p.Spec.NodeName = node
		_, err = cs.CoreV1().Pods("default").Create(ctx, p, metav1.CreateOptions{})
		require.NoError(t, err)
	}
	waitFor(t, "clusterpod Running on the API server", scaled(90*time.Second), func() string {
		p, err := serverPod(t, cs, "clusterpod")
		if err != nil || !isRunning(p) {
			return fmt.Sprintf("%v %v", podSummary(p), err)
		}
		return ""
	})

	execIn := func(pod string) (string, error) {
		req := cs.CoreV1().RESTClient().Post().Resource("pods").Namespace("default").Name(pod).SubResource("exec").
			VersionedParams(&v1.PodExecOptions{Container: "app", Command: []string{"sh", "-c", "echo reached:$MARK"}, Stdout: true, Stderr: true}, scheme.ParameterCodec)
		ex, err := remotecommand.NewSPDYExecutor(cfg, "POST", req.URL())
		require.NoError(t, err)
		var out syncWriter
		err = ex.StreamWithContext(ctx, remotecommand.StreamOptions{Stdout: &out, Stderr: &out})
		return out.String(), err
	}
	out, err := execIn("clusterpod")
	require.NoError(t, err, "exec into a cluster pod works: %s", out)
	require.Equal(t, "reached:\n", out)

	out, err = execIn("nodeonly")
	require.Error(t, err, "exec through the cluster's pod of that name reached the node's pod: %q", out)
	require.NotContains(t, out, "node-only-secret")
	t.Logf("exec refused: %v", err)

	b, err := cs.CoreV1().Pods("default").GetLogs("nodeonly", &v1.PodLogOptions{Container: "app"}).DoRaw(ctx)
	require.Error(t, err, "logs through the cluster's pod of that name: %q", b)
	require.False(t, strings.Contains(string(b), "node-only-log-line"), "%q", b)
	t.Logf("logs refused: %v", err)

	// The node's own pod runs on, untouched.
	lp := d.waitPod(t, "nodeonly", "still running", scaled(10*time.Second), isRunning)
	require.Equal(t, v1.PodRunning, lp.Status.Phase)
}
