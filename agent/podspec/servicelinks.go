package podspec

// Service links: the environment variables the kubelet gives every
// container for the cluster's Services (its getServiceEnvVarMap and
// pkg/kubelet/envvars; the code is written afresh from their rules).
//
//   - The `kubernetes` Service of the `default` namespace (the API server)
//     is always linked, whatever enableServiceLinks says: in-cluster
//     clients read KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT.
//   - With enableServiceLinks (true unless the pod says false) every
//     Service of the pod's own namespace is linked too; one named like a
//     master service replaces it.
//   - Services without a cluster IP (headless: None, or "") get nothing.
//   - The variables come first for $(VAR) expansion and last in the
//     environment: a variable the container defines wins (Env).
//
// Only a node in a cluster has Services: the engine lists them, and a
// standalone node's containers get none.

import v1 "k8s.io/api/core/v1"

// PodServiceEnv returns the service link variables of pod from the
// cluster's services (ServiceLinkEnv with the pod's namespace and its
// spec.enableServiceLinks, true unless set false).
func PodServiceEnv(pod *v1.Pod, services []*v1.Service) map[string]string {
	links := pod.Spec.EnableServiceLinks == nil || *pod.Spec.EnableServiceLinks
	return ServiceLinkEnv(services, pod.Namespace, links)
}
