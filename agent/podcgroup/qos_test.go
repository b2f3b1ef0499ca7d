package podcgroup

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/minikubelet/minikubelet/agent/podspec"
	"github.com/minikubelet/minikubelet/cgroups"
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

func qctr(name string, reqs, lims v1.ResourceList) v1.Container {
	return v1.Container{Name: name, Image: "busybox", Resources: v1.ResourceRequirements{Requests: reqs, Limits: lims}}
}

func qosPod(uid string, inits []v1.Container, ctrs ...v1.Container) *v1.Pod {
	p := &v1.Pod{Spec: v1.PodSpec{InitContainers: inits, Containers: ctrs}}
	p.UID = types.UID(uid)
	return p
}

func TestPodCgroupResources(t *testing.T) {
	unl := int64(cgroups.Unlimited)
	tests := []struct {
		name      string
		pod       *v1.Pod
		pidsLimit int64
		qos       v1.PodQOSClass
		want      cgroups.Resources
	}{
		{name: "guaranteed",
			pod: qosPod("g", nil, qctr("a", qosRes("700m", "200Mi"), qosRes("700m", "200Mi")),
				qctr("b", qosRes("300m", "100Mi"), qosRes("300m", "100Mi"))),
			pidsLimit: 4096, qos: v1.PodQOSGuaranteed,
			want: cgroups.Resources{CPUShares: ptr.To[uint64](1024), CPUQuota: ptr.To[int64](100000),
				CPUPeriod: ptr.To[uint64](100000), MemoryLimit: ptr.To[int64](300 << 20), PidsLimit: ptr.To[int64](4096)}},
		{name: "burstable, every container limited",
			pod: qosPod("b", nil, qctr("a", qosRes("250m", "64Mi"), qosRes("500m", "128Mi")),
				qctr("b", qosRes("10m", "1Mi"), qosRes("5m", "1Mi"))),
			qos: v1.PodQOSBurstable,
			want: cgroups.Resources{CPUShares: ptr.To[uint64](266), CPUQuota: ptr.To[int64](50500),
				CPUPeriod: ptr.To[uint64](100000), MemoryLimit: ptr.To[int64](129 << 20), PidsLimit: &unl}},
		{name: "burstable, one container without cpu limit: no quota",
			pod: qosPod("b", nil, qctr("a", qosRes("250m", "64Mi"), qosRes("500m", "128Mi")),
				qctr("b", qosRes("100m", "64Mi"), qosRes("", "64Mi"))),
			qos: v1.PodQOSBurstable,
			want: cgroups.Resources{CPUShares: ptr.To[uint64](358), CPUQuota: &unl,
				MemoryLimit: ptr.To[int64](192 << 20), PidsLimit: &unl}},
		{name: "burstable, init container without memory limit: no memory limit",
			pod: qosPod("b", []v1.Container{qctr("init", qosRes("100m", ""), qosRes("100m", ""))},
				qctr("a", qosRes("250m", "64Mi"), qosRes("500m", "128Mi"))),
			qos: v1.PodQOSBurstable,
			want: cgroups.Resources{CPUShares: ptr.To[uint64](256), CPUQuota: ptr.To[int64](50000),
				CPUPeriod: ptr.To[uint64](100000), MemoryLimit: &unl, PidsLimit: &unl}},
		{name: "burstable, only memory request (qos-pod-4)",
			pod:  qosPod("b", nil, qctr("a", qosRes("", "200Mi"), nil), qctr("b", nil, nil)),
			qos:  v1.PodQOSBurstable,
			want: cgroups.Resources{CPUShares: ptr.To[uint64](2), CPUQuota: &unl, MemoryLimit: &unl, PidsLimit: &unl}},
		{name: "besteffort",
			pod: qosPod("e", nil, qctr("a", nil, nil)), pidsLimit: -1, qos: v1.PodQOSBestEffort,
			want: cgroups.Resources{CPUShares: ptr.To[uint64](2), CPUQuota: &unl, MemoryLimit: &unl, PidsLimit: &unl}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			require.Equal(t, tt.qos, podspec.QOSClass(tt.pod))
			got := Resources(tt.pod, tt.qos, tt.pidsLimit)
			assert.Equal(t, tt.want.String(), got.String())
		})
	}
}

func TestPodCgroupName(t *testing.T) {
	pod := qosPod("5f1c2a9e-0d1b-4c3e-8f00-1234567890ab", nil, qctr("a", nil, nil))
	tests := []struct {
		qos               v1.PodQOSClass
		cgroupfs, systemd string
	}{
		{v1.PodQOSGuaranteed, "/kubepods/pod5f1c2a9e-0d1b-4c3e-8f00-1234567890ab",
			"/kubepods.slice/kubepods-pod5f1c2a9e_0d1b_4c3e_8f00_1234567890ab.slice"},
		{v1.PodQOSBurstable, "/kubepods/burstable/pod5f1c2a9e-0d1b-4c3e-8f00-1234567890ab",
			"/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod5f1c2a9e_0d1b_4c3e_8f00_1234567890ab.slice"},
		{v1.PodQOSBestEffort, "/kubepods/besteffort/pod5f1c2a9e-0d1b-4c3e-8f00-1234567890ab",
			"/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod5f1c2a9e_0d1b_4c3e_8f00_1234567890ab.slice"},
	}
	for _, tt := range tests {
		n := Name(pod, tt.qos)
		require.NoError(t, n.Validate())
		assert.Equal(t, tt.cgroupfs, n.ToCgroupfs())
		assert.Equal(t, tt.systemd, n.ToSystemd())
	}
}

func TestNodeAndTierResources(t *testing.T) {
	r := kubepodsResources(1800, 20<<30, 0)
	assert.Equal(t, "{cpuShares=1843 memoryLimit=21474836480}", r.String())
	assert.Equal(t, "{cpuShares=2048 memoryLimit=1073741824 pidsLimit=1000}", kubepodsResources(2000, 1<<30, 1000).String())

	assert.Equal(t, "{cpuShares=2}", burstableTierResources(nil).String())
	pods := []*v1.Pod{
		qosPod("b1", nil, qctr("a", qosRes("250m", "64Mi"), nil)),
		qosPod("b2", nil, qctr("a", qosRes("500m", ""), qosRes("1", ""))),
		qosPod("g", nil, qctr("a", qosRes("1", "1Gi"), qosRes("1", "1Gi"))), // Guaranteed: not counted
		qosPod("e", nil, qctr("a", nil, nil)),
	}
	assert.Equal(t, "{cpuShares=768}", burstableTierResources(pods).String())
	assert.Equal(t, "{cpuShares=2}", bestEffortTierResources().String())
	assert.Equal(t, cgroups.KubepodsBurstable, tierName(v1.PodQOSBurstable))
}
