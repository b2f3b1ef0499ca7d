package podspec

import (
	"testing"

	"github.com/stretchr/testify/assert"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
)

func qosRes(cpu, mem string) v1.ResourceList {
	l := v1.ResourceList{}
	if cpu != "" {
		l[v1.ResourceCPU] = resource.MustParse(cpu)
	}
	if mem != "" {
		l[v1.ResourceMemory] = resource.MustParse(mem)
	}
	return l
}

func milli(s string) int64 { q := resource.MustParse(s); return q.MilliValue() }

func bytesOf(s string) int64 { q := resource.MustParse(s); return q.Value() }

func qctr(name string, reqs, lims v1.ResourceList) v1.Container {
	return v1.Container{Name: name, Image: "busybox", Resources: v1.ResourceRequirements{Requests: reqs, Limits: lims}}
}

func qosSidecar(name string, reqs, lims v1.ResourceList) v1.Container {
	c := qctr(name, reqs, lims)
	c.RestartPolicy = ptr.To(v1.ContainerRestartPolicyAlways)
	return c
}

func qosPod(uid string, inits []v1.Container, ctrs ...v1.Container) *v1.Pod {
	p := &v1.Pod{Spec: v1.PodSpec{InitContainers: inits, Containers: ctrs}}
	p.UID = types.UID(uid)
	return p
}

func TestPodRequestsAndLimits(t *testing.T) {
	tests := []struct {
		name               string
		pod                *v1.Pod
		reqCPU, reqMem     string
		limCPU, limMem     string
		hasLimCPU, hasLimM bool
	}{
		{name: "sum of app containers",
			pod:    qosPod("u", nil, qctr("a", qosRes("100m", "64Mi"), qosRes("200m", "128Mi")), qctr("b", qosRes("300m", "64Mi"), qosRes("", "64Mi"))),
			reqCPU: "400m", reqMem: "128Mi", limCPU: "200m", limMem: "192Mi", hasLimCPU: true, hasLimM: true},
		{name: "big init container dominates",
			pod:    qosPod("u", []v1.Container{qctr("init", qosRes("2", "1Gi"), qosRes("2", "1Gi"))}, qctr("a", qosRes("100m", "64Mi"), nil)),
			reqCPU: "2", reqMem: "1Gi", limCPU: "2", limMem: "1Gi", hasLimCPU: true, hasLimM: true},
		// The documentation's sidecar-resources example: setup 200m/64Mi,
		// sidecar 50m/64Mi, app 300m/128Mi → max(300+50, 200, 50) = 350m,
		// max(128+64, 64, 64) = 192Mi.
		{name: "sidecar adds to everything after it",
			pod: qosPod("u", []v1.Container{
				qctr("setup", qosRes("200m", "64Mi"), qosRes("", "64Mi")),
				qosSidecar("log", qosRes("50m", "64Mi"), qosRes("", "64Mi")),
			}, qctr("app", qosRes("300m", "128Mi"), qosRes("", "128Mi"))),
			reqCPU: "350m", reqMem: "192Mi", limMem: "192Mi", hasLimM: true},
		{name: "init after a sidecar counts the sidecar",
			pod: qosPod("u", []v1.Container{
				qosSidecar("log", qosRes("500m", ""), nil),
				qctr("migrate", qosRes("1", ""), nil),
			}, qctr("app", qosRes("100m", ""), nil)),
			reqCPU: "1500m"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			reqs, lims := PodRequestsAndLimits(tt.pod)
			assert.Equal(t, milli(tt.reqCPU), reqs.Cpu().MilliValue(), "cpu request")
			if tt.reqMem != "" {
				assert.Equal(t, bytesOf(tt.reqMem), reqs.Memory().Value(), "memory request")
			}
			_, ok := lims[v1.ResourceCPU]
			assert.Equal(t, tt.hasLimCPU, ok)
			if tt.hasLimCPU {
				assert.Equal(t, milli(tt.limCPU), lims.Cpu().MilliValue(), "cpu limit")
			}
			_, ok = lims[v1.ResourceMemory]
			assert.Equal(t, tt.hasLimM, ok)
			if tt.hasLimM {
				assert.Equal(t, bytesOf(tt.limMem), lims.Memory().Value(), "memory limit")
			}
		})
	}
}

