package daemon

// The node's pods as the API server names them, for the kubelet server
// (cluster mode). The API server proxies exec, attach, port-forward and
// logs of the pods it knows by namespace and name, after checking the
// caller's RBAC on that pod (pods/exec in its namespace, say). The node
// also runs pods the cluster does not own: those of the local API and the
// static pods of the manifest directory, and when a cluster pod has the
// name of one of them, the node runs the node's pod and reports the
// cluster's (Daemon.apply). Resolving the API server's names with
// Daemon.GetPod would then hand a cluster user with pods/exec in that
// namespace a shell in the node's own pod: create a pod with its name,
// bound to this node, and exec into it. So the kubelet server sees:
//
//   - the pods of the cluster source, under their names;
//   - a static pod under its mirror pod's name, <name>-<node>, as the
//     kubelet names static pods (agent/cluster/mirror.go shows them so);
//     exec into a mirror pod is exec into its static pod, as with the
//     kubelet, whose mirror pods guard the name on the API server;
//   - nothing else: the local API's pods do not exist for the cluster.

import (
	"strings"

	v1 "k8s.io/api/core/v1"

	"github.com/minikubelet/minikubelet/agent/source"
)

// sourceCluster is the config.source of pods from the cluster's API
// server (agent/cluster.SourceCluster; agent/token.go's too).
const sourceCluster = "cluster"

// ClusterView is the daemon's pods under the API server's names (see the
// file comment); it satisfies the kubelet server's Pods.
type ClusterView struct {
	d *Daemon
	// node is the node's name, the suffix of mirror pod names.
	node string
}

// ClusterView returns the view for the node named node.
func (d *Daemon) ClusterView(node string) *ClusterView { return &ClusterView{d: d, node: node} }

// mirrorSuffix is what a static pod's mirror adds to its name (the
// kubelet's, and agent/cluster.MirrorName's).
func (v *ClusterView) mirrorSuffix() string { return "-" + v.node }

// resolve returns the node's name of the pod the API server calls
// namespace/name, or "" when the cluster has no such pod here.
func (v *ClusterView) resolve(namespace, name string) string {
	if p, err := v.d.GetPod(namespace, name); err == nil && p.Annotations[source.AnnotationConfigSource] == sourceCluster {
		return name
	}
	if static, ok := strings.CutSuffix(name, v.mirrorSuffix()); ok && static != "" {
		if p, err := v.d.GetPod(namespace, static); err == nil && p.Annotations[source.AnnotationConfigSource] == source.SourceFile {
			return static
		}
	}
	return ""
}

// GetPod returns the pod the API server calls namespace/name (a static
// pod under its node name); NotFound for any other.
func (v *ClusterView) GetPod(namespace, name string) (*v1.Pod, error) {
	n := v.resolve(namespace, name)
	if n == "" {
		return nil, notFound(name)
	}
	return v.d.GetPod(namespace, n)
}

// ListPods lists the cluster's pods and the static pods, these under
// their mirror names.
func (v *ClusterView) ListPods(namespace string) []*v1.Pod {
	var out []*v1.Pod
	for _, p := range v.d.ListPods(namespace) {
		switch p.Annotations[source.AnnotationConfigSource] {
		case sourceCluster:
			out = append(out, p)
		case source.SourceFile:
			if p.UID == "" {
				continue // a manifest file that could not be used
			}
			c := *p // shallow: only the name differs
			c.Name += v.mirrorSuffix()
			out = append(out, &c)
		}
	}
	return out
}

// LogPath is Daemon.LogPath for the pod the API server calls
// namespace/name.
func (v *ClusterView) LogPath(namespace, name, container string, previous bool) (string, error) {
	n := v.resolve(namespace, name)
	if n == "" {
		return "", notFound(name)
	}
	return v.d.LogPath(namespace, n, container, previous)
}
