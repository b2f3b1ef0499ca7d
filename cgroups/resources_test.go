package cgroups

import (
	"testing"

	"github.com/containerd/cgroups/v3/cgroup2"
	"github.com/stretchr/testify/assert"
	"k8s.io/utils/ptr"
)

func TestWeightFormula_SharesToWeight(t *testing.T) {
	tests := []struct {
		shares            uint64
		linear, nonLinear uint64
	}{
		{shares: 0, linear: 1, nonLinear: 1}, // clamped to MinShares
		{shares: 2, linear: 1, nonLinear: 1},
		{shares: 102, linear: 4, nonLinear: 17},
		{shares: 1024, linear: 39, nonLinear: 100},
		{shares: 2048, linear: 79, nonLinear: 174},
		{shares: 262144, linear: 10000, nonLinear: 10000},
		{shares: 1 << 20, linear: 10000, nonLinear: 10000},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.linear, WeightLinear.SharesToWeight(tt.shares), "linear %d", tt.shares)
		assert.Equal(t, tt.nonLinear, WeightNonLinear.SharesToWeight(tt.shares), "non-linear %d", tt.shares)
	}
}

func TestResources_ToCgroup2(t *testing.T) {
	r := Resources{
		CPUShares:   ptr.To[uint64](1024),
		CPUQuota:    ptr.To[int64](50000),
		CPUPeriod:   ptr.To[uint64](100000),
		MemoryLimit: ptr.To[int64](128 << 20),
		PidsLimit:   ptr.To[int64](100),
	}
	got := r.toCgroup2(WeightLinear)
	assert.Equal(t, uint64(39), *got.CPU.Weight)
	assert.Equal(t, cgroup2.CPUMax("50000 100000"), got.CPU.Max)
	assert.Equal(t, int64(128<<20), *got.Memory.Max)
	assert.Equal(t, int64(100), got.Pids.Max)

	unlimited := Resources{CPUQuota: ptr.To[int64](Unlimited), MemoryLimit: ptr.To[int64](Unlimited), PidsLimit: ptr.To[int64](0)}
	got = unlimited.toCgroup2(WeightNonLinear)
	assert.Nil(t, got.CPU.Weight)
	assert.Equal(t, cgroup2.CPUMax("max 100000"), got.CPU.Max)
	assert.Nil(t, got.Memory, "systemd's and the kernel's default is no limit")
	assert.Equal(t, int64(-1), got.Pids.Max)

	assert.Equal(t, &cgroup2.Resources{}, Resources{}.toCgroup2(WeightLinear))
	assert.Equal(t, "{cpuShares=1024 cpuQuota=50000 cpuPeriod=100000 memoryLimit=134217728 pidsLimit=100}", r.String())
}

func TestResources_ToSpec(t *testing.T) {
	s := Resources{CPUQuota: ptr.To[int64](0), MemoryLimit: ptr.To[int64](0), PidsLimit: ptr.To[int64](-1)}.toSpec()
	assert.Equal(t, int64(-1), *s.CPU.Quota)
	assert.Equal(t, int64(-1), *s.Memory.Limit)
	assert.Nil(t, s.Pids, "cgroup1 writes only positive pids limits; the v1 writer writes max itself")
	assert.Nil(t, Resources{}.toSpec().CPU)
}

// The slice properties are the kubelet's (runc's systemd manager on cgroup
// v2); a removed limit is infinity, never a value systemd would re-apply.
func TestUnitProperties(t *testing.T) {
	tests := []struct {
		name string
		r    Resources
		want []unitProperty
	}{
		{name: "none", r: Resources{}},
		{
			name: "guaranteed 500m 64Mi",
			r:    Resources{CPUShares: ptr.To[uint64](512), CPUQuota: ptr.To[int64](50000), CPUPeriod: ptr.To[uint64](100000), MemoryLimit: ptr.To[int64](64 << 20)},
			want: []unitProperty{{"CPUWeight", uint64(20)}, {"CPUQuotaPerSecUSec", uint64(500000)}, {"CPUQuotaPeriodUSec", uint64(100000)}, {"MemoryMax", uint64(64 << 20)}},
		},
		{
			name: "unlimited quota, memory and pids are infinity (not a 1% quota)",
			r:    Resources{CPUShares: ptr.To[uint64](2), CPUQuota: ptr.To[int64](Unlimited), MemoryLimit: ptr.To[int64](Unlimited), PidsLimit: ptr.To[int64](0)},
			want: []unitProperty{{"CPUWeight", uint64(1)}, {"CPUQuotaPerSecUSec", usecInfinity}, {"CPUQuotaPeriodUSec", uint64(100000)}, {"MemoryMax", usecInfinity}, {"TasksMax", usecInfinity}},
		},
		{
			name: "a quota below 1% of a CPU is rounded up to 10ms per second",
			r:    Resources{CPUQuota: ptr.To[int64](500)},
			want: []unitProperty{{"CPUQuotaPerSecUSec", uint64(10000)}, {"CPUQuotaPeriodUSec", uint64(100000)}},
		},
		{
			name: "own period",
			r:    Resources{CPUQuota: ptr.To[int64](25000), CPUPeriod: ptr.To[uint64](50000), PidsLimit: ptr.To[int64](100)},
			want: []unitProperty{{"CPUQuotaPerSecUSec", uint64(500000)}, {"CPUQuotaPeriodUSec", uint64(50000)}, {"TasksMax", uint64(100)}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, unitProperties(tt.r, WeightLinear))
		})
	}
	assert.Equal(t, []unitProperty{{"CPUWeight", uint64(100)}}, unitProperties(Resources{CPUShares: ptr.To[uint64](1024)}, WeightNonLinear))
}
