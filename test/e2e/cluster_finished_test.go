package e2e

import (
	"context"
	"fmt"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/minikubelet/minikubelet/test/controlplane"
)

// TestCluster_FinishedPodKeepsItsLogs: a cluster pod that ran to
// completion keeps its stopped container, and so its log, until its
// object is deleted, as with the kubelet (`kubectl logs` of a finished
// pod: the way most of Kubernetes' conformance specs read a container's
// output). Its deletion then removes it from the node and the API server.
func TestCluster_FinishedPodKeepsItsLogs(t *testing.T) {
	t.Parallel()
	const node = "mkl-cluster-finished"
	cp := controlplane.Start(t, node)
	r := newPrivateRuntime(t)
	d := r.newDaemon(t, nil, "--node-name", node, "--kubeconfig", cp.NodeKubeconfig(t, node),
		"--port", strconv.Itoa(freePort(t)), "--client-ca-file", filepath.Join(cp.Dir, "pki", "ca.crt"))
	d.deleteClusterPod = func(ctx context.Context, namespace, name string) error {
		zero := int64(0)
		return cp.Admin.CoreV1().Pods(namespace).Delete(ctx, name, metav1.DeleteOptions{GracePeriodSeconds: &zero})
	}
	d.start(t)
	cs := cp.Admin
	ctx, cancel := context.WithTimeout(context.Background(), scaled(4*time.Minute))
	defer cancel()

	pod := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "once", Namespace: "default"},
		Spec: v1.PodSpec{
			NodeName:      node,
			RestartPolicy: v1.RestartPolicyNever,
			Containers: []v1.Container{{
				Name:    "c",
				Image:   suite.registry + "/minikubelet/busybox:1.36",
				Command: []string{"sh", "-c", "echo finished-output"},
			}},
		},
	}
	_, err := cs.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{})
	require.NoError(t, err)
	waitFor(t, "once Succeeded on the API server", scaled(90*time.Second), func() string {
		p, err := serverPod(t, cs, "once")
		if err != nil || p == nil {
			return fmt.Sprintf("get: %v", err)
		}
		if p.Status.Phase != v1.PodSucceeded {
			return podSummary(p)
		}
		return ""
	})
	// Long enough for the source to have seen the terminal phase and for a
	// teardown, had the node dropped the pod, to have removed the log.
	time.Sleep(3 * time.Second)
	b, err := cs.CoreV1().Pods("default").GetLogs("once", &v1.PodLogOptions{Container: "c"}).DoRaw(ctx)
	require.NoError(t, err, "the log of a finished pod through the API server: %s", b)
	require.Equal(t, "finished-output\n", string(b))

	zero := int64(0)
	require.NoError(t, cs.CoreV1().Pods("default").Delete(ctx, "once", metav1.DeleteOptions{GracePeriodSeconds: &zero}))
	waitFor(t, "once gone from the API server", scaled(60*time.Second), func() string {
		_, err := cs.CoreV1().Pods("default").Get(ctx, "once", metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return ""
		}
		return fmt.Sprintf("get: %v", err)
	})
	waitFor(t, "once's sandbox gone from the runtime", scaled(60*time.Second), func() string {
		sbs, err := r.rt.ListPodSandbox(ctx, &runtimeapi.PodSandboxFilter{LabelSelector: map[string]string{"io.kubernetes.pod.name": "once"}})
		if err != nil {
			return fmt.Sprintf("list sandboxes: %v", err)
		}
		if len(sbs) > 0 {
			return fmt.Sprintf("%d sandboxes left", len(sbs))
		}
		return ""
	})
}
