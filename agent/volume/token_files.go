package volume

// The files of projected serviceAccountToken sources: the token from the
// TokenCache (token.go) with the kubelet's mode and owner. Who may have
// them is the engine's admission (agent/token.go).

import (
	"fmt"
	"os"

	v1 "k8s.io/api/core/v1"
)

// serviceAccountTokenPayload is the file of one serviceAccountToken source.
// Its mode is the volume's defaultMode, or 0600 when the pod has an fsGroup
// (whose ownership change makes it 0640) or one user for all containers
// (who then owns it), as the kubelet's projected volume.
func (a *Manager) serviceAccountTokenPayload(pod *v1.Pod, src *v1.ServiceAccountTokenProjection, mode os.FileMode) (map[string]FileProjection, error) {
	if a.tokens == nil {
		// Admission refuses such pods; a pod admitted by an older agent
		// still says why it waits.
		return nil, fmt.Errorf("service account tokens need cluster mode (serve --kubeconfig)")
	}
	tok, err := a.tokens.Token(pod, src)
	if err != nil {
		return nil, err
	}
	fsUser := podFSUser(pod)
	if gid, _ := podFSGroup(pod); gid != nil || fsUser != nil {
		mode = 0o600
	}
	return map[string]FileProjection{src.Path: {Data: tok, Mode: mode, UID: fsUser}}, nil
}

// podFSUser is the kubelet's FsUserFrom: the runAsUser every init and app
// container runs as (its own or the pod's), nil when one has none or two
// differ.
func podFSUser(pod *v1.Pod) *int64 {
	var user *int64
	all := append(append([]v1.Container{}, pod.Spec.InitContainers...), pod.Spec.Containers...)
	for i := range all {
		var u *int64
		if sc := pod.Spec.SecurityContext; sc != nil && sc.RunAsUser != nil {
			u = sc.RunAsUser
		}
		if sc := all[i].SecurityContext; sc != nil && sc.RunAsUser != nil {
			u = sc.RunAsUser
		}
		if u == nil || (user != nil && *user != *u) {
			return nil
		}
		user = u
	}
	if user == nil {
		return nil
	}
	v := *user
	return &v
}
