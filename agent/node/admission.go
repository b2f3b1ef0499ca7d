package node

// Node admission: the kubelet's last word on a pod before any of it is
// created (k8s pkg/kubelet/lifecycle/predicate.go, which runs the scheduler's
// AdmissionCheck: noderesources, nodeaffinity, nodename, nodeports). A pod
// that fails ends Failed with the kubelet's reason and message, and nothing
// of it reaches the runtime.
//
// Checks, in the kubelet's order; the first failure is the one reported:
//
//  1. the pod's kubernetes.io/os label, if any, is this OS;
//  2. pod count, cpu, memory, ephemeral-storage: the pod's effective
//     requests plus those of the admitted, non-terminal pods fit the
//     node's allocatable;
//  3. nodeSelector and required node affinity match the node's labels;
//  4. spec.nodeName is empty or this node;
//  5. no hostPort is taken by an admitted, non-terminal pod.
//
// Not checked, unlike the kubelet: taints (a lone node has none), extended
// resources, the OS field and supplementalGroupsPolicy
// (both refused in validation), and the other admit handlers (eviction
// pressure, sysctls, topology manager, AppArmor).

import (
	"fmt"
	"net/netip"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/minikubelet/minikubelet/agent/manifest"
	"github.com/minikubelet/minikubelet/agent/podspec"
)

// Admission failure reasons, the kubelet's (pkg/kubelet/lifecycle/predicate.go
// and the scheduler plugin names).
const (
	admitReasonOutOfCPU     = "OutOfcpu"
	admitReasonOutOfMemory  = "OutOfmemory"
	admitReasonOutOfStorage = "OutOfephemeral-storage"
	admitReasonOutOfPods    = "OutOfpods"
	admitReasonNodeAffinity = "NodeAffinity"
	admitReasonNodeName     = "NodeName"
	admitReasonNodePorts    = "NodePorts"
	admitReasonOSSelector   = "PodOSSelectorNodeLabelDoesNotMatch"
	admitReasonOSField      = "PodOSNotSupported"
)

// The scheduler plugins' failure texts, which the kubelet puts in
// "Predicate <plugin> failed: <text>".
const (
	errReasonNodeAffinity = "node(s) didn't match Pod's node affinity/selector"
	errReasonNodeName     = "node(s) didn't match the requested node name"
	errReasonNodePorts    = "node(s) didn't have free ports for the requested pod ports"
)

// Admit decides whether pod may run next to the already admitted pods. On rejection it returns the kubelet's reason and message.
//
// admitted are the pods accepted earlier whose workers still run (including
// pods being torn down, which the kubelet also counts); those in phase
// Succeeded or Failed, and pod itself (same UID: an update), do not count.
// The message is the kubelet's admission message; RejectedStatus adds the
// "Pod was rejected: " prefix the pod's status carries.
func Admit(node Info, pod *v1.Pod, admitted []*v1.Pod) (ok bool, reason, message string) {
	// Step 1: OS label. The kubelet compares the pod's (not its
	// nodeSelector's) kubernetes.io/os label with its own OS.
	if osLabel, set := pod.Labels[v1.LabelOSStable]; set && osLabel != runtime.GOOS {
		return false, admitReasonOSSelector, "Failed to admit pod as the `kubernetes.io/os` label doesn't match node label"
	}

	others := make([]*v1.Pod, 0, len(admitted))
	for _, p := range admitted {
		if p.UID == pod.UID || p.Status.Phase == v1.PodSucceeded || p.Status.Phase == v1.PodFailed {
			continue
		}
		others = append(others, p)
	}

	// Step 2: resources. Pod count first, then cpu, then memory, as the
	// scheduler's fitsRequest lists them.
	if r, m, fail := fitsResources(node, pod, others); fail {
		return false, r, m
	}

	// Step 3: nodeSelector and required node affinity.
	if !matchesNodeSelectorAndAffinity(pod, node) {
		return false, admitReasonNodeAffinity, predicateFailed(admitReasonNodeAffinity, errReasonNodeAffinity)
	}

	// Step 4: nodeName.
	if pod.Spec.NodeName != "" && pod.Spec.NodeName != node.Name {
		return false, admitReasonNodeName, predicateFailed(admitReasonNodeName, errReasonNodeName)
	}

	// Step 5: host ports.
	if hostPortsConflict(pod, others) {
		return false, admitReasonNodePorts, predicateFailed(admitReasonNodePorts, errReasonNodePorts)
	}
	return true, "", ""
}

