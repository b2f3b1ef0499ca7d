package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/minikubelet/minikubelet/test/controlplane"
)

// serverPod returns the pod as the API server has it (nil when gone).
func serverPod(t *testing.T, cs kubernetes.Interface, name string) (*v1.Pod, error) {
	t.Helper()
	ctx, cancel := shortCtx()
	defer cancel()
	p, err := cs.CoreV1().Pods("default").Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	return p, err
}

// containerStatus is the status of container name in p (nil when absent).
func containerStatus(p *v1.Pod, name string) *v1.ContainerStatus {
	if p == nil {
		return nil
	}
	for i := range p.Status.ContainerStatuses {
		if p.Status.ContainerStatuses[i].Name == name {
			return &p.Status.ContainerStatuses[i]
		}
	}
	return nil
}

// TestCluster_PodsRunReportAndAreDeleted runs `serve --kubeconfig` with a
// node identity against a real kube-apiserver and drives it only through
// the API server, as kubectl users would:
//   - a pod bound to the node runs, and its status (phase, podIP,
//     conditions, container state and ID) reaches the API server, the same
//     as the local API shows;
//   - the local API refuses to delete it (the cluster owns it);
//   - a crash-looping pod's restartCount and CrashLoopBackOff show there;
//   - the API server stopped for 20 s: the pods keep running untouched, the
//     node renews its Lease again once it is back, and a pod created then
//     runs (the informer reconnected);
//   - deleting the pod with a grace period stops it after that period
//     (its process ignores SIGTERM), then the object disappears.
func TestCluster_PodsRunReportAndAreDeleted(t *testing.T) {
	t.Parallel()
	const node = "mkl-cluster-pods"
	cp := controlplane.Start(t, node)
	r := newPrivateRuntime(t)
	d := r.newDaemon(t, nil, "--node-name", node, "--kubeconfig", cp.NodeKubeconfig(t, node))
	d.deleteClusterPod = func(ctx context.Context, namespace, name string) error {
		zero := int64(0)
		return cp.Admin.CoreV1().Pods(namespace).Delete(ctx, name, metav1.DeleteOptions{GracePeriodSeconds: &zero})
	}
	d.start(t)
	cs := cp.Admin
	ctx, cancel := context.WithTimeout(context.Background(), scaled(5*time.Minute))
	defer cancel()
	pods := cs.CoreV1().Pods("default")

	web := clusterPod("web", node, false)
	crash := clusterPod("crash", node, false)
	crash.Spec.Containers[0].Command = []string{"sh", "-c", "exit 3"}
	for _, p := range []*v1.Pod{web, crash} {
		_, err := pods.Create(ctx, p, metav1.CreateOptions{})
		require.NoError(t, err)
	}

	// web runs; the API server has its status.
	var got *v1.Pod
	waitFor(t, "web's Running status on the API server", scaled(90*time.Second), func() string {
		var err error
		if got, err = serverPod(t, cs, "web"); err != nil || got == nil {
			return fmt.Sprintf("get: %v", err)
		}
		if !isRunning(got) || !isReady(got) {
			return podSummary(got)
		}
		return ""
	})
	local := d.waitPod(t, "web", "Running locally", scaled(30*time.Second), isRunning)
	require.Equal(t, local.UID, got.UID, "the node runs the API server's pod")
	require.Equal(t, local.Status.PodIP, got.Status.PodIP)
	require.Equal(t, []v1.PodIP{{IP: got.Status.PodIP}}, got.Status.PodIPs)
	require.NotNil(t, got.Status.StartTime)
	require.Equal(t, v1.PodQOSBestEffort, got.Status.QOSClass)
	cst := containerStatus(got, "c")
	require.NotNil(t, cst, podSummary(got))
	require.NotNil(t, cst.State.Running, podSummary(got))
	require.Equal(t, containerStatus(local, "c").ContainerID, cst.ContainerID)
	require.Regexp(t, `^containerd://[0-9a-f]{64}$`, cst.ContainerID)
	for _, typ := range []v1.PodConditionType{v1.PodScheduled, v1.PodInitialized, v1.ContainersReady, v1.PodReady} {
		found := false
		for _, c := range got.Status.Conditions {
			if c.Type == typ {
				found = true
				require.Equal(t, v1.ConditionTrue, c.Status, "%s", typ)
				if typ != v1.PodScheduled { // the scheduler's
					require.Equal(t, got.Generation, c.ObservedGeneration, "%s: the generation synced", typ)
				}
			}
		}
		require.True(t, found, "condition %s: %s", typ, podSummary(got))
	}
	// The generation the node synced (KEP 5067), as the kubelet reports it.
	require.Positive(t, got.Generation)
	require.Equal(t, got.Generation, got.Status.ObservedGeneration, "status.observedGeneration")
	lctx, lcancel := shortCtx()
	_, err := d.api().DeletePod(lctx, "default", "web", nil)
	lcancel()
	require.True(t, apierrors.IsForbidden(err), "the local API must refuse to delete a cluster pod: %v", err)

	// crash: restarts and back-off, as `kubectl get pods` shows them.
	waitFor(t, "crash's CrashLoopBackOff on the API server", scaled(60*time.Second), func() string {
		p, err := serverPod(t, cs, "crash")
		if err != nil || p == nil {
			return fmt.Sprintf("get: %v", err)
		}
		c := containerStatus(p, "c")
		if c == nil || c.RestartCount < 1 || c.State.Waiting == nil || c.State.Waiting.Reason != "CrashLoopBackOff" {
			return podSummary(p)
		}
		if c.LastTerminationState.Terminated == nil || c.LastTerminationState.Terminated.ExitCode != 3 {
			return "last termination: " + podSummary(p)
		}
		return ""
	})

	// The API server goes away for 20 s: nothing on the node changes.
	webID := cst.ContainerID
	cp.StopAPIServer(t)
	down := time.Now()
	for time.Since(down) < 20*time.Second {
		p := d.waitPod(t, "web", "Running during the outage", scaled(10*time.Second), isRunning)
		require.Equal(t, webID, containerStatus(p, "c").ContainerID, "web was restarted during the outage: %s", podSummary(p))
		time.Sleep(time.Second) // the outage lasts 20 s whatever happens
	}
	cp.StartAPIServer(t)
	back := time.Now()
	waitFor(t, "the node's Lease renewed after the outage", scaled(60*time.Second), func() string {
		l := nodeLease(t, cs, node)
		if l == nil || l.Spec.RenewTime == nil || !l.Spec.RenewTime.Time.After(back.Add(-time.Second)) {
			return "not renewed since the API server came back"
		}
		if c := nodeCondition(clusterNode(t, cs, node), v1.NodeReady); c.Status != v1.ConditionTrue {
			return fmt.Sprintf("Ready=%s %s", c.Status, c.Message)
		}
		return ""
	})
	t.Logf("lease renewed %s after the API server came back", time.Since(back).Round(time.Millisecond))
	_, err = pods.Create(ctx, clusterPod("after", node, false), metav1.CreateOptions{})
	require.NoError(t, err)
	waitFor(t, "a pod created after the outage to run", scaled(90*time.Second), func() string {
		p, err := serverPod(t, cs, "after")
		if err != nil || p == nil {
			return fmt.Sprintf("get: %v", err)
		}
		if !isRunning(p) {
			return podSummary(p)
		}
		return ""
	})

	// Deletion with a grace period of 3 s; sleep as PID 1 ignores SIGTERM,
	// so the container stops when the grace period ends.
	grace := int64(3)
	deleted := time.Now()
	require.NoError(t, pods.Delete(ctx, "web", metav1.DeleteOptions{GracePeriodSeconds: &grace}))
	waitFor(t, "web's object to disappear", scaled(45*time.Second), func() string {
		p, err := serverPod(t, cs, "web")
		if err != nil {
			return err.Error()
		}
		if p != nil {
			return "still there: " + podSummary(p)
		}
		return ""
	})
	took := time.Since(deleted)
	t.Logf("web deleted %s after the request (grace %ds)", took.Round(time.Millisecond), grace)
	require.GreaterOrEqual(t, took, time.Duration(grace)*time.Second-500*time.Millisecond, "the grace period was not honoured")
	require.Less(t, took, scaled(time.Duration(grace)*time.Second+15*time.Second))
	d.waitPod(t, "web", "gone from the node", scaled(10*time.Second), func(p *v1.Pod) bool { return p == nil })
	require.Empty(t, removeLeftovers(ctx, t, r.rt, "web"), "web's sandbox and containers must be gone")
}
