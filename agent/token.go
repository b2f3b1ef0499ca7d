package agent

// Service account tokens: the projected serviceAccountToken sources (the
// kube-api-access-xxxxx volume the API server's ServiceAccount admission
// gives every pod that keeps automountServiceAccountToken). They work as
// the kubelet's token manager (pkg/kubelet/token; the cache is
// agent/volume's TokenCache): a token is requested
// from a TokenSource (in cluster mode, the API server's TokenRequest API:
// agent/cluster), cached per namespace, service account, audience,
// expiration and pod UID, handed out again until it is older than 80 % of
// its lifetime or 24 h, and dropped when the pod's volumes go. A refresh
// that fails while the old token is still valid keeps the old token (the
// next sync tries again). The projected volume is rebuilt on every sync of
// the pod (refreshDataVolumes), so a refreshed token reaches a running
// pod's file the way a changed ConfigMap does: a new ..data version.
//
// Who may use them is decided at admission (admitServiceAccountTokens), not
// by validation: validation is static and the same for every source, while
// only admission knows whether this node is in cluster mode and where the
// pod comes from. Only pods of the cluster source get tokens: a local pod
// has no service account on any API server.

import (
	"fmt"
	"os"

	v1 "k8s.io/api/core/v1"

	"github.com/minikubelet/minikubelet/agent/source"
	"github.com/minikubelet/minikubelet/agent/volume"
)

// sourceCluster is the config.source of pods from the cluster's API
// server (agent/cluster.SourceCluster; that package imports this one).
const sourceCluster = "cluster"

// Admission reason of a pod that projects a token it cannot get here.
const admitReasonServiceAccountToken = "ServiceAccountTokenUnavailable"

// serviceAccountTokenPayload is the file of one serviceAccountToken source.
// Its mode is the volume's defaultMode, or 0600 when the pod has an fsGroup
// (whose ownership change makes it 0640) or one user for all containers
// (who then owns it), as the kubelet's projected volume.
func (a *Agent) serviceAccountTokenPayload(pod *v1.Pod, src *v1.ServiceAccountTokenProjection, mode os.FileMode) (map[string]volume.FileProjection, error) {
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
	return map[string]volume.FileProjection{src.Path: {Data: tok, Mode: mode, UID: fsUser}}, nil
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