// AdmitOS refuses a pod whose spec.os.name is not this node's OS, with
// the kubelet's reason and message (pkg/kubelet/lifecycle/predicate.go
// rejectPodAdmissionBasedOnOSField). Unlike the resource predicates it
// holds without node allocatable too: a Windows pod never runs here.
func AdmitOS(pod *v1.Pod) (reason, message string) {
	if pod.Spec.OS != nil && string(pod.Spec.OS.Name) != runtime.GOOS {
		return admitReasonOSField, "Failed to admit pod as the OS field doesn't match node OS"
	}
	return "", ""
}

// predicateFailed is the kubelet's PredicateFailureError text.
func predicateFailed(plugin, reason string) string {
	return fmt.Sprintf("Predicate %s failed: %s", plugin, reason)
}

// insufficient is the kubelet's InsufficientResourceError text; cpu is in
// millicores, memory and ephemeral-storage in bytes, capacity is the
// node's allocatable.
func insufficient(name v1.ResourceName, requested, used, capacity int64) string {
	return fmt.Sprintf("Node didn't have enough resource: %s, requested: %d, used: %d, capacity: %d", name, requested, used, capacity)
}

// fitsResources checks pod count, cpu, memory and ephemeral-storage, and
// returns the first shortage's reason and message (fail = true) in the
// scheduler's order. A node without an ephemeral-storage capacity (no
// Storage given to Detect) does not check it.
func fitsResources(node Info, pod *v1.Pod, others []*v1.Pod) (reason, message string, fail bool) {
	maxPods := node.Allocatable.Pods().Value()
	if int64(len(others))+1 > maxPods {
		return admitReasonOutOfPods, insufficient(v1.ResourcePods, 1, int64(len(others)), maxPods), true
	}
	req := effectivePodRequests(pod)
	// A pod that requests nothing always fits, even on an overcommitted node.
	if req.milliCPU == 0 && req.memory == 0 && req.storage == 0 {
		return "", "", false
	}
	var used podRequests
	for _, p := range others {
		used = used.plus(effectivePodRequests(p))
	}
	allocCPU := node.Allocatable.Cpu().MilliValue()
	if req.milliCPU > 0 && req.milliCPU > allocCPU-used.milliCPU {
		return admitReasonOutOfCPU, insufficient(v1.ResourceCPU, req.milliCPU, used.milliCPU, allocCPU), true
	}
	allocMem := node.Allocatable.Memory().Value()
	if req.memory > 0 && req.memory > allocMem-used.memory {
		return admitReasonOutOfMemory, insufficient(v1.ResourceMemory, req.memory, used.memory, allocMem), true
	}
	if allocStorage, ok := node.Allocatable[v1.ResourceEphemeralStorage]; ok && req.storage > 0 && req.storage > allocStorage.Value()-used.storage {
		return admitReasonOutOfStorage, insufficient(v1.ResourceEphemeralStorage, req.storage, used.storage, allocStorage.Value()), true
	}
	return "", "", false
}

// podRequests is a pod's or container's cpu, memory and ephemeral-storage
// requests.
type podRequests struct {
	// milliCPU is in millicores, memory and storage (ephemeral-storage)
	// in bytes.
	milliCPU, memory, storage int64
}

// requestsOf reads a container's requests (defaulting has already copied
// limits into missing requests).
func requestsOf(c *v1.Container) podRequests {
	return podRequests{
		milliCPU: c.Resources.Requests.Cpu().MilliValue(),
		memory:   c.Resources.Requests.Memory().Value(),
		storage:  c.Resources.Requests.StorageEphemeral().Value(),
	}
}

func (r podRequests) plus(o podRequests) podRequests {
	return podRequests{milliCPU: r.milliCPU + o.milliCPU, memory: r.memory + o.memory, storage: r.storage + o.storage}
}

// atLeast is the per-resource maximum of r and o.
func (r podRequests) atLeast(o podRequests) podRequests {
	return podRequests{milliCPU: max(r.milliCPU, o.milliCPU), memory: max(r.memory, o.memory), storage: max(r.storage, o.storage)}
}

