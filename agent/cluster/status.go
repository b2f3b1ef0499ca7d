package cluster

// The Node's status as the kubelet computes it (its nodestatus setters):
// capacity and allocatable, addresses, nodeInfo, and the four conditions
// MemoryPressure, DiskPressure, PIDPressure and Ready. buildStatus is pure;
// the readings it needs are taken by NodeAgent.

import (
	"fmt"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/minikubelet/minikubelet/agent/manifest"
	agentnode "github.com/minikubelet/minikubelet/agent/node"
)

// Condition reasons and messages, the kubelet's (pkg/kubelet/nodestatus).
const (
	reasonReady                = "KubeletReady"
	reasonNotReady             = "KubeletNotReady"
	reasonSufficientMemory     = "KubeletHasSufficientMemory"
	reasonInsufficientMemory   = "KubeletHasInsufficientMemory"
	reasonNoDiskPressure       = "KubeletHasNoDiskPressure"
	reasonDiskPressure         = "KubeletHasDiskPressure"
	reasonSufficientPID        = "KubeletHasSufficientPID"
	reasonInsufficientPID      = "KubeletHasInsufficientPID"
	messageReady               = "kubelet is posting ready status"
	messageSufficientMemory    = "kubelet has sufficient memory available"
	messageInsufficientMemory  = "kubelet has insufficient memory available"
	messageNoDiskPressure      = "kubelet has no disk pressure"
	messageDiskPressure        = "kubelet has disk pressure"
	messageSufficientPID       = "kubelet has sufficient PID available"
	messageInsufficientPID     = "kubelet has insufficient PID available"
	messageRuntimeNotYetProbed = "container runtime status check may not have completed yet"
)

// runtimeState is what the runtime's CRI Status said at the last check.
type runtimeState struct {
	// probed is false until the first Status call returned.
	probed bool
	// err is the error of the last Status call (the runtime is down).
	err error
	// The RuntimeReady and NetworkReady conditions; a missing condition
	// counts as not ready.
	runtimeReady                  bool
	runtimeReason, runtimeMessage string
	networkReady                  bool
	networkReason, networkMessage string
	// handlers are the runtime handlers and their features, as the Node's
	// status.runtimeHandlers (the kubelet's RuntimeHandlers setter); kept
	// from the last answer when a call fails.
	handlers []v1.NodeRuntimeHandler
}

// runtimeStateFrom reads a CRI Status answer (or its error).
func runtimeStateFrom(resp *runtimeapi.StatusResponse, err error) runtimeState {
	st := runtimeState{probed: true, err: err}
	if err != nil {
		return st
	}
	st.runtimeReason, st.networkReason = "NoCondition", "NoCondition"
	st.runtimeMessage = "the runtime reports no RuntimeReady condition"
	st.networkMessage = "the runtime reports no NetworkReady condition"
	for _, h := range resp.GetRuntimeHandlers() {
		rro, userns := h.GetFeatures().GetRecursiveReadOnlyMounts(), h.GetFeatures().GetUserNamespaces()
		st.handlers = append(st.handlers, v1.NodeRuntimeHandler{Name: h.GetName(),
			Features: &v1.NodeRuntimeHandlerFeatures{RecursiveReadOnlyMounts: &rro, UserNamespaces: &userns}})
	}
	for _, c := range resp.GetStatus().GetConditions() {
		switch c.Type {
		case runtimeapi.RuntimeReady:
			st.runtimeReady, st.runtimeReason, st.runtimeMessage = c.Status, c.Reason, c.Message
		case runtimeapi.NetworkReady:
			st.networkReady, st.networkReason, st.networkMessage = c.Status, c.Reason, c.Message
		}
	}
	return st
}

// problems are the reasons the node is not ready, in the kubelet's words
// (its runtimeErrors and networkErrors); empty when it is.
func (r runtimeState) problems() []string {
	switch {
	case !r.probed:
		return []string{messageRuntimeNotYetProbed}
	case r.err != nil:
		return []string{"container runtime is down: " + r.err.Error()}
	}
	var out []string
	if !r.runtimeReady {
		out = append(out, fmt.Sprintf("container runtime not ready: RuntimeReady=false reason:%s message:%s", r.runtimeReason, r.runtimeMessage))
	}
	if !r.networkReady {
		out = append(out, fmt.Sprintf("container runtime network not ready: NetworkReady=false reason:%s message:%s", r.networkReason, r.networkMessage))
	}
	return out
}

// statusInputs is everything the Node's status is computed from.
type statusInputs struct {
	// node is the agent's description: capacity, allocatable (the
	// numbers admission uses).
	node agentnode.Info
	// addresses and system are fixed at start.
	addresses []v1.NodeAddress
	system    v1.NodeSystemInfo
	// kubeletPort is the kubelet server's port (0: not advertised).
	kubeletPort int32
	// runtime is the last CRI Status.
	runtime runtimeState
	// The pressure conditions (pressure.go), each with what was observed.
	memoryPressure, diskPressure, pidPressure bool
}

