package eviction

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// Reason is the status reason of an evicted pod.
const Reason = "Evicted"

// PodStats are one pod's usage, as the agent measured it.
type PodStats struct {
	// Memory is the pod's working set in bytes.
	Memory int64
	// Disk is what the pod writes on the node filesystem in bytes (logs,
	// writable layers, emptyDirs).
	Disk int64
	// Inodes are the inodes of the same (what inode pressure ranks by).
	Inodes int64
	// Processes counts the pod's processes.
	Processes int64
	// ContainerMemory and ContainerDisk are per container, by name, for
	// the eviction message.
	ContainerMemory, ContainerDisk map[string]int64
}

// Candidate is a pod that may be evicted, with its stats (nil if none
// were found: such pods go first, as in the kubelet).
type Candidate struct {
	Pod   *v1.Pod
	Stats *PodStats
}

// Rank orders candidates for eviction under pressure on signal, first to
// evict first, as the kubelet ranks them:
//
//   - memory: pods whose usage exceeds their requests, then by priority
//     (lowest first), then by usage above requests (largest first);
//   - disk (nodefs, imagefs): the same with disk usage and
//     ephemeral-storage requests; inodes by inodes used (no requests);
//   - pids: by priority, then by process count.
//
// BestEffort pods request nothing, so any usage exceeds their requests:
// they go before Burstable pods within their limits and Guaranteed pods.
func Rank(signal Signal, cands []Candidate) {
	var usage func(*PodStats) int64
	var res v1.ResourceName
	switch signal.Resource() {
	case "memory":
		usage, res = func(s *PodStats) int64 { return s.Memory }, v1.ResourceMemory
	case "ephemeral-storage":
		usage, res = func(s *PodStats) int64 { return s.Disk }, v1.ResourceEphemeralStorage
	case "inodes":
		// As the kubelet: inodes used, and nothing requests inodes (an
		// empty resource name: every request is 0), so a pod filling the
		// node's inodes with empty files goes first, not the pod with the
		// most bytes.
		usage, res = func(s *PodStats) int64 { return s.Inodes }, ""
	case "pids":
		slices.SortStableFunc(cands, func(a, b Candidate) int {
			if c := cmp.Compare(priority(a.Pod), priority(b.Pod)); c != 0 {
				return c
			}
			return cmp.Compare(processes(b.Stats), processes(a.Stats))
		})
		return
	default:
		return
	}
	slices.SortStableFunc(cands, func(a, b Candidate) int {
		// No stats: evict first.
		if a.Stats == nil || b.Stats == nil {
			return cmpBool(a.Stats == nil, b.Stats == nil)
		}
		ua, ub := usage(a.Stats), usage(b.Stats)
		ra, rb := podRequest(a.Pod, res), podRequest(b.Pod, res)
		if c := cmpBool(ua > ra, ub > rb); c != 0 {
			return c
		}
		if c := cmp.Compare(priority(a.Pod), priority(b.Pod)); c != 0 {
			return c
		}
		return cmp.Compare(ub-rb, ua-ra)
	})
}

// cmpBool orders true before false.
func cmpBool(a, b bool) int {
	switch {
	case a == b:
		return 0
	case a:
		return -1
	}
	return 1
}

func priority(p *v1.Pod) int32 {
	if p.Spec.Priority != nil {
		return *p.Spec.Priority
	}
	return 0
}

func processes(s *PodStats) int64 {
	if s == nil {
		return 0
	}
	return s.Processes
}

// podRequest is the pod's effective request of res: the larger of the sum
// over its containers and any one init container's (the scheduler's rule).
func podRequest(p *v1.Pod, res v1.ResourceName) int64 {
	var sum int64
	for _, c := range p.Spec.Containers {
		sum += request(c, res)
	}
	for _, c := range p.Spec.InitContainers {
		if r := request(c, res); r > sum {
			sum = r
		}
	}
	return sum
}

func request(c v1.Container, res v1.ResourceName) int64 {
	if res == "" {
		return 0
	}
	if q, ok := c.Resources.Requests[res]; ok {
		return q.Value()
	}
	return 0
}

// Message is the kubelet's eviction message for a pod evicted because of
// threshold t (observed available bytes), naming the containers whose
// usage exceeds their requests.
func Message(t Threshold, available int64, c Candidate) string {
	res := t.Signal.Resource()
	var b strings.Builder
	fmt.Fprintf(&b, "The node was low on resource: %s. ", res)
	fmt.Fprintf(&b, "Threshold quantity: %s, available: %s. ", t.valueString(), quantity(available))
	if c.Stats == nil {
		return strings.TrimSpace(b.String())
	}
	per := c.Stats.ContainerMemory
	rn := v1.ResourceMemory
	if res != "memory" {
		per, rn = c.Stats.ContainerDisk, v1.ResourceEphemeralStorage
	}
	for _, ctr := range c.Pod.Spec.Containers {
		used, ok := per[ctr.Name]
		if !ok {
			continue
		}
		if req := request(ctr, rn); used > req {
			fmt.Fprintf(&b, "Container %s was using %s, request is %s, has larger consumption of %s. ", ctr.Name, quantity(used), quantity(req), res)
		}
	}
	return strings.TrimSpace(b.String())
}

// valueString is the threshold's level as the kubelet prints it.
func (t Threshold) valueString() string {
	if t.Value.Quantity != nil {
		return t.Value.Quantity.String()
	}
	return fmt.Sprintf("%g%%", t.Value.Percentage*100)
}

// quantity renders bytes as the kubelet's messages do (binary SI).
func quantity(n int64) string {
	return resource.NewQuantity(n, resource.BinarySI).String()
}
