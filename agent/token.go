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
// Who may use them is decided at admission (node.AdmitServiceAccountTokens),
// not by validation: validation is static and the same for every source,
// while only admission knows whether this node is in cluster mode and where
// the pod comes from. Only pods of the cluster source get tokens: a local pod
// has no service account on any API server.

import (
	v1 "k8s.io/api/core/v1"

	"github.com/minikubelet/minikubelet/agent/node"
	"github.com/minikubelet/minikubelet/agent/source"
)

// sourceCluster is the config.source of pods from the cluster's API
// server (agent/cluster.SourceCluster; that package imports this one).
const sourceCluster = "cluster"

// admitServiceAccountTokens refuses a pod that projects a service account
// token this node cannot get (node.AdmitServiceAccountTokens): cluster
// mode is having a token source.
func (a *Agent) admitServiceAccountTokens(p *v1.Pod) (reason, message string) {
	src := p.Annotations[source.AnnotationConfigSource]
	return node.AdmitServiceAccountTokens(p, a.tokens != nil, src, src == sourceCluster)
}

// admitClusterProjections refuses a pod that projects a ClusterTrustBundle
// this node cannot read (agent/volume: AdmitClusterProjections): only pods
// of the cluster source may, as only they may have tokens.
func (a *Agent) admitClusterProjections(p *v1.Pod) (reason, message string) {
	src := p.Annotations[source.AnnotationConfigSource]
	return a.volumes().AdmitClusterProjections(p, src, src == sourceCluster)
}