// buildStatus computes the Node status the agent wants the API server to
// hold, on top of current (the server's copy; nil for a new Node), whose
// fields the agent does not own are kept (images, volumes, daemon
// endpoints, conditions of other types set by others). A condition keeps
// its lastTransitionTime while its status does not change; every condition
// of the agent gets now as lastHeartbeatTime (the caller decides whether
// the status is worth sending, see statusChanged).
func buildStatus(in statusInputs, current *v1.NodeStatus, now time.Time) v1.NodeStatus {
	var st v1.NodeStatus
	if current != nil {
		st = *current.DeepCopy()
	}
	st.Capacity = in.node.Capacity.DeepCopy()
	st.Allocatable = in.node.Allocatable.DeepCopy()
	if current != nil {
		keepForeignExtendedResources(&st, current)
	}
	st.Addresses = append([]v1.NodeAddress(nil), in.addresses...)
	st.NodeInfo = in.system
	if in.runtime.probed && in.runtime.err == nil {
		st.RuntimeHandlers = in.runtime.handlers
	}
	if in.kubeletPort > 0 {
		st.DaemonEndpoints.KubeletEndpoint.Port = in.kubeletPort
	}

	ready := v1.NodeCondition{Type: v1.NodeReady, Status: v1.ConditionTrue, Reason: reasonReady, Message: messageReady}
	if p := in.runtime.problems(); len(p) > 0 {
		ready.Status, ready.Reason, ready.Message = v1.ConditionFalse, reasonNotReady, strings.Join(p, ", ")
	}
	mine := []v1.NodeCondition{
		pressureCondition(v1.NodeMemoryPressure, in.memoryPressure,
			reasonInsufficientMemory, messageInsufficientMemory, reasonSufficientMemory, messageSufficientMemory),
		pressureCondition(v1.NodeDiskPressure, in.diskPressure,
			reasonDiskPressure, messageDiskPressure, reasonNoDiskPressure, messageNoDiskPressure),
		pressureCondition(v1.NodePIDPressure, in.pidPressure,
			reasonInsufficientPID, messageInsufficientPID, reasonSufficientPID, messageSufficientPID),
		ready,
	}
	t := metav1.NewTime(now)
	var prev []v1.NodeCondition
	if current != nil {
		prev = current.Conditions
	}
	for i := range mine {
		c := &mine[i]
		c.LastHeartbeatTime = t
		c.LastTransitionTime = t
		if old := findCondition(prev, c.Type); old != nil && old.Status == c.Status {
			c.LastTransitionTime = old.LastTransitionTime
		}
	}
	// Conditions of other types (set by controllers) stay, after ours.
	st.Conditions = mine
	for _, c := range prev {
		if findCondition(mine, c.Type) == nil {
			st.Conditions = append(st.Conditions, c)
		}
	}
	return st
}

// pressureCondition builds one of the pressure conditions.
func pressureCondition(t v1.NodeConditionType, pressure bool, yesReason, yesMsg, noReason, noMsg string) v1.NodeCondition {
	if pressure {
		return v1.NodeCondition{Type: t, Status: v1.ConditionTrue, Reason: yesReason, Message: yesMsg}
	}
	return v1.NodeCondition{Type: t, Status: v1.ConditionFalse, Reason: noReason, Message: noMsg}
}

// findCondition returns the condition of type t in cs, or nil.
func findCondition(cs []v1.NodeCondition, t v1.NodeConditionType) *v1.NodeCondition {
	for i := range cs {
		if cs[i].Type == t {
			return &cs[i]
		}
	}
	return nil
}

// statusChanged reports whether want differs from have in anything but the
// conditions' heartbeat times: only then (or when the report period is
// over) is the status sent, as the kubelet does since node leases exist.
func statusChanged(have, want *v1.NodeStatus) bool {
	strip := func(s *v1.NodeStatus) *v1.NodeStatus {
		c := s.DeepCopy()
		for i := range c.Conditions {
			c.Conditions[i].LastHeartbeatTime = metav1.Time{}
		}
		return c
	}
	return !apiequality.Semantic.DeepEqual(strip(have), strip(want))
}

// readyCondition returns the Ready condition of a status ("" when none).
func readyCondition(st *v1.NodeStatus) (v1.ConditionStatus, string) {
	if c := findCondition(st.Conditions, v1.NodeReady); c != nil {
		return c.Status, c.Message
	}
	return "", ""
}

// keepForeignExtendedResources keeps in st the extended resources another
// writer put into the current capacity (an admin's `kubectl patch
// --subresource status` advertising a node-level resource, as the
// scheduler's preemption specs do), with allocatable equal to capacity:
// the kubelet's setters change the server's maps in place, so keys it does
// not set stay, and its allocatable follows capacity for every key. The
// agent's own resources (cpu, memory, device plugins', 0 when dropped) are
// in st already and win.
func keepForeignExtendedResources(st, current *v1.NodeStatus) {
	for name, q := range current.Capacity {
		if _, ours := st.Capacity[name]; ours || !manifest.IsExtendedResource(name) {
			continue
		}
		if st.Capacity == nil {
			st.Capacity = v1.ResourceList{}
		}
		if st.Allocatable == nil {
			st.Allocatable = v1.ResourceList{}
		}
		st.Capacity[name] = q.DeepCopy()
		st.Allocatable[name] = q.DeepCopy()
	}
}
