package agent

// Ephemeral containers (spec.ephemeralContainers), the kubelet's way: added
// to a running pod through the API's ephemeralcontainers subresource
// (`kubectl debug`), started in the pod's current sandbox once the pod is
// initialized, never restarted (an instance that ran is not started again,
// whatever it exited with), killed with the pod, and reported in
// status.ephemeralContainerStatuses. They take no part in the pod's phase
// or readiness.

import (
	"context"
	"fmt"
	"strings"

	"google.golang.org/protobuf/proto"
	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/minikubelet/minikubelet/agent/node"
	"github.com/minikubelet/minikubelet/agent/podspec"
	"github.com/minikubelet/minikubelet/cri"
)

// containerTypeEphemeral is the io.kubernetes.container.type of an
// ephemeral container, the kubelet's.
const containerTypeEphemeral = "ephemeral"

// ephemeralToStart are the indexes in spec.ephemeralContainers of those
// never started yet (no instance in any sandbox).
func ephemeralToStart(pod *v1.Pod, st *podState) []int {
	if pod.DeletionTimestamp != nil {
		return nil
	}
	var out []int
	for i := range pod.Spec.EphemeralContainers {
		if st.latest(pod.Spec.EphemeralContainers[i].Name) == nil {
			out = append(out, i)
		}
	}
	return out
}

// startEphemeral starts ephemeral container c, unless it asks for what
// admission would have refused had the pod had it from the start:
// admission (admitSecurity, ProtectedHostPath) saw only the pod's
// containers, and an ephemeral container added later (the only spec change
// the API server allows that adds mounts) must not get what the pod could
// not: to break the node's Pod Security level (a local pod's), or to mount
// writable a hostPath the guard lets the pod mount read-only only (the pod
// log dir). Then it stays waiting with CreateContainerConfigError and the
// reason, and a Warning event. (The kubelet has no hostPath guard to keep;
// Pod Security Admission checks the ephemeralcontainers subresource.)
func (a *Agent) startEphemeral(ctx context.Context, w *podWorker, sb *sandboxInfo, st *podState, c *v1.Container, prepulled map[string]pullResult, res *syncResult) {
	var refused error
	pod := w.pod()
	view := ephemeralView(pod, c)
	if _, msg := node.AdmitPodSecurity(view, a.podSecurityLevel(view)); msg != "" {
		// The view holds c alone: name its own index in the pod.
		for i := range pod.Spec.EphemeralContainers {
			if pod.Spec.EphemeralContainers[i].Name == c.Name {
				msg = strings.ReplaceAll(msg, "spec.ephemeralContainers[0]", fmt.Sprintf("spec.ephemeralContainers[%d]", i))
			}
		}
		refused = newReasonError(ErrCreateContainerConfig, "ephemeral container %q: %s", c.Name, msg)
	} else if _, msg := a.volumes().ProtectedHostPath(view); msg != "" {
		refused = newReasonError(ErrCreateContainerConfig, "ephemeral container %q: %s", c.Name, msg)
	}
	if refused != nil {
		w.mu.Lock()
		prev := w.reasons[c.Name]
		w.mu.Unlock()
		if prev == nil || prev.Error() != refused.Error() {
			w.containerEvent(c.Name, v1.EventTypeWarning, "Failed", "Error: %v", refused)
		}
		w.setReason(c.Name, refused)
		return
	}
	a.startOne(ctx, w, sb, st, c, containerTypeEphemeral, prepulled, res)
}

// ephemeralView is pod as admission would see it with c as its only
// ephemeral container (a shallow copy: only read).
func ephemeralView(pod *v1.Pod, c *v1.Container) *v1.Pod {
	view := *pod
	view.Spec.EphemeralContainers = []v1.EphemeralContainer{{EphemeralContainerCommon: v1.EphemeralContainerCommon(*c)}}
	return &view
}

// targetPIDNamespace puts ephemeral container c, when it names a
// targetContainerName, in that container's PID namespace (CRI namespace
// mode TARGET), as the kubelet does for `kubectl debug --target`. The
// target must be running; else the start fails with
// CreateContainerConfigError and is tried again at the next sync.
func (a *Agent) targetPIDNamespace(ctx context.Context, pod *v1.Pod, c *v1.Container, cfg *runtimeapi.ContainerConfig) error {
	target := ""
	for i := range pod.Spec.EphemeralContainers {
		if pod.Spec.EphemeralContainers[i].Name == c.Name {
			target = pod.Spec.EphemeralContainers[i].TargetContainerName
		}
	}
	if target == "" || cfg.GetLinux().GetSecurityContext() == nil {
		return nil
	}
	ctrs, err := a.runtime.ListContainers(ctx, &runtimeapi.ContainerFilter{
		State:         &runtimeapi.ContainerStateValue{State: runtimeapi.ContainerState_CONTAINER_RUNNING},
		LabelSelector: map[string]string{podspec.LabelPodUID: string(pod.UID), podspec.LabelContainerName: target},
	})
	if err != nil {
		return newReasonError(ErrCreateContainerConfig, "find target container %q: %s", target, cri.Message(err))
	}
	if len(ctrs) == 0 {
		return newReasonError(ErrCreateContainerConfig, "target container %q is not running", target)
	}
	ns := proto.Clone(cfg.Linux.SecurityContext.GetNamespaceOptions()).(*runtimeapi.NamespaceOption)
	if ns == nil {
		ns = podspec.NamespaceOptions(pod)
	}
	ns.Pid, ns.TargetId = runtimeapi.NamespaceMode_TARGET, ctrs[0].Id
	cfg.Linux.SecurityContext.NamespaceOptions = ns
	return nil
}