func TestContainerOOMScoreAdj(t *testing.T) {
	const gi = int64(1) << 30
	burst := func(ctrs ...v1.Container) *v1.Pod { return qosPod("b", nil, ctrs...) }
	tests := []struct {
		name     string
		pod      *v1.Pod
		c        int // index into containers; -1 = first init container
		capacity int64
		want     int64
	}{
		{name: "guaranteed", pod: qosPod("g", nil, qctr("a", qosRes("1", "1Gi"), qosRes("1", "1Gi"))), capacity: 16 * gi, want: -997},
		{name: "besteffort", pod: qosPod("e", nil, qctr("a", nil, nil)), capacity: 16 * gi, want: 1000},
		{name: "burstable 1Gi of 16Gi", pod: burst(qctr("a", qosRes("", "1Gi"), nil)), capacity: 16 * gi, want: 938},
		{name: "burstable without memory request clamps to 999", pod: burst(qctr("a", qosRes("100m", ""), nil)), capacity: 16 * gi, want: 999},
		{name: "burstable near capacity clamps to 3", pod: burst(qctr("a", qosRes("", "16Gi"), qosRes("", "32Gi"))), capacity: 16 * gi, want: 3},
		{name: "burstable 998 of 1000", pod: burst(qctr("a", qosRes("", "998"), nil)), capacity: 1000, want: 3},
		{name: "burstable 996 of 1000", pod: burst(qctr("a", qosRes("", "996"), nil)), capacity: 1000, want: 4},
		{name: "sidecar follows the smallest app request",
			pod: qosPod("s", []v1.Container{qosSidecar("log", qosRes("", "64Mi"), nil)},
				qctr("a", qosRes("", "4Gi"), nil), qctr("b", qosRes("", "2Gi"), nil)),
			c: -1, capacity: 16 * gi, want: 875},
		{name: "sidecar with a bigger request keeps its own",
			pod: qosPod("s", []v1.Container{qosSidecar("log", qosRes("", "8Gi"), nil)}, qctr("a", qosRes("", "1Gi"), nil)),
			c:   -1, capacity: 16 * gi, want: 500},
		{name: "node critical", pod: func() *v1.Pod {
			p := burst(qctr("a", qosRes("", "1Gi"), nil))
			p.Spec.PriorityClassName = "system-node-critical"
			return p
		}(), capacity: 16 * gi, want: -997},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := &tt.pod.Spec.InitContainers
			var target *v1.Container
			if tt.c < 0 {
				target = &(*c)[0]
			} else {
				target = &tt.pod.Spec.Containers[tt.c]
			}
			assert.Equal(t, tt.want, ContainerOOMScoreAdj(tt.pod, target, tt.capacity))
		})
	}
}

func TestPodHostname_Truncated(t *testing.T) {
	pod := &v1.Pod{}
	pod.Name = "a123456789b123456789c123456789d123456789e123456789f123456789g12-x"
	assert.Equal(t, "a123456789b123456789c123456789d123456789e123456789f123456789g12", PodHostname(pod))
}

func TestLinuxResources(t *testing.T) {
	cases := []struct {
		name                    string
		yaml                    string
		shares, quota, memLimit int64
	}{
		{"best effort", `{}`, 2, 0, 0},
		{"request only", `{requests: {cpu: 100m}}`, 102, 0, 0},
		{"limit only sets shares from the limit", `{limits: {cpu: "1"}}`, 1024, 100000, 0},
		{"tiny limit gets the minimum quota", `{limits: {cpu: 5m, memory: 1Gi}}`, 5, 1000, 1 << 30},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			pod := testPod(t, "apiVersion: v1\nkind: Pod\nmetadata: {name: r}\nspec:\n  containers: [{name: c, image: reg/c:1, resources: "+tc.yaml+"}]\n")
			r := LinuxResources(&pod.Spec.Containers[0])
			assert.Equal(t, tc.shares, r.CpuShares, "shares")
			assert.Equal(t, tc.quota, r.CpuQuota, "quota")
			assert.Equal(t, tc.memLimit, r.MemoryLimitInBytes, "memory")
		})
	}
}

func TestMilliCPUConversions(t *testing.T) {
	for m, want := range map[int64]int64{0: 2, 1: 2, 100: 102, 250: 256, 1000: 1024, 1000000: 262144} {
		assert.Equal(t, want, MilliCPUToShares(m), "shares(%dm)", m)
	}
	for m, want := range map[int64]int64{0: 0, 5: 1000, 10: 1000, 500: 50000, 2000: 200000} {
		assert.Equal(t, want, MilliCPUToQuota(m, 100000), "quota(%dm)", m)
	}
}
