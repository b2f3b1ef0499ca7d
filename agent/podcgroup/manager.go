package podcgroup

import (
	"errors"
	"fmt"
	"log/slog"
	"math"
	"os"
	"strconv"
	"strings"
	"sync"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/utils/ptr"

	"github.com/minikubelet/minikubelet/agent/podspec"
	"github.com/minikubelet/minikubelet/cgroups"
)

// Manager creates, updates and removes the kubepods hierarchy and the pod
// cgroups through a cgroups driver. It is a cheap value: the engine builds
// one per use from its driver and config (which its tests swap after the
// engine is built), and keeps the state that must outlive a use in a
// BurstableTier of its own.
type Manager struct {
	// Cgroups is the driver; nil: no cgroups, and every method does
	// nothing.
	Cgroups cgroups.Manager
	// Allocatable is the node's allocatable resources: kubepods' CPU
	// shares and memory limit (nil: the minimum shares, no limit).
	Allocatable v1.ResourceList
	// NodePidsLimit is pids.max of kubepods (0: unlimited).
	NodePidsLimit int64
	// PodPidsLimit is pids.max of every pod cgroup (-1 or 0: unlimited).
	PodPidsLimit int64
	// Burstable remembers the burstable tier's last written shares.
	Burstable *BurstableTier
	// Logger reports a failed update of the burstable tier, which the
	// next relist retries.
	Logger *slog.Logger
}

// BurstableTier remembers the shares last written to kubepods/burstable,
// so that a relist that finds the same sum writes nothing. The zero value
// is ready; it is safe for concurrent use.
type BurstableTier struct {
	mu   sync.Mutex
	last int64
}

// EnsureNode creates the kubepods hierarchy with the node's allocatable
// CPU and memory (kubelet-facts §5.6): kubepods, then the burstable and
// besteffort tiers. It returns the kubepods path. Without a driver it
// does nothing. The burstable tier is created without touching its
// shares: other agents' pods may be running; the engine sets them from
// the runtime (UpdateBurstableTier).
func (m Manager) EnsureNode() (string, error) {
	if m.Cgroups == nil {
		return "", nil
	}
	var milli, mem int64
	if m.Allocatable != nil {
		milli = m.Allocatable.Cpu().MilliValue()
		mem = m.Allocatable.Memory().Value()
	}
	if err := m.Cgroups.Ensure(cgroups.Kubepods, kubepodsResources(milli, mem, m.NodePidsLimit)); err != nil {
		return "", fmt.Errorf("create the kubepods cgroup: %w", err)
	}
	if err := m.Cgroups.Ensure(cgroups.KubepodsBurstable, cgroups.Resources{}); err != nil {
		return "", fmt.Errorf("create the burstable QoS cgroup: %w", err)
	}
	if err := m.Cgroups.Ensure(cgroups.KubepodsBestEffort, bestEffortTierResources()); err != nil {
		return "", fmt.Errorf("create the besteffort QoS cgroup: %w", err)
	}
	return m.Cgroups.Path(cgroups.Kubepods), nil
}

// EnsurePod creates (or updates) the pod's pod<uid> cgroup under its QoS
// tier and returns what goes into the sandbox's CgroupParent ("" without
// a driver).
func (m Manager) EnsurePod(pod *v1.Pod) (string, error) {
	if m.Cgroups == nil {
		return "", nil
	}
	qos := podspec.QOSClass(pod)
	name := Name(pod, qos)
	if err := m.Cgroups.Ensure(name, Resources(pod, qos, m.PodPidsLimit)); err != nil {
		return "", fmt.Errorf("create pod cgroup %s: %w", m.Cgroups.Path(name), err)
	}
	return m.Cgroups.Path(name), nil
}

// Destroy removes the pod's cgroup once its processes are gone.
func (m Manager) Destroy(pod *v1.Pod) error {
	if m.Cgroups == nil {
		return nil
	}
	name := Name(pod, podspec.QOSClass(pod))
	if err := m.Cgroups.Destroy(name); err != nil {
		return fmt.Errorf("remove pod cgroup %s: %w", m.Cgroups.Path(name), err)
	}
	return nil
}

