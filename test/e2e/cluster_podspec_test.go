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
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/minikubelet/minikubelet/test/controlplane"
)

// TestCluster_PodSpecAsTheKubelet: what Kubernetes' [NodeConformance] specs
// expect of a node for a few pod fields, against a real API server, as the
// kubelet does it (issue #19):
//   - spec.os.name windows: rejected at admission, Failed PodOSNotSupported;
//   - spec.readinessGates: Ready only once every gate's condition, patched
//     on the pod's status by someone else, is True, and False again when
//     one turns False;
//   - spec.activeDeadlineSeconds set on a running pod: Failed with reason
//     DeadlineExceeded;
//   - an ephemeral container added to a running pod runs;
//   - a pod a finalizer keeps after its deletion shows its container
//     terminated (a preStop sleep hook of 3 s ran first).
func TestCluster_PodSpecAsTheKubelet(t *testing.T) {
	t.Parallel()
	const node = "mkl-cluster-podspec"
	cp := controlplane.Start(t, node)
	r := newPrivateRuntime(t)
	d := r.newDaemon(t, nil, "--node-name", node, "--kubeconfig", cp.NodeKubeconfig(t, node),
		"--port", strconv.Itoa(freePort(t)), "--client-ca-file", filepath.Join(cp.Dir, "pki", "ca.crt"))
	d.deleteClusterPod = func(ctx context.Context, namespace, name string) error {
		return cp.Admin.CoreV1().Pods(namespace).Delete(ctx, name, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)})
	}
	d.start(t)
	cs := cp.Admin
	ctx, cancel := context.WithTimeout(context.Background(), scaled(5*time.Minute))
	defer cancel()
	sleeper := func(name string) *v1.Pod {
		return &v1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
			Spec: v1.PodSpec{
				NodeName:                      node,
				TerminationGracePeriodSeconds: ptr.To[int64](30),
				Containers: []v1.Container{{
					Name:    "c",
					Image:   suite.registry + "/minikubelet/busybox:1.36",
					Command: []string{"sleep", "3600"},
				}},
			},
		}
	}
	create := func(p *v1.Pod) {
		t.Helper()
		_, err := cs.CoreV1().Pods("default").Create(ctx, p, metav1.CreateOptions{})
		require.NoError(t, err)
	}
	waitPod := func(name, what string, timeout time.Duration, cond func(p *v1.Pod) bool) {
		t.Helper()
		waitFor(t, name+": "+what, scaled(timeout), func() string {
			p, err := serverPod(t, cs, name)
			if err != nil || p == nil {
				return fmt.Sprintf("get: %v", err)
			}
			if !cond(p) {
				return podSummary(p) + fmt.Sprintf(" reason=%q conditions=%v", p.Status.Reason, p.Status.Conditions)
			}
			return ""
		})
	}

	// spec.os.name: windows.
	win := sleeper("windows")
	win.Spec.OS = &v1.PodOS{Name: v1.Windows}
	create(win)

	// spec.readinessGates.
	gated := sleeper("gated")
	gated.Spec.ReadinessGates = []v1.PodReadinessGate{{ConditionType: "k8s.io/gate1"}, {ConditionType: "k8s.io/gate2"}}
	create(gated)

	// spec.activeDeadlineSeconds, set once running.
	deadline := sleeper("deadline")
	create(deadline)

	// An ephemeral container added once running.
	debugged := sleeper("debugged")
	create(debugged)

	// A finalizer keeps the pod after its deletion.
	kept := sleeper("kept")
	kept.Finalizers = []string{"test/finalizer"}
	kept.Spec.Containers[0].Lifecycle = &v1.Lifecycle{PreStop: &v1.LifecycleHandler{Sleep: &v1.SleepAction{Seconds: 3}}}
	create(kept)
	t.Cleanup(func() {
		ctx, cancel := shortCtx()
		defer cancel()
		_, _ = cs.CoreV1().Pods("default").Patch(ctx, "kept", types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{})
	})

	waitPod("windows", "Failed PodOSNotSupported", 60*time.Second, func(p *v1.Pod) bool {
		return p.Status.Phase == v1.PodFailed && p.Status.Reason == "PodOSNotSupported"
	})

	running := func(p *v1.Pod) bool { return p.Status.Phase == v1.PodRunning }
	waitPod("gated", "Running", 90*time.Second, running)
	requireReady(t, cs, "gated", false)
	patchCondition(t, cs, "gated", "k8s.io/gate1", v1.ConditionTrue)
	// The agent has synced the change once the condition shows in a status
	// it wrote; Ready stays False with one gate missing.
	time.Sleep(3 * time.Second)
	requireReady(t, cs, "gated", false)
	patchCondition(t, cs, "gated", "k8s.io/gate2", v1.ConditionTrue)
	waitPod("gated", "Ready", 30*time.Second, isReady)
	patchCondition(t, cs, "gated", "k8s.io/gate1", v1.ConditionFalse)
	waitPod("gated", "not Ready", 30*time.Second, func(p *v1.Pod) bool { return !isReady(p) })

	waitPod("deadline", "Running", 90*time.Second, running)
	_, err := cs.CoreV1().Pods("default").Patch(ctx, "deadline", types.StrategicMergePatchType, []byte(`{"spec":{"activeDeadlineSeconds":5}}`), metav1.PatchOptions{})
	require.NoError(t, err)
	waitPod("deadline", "Failed DeadlineExceeded", 60*time.Second, func(p *v1.Pod) bool {
		return p.Status.Phase == v1.PodFailed && p.Status.Reason == "DeadlineExceeded"
	})

	waitPod("debugged", "Running", 90*time.Second, running)
	dp, err := cs.CoreV1().Pods("default").Get(ctx, "debugged", metav1.GetOptions{})
	require.NoError(t, err)
	dp.Spec.EphemeralContainers = []v1.EphemeralContainer{{EphemeralContainerCommon: v1.EphemeralContainerCommon{
		Name: "debugger", Image: suite.registry + "/minikubelet/busybox:1.36", Command: []string{"sleep", "3600"},
		ImagePullPolicy: v1.PullIfNotPresent, TerminationMessagePolicy: v1.TerminationMessageReadFile,
	}}}
	_, err = cs.CoreV1().Pods("default").UpdateEphemeralContainers(ctx, "debugged", dp, metav1.UpdateOptions{})
	require.NoError(t, err)
	waitPod("debugged", "its ephemeral container running", 60*time.Second, func(p *v1.Pod) bool {
		return len(p.Status.EphemeralContainerStatuses) == 1 && p.Status.EphemeralContainerStatuses[0].State.Running != nil &&
			p.Status.Phase == v1.PodRunning
	})

	waitPod("kept", "Running", 90*time.Second, running)
	start := time.Now()
	require.NoError(t, cs.CoreV1().Pods("default").Delete(ctx, "kept", metav1.DeleteOptions{}))
	waitPod("kept", "its container terminated", 60*time.Second, func(p *v1.Pod) bool {
		c := containerStatus(p, "c")
		return c != nil && c.State.Terminated != nil
	})
	require.GreaterOrEqual(t, time.Since(start), 3*time.Second, "the preStop sleep hook ran first")
}

// requireReady checks the Ready condition of pod name on the API server.
func requireReady(t *testing.T, cs kubernetes.Interface, name string, want bool) {
	t.Helper()
	p, err := serverPod(t, cs, name)
	require.NoError(t, err)
	require.NotNil(t, p)
	require.Equal(t, want, isReady(p), "Ready of %s: %v", name, p.Status.Conditions)
}

// patchCondition sets a pod condition on the API server, as a controller
// behind a readiness gate does (a strategic merge patch of the status).
func patchCondition(t *testing.T, cs kubernetes.Interface, name string, typ v1.PodConditionType, status v1.ConditionStatus) {
	t.Helper()
	ctx, cancel := shortCtx()
	defer cancel()
	patch := fmt.Sprintf(`{"status":{"conditions":[{"type":%q,"status":%q}]}}`, typ, status)
	_, err := cs.CoreV1().Pods("default").Patch(ctx, name, types.StrategicMergePatchType, []byte(patch), metav1.PatchOptions{}, "status")
	require.NoError(t, err)
}
