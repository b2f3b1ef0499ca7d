package podspec

// The security context's inputs from the node and the runtime: where
// Localhost seccomp profiles live, and the user an image runs as.
//
// Where each rule of the pod's and the containers' securityContext runs
// (k8s pkg/kubelet/kuberuntime security_context*.go,
// kuberuntime_sandbox.go, pkg/securitycontext, pkg/kubelet/sysctl,
// pkg/volume/volume_linux.go):
//
//	validation (manifest.ValidatePod) field values, the API server's messages
//	admission (node.AdmitSecurity) the node's Pod Security level for local
//	                           pods, supplementalGroupsPolicy Strict,
//	                           AppArmor, sysctls (agent/node: podsecurity.go,
//	                           apparmor.go, sysctl.go)
//	sandbox config             pod user/groups, sysctls, pid namespace,
//	                           sandbox seccomp RuntimeDefault
//	container config           effective context (container over pod)
//	before CreateContainer     runAsNonRoot against the image's user
//	                           (ImageUser, ApplyImageUser)
//	volume setup               fsGroup ownership (agent/volume: fsgroup.go)

import (
	"path/filepath"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// SeccompProfileRoot is where Localhost seccomp profiles live: the
// configured directory (--seccomp-profile-root), else <rootDir>/seccomp.
func SeccompProfileRoot(configured, rootDir string) string {
	if configured != "" {
		return configured
	}
	return filepath.Join(rootDir, "seccomp")
}

// ImageUser returns the user the image runs as, from the runtime's
// ImageStatus: a numeric uid, or a user name; no user at all, or no image
// (nil), is root (kubelet getImageUser).
func ImageUser(img *runtimeapi.Image) (uid *int64, username string) {
	if img != nil {
		if img.GetUid() != nil {
			uid := img.GetUid().GetValue()
			return &uid, ""
		}
		if img.GetUsername() != "" {
			return nil, img.GetUsername()
		}
	}
	root := int64(0)
	return &root, ""
}
