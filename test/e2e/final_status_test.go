package e2e

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// A restartPolicy Never pod created through the local API completes; the
// daemon stops; its containers and sandbox are removed through the CRI (as
// GC's reclaim under disk pressure removes a finished pod's); the daemon
// restarts. The pod is over: it is reported Succeeded with exit code 0 from
// the status the store kept, and nothing of it is created again (as the
// kubelet never starts a pod whose terminal phase the API server holds).
// Before the final status was stored, the restarted daemon found nothing of
// the pod in the runtime and ran the job a second time.
func TestDaemon_FinishedAPIPodNotRunAfterRestart(t *testing.T) {
	const name = "e2e-d-final"
	d := newDaemon(t, []string{name})
	d.start(t)
	zero := int64(0)
	pod := &v1.Pod{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
		Spec: v1.PodSpec{
			RestartPolicy:                 v1.RestartPolicyNever,
			TerminationGracePeriodSeconds: &zero,
			Containers: []v1.Container{{
				Name:    "job",
				Image:   suite.registry + "/minikubelet/busybox:1.36",
				Command: []string{"sh", "-c", "echo done"},
			}},
		},
	}
	c := d.api()
	cctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	created, err := c.CreatePod(cctx, pod)
	cancel()
	require.NoError(t, err)
	succeeded := func(p *v1.Pod) bool {
		if p == nil || p.Status.Phase != v1.PodSucceeded || len(p.Status.ContainerStatuses) != 1 {
			return false
		}
		term := p.Status.ContainerStatuses[0].State.Terminated
		return term != nil && term.ExitCode == 0
	}
	before := d.waitPod(t, name, "Succeeded with exit code 0", 3*time.Minute, succeeded)
	statusFile := filepath.Join(d.root, "api-pods", "status", string(created.UID)+".json")
	require.Eventually(t, func() bool {
		_, err := os.Stat(statusFile)
		return err == nil
	}, 30*time.Second, 100*time.Millisecond, "the final status is stored in %s", statusFile)
	d.stop(t)

	// The reclaim, while no daemon runs: nothing of the pod is left.
	rctx, rcancel := context.WithTimeout(context.Background(), time.Minute)
	removed := removeLeftovers(rctx, t, suite.rt, name)
	rcancel()
	t.Logf("removed through the CRI: %v", removed)
	require.NotEmpty(t, removed, "the finished pod left its dead container and sandbox for the reclaim")
	require.Empty(t, podContainers(t, name))
	require.Empty(t, podSandboxes(t, name))

	d.start(t)
	after := d.waitPod(t, name, "Succeeded with exit code 0 after the restart", time.Minute, succeeded)
	assert.Equal(t, created.UID, after.UID)
	assert.Equal(t, before.Status.ContainerStatuses[0].State.Terminated.FinishedAt.Unix(), after.Status.ContainerStatuses[0].State.Terminated.FinishedAt.Unix(),
		"the stored status, not a new run")
	// Several relist (1 s) and resync periods: nothing of the pod is
	// created again.
	consistently(t, 10*time.Second, func() error {
		if cs := podContainers(t, name); len(cs) > 0 {
			return fmt.Errorf("the finished pod ran again: container %s %s", cs[0].Metadata.GetName(), cs[0].State)
		}
		if sbs := podSandboxes(t, name); len(sbs) > 0 {
			return fmt.Errorf("the finished pod ran again: sandbox %s", sbs[0].State)
		}
		return nil
	})
	r := d.cli(t, "get", "pod", name)
	require.Equal(t, 0, r.code, "%s", r)
	assert.Contains(t, r.stdout, "Completed", "get shows the stored status")

	r = d.cli(t, "delete", "pod", name, "--wait", "--timeout", "60s")
	require.Equal(t, 0, r.code, "%s", r)
	d.waitPod(t, name, "gone", 30*time.Second, func(p *v1.Pod) bool { return p == nil })
	_, err = os.Stat(statusFile)
	assert.True(t, errors.Is(err, os.ErrNotExist), "the stored status was removed with the pod (stat: %v)", err)
}

// A local-API pod evicted for its emptyDir's sizeLimit stays evicted
// across a daemon restart: container GC removes its dead container (an
// evicted pod's remains go at once), whatever is left of it goes through
// the CRI while no daemon runs, and the restarted daemon reports it
// Failed/Evicted with the eviction's message and never starts it again.
// Before the final status was stored, the evicted pod came back.
func TestDaemon_EvictedAPIPodStaysEvictedAfterRestart(t *testing.T) {
	const name = "e2e-d-final-evicted"
	d := newDaemon(t, []string{name}, "--eviction-monitoring-period", "1s", "--container-gc-period=1s")
	d.start(t)
	limit := resource.MustParse("8Mi")
	pod := evictionTestPod(name, "dd if=/dev/zero of=/data/fill bs=1048576 count=16 && exec sleep 3600", v1.ResourceRequirements{},
		[]v1.Volume{{Name: "data", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{SizeLimit: &limit}}}},
		[]v1.VolumeMount{{Name: "data", MountPath: "/data"}})
	ctx, cancel := shortCtx()
	created, err := d.api().CreatePod(ctx, pod)
	cancel()
	require.NoError(t, err)
	evicted := func(p *v1.Pod) bool { return p != nil && isEvicted(p) }
	before := d.waitPod(t, name, "evicted", 2*time.Minute, evicted)
	statusFile := filepath.Join(d.root, "api-pods", "status", string(created.UID)+".json")
	waitFor(t, "the evicted pod's container removed by GC and its final status stored", 30*time.Second, func() string {
		if cs := podContainers(t, name); len(cs) > 0 {
			return fmt.Sprintf("%d containers left", len(cs))
		}
		if _, err := os.Stat(statusFile); err != nil {
			return err.Error()
		}
		return ""
	})
	d.stop(t)
	rctx, rcancel := context.WithTimeout(context.Background(), time.Minute)
	t.Logf("removed through the CRI: %v", removeLeftovers(rctx, t, suite.rt, name))
	rcancel()

	d.start(t)
	after := d.waitPod(t, name, "still evicted after the restart", time.Minute, evicted)
	assert.Equal(t, created.UID, after.UID)
	assert.Equal(t, before.Status.Message, after.Status.Message)
	consistently(t, 10*time.Second, func() error {
		if cs := podContainers(t, name); len(cs) > 0 {
			return fmt.Errorf("the evicted pod came back: container %s %s", cs[0].Metadata.GetName(), cs[0].State)
		}
		if sbs := podSandboxes(t, name); len(sbs) > 0 {
			return fmt.Errorf("the evicted pod came back: sandbox %s", sbs[0].State)
		}
		return nil
	})
	r := d.cli(t, "delete", "pod", name, "--wait", "--timeout", "60s")
	require.Equal(t, 0, r.code, "%s", r)
	_, err = os.Stat(statusFile)
	assert.True(t, errors.Is(err, os.ErrNotExist), "the stored status was removed with the pod (stat: %v)", err)
}
