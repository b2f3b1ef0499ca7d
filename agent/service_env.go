package agent

// Service links (cluster mode): the variables are agent/podspec's
// (PodServiceEnv, whose top comment has the kubelet's rules); the engine
// lists the Services and waits for the first list of a cluster pod.

import (
	"errors"

	v1 "k8s.io/api/core/v1"

	"github.com/minikubelet/minikubelet/agent/podspec"
	"github.com/minikubelet/minikubelet/agent/source"
)

// ServiceLister gives the agent the cluster's Services; in cluster mode an
// informer on the API server (cluster.ServiceLister).
type ServiceLister interface {
	// ListServices returns the Services read so far, of every namespace.
	// The agent does not modify them.
	ListServices() []*v1.Service
	// HasSynced reports whether the Services were listed completely at
	// least once. An implementation may wait a little for that first list.
	HasSynced() bool
}

// errServicesNotSynced is the kubelet's refusal to build the environment
// of a pod from the API server before the Services were read once: its
// KUBERNETES_SERVICE_HOST would be missing for good.
var errServicesNotSynced = errors.New("services have not yet been read at least once, cannot construct envvars")

// serviceEnv returns the service link variables of pod: nil without a
// ServiceLister (standalone). Pods from the API server wait for the first
// list (errServicesNotSynced); static and local pods take what is there,
// as the kubelet's static pods do (they may be the API server itself).
func (a *Agent) serviceEnv(pod *v1.Pod) (map[string]string, error) {
	if a.services == nil {
		return nil, nil
	}
	if pod.Annotations[source.AnnotationConfigSource] == sourceCluster && !a.services.HasSynced() {
		return nil, errServicesNotSynced
	}
	return podspec.PodServiceEnv(pod, a.services.ListServices()), nil
}
