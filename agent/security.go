package agent

// Security contexts: the rules are agent/manifest's (validation),
// agent/node's (admission, AdmitSecurity) and agent/podspec's (the CRI
// security contexts; imageuser.go there says where each rule runs). The
// engine gathers their inputs: the pod's level, the image's status.

import (
	"context"
	"fmt"

	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/minikubelet/minikubelet/agent/node"
	"github.com/minikubelet/minikubelet/agent/podspec"
	"github.com/minikubelet/minikubelet/cri"
)

// admitSecurity is node.AdmitSecurity at the pod's level
// (podSecurityLevel) and the node's AppArmor and sysctl settings.
func (a *Agent) admitSecurity(pod *v1.Pod) (reason, message string) {
	return node.AdmitSecurity(pod, a.podSecurityLevel(pod), a.cfg.AppArmorEnabled, a.cfg.AllowedUnsafeSysctls)
}

// applyImageUser completes the container's CRI security context with the
// image's user when the manifest names none and runs the runAsNonRoot
// check (podspec.ImageUser, podspec.ApplyImageUser). Failures are
// CreateContainerConfigError with the kubelet's message and event. img is
// the image's status if the caller holds it (nil: asked here).
func (a *Agent) applyImageUser(ctx context.Context, pw *podWorker, c *v1.Container, cfg *runtimeapi.ContainerConfig, img *runtimeapi.Image) error {
	pod := pw.pod()
	var err error
	if img == nil {
		var st *runtimeapi.ImageStatusResponse
		if st, err = a.images.ImageStatus(ctx, &runtimeapi.ImageSpec{Image: c.Image}, false); err != nil {
			err = fmt.Errorf("inspect image %q: %s", c.Image, cri.Message(err))
		}
		img = st.GetImage()
	}
	if err == nil {
		uid, username := podspec.ImageUser(img)
		err = podspec.ApplyImageUser(pod, c, cfg, uid, username)
	}
	if err != nil {
		pw.containerEvent(c.Name, v1.EventTypeWarning, "Failed", "Error: %v", err)
		return newReasonError(ErrCreateContainerConfig, "%v", err)
	}
	return nil
}
