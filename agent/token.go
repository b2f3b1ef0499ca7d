package agent

// Service account tokens: the projected serviceAccountToken sources (the
// kube-api-access-xxxxx volume the API server's ServiceAccount admission
// gives every pod that keeps automountServiceAccountToken). They work as
// the kubelet's token manager (pkg/kubelet/token; the cache and the files
// are agent/volume's: token.go, token_files.go): a token is requested
// from a TokenSource (in cluster mode, the API server's TokenRequest API:
// agent/cluster), cached per namespace, service account, audience,
// expiration and pod UID, handed out again until it is older than 80 % of
// its lifetime or 24 h, and dropped when the pod's volumes go. A refresh
// that fails while the old token is still valid keeps the old token (the
// next sync tries again). The projected volume is rebuilt on every sync of
// the pod (agent/volume: RefreshDataVolumes), so a refreshed token reaches a running
// pod's file the way a changed ConfigMap does: a new ..data version.
//
// Who may use them is decided at admission (admitServiceAccountTokens), not
// by validation: validation is static and the same for every source, while
// only admission knows whether this node is in cluster mode and where the
// pod comes from. Only pods of the cluster source get tokens: a local pod
// has no service account on any API server.

import (
	"fmt"

	v1 "k8s.io/api/core/v1"

	"github.com/minikubelet/minikubelet/agent/source"
)

// sourceCluster is the config.source of pods from the cluster's API
// server (agent/cluster.SourceCluster; that package imports this one).
const sourceCluster = "cluster"

// Admission reason of a pod that projects a token it cannot get here.
const admitReasonServiceAccountToken = "ServiceAccountTokenUnavailable"

// admitServiceAccountTokens refuses a pod that projects a service account
// token this node cannot get: without a token source (not in cluster mode)
// for every pod, and in cluster mode for pods that do not come from the
// API server. The reason is empty when the pod is fine.
func (a *Agent) admitServiceAccountTokens(p *v1.Pod) (reason, message string) {
	for i := range p.Spec.Volumes {
		vol := &p.Spec.Volumes[i]
		if vol.Projected == nil {
			continue
		}
		for j, src := range vol.Projected.Sources {
			if src.ServiceAccountToken == nil {
				continue
			}
			where := fmt.Sprintf("volume %q projects a service account token (spec.volumes[%d].projected.sources[%d].serviceAccountToken)", vol.Name, i, j)
			if a.tokens == nil {
				return admitReasonServiceAccountToken, where + ", which needs cluster mode: minikubelet requests tokens from the API server only when it runs as a cluster node (serve --kubeconfig); without a cluster, mount a Secret holding the token instead"
			}
			if src := p.Annotations[source.AnnotationConfigSource]; src != sourceCluster {
				return admitReasonServiceAccountToken, fmt.Sprintf("%s, but only pods from the cluster's API server get tokens: this pod comes from the %q source and its service account %q exists on no API server; create the pod through the API server (kubectl), or mount a Secret holding the token instead", where, src, p.Spec.ServiceAccountName)
			}
		}
	}
	return "", ""
}

// admitClusterProjections refuses a pod that projects a ClusterTrustBundle
// this node cannot read (agent/volume: AdmitClusterProjections): only pods
// of the cluster source may, as only they may have tokens.
func (a *Agent) admitClusterProjections(p *v1.Pod) (reason, message string) {
	src := p.Annotations[source.AnnotationConfigSource]
	return a.volumes().AdmitClusterProjections(p, src, src == sourceCluster)
}
