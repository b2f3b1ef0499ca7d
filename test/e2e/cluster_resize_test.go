package e2e

import (
	"context"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/minikubelet/minikubelet/test/controlplane"
)

// TestCluster_InPlaceResize resizes a running pod through the API server's
// pods/resize subresource with kubectl, as a user (or the
// VerticalPodAutoscaler) would (issue #25):
//   - the cpu limit of container "c" raised: its cgroup's
//     cpu.cfs_quota_us (and the pod cgroup's) shows the new quota, the
//     container is the same one and its restartCount stays 0, status
//     reports the new limit and no resize condition is left;
//   - its memory limit raised: memory.limit_in_bytes follows, still no
//     restart;
//   - the memory limit of container "r", whose resizePolicy for memory is
//     RestartContainer: it is restarted once, with the new limit;
//   - a cpu request that does not fit next to another pod: PodResizePending
//     Deferred and nothing changes, until that pod is deleted.
func TestCluster_InPlaceResize(t *testing.T) {
	t.Parallel()
	const node = "mkl-cluster-resize"
	cp := controlplane.Start(t, node)
	r := newPrivateRuntime(t)
	d := r.newDaemon(t, nil, "--node-name", node, "--kubeconfig", cp.NodeKubeconfig(t, node))
	d.deleteClusterPod = func(ctx context.Context, namespace, name string) error {
		zero := int64(0)
		return cp.Admin.CoreV1().Pods(namespace).Delete(ctx, name, metav1.DeleteOptions{GracePeriodSeconds: &zero})
	}
	d.start(t)
	kubectl := kubectlBin(t)
	ctx, cancel := context.WithTimeout(context.Background(), scaled(5*time.Minute))
	defer cancel()

	pod := clusterPod("resize", node, false)
	res := func(cpuReq, cpuLim, memReq, memLim string) v1.ResourceRequirements {
		return v1.ResourceRequirements{
			Requests: v1.ResourceList{v1.ResourceCPU: resource.MustParse(cpuReq), v1.ResourceMemory: resource.MustParse(memReq)},
			Limits:   v1.ResourceList{v1.ResourceCPU: resource.MustParse(cpuLim), v1.ResourceMemory: resource.MustParse(memLim)},
		}
	}
	pod.Spec.Containers[0].Resources = res("100m", "200m", "32Mi", "64Mi")
	pod.Spec.Containers = append(pod.Spec.Containers, v1.Container{
		Name: "r", Image: pod.Spec.Containers[0].Image, Command: []string{"sleep", "3600"},
		Resources:    res("100m", "200m", "32Mi", "64Mi"),
		ResizePolicy: []v1.ContainerResizePolicy{{ResourceName: v1.ResourceMemory, RestartPolicy: v1.RestartContainer}},
	})
	_, err := cp.Admin.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{})
	require.NoError(t, err)

	var running *v1.Pod
	eventually(t, scaled(2*time.Minute), "pod resize running, its containers' resources reported", func() bool {
		p, err := serverPod(t, cp.Admin, "resize")
		if err != nil || p == nil || p.Status.Phase != v1.PodRunning {
			return false
		}
		for _, name := range []string{"c", "r"} {
			if cs := containerStatus(p, name); cs == nil || cs.State.Running == nil || cs.Resources == nil {
				return false
			}
		}
		running = p
		return true
	})
	uid := string(running.UID)
	podCg := podCgroupPath("/kubepods/burstable", uid)
	idOf := func(p *v1.Pod, name string) string {
		return strings.TrimPrefix(containerStatus(p, name).ContainerID, "containerd://")
	}
	firstC := idOf(running, "c")
	assert.Equal(t, int64(20000), cgroupInt(t, "cpu", containerCgroupPath(podCg, firstC), "cpu.cfs_quota_us"))
	assert.Equal(t, int64(40000), cgroupInt(t, "cpu", podCg, "cpu.cfs_quota_us"), "pod quota: 200m + 200m")

	resize := func(patch string) {
		t.Helper()
		out, err := exec.CommandContext(ctx, kubectl, "--kubeconfig", cp.AdminKubeconfig, "patch", "pod", "resize",
			"--subresource", "resize", "-p", patch).CombinedOutput()
		require.NoError(t, err, "kubectl patch --subresource resize: %s", out)
	}
	// done waits until the API server shows generation gen observed, no
	// resize condition, and check holds.
	done := func(what string, gen int64, check func(p *v1.Pod) bool) *v1.Pod {
		t.Helper()
		var got *v1.Pod
		eventually(t, scaled(time.Minute), what, func() bool {
			p, err := serverPod(t, cp.Admin, "resize")
			if err != nil || p == nil || p.Status.ObservedGeneration < gen {
				return false
			}
			for _, c := range p.Status.Conditions {
				if c.Type == v1.PodResizePending || c.Type == v1.PodResizeInProgress {
					return false
				}
			}
			got = p
			return check(p)
		})
		return got
	}

	// 1. cpu limit of c: 200m → 500m, in place.
	resize(`{"spec":{"containers":[{"name":"c","resources":{"limits":{"cpu":"500m"}}}]}}`)
	got := done("the new cpu limit in c's status", 2, func(p *v1.Pod) bool {
		cs := containerStatus(p, "c")
		return cs.Resources != nil && cs.Resources.Limits.Cpu().MilliValue() == 500
	})
	cs := containerStatus(got, "c")
	assert.Equal(t, firstC, idOf(got, "c"), "the same container")
	assert.EqualValues(t, 0, cs.RestartCount)
	assert.Equal(t, int64(50000), cgroupInt(t, "cpu", containerCgroupPath(podCg, firstC), "cpu.cfs_quota_us"), "the container's new quota")
	assert.Equal(t, int64(70000), cgroupInt(t, "cpu", podCg, "cpu.cfs_quota_us"), "pod quota: 500m + 200m")
	assert.Equal(t, int64(100), cs.AllocatedResources.Cpu().MilliValue(), "allocatedResources are the requests")

	// 2. memory limit of c: 64Mi → 128Mi, in place.
	resize(`{"spec":{"containers":[{"name":"c","resources":{"limits":{"memory":"128Mi"}}}]}}`)
	got = done("the new memory limit in c's status", 3, func(p *v1.Pod) bool {
		cs := containerStatus(p, "c")
		return cs.Resources != nil && cs.Resources.Limits.Memory().Value() == 128<<20
	})
	assert.Equal(t, firstC, idOf(got, "c"))
	assert.EqualValues(t, 0, containerStatus(got, "c").RestartCount)
	assert.Equal(t, int64(128<<20), cgroupInt(t, "memory", containerCgroupPath(podCg, firstC), "memory.limit_in_bytes"))
	assert.Equal(t, int64(192<<20), cgroupInt(t, "memory", podCg, "memory.limit_in_bytes"), "pod memory: 128Mi + 64Mi")

	// 3. memory limit of r (RestartContainer): 64Mi → 96Mi, restarted.
	firstR := idOf(got, "r")
	resize(`{"spec":{"containers":[{"name":"r","resources":{"limits":{"memory":"96Mi"}}}]}}`)
	got = done("r restarted with its new memory limit", 4, func(p *v1.Pod) bool {
		cs := containerStatus(p, "r")
		return cs.RestartCount == 1 && cs.State.Running != nil && cs.Resources != nil && cs.Resources.Limits.Memory().Value() == 96<<20
	})
	require.NotEqual(t, firstR, idOf(got, "r"), "a new container")
	assert.Equal(t, int64(96<<20), cgroupInt(t, "memory", containerCgroupPath(podCg, idOf(got, "r")), "memory.limit_in_bytes"))
	assert.EqualValues(t, 0, containerStatus(got, "c").RestartCount, "c is not restarted")

	// 4. a cpu request that does not fit next to another pod: Deferred,
	// not applied; admitted once that pod is gone. (A request beyond the
	// node's allocatable never reaches the node: the v1.37 API server
	// refuses it.)
	hog := clusterPod("hog", node, false)
	hog.Spec.Containers[0].Resources = v1.ResourceRequirements{Requests: v1.ResourceList{v1.ResourceCPU: resource.MustParse("1500m")}}
	_, err = cp.Admin.CoreV1().Pods("default").Create(ctx, hog, metav1.CreateOptions{})
	require.NoError(t, err)
	eventually(t, scaled(2*time.Minute), "pod hog running", func() bool {
		p, err := serverPod(t, cp.Admin, "hog")
		return err == nil && p != nil && p.Status.Phase == v1.PodRunning
	})
	resize(`{"spec":{"containers":[{"name":"c","resources":{"requests":{"cpu":"500m"}}}]}}`)
	var pending *v1.PodCondition
	eventually(t, scaled(time.Minute), "PodResizePending Deferred", func() bool {
		p, err := serverPod(t, cp.Admin, "resize")
		if err != nil || p == nil {
			return false
		}
		for i := range p.Status.Conditions {
			if c := p.Status.Conditions[i]; c.Type == v1.PodResizePending && c.ObservedGeneration == 5 {
				pending = &c
				got = p
				return true
			}
		}
		return false
	})
	t.Logf("pending: %s: %s", pending.Reason, pending.Message)
	assert.Equal(t, v1.PodReasonDeferred, pending.Reason)
	assert.Contains(t, pending.Message, "Node didn't have enough resource: cpu, requested: 600, used: 1500")
	assert.Equal(t, int64(100), containerStatus(got, "c").AllocatedResources.Cpu().MilliValue(), "the allocation is unchanged")
	assert.Equal(t, int64(102), cgroupInt(t, "cpu", containerCgroupPath(podCg, firstC), "cpu.shares"), "the cgroup is unchanged (shares of 100m)")
	zero := int64(0)
	require.NoError(t, cp.Admin.CoreV1().Pods("default").Delete(ctx, "hog", metav1.DeleteOptions{GracePeriodSeconds: &zero}))
	got = done("the deferred resize admitted once hog is gone", 5, func(p *v1.Pod) bool {
		cs := containerStatus(p, "c")
		return cs.AllocatedResources.Cpu().MilliValue() == 500
	})
	assert.Equal(t, int64(512), cgroupInt(t, "cpu", containerCgroupPath(podCg, firstC), "cpu.shares"), "shares of 500m")
	assert.Equal(t, firstC, idOf(got, "c"))
	assert.EqualValues(t, 0, containerStatus(got, "c").RestartCount)
}
