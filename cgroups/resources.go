package cgroups

import (
	"fmt"
	"strings"

	"github.com/containerd/cgroups/v3/cgroup2"
	specs "github.com/opencontainers/runtime-spec/specs-go"
)

// Limits of the cpu controller (kubelet-facts §5.4).
const (
	// MinShares and MaxShares bound cgroup v1 cpu.shares.
	MinShares = 2
	MaxShares = 262144
	// MinWeight and MaxWeight bound cgroup v2 cpu.weight.
	MinWeight = 1
	MaxWeight = 10000
	// DefaultCPUPeriod is the CFS period in µs (100 ms) used when only a
	// quota is given.
	DefaultCPUPeriod = 100000
	// Unlimited, as a CPUQuota, MemoryLimit or PidsLimit, removes the limit
	// (cgroup v1 -1, cgroup v2 "max").
	Unlimited = -1
)

// Resources is what one cgroup gets, in cgroup v1 units; the v2 writer
// converts. A nil field leaves the cgroup's current value alone.
type Resources struct {
	// CPUShares is cpu.shares (v1) and, converted, cpu.weight (v2).
	CPUShares *uint64
	// CPUQuota is the CFS quota in µs per CPUPeriod; Unlimited (or any value
	// ≤ 0) removes the quota.
	CPUQuota *int64
	// CPUPeriod is the CFS period in µs; on v2 it is written together with
	// CPUQuota (DefaultCPUPeriod when nil) and ignored without it.
	CPUPeriod *uint64
	// MemoryLimit is memory.limit_in_bytes (v1) / memory.max (v2) in bytes;
	// Unlimited (or any value ≤ 0) removes the limit.
	MemoryLimit *int64
	// PidsLimit is pids.max; Unlimited (or any value ≤ 0) removes the limit.
	PidsLimit *int64
}

// String renders the set fields, for logs and test failures.
func (r Resources) String() string {
	var parts []string
	if r.CPUShares != nil {
		parts = append(parts, fmt.Sprintf("cpuShares=%d", *r.CPUShares))
	}
	if r.CPUQuota != nil {
		parts = append(parts, fmt.Sprintf("cpuQuota=%d", *r.CPUQuota))
	}
	if r.CPUPeriod != nil {
		parts = append(parts, fmt.Sprintf("cpuPeriod=%d", *r.CPUPeriod))
	}
	if r.MemoryLimit != nil {
		parts = append(parts, fmt.Sprintf("memoryLimit=%d", *r.MemoryLimit))
	}
	if r.PidsLimit != nil {
		parts = append(parts, fmt.Sprintf("pidsLimit=%d", *r.PidsLimit))
	}
	return "{" + strings.Join(parts, " ") + "}"
}

// WeightFormula converts cpu.shares into cgroup v2 cpu.weight.
type WeightFormula int

const (
	// WeightLinear is 1 + ((shares−2)·9999)/262142: the kubelet's own helper
	// (KEP-2254) and runc before 1.3.2, which is what the target's
	// containerd 1.6 with Debian 12's runc 1.1.5 applies to the container
	// cgroups below the pod cgroup. 1024 shares → 39. The default, so pod
	// and container cgroups agree on the target.
	WeightLinear WeightFormula = iota
	// WeightNonLinear is the mapping of newer runc/crun/opencontainers
	// cgroups (and containerd/cgroups v3.1): 1024 shares → 100. Choose it on
	// hosts whose runtime uses it (runc ≥ 1.3.2 / 1.4).
	WeightNonLinear
)

// String names the formula.
func (f WeightFormula) String() string {
	if f == WeightNonLinear {
		return "non-linear"
	}
	return "linear"
}

// SharesToWeight converts cpu.shares to cpu.weight with f; shares outside
// [MinShares, MaxShares] are clamped first.
func (f WeightFormula) SharesToWeight(shares uint64) uint64 {
	shares = min(max(shares, MinShares), MaxShares)
	if f == WeightNonLinear {
		// Same as runc's ConvertCPUSharesToCgroupV2Value since 1.3.2.
		return cgroup2.ConvertCPUSharesToCgroupV2Value(shares)
	}
	return 1 + ((shares-MinShares)*(MaxWeight-MinWeight))/(MaxShares-MinShares)
}

// toSpec converts r for the cgroup1 controllers. Pids ≤ 0 are handled by
// the v1 writer itself (cgroup1 only writes positive limits).
func (r Resources) toSpec() *specs.LinuxResources {
	out := &specs.LinuxResources{}
	if r.CPUShares != nil || r.CPUQuota != nil || r.CPUPeriod != nil {
		out.CPU = &specs.LinuxCPU{Shares: r.CPUShares, Period: r.CPUPeriod}
		if r.CPUQuota != nil {
			q := *r.CPUQuota
			if q <= 0 {
				q = Unlimited
			}
			out.CPU.Quota = &q
		}
	}
	if r.MemoryLimit != nil {
		m := *r.MemoryLimit
		if m <= 0 {
			m = Unlimited
		}
		out.Memory = &specs.LinuxMemory{Limit: &m}
	}
	if r.PidsLimit != nil && *r.PidsLimit > 0 {
		out.Pids = &specs.LinuxPids{Limit: r.PidsLimit}
	}
	return out
}

// toCgroup2 converts r for containerd's cgroup2 package, which writes the
// cgroup v2 files (the systemd driver's unit properties come from
// unitProperties). Unlimited memory is left out: cgroup2.Memory cannot say
// "max"; the v2 writer writes it itself.
func (r Resources) toCgroup2(f WeightFormula) *cgroup2.Resources {
	out := &cgroup2.Resources{}
	if r.CPUShares != nil || r.CPUQuota != nil {
		out.CPU = &cgroup2.CPU{}
		if r.CPUShares != nil {
			w := f.SharesToWeight(*r.CPUShares)
			out.CPU.Weight = &w
		}
		if r.CPUQuota != nil {
			out.CPU.Max = cpuMax(*r.CPUQuota, r.CPUPeriod)
		}
	}
	if r.MemoryLimit != nil && *r.MemoryLimit > 0 {
		out.Memory = &cgroup2.Memory{Max: r.MemoryLimit}
	}
	if r.PidsLimit != nil {
		out.Pids = &cgroup2.Pids{Max: *r.PidsLimit}
		if *r.PidsLimit <= 0 {
			out.Pids.Max = Unlimited
		}
	}
	return out
}

// cpuMax renders cpu.max: "<quota|max> <period>".
func cpuMax(quota int64, period *uint64) cgroup2.CPUMax {
	p := uint64(DefaultCPUPeriod)
	if period != nil {
		p = *period
	}
	var q *int64
	if quota > 0 {
		q = &quota
	}
	return cgroup2.NewCPUMax(q, &p)
}
