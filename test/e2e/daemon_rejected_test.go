package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// TestDaemon_RejectedAtRestartIsKilled: a pod that ran, then is refused
// admission when the daemon restarts (its nodeSelector no longer matches:
// --node-labels changed), is Failed with the kubelet's reason, and what
// it left running is stopped, as the kubelet's cleanup kills the running
// pods of terminal ones (the API says Failed: a controller replaces it,
// and the old one must not run on beside its replacement). A pod still
// admitted is adopted untouched.
func TestDaemon_RejectedAtRestartIsKilled(t *testing.T) {
	t.Parallel()
	pods := []string{"e2e-d-rej-sel", "e2e-d-rej-keep"}
	d := newDaemon(t, pods, "--node-labels", "e2e-team=a")
	d.start(t)
	c := d.api()
	for _, n := range pods {
		zero := int64(0)
		p := &v1.Pod{
			TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
			ObjectMeta: metav1.ObjectMeta{Name: n, Namespace: "default"},
			Spec: v1.PodSpec{
				TerminationGracePeriodSeconds: &zero,
				Containers:                    []v1.Container{{Name: "c", Image: suite.registry + "/minikubelet/busybox:1.36", Command: []string{"sleep", "3600"}}},
			},
		}
		if n == "e2e-d-rej-sel" {
			p.Spec.NodeSelector = map[string]string{"e2e-team": "a"}
		}
		cx, cancel := shortCtx()
		_, err := c.CreatePod(cx, p)
		cancel()
		require.NoError(t, err)
	}
	for _, n := range pods {
		d.waitPod(t, n, "Running", 2*time.Minute, isRunning)
	}
	kept := snapshotPod(t, "e2e-d-rej-keep")

	d.kill9(t)
	d.extra = nil // the node loses its label
	d.start(t)
	p := d.waitPod(t, "e2e-d-rej-sel", "Failed: rejected at the restart", time.Minute, func(p *v1.Pod) bool { return p.Status.Phase == v1.PodFailed })
	assert.Equal(t, "NodeAffinity", p.Status.Reason, "the kubelet's reason: %s", podSummary(p))
	waitFor(t, "the rejected pod's containers and sandbox stopped", time.Minute, func() string {
		for _, sb := range podSandboxes(t, "e2e-d-rej-sel") {
			if sb.State == runtimeapi.PodSandboxState_SANDBOX_READY {
				return "sandbox " + shortID(sb.Id) + " still ready"
			}
		}
		for _, ctr := range podContainers(t, "e2e-d-rej-sel") {
			if ctr.State == runtimeapi.ContainerState_CONTAINER_RUNNING {
				return "container " + shortID(ctr.Id) + " still running"
			}
		}
		return ""
	})
	out, _ := d.out.snapshot()
	assert.Regexp(t, `Killing what a pod admission rejected left running.*pod=default/e2e-d-rej-sel`, out, "the daemon's log says why it stops the pod")
	// Its status stays the rejection: the teardown publishes none of its own.
	consistently(t, 3*time.Second, func() error {
		cx, cancel := shortCtx()
		defer cancel()
		got, err := c.GetPod(cx, "default", "e2e-d-rej-sel")
		if err != nil {
			return err
		}
		if got.Status.Phase != v1.PodFailed || got.Status.Reason != "NodeAffinity" {
			return fmt.Errorf("the rejection is no longer the status: %s", podSummary(got))
		}
		return nil
	})
	d.waitPod(t, "e2e-d-rej-keep", "adopted, Running", time.Minute, isRunning)
	assert.Equal(t, kept.String(), snapshotPod(t, "e2e-d-rej-keep").String(), "the pod still admitted was touched")

	// Deleting the rejected pod ends it: nothing of it is left.
	cx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_, err := c.DeletePod(cx, "default", "e2e-d-rej-sel", nil)
	require.NoError(t, err)
	waitFor(t, "the rejected pod gone", time.Minute, func() string {
		if _, err := c.GetPod(cx, "default", "e2e-d-rej-sel"); err == nil {
			return "still in the API"
		}
		return ""
	})
}
