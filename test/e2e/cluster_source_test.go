package e2e

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/minikubelet/minikubelet/agent/cluster"
	"github.com/minikubelet/minikubelet/agent/cluster/clustertest"
	"github.com/minikubelet/minikubelet/agent/source"
	"github.com/minikubelet/minikubelet/test/controlplane"
)

// clusterPod is a pod bound to node; token false turns the service
// account token off (the pod then needs no kube-root-ca.crt either).
func clusterPod(name, node string, token bool) *v1.Pod {
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"app": name}},
		Spec: v1.PodSpec{
			NodeName:                     node,
			AutomountServiceAccountToken: &token,
			Containers: []v1.Container{{
				Name: "c", Image: suite.registry + "/minikubelet/busybox:1.36",
				Command: []string{"sleep", "3600"},
			}},
		},
	}
}

// TestCluster_PodSourceAndStatusWriterAgainstTheAPIServer runs the cluster
// pod source and status writer in process with a node identity against a
// real kube-apiserver (no daemon: wiring them into the daemon is the next
// step of issue #10). It checks what a fake clientset cannot: that the
// Node authorizer lets a node list and watch pods by spec.nodeName and
// patch the status of its own; that the server filters by the selector;
// that a pod the admission plugins gave a service-account token volume is
// accepted; and that a status written by the node is what the admin reads.
func TestCluster_PodSourceAndStatusWriterAgainstTheAPIServer(t *testing.T) {
	t.Parallel()
	const node = "mkl-cluster-src"
	cp := controlplane.Start(t, node)
	ctx, cancel := context.WithTimeout(context.Background(), scaled(2*time.Minute))
	defer cancel()
	pods := cp.Admin.CoreV1().Pods("default")
	for _, p := range []*v1.Pod{clusterPod("web", node, false), clusterPod("elsewhere", "other-node", false), clusterPod("with-token", node, true)} {
		_, err := pods.Create(ctx, p, metav1.CreateOptions{})
		require.NoError(t, err)
	}

	nodeClient := cp.NodeClient(t, node)
	src := cluster.NewPodSource(clustertest.FromClientset(nodeClient), node, nil,
		cluster.WithPodDone(func(types.UID) <-chan struct{} { return nil }))
	out := make(chan source.SourceUpdate, 1)
	go src.Run(ctx, out)
	var u source.SourceUpdate
	waitUpdate := func(what string, ok func(source.SourceUpdate) bool) {
		t.Helper()
		deadline := time.After(scaled(30 * time.Second))
		for {
			select {
			case u = <-out:
				if u.Applied != nil {
					close(u.Applied) // as the daemon, once applied
				}
				if ok(u) {
					return
				}
			case <-deadline:
				t.Fatalf("%s: last update %d pods, %d errors", what, len(u.Pods), len(u.Errors))
			}
		}
	}
	waitUpdate("the node's runnable pods", func(u source.SourceUpdate) bool { return len(u.Pods) == 2 })
	require.Empty(t, u.Errors)
	slices.SortFunc(u.Pods, func(a, b *v1.Pod) int { return strings.Compare(a.Name, b.Name) })
	require.Equal(t, "web", u.Pods[0].Name)
	require.Equal(t, cluster.SourceCluster, u.Pods[0].Annotations["kubernetes.io/config.source"])
	serverWeb, err := pods.Get(ctx, "web", metav1.GetOptions{})
	require.NoError(t, err)
	require.Equal(t, serverWeb.UID, u.Pods[0].UID)

	// The pod with the admission plugin's token volume is the node's to run
	// (TestCluster_ServiceAccountTokensAreProjected runs one).
	withToken := u.Pods[1]
	require.Equal(t, "with-token", withToken.Name)
	require.NotEmpty(t, withToken.Spec.Volumes)
	require.True(t, strings.HasPrefix(withToken.Spec.Volumes[0].Name, "kube-api-access-"))
	require.NotNil(t, withToken.Spec.Volumes[0].Projected.Sources[0].ServiceAccountToken)

	// The node writes web's status; the admin reads it back.
	w := cluster.NewStatusWriter(clustertest.FromClientset(nodeClient), nil, nil)
	go w.Run(ctx)
	running := u.Pods[0].DeepCopy()
	started := metav1.NewTime(time.Now().Truncate(time.Second))
	running.Status = v1.PodStatus{
		Phase: v1.PodRunning, PodIP: "10.89.250.7", PodIPs: []v1.PodIP{{IP: "10.89.250.7"}}, StartTime: &started,
		Conditions: []v1.PodCondition{{Type: v1.PodReady, Status: v1.ConditionTrue, LastTransitionTime: started}},
		ContainerStatuses: []v1.ContainerStatus{{
			Name: "c", Ready: true, Image: running.Spec.Containers[0].Image, ContainerID: "containerd://abc",
			State: v1.ContainerState{Running: &v1.ContainerStateRunning{StartedAt: started}},
		}},
	}
	w.PodStatus(running)
	waitFor(t, "the status written by the node", scaled(30*time.Second), func() string {
		p, err := pods.Get(ctx, "web", metav1.GetOptions{})
		if err != nil {
			return err.Error()
		}
		if p.Status.Phase != v1.PodRunning || p.Status.PodIP != "10.89.250.7" {
			return "phase " + string(p.Status.Phase) + " ip " + p.Status.PodIP + "; writer: " + w.LoopStatus().LastError
		}
		return ""
	})
	got, err := pods.Get(ctx, "web", metav1.GetOptions{})
	require.NoError(t, err)
	require.Len(t, got.Status.ContainerStatuses, 1)
	require.NotNil(t, got.Status.ContainerStatuses[0].State.Running)
	require.True(t, got.Status.ContainerStatuses[0].Ready)

	// Deleted through the API: the source keeps web, marked with its grace
	// period, for the agent to tear it down; once the agent has nothing of
	// it (podDone: no agent here), the node deletes the object (grace 0,
	// UID precondition: the Node authorizer lets it) and web leaves the set.
	require.NoError(t, pods.Delete(ctx, "web", metav1.DeleteOptions{}))
	waitUpdate("web to leave the set once the node deleted it", func(u source.SourceUpdate) bool { return len(u.Pods) == 1 })
	require.Equal(t, "with-token", u.Pods[0].Name)
	_, err = pods.Get(ctx, "web", metav1.GetOptions{})
	require.True(t, apierrors.IsNotFound(err), "the node deleted the object: %v", err)
}
