package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
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
	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"

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
// works). The node's /stats/summary, read through the API server's node
// proxy as a cluster caller with nodes/stats would (metrics-server), lists
// the cluster pod and the static pod under its mirror's name, never the
// node's own pod: before, it named the local pod (its name, namespace, UID
// and usage) and the static pod under a name the API server does not have.
// /metrics/resource, what metrics-server scrapes, likewise.
func TestCluster_NodePodNotReachableThroughAClusterPodOfItsName(t *testing.T) {
	t.Parallel()
	const node = "mkl-cluster-boundary"
	cp := controlplane.Start(t, node)
	r := newPrivateRuntime(t)
	port := freePort(t)
	d := r.newDaemon(t, []string{"nodeonly", "nodestatic"}, "--node-name", node, "--kubeconfig", cp.NodeKubeconfig(t, node),
		"--port", strconv.Itoa(port), "--client-ca-file", filepath.Join(cp.Dir, "pki", "ca.crt"))
	d.deleteClusterPod = func(ctx context.Context, namespace, name string) error {
		zero := int64(0)
		return cp.Admin.CoreV1().Pods(namespace).Delete(ctx, name, metav1.DeleteOptions{GracePeriodSeconds: &zero})
	}
	// A static pod: the cluster sees it as its mirror, nodestatic-<node>.
	require.NoError(t, os.WriteFile(filepath.Join(d.manifests, "nodestatic.yaml"), []byte(fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata:
  name: nodestatic
spec:
  terminationGracePeriodSeconds: 0
  containers:
  - name: c
    image: %s/minikubelet/busybox:1.36
    command: ["sh", "-c", "trap 'exit 0' TERM; sleep 3600 & wait"]
`, suite.registry)), 0o644))
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

	// The stats summary: the cluster pod and the static pod's mirror, with
	// their containers' usage; not the node's own pod.
	static := d.waitPod(t, "nodestatic", "Running locally", scaled(90*time.Second), isRunning)
	mirrorName := "nodestatic-" + node
	var sum statsapi.Summary
	var body []byte
	waitFor(t, "clusterpod and "+mirrorName+" with usage in the stats summary", scaled(30*time.Second), func() string {
		b, err := cs.CoreV1().RESTClient().Get().AbsPath("/api/v1/nodes", node, "proxy", "stats", "summary").DoRaw(ctx)
		if err != nil {
			return fmt.Sprintf("%v: %s", err, b)
		}
		body, sum = b, statsapi.Summary{}
		if err := json.Unmarshal(b, &sum); err != nil {
			return err.Error()
		}
		for _, want := range []string{"clusterpod", mirrorName} {
			ps := summaryPod(sum, "default", want)
			if ps == nil || len(ps.Containers) != 1 || ps.Containers[0].CPU == nil {
				return fmt.Sprintf("no %s with a container's usage yet: %s", want, b)
			}
		}
		return ""
	})
	for _, ps := range sum.Pods {
		require.NotEqual(t, string(lp.UID), ps.PodRef.UID, "the node's own pod is in the cluster's summary: %s", body)
		require.NotEqual(t, "nodeonly", ps.PodRef.Name, "a pod named nodeonly (the node runs its own under that name): %s", body)
		require.NotEqual(t, "nodestatic", ps.PodRef.Name, "the static pod under its own name: %s", body)
	}
	require.Len(t, sum.Pods, 2, "%s", body)
	// The kubelet's identity of a static pod: the mirror's name, the
	// static pod's UID (the mirror's kubernetes.io/config.hash).
	var mirror *v1.Pod
	waitFor(t, "the static pod's mirror on the API server", scaled(60*time.Second), func() string {
		var err error
		if mirror, err = serverPod(t, cs, mirrorName); err != nil || mirror == nil {
			return fmt.Sprintf("get %s: %v", mirrorName, err)
		}
		return ""
	})
	require.Equal(t, string(static.UID), summaryPod(sum, "default", mirrorName).PodRef.UID)
	require.Equal(t, string(static.UID), mirror.Annotations["kubernetes.io/config.hash"])
	require.NotNil(t, summaryPod(sum, "default", mirrorName).Containers[0].Logs, "the static pod's log, found under its mirror's name: %s", body)
	// /metrics/resource (what metrics-server scrapes) likewise.
	b, err = cs.CoreV1().RESTClient().Get().AbsPath("/api/v1/nodes", node, "proxy", "metrics", "resource").DoRaw(ctx)
	require.NoError(t, err)
	require.Contains(t, string(b), `pod_cpu_usage_seconds_total{namespace="default",pod="clusterpod"} `)
	require.Contains(t, string(b), `pod_cpu_usage_seconds_total{namespace="default",pod="`+mirrorName+`"} `)
	require.NotContains(t, string(b), `pod="nodeonly"`, "the node's own pod")
	require.NotContains(t, string(b), `pod="nodestatic"`, "the static pod under its own name")
	// The node's totals still count every pod it runs.
	require.NotNil(t, sum.Node.CPU)
	require.NotZero(t, *sum.Node.CPU.UsageCoreNanoSeconds)
	t.Logf("stats summary pods: %s/%s (uid %s), %s/%s (uid %s); the node's own pod uid %s absent",
		sum.Pods[0].PodRef.Namespace, sum.Pods[0].PodRef.Name, sum.Pods[0].PodRef.UID,
		sum.Pods[1].PodRef.Namespace, sum.Pods[1].PodRef.Name, sum.Pods[1].PodRef.UID, lp.UID)
}

// summaryPod is the summary's entry of namespace/name (nil: none).
func summaryPod(s statsapi.Summary, namespace, name string) *statsapi.PodStats {
	for i := range s.Pods {
		if s.Pods[i].PodRef.Namespace == namespace && s.Pods[i].PodRef.Name == name {
			return &s.Pods[i]
		}
	}
	return nil
}