// effectivePodRequests is the pod's effective request (kubelet-facts §2.5,
// component-helpers PodRequests), per resource:
//
//	max( sum(app containers) + sum(sidecars),
//	     max over init containers i of: init_i + sum(sidecars before i),
//	                                    or, for sidecar i, sum(sidecars up to i) )
//
// Pod overhead and pod-level resources are refused in validation, so they
// add nothing here. The same figure sizes the pod cgroup (§5.6).
func effectivePodRequests(pod *v1.Pod) podRequests {
	var sum podRequests
	for i := range pod.Spec.Containers {
		sum = sum.plus(requestsOf(&pod.Spec.Containers[i]))
	}
	// sidecars is the running total of the sidecars seen so far; they keep
	// running while later init containers and the app containers run.
	var sidecars, initPeak podRequests
	for i := range pod.Spec.InitContainers {
		c := &pod.Spec.InitContainers[i]
		req := requestsOf(c)
		if manifest.IsSidecar(c) {
			sum = sum.plus(req)
			sidecars = sidecars.plus(req)
			req = sidecars
		} else {
			req = req.plus(sidecars)
		}
		initPeak = initPeak.atLeast(req)
	}
	return sum.atLeast(initPeak)
}

// matchesNodeSelectorAndAffinity is the scheduler's required node affinity
// (component-helpers GetRequiredNodeAffinity): every nodeSelector pair is a
// node label, and, when required node affinity is set, at least one term
// matches.
func matchesNodeSelectorAndAffinity(pod *v1.Pod, node Info) bool {
	for k, v := range pod.Spec.NodeSelector {
		if got, ok := node.Labels[k]; !ok || got != v {
			return false
		}
	}
	aff := pod.Spec.Affinity
	if aff == nil || aff.NodeAffinity == nil || aff.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution == nil {
		return true
	}
	// Terms are ORed; an empty list matches no node.
	for _, term := range aff.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms {
		if matchesNodeSelectorTerm(term, node) {
			return true
		}
	}
	return false
}

// matchesNodeSelectorTerm ANDs a term's requirements; a term without any
// matches nothing, and so does a malformed requirement.
func matchesNodeSelectorTerm(term v1.NodeSelectorTerm, node Info) bool {
	if len(term.MatchExpressions) == 0 && len(term.MatchFields) == 0 {
		return false
	}
	for _, req := range term.MatchExpressions {
		if !matchesRequirement(req, node.Labels) {
			return false
		}
	}
	// The only field a node selector may name is metadata.name.
	fields := map[string]string{"metadata.name": node.Name}
	for _, req := range term.MatchFields {
		if req.Key != "metadata.name" || (req.Operator != v1.NodeSelectorOpIn && req.Operator != v1.NodeSelectorOpNotIn) {
			return false
		}
		if !matchesRequirement(req, fields) {
			return false
		}
	}
	return true
}

// matchesRequirement evaluates one requirement against labels.
func matchesRequirement(req v1.NodeSelectorRequirement, labels map[string]string) bool {
	val, has := labels[req.Key]
	switch req.Operator {
	case v1.NodeSelectorOpIn:
		return has && slices.Contains(req.Values, val)
	case v1.NodeSelectorOpNotIn:
		return !has || !slices.Contains(req.Values, val)
	case v1.NodeSelectorOpExists:
		return has
	case v1.NodeSelectorOpDoesNotExist:
		return !has
	case v1.NodeSelectorOpGt, v1.NodeSelectorOpLt:
		if !has || len(req.Values) != 1 {
			return false
		}
		want, err := strconv.ParseInt(req.Values[0], 10, 64)
		if err != nil {
			return false
		}
		got, err := strconv.ParseInt(val, 10, 64)
		if err != nil {
			return false
		}
		if req.Operator == v1.NodeSelectorOpGt {
			return got > want
		}
		return got < want
	}
	return false
}

// hostPortKey is one host port in use.
type hostPortKey struct {
	proto v1.Protocol
	port  int32
}

