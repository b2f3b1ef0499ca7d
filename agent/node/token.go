package node

import (
	"fmt"

	v1 "k8s.io/api/core/v1"
)

// AdmitReasonServiceAccountToken is the admission reason of a pod that
// projects a service account token it cannot get here.
const AdmitReasonServiceAccountToken = "ServiceAccountTokenUnavailable"

// AdmitServiceAccountTokens refuses a pod that projects a service account
// token this node cannot get: outside cluster mode (no token source) for
// every pod, and in cluster mode for pods that do not come from the API
// server (fromCluster false; src is the pod's config source, for the
// message; the engine knows both, agent/token.go there says why this is
// admission and not validation). The reason is empty when the pod is fine.
func AdmitServiceAccountTokens(p *v1.Pod, clusterMode bool, src string, fromCluster bool) (reason, message string) {
	for i := range p.Spec.Volumes {
		vol := &p.Spec.Volumes[i]
		if vol.Projected == nil {
			continue
		}
		for j, proj := range vol.Projected.Sources {
			if proj.ServiceAccountToken == nil {
				continue
			}
			where := fmt.Sprintf("volume %q projects a service account token (spec.volumes[%d].projected.sources[%d].serviceAccountToken)", vol.Name, i, j)
			if !clusterMode {
				return AdmitReasonServiceAccountToken, where + ", which needs cluster mode: minikubelet requests tokens from the API server only when it runs as a cluster node (serve --kubeconfig); without a cluster, mount a Secret holding the token instead"
			}
			if !fromCluster {
				return AdmitReasonServiceAccountToken, fmt.Sprintf("%s, but only pods from the cluster's API server get tokens: this pod comes from the %q source and its service account %q exists on no API server; create the pod through the API server (kubectl), or mount a Secret holding the token instead", where, src, p.Spec.ServiceAccountName)
			}
		}
	}
	return "", ""
}