// Path is the pod's cgroup as the user sees it ("" without a driver).
func (m Manager) Path(pod *v1.Pod) string {
	if m.Cgroups == nil {
		return ""
	}
	return m.Cgroups.Path(Name(pod, podspec.QOSClass(pod)))
}

// UpdateBurstableTier sets kubepods/burstable's shares from the CPU
// requests of the Burstable pods whose sandboxes are ready (the engine
// sums them from their annotations), when it changed since the last
// write. A failed write is logged and forgotten, so the next call writes
// again.
func (m Manager) UpdateBurstableTier(burstableMilli int64) {
	if m.Cgroups == nil {
		return
	}
	shares := podspec.MilliCPUToShares(burstableMilli)
	m.Burstable.mu.Lock()
	same := m.Burstable.last == shares
	m.Burstable.last = shares
	m.Burstable.mu.Unlock()
	if same {
		return
	}
	if err := m.Cgroups.Update(cgroups.KubepodsBurstable, cgroups.Resources{CPUShares: ptr.To(uint64(shares))}); err != nil {
		m.Logger.Warn("Update of the burstable QoS cgroup failed", "err", err)
		m.Burstable.mu.Lock()
		m.Burstable.last = -1
		m.Burstable.mu.Unlock()
	}
}

// CheckOOMScoreAdj tries to give the agent the kubelet's own oom_score_adj
// (-999). Where that is refused (no CAP_SYS_RESOURCE, as in some VMs and
// containers), containerd must run with restrict_oom_score_adj and every
// negative score, Guaranteed pods' −997 included, is raised to the
// runtime's own; the returned notice says so, once.
func CheckOOMScoreAdj() string {
	if err := os.WriteFile("/proc/self/oom_score_adj", []byte("-999"), 0); err != nil {
		cur, _ := os.ReadFile("/proc/self/oom_score_adj")
		return fmt.Sprintf("negative OOM scores are refused on this machine (%v): Guaranteed pods get the runtime's floor (oom_score_adj %s) instead of -997",
			err, strings.TrimSpace(string(cur)))
	}
	return ""
}

// SweepOrphans removes the pod cgroups of the QoS tiers whose pod exists
// nowhere: keep(uid) says whether the pod is still somewhere or not this
// agent's (a sandbox, a source, a worker, another agent's pod directory),
// and a cgroup that still holds processes is never removed. After each
// removal, removed(uid) cleans what else the pod left (the engine: its
// pod directory). Errors are collected; one pod's does not stop the rest.
func (m Manager) SweepOrphans(keep func(uid types.UID) bool, removed func(uid types.UID) error) error {
	if m.Cgroups == nil {
		return nil
	}
	var errs []error
	for _, tier := range []cgroups.Name{cgroups.Kubepods, cgroups.KubepodsBurstable, cgroups.KubepodsBestEffort} {
		names, err := m.Cgroups.ListPods(tier)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		for _, n := range names {
			u, ok := n.PodUID()
			if !ok || keep(types.UID(u)) {
				continue
			}
			if pids, err := m.Cgroups.Pids(n); err != nil || len(pids) > 0 {
				continue
			}
			if m.Logger != nil {
				m.Logger.Info("Removing an orphaned pod cgroup", "cgroup", m.Cgroups.Path(n))
			}
			if err := m.Cgroups.Destroy(n); err != nil {
				errs = append(errs, err)
				continue
			}
			if err := removed(types.UID(u)); err != nil {
				errs = append(errs, err)
			}
		}
	}
	return errors.Join(errs...)
}

// BurstableMilli sums the CPU requests (millicores) of the Burstable pods
// whose sandboxes are ready, from the sandboxes' annotations. A malformed
// or negative value counts as 0 and the sum saturates: what the runtime
// hands back cannot turn the tier's shares negative.
func BurstableMilli(sbs []*runtimeapi.PodSandbox) int64 {
	var sum int64
	for _, sb := range sbs {
		if sb.State == runtimeapi.PodSandboxState_SANDBOX_READY && sb.Annotations[podspec.AnnotationQOSClass] == string(v1.PodQOSBurstable) {
			m, err := strconv.ParseInt(sb.Annotations[podspec.AnnotationCPURequest], 10, 64)
			if err != nil || m < 0 {
				continue
			}
			if sum > math.MaxInt64-m {
				return math.MaxInt64
			}
			sum += m
		}
	}
	return sum
}