// podHostPorts lists the host ports a pod holds for its lifetime: those of
// its app containers and sidecars (the scheduler's GetHostPorts; a regular
// init container's ports do not count). The value is the host IP, the
// zero Addr standing for all addresses.
func podHostPorts(pod *v1.Pod) map[hostPortKey][]netip.Addr {
	out := map[hostPortKey][]netip.Addr{}
	add := func(c *v1.Container) {
		for _, p := range c.Ports {
			if p.HostPort <= 0 {
				continue
			}
			proto := p.Protocol
			if proto == "" {
				proto = v1.ProtocolTCP
			}
			k := hostPortKey{proto, p.HostPort}
			out[k] = append(out[k], hostIPOf(p.HostIP))
		}
	}
	for i := range pod.Spec.InitContainers {
		if manifest.IsSidecar(&pod.Spec.InitContainers[i]) {
			add(&pod.Spec.InitContainers[i])
		}
	}
	for i := range pod.Spec.Containers {
		add(&pod.Spec.Containers[i])
	}
	return out
}

// hostIPOf parses a hostIP; "", 0.0.0.0 and :: (and anything unparsable,
// which validation refuses) become the zero Addr: all addresses. The
// scheduler treats only ""/0.0.0.0 as a wildcard; :: is one too here, as in
// validateHostPorts, because it binds IPv4 as well on Linux by default.
func hostIPOf(s string) netip.Addr {
	a, err := netip.ParseAddr(strings.TrimSpace(s))
	if err != nil || a.IsUnspecified() {
		return netip.Addr{}
	}
	return a.Unmap()
}

// hostPortsConflict reports whether pod wants a (protocol, port) another pod
// holds on the same host IP, where "all addresses" clashes with any IP.
func hostPortsConflict(pod *v1.Pod, others []*v1.Pod) bool {
	want := podHostPorts(pod)
	if len(want) == 0 {
		return false
	}
	for _, o := range others {
		for k, ips := range podHostPorts(o) {
			for _, a := range want[k] {
				for _, b := range ips {
					if !a.IsValid() || !b.IsValid() || a == b {
						return true
					}
				}
			}
		}
	}
	return false
}

// RejectedStatus is the status of a pod admission refused, as the kubelet's
// rejectPod sets it: phase Failed, the admission reason, the message
// prefixed with "Pod was rejected: ", the QoS class, and the start time the
// status manager stamps. No container ran, so there are no container
// statuses (the kubelet reports none either).
//
// Unlike the kubelet, which writes no kubelet-owned conditions for a
// rejected pod, the conditions status.go computes for a Failed pod that
// never got a sandbox are included, so every pod status minikubelet shows
// carries the same five conditions. Initialized reads as the kubelet's
// generator would with no container status: "containers with unknown
// status: [...]".
func RejectedStatus(pod *v1.Pod, reason, message string, now time.Time) v1.PodStatus {
	t := metav1.NewTime(now)
	cond := func(typ v1.PodConditionType, s v1.ConditionStatus, reason, msg string) v1.PodCondition {
		return v1.PodCondition{Type: typ, Status: s, Reason: reason, Message: msg, LastTransitionTime: t, ObservedGeneration: pod.Generation}
	}
	initialized := cond(v1.PodInitialized, v1.ConditionTrue, "", "")
	if n := len(pod.Spec.InitContainers); n > 0 {
		names := make([]string, 0, n)
		for _, c := range pod.Spec.InitContainers {
			names = append(names, c.Name)
		}
		initialized = cond(v1.PodInitialized, v1.ConditionFalse, "ContainersNotInitialized",
			fmt.Sprintf("containers with unknown status: [%s]", strings.Join(names, " ")))
	}
	return v1.PodStatus{
		// The generation rejected (KEP 5067: a rejection sets it too).
		ObservedGeneration: pod.Generation,
		Phase:              v1.PodFailed,
		Reason:             reason,
		Message:            "Pod was rejected: " + message,
		QOSClass:           podspec.QOSClass(pod),
		StartTime:          &t,
		Conditions: []v1.PodCondition{
			cond(v1.PodReadyToStartContainers, v1.ConditionFalse, "", ""),
			initialized,
			cond(v1.ContainersReady, v1.ConditionFalse, "PodFailed", ""),
			cond(v1.PodReady, v1.ConditionFalse, "PodFailed", ""),
			cond(v1.PodScheduled, v1.ConditionTrue, "", ""),
		},
	}
}
