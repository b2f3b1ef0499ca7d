package daemon

import (
	"fmt"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/minikubelet/minikubelet/agent/api"
	"github.com/minikubelet/minikubelet/agent/eviction"
)

var _ api.NodeDescriber = (*Daemon)(nil)

// DescribeNode implements api.NodeDescriber: capacity and allocatable,
// the pressure conditions, the filesystems and signals at the last
// observation, the thresholds, and the last evictions.
func (d *Daemon) DescribeNode() (*api.NodeDetails, error) {
	n := d.a.NodeInfo()
	out := &api.NodeDetails{Capacity: n.Capacity.DeepCopy(), Allocatable: n.Allocatable.DeepCopy()}
	m := d.a.EvictionManager()
	if m == nil {
		return out, nil
	}
	for _, c := range m.Conditions() {
		nc := v1.NodeCondition{Type: c.Type, Status: v1.ConditionFalse, LastTransitionTime: metav1.NewTime(c.LastTransitionTime)}
		switch c.Type {
		case v1.NodeMemoryPressure:
			nc.Reason, nc.Message = "KubeletHasSufficientMemory", "kubelet has sufficient memory available"
			if c.Status {
				nc.Reason, nc.Message = "KubeletHasInsufficientMemory", "kubelet has insufficient memory available"
			}
		case v1.NodeDiskPressure:
			nc.Reason, nc.Message = "KubeletHasNoDiskPressure", "kubelet has no disk pressure"
			if c.Status {
				nc.Reason, nc.Message = "KubeletHasDiskPressure", "kubelet has disk pressure"
			}
		case v1.NodePIDPressure:
			nc.Reason, nc.Message = "KubeletHasSufficientPID", "kubelet has sufficient PID available"
			if c.Status {
				nc.Reason, nc.Message = "KubeletHasInsufficientPID", "kubelet has insufficient PID available"
			}
		}
		if c.Status {
			nc.Status = v1.ConditionTrue
		}
		out.Conditions = append(out.Conditions, nc)
	}
	obs, at, recs := m.Snapshot()
	out.ObservedAt, out.Errors = at, obs.Errors
	fsOf := func(name, path string, bytes, inodes eviction.Signal) {
		b, ok := obs.Signals[bytes]
		if !ok {
			return
		}
		i := obs.Signals[inodes]
		out.Filesystems = append(out.Filesystems, api.Filesystem{Name: name, Path: path, CapacityBytes: b.Capacity, AvailableBytes: b.Available,
			InodesTotal: i.Capacity, InodesFree: i.Available})
	}
	fsOf("nodefs", obs.NodeFsPath, eviction.SignalNodeFsAvailable, eviction.SignalNodeFsInodesFree)
	fsOf("imagefs", obs.ImageFsPath, eviction.SignalImageFsAvailable, eviction.SignalImageFsInodesFree)
	for _, s := range eviction.SignalOrder {
		if o, ok := obs.Signals[s]; ok {
			out.Signals = append(out.Signals, api.Signal{Name: string(s), Available: o.Available, Capacity: o.Capacity})
		}
	}
	for _, t := range m.Config().Thresholds {
		th := t.String()
		if t.GracePeriod > 0 {
			th += fmt.Sprintf(" (soft, grace %s)", t.GracePeriod)
		}
		out.Thresholds = append(out.Thresholds, th)
	}
	for _, r := range recs {
		out.Evictions = append(out.Evictions, api.Eviction{Pod: r.Pod, Signal: r.Signal, Time: r.Time, Message: r.Message})
	}
	return out, nil
}
