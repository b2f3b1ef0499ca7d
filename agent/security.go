package agent

// Security contexts: what the pod's and the containers' securityContext
// become in the CRI (LinuxSandboxSecurityContext, LinuxContainerSecurityContext),
// checked as the API server validates them and as the kubelet admits and
// starts them (k8s pkg/kubelet/kuberuntime security_context*.go,
// kuberuntime_sandbox.go, pkg/securitycontext, pkg/kubelet/sysctl,
// pkg/volume/volume_linux.go).
//
// Where each rule runs:
//
//	validation (manifest.ValidatePod) field values, the API server's messages
//	admission (admitSecurity)  the node's Pod Security level for local
//	                           pods, supplementalGroupsPolicy Strict,
//	                           AppArmor, sysctls (agent/node: podsecurity.go,
//	                           apparmor.go, sysctl.go)
//	sandbox config             pod user/groups, sysctls, pid namespace,
//	                           sandbox seccomp RuntimeDefault
//	container config           effective context (container over pod)
//	before CreateContainer     runAsNonRoot against the image's user
//	volume setup               fsGroup ownership (agent/volume: fsgroup.go)

import (
	"context"
	"fmt"
	"path/filepath"

	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/minikubelet/minikubelet/agent/node"
	"github.com/minikubelet/minikubelet/agent/podspec"
	"github.com/minikubelet/minikubelet/cri"
)

// The support tables and the validation of the security context types are
// agent/manifest's (security.go there).

// Admission.

// admitReasonSupplementalGroups is the kubelet's reason for a pod asking
// for the Strict supplementalGroupsPolicy (the node's Pod Security level,
// AppArmor and sysctls have theirs in agent/node).
const admitReasonSupplementalGroups = "SupplementalGroupsPolicyNotSupported"

// admitSecurity checks what a node may refuse of a pod's security: a local
// pod that breaks the node's Pod Security level (--pod-security; a
// cluster pod is the API server's Pod Security Admission's to judge, as
// with the kubelet, which admits privileged pods), the Strict
// supplementalGroupsPolicy (containerd 1.6 cannot honour it), AppArmor
// and sysctls.
// The reason is empty when the pod is fine.
func (a *Agent) admitSecurity(pod *v1.Pod) (reason, message string) {
	if reason, message := node.AdmitPodSecurity(pod, a.podSecurityLevel(pod)); reason != "" {
		return reason, message
	}
	if reason, message := node.AdmitAppArmor(pod, a.cfg.AppArmorEnabled); reason != "" {
		return reason, message
	}
	if sc := pod.Spec.SecurityContext; sc != nil && sc.SupplementalGroupsPolicy != nil && *sc.SupplementalGroupsPolicy == v1.SupplementalGroupsPolicyStrict {
		return admitReasonSupplementalGroups, "SupplementalGroupsPolicy=Strict is not supported in this node"
	}
	return node.AdmitSysctls(pod, a.cfg.AllowedUnsafeSysctls)
}

// CRI conversion.

// seccompProfileRoot is where Localhost seccomp profiles live.
func (a *Agent) seccompProfileRoot() string {
	if a.cfg.SeccompProfileRoot != "" {
		return a.cfg.SeccompProfileRoot
	}
	return filepath.Join(a.cfg.RootDir, "seccomp")
}

// imageUser returns the user the image runs as, from the runtime's
// ImageStatus: a numeric uid, or a user name; no user at all is root
// (kubelet getImageUser). known is the image's status when the caller
// already holds it (nil: asked here).
func (a *Agent) imageUser(ctx context.Context, image string, known *runtimeapi.Image) (*int64, string, error) {
	img := known
	if img == nil {
		st, err := a.images.ImageStatus(ctx, &runtimeapi.ImageSpec{Image: image}, false)
		if err != nil {
			return nil, "", err
		}
		img = st.GetImage()
	}
	if img != nil {
		if img.GetUid() != nil {
			uid := img.GetUid().GetValue()
			return &uid, "", nil
		}
		if img.GetUsername() != "" {
			return nil, img.GetUsername(), nil
		}
	}
	root := int64(0)
	return &root, "", nil
}

// applyImageUser completes the container's CRI security context with the
// image's user when the manifest names none and runs the runAsNonRoot
// check (podspec.ApplyImageUser). Failures are CreateContainerConfigError
// with the kubelet's message and event. img is the image's status if the
// caller holds it (nil: asked here).
func (a *Agent) applyImageUser(ctx context.Context, pw *podWorker, c *v1.Container, cfg *runtimeapi.ContainerConfig, img *runtimeapi.Image) error {
	pod := pw.pod()
	uid, username, err := a.imageUser(ctx, c.Image, img)
	if err == nil {
		err = podspec.ApplyImageUser(pod, c, cfg, uid, username)
	} else {
		err = fmt.Errorf("inspect image %q: %s", c.Image, cri.Message(err))
	}
	if err != nil {
		pw.containerEvent(c.Name, v1.EventTypeWarning, "Failed", "Error: %v", err)
		return newReasonError(ErrCreateContainerConfig, "%v", err)
	}
	return nil
}
