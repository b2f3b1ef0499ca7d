package agent

// The engine's part of the node's Pod Security policy for local pods: which
// level a pod is held to. The levels, the checks and the messages are
// agent/node's (podsecurity.go there); cluster pods are left to the API
// server's Pod Security Admission, as with the kubelet.

import (
	v1 "k8s.io/api/core/v1"

	"github.com/minikubelet/minikubelet/agent/node"
	"github.com/minikubelet/minikubelet/agent/source"
)

// isClusterPod reports whether pod comes from the cluster's API server,
// whose Pod Security Admission decided on it. Only the daemon in cluster
// mode has such pods: the annotation is set by every source (a manifest
// file's or an API request's own value is overwritten), but a foreground
// `run` keeps the manifest's annotations, and it has no token source.
func (a *Agent) isClusterPod(pod *v1.Pod) bool {
	return a.tokens != nil && pod.Annotations[source.AnnotationConfigSource] == sourceCluster
}

// podSecurityLevel is the level this node holds pod to: none (privileged)
// for a cluster pod, else --pod-security.
func (a *Agent) podSecurityLevel(pod *v1.Pod) node.PodSecurityLevel {
	if a.isClusterPod(pod) {
		return node.PodSecurityPrivileged
	}
	return a.cfg.PodSecurity
}
